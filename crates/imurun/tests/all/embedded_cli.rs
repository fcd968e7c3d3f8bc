//! `imurun ask` with the real default model (SmolLM2-135M-Instruct Q4_1), greedy: the call
//! grammar and the call prefill on the ten tool-needing questions of the sample corpus, and a
//! whole turn that runs a tool and answers from its result. The model is found through
//! `IMURUN_MODEL`, else `../shared/models/` beside the checkout, else `~/.imurun/models/`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{model_path, run_imurun};

/// The distinct questions of `../shared/corpus/smollm2-samples.jsonl`, as `ask --jsonl` lines.
fn ten_questions() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpus = manifest
        .ancestors()
        .map(|ancestor| ancestor.join("shared/corpus/smollm2-samples.jsonl"))
        .find(|path| path.is_file())
        .expect("../shared/corpus/smollm2-samples.jsonl");
    let mut seen = BTreeSet::new();
    let mut lines = String::new();
    for line in std::fs::read_to_string(corpus).unwrap().lines() {
        let sample: Value = serde_json::from_str(line).unwrap();
        let question = sample["question"].as_str().unwrap().to_owned();
        if seen.insert(question.clone()) {
            let request = serde_json::json!({"id": seen.len(), "prompt": question});
            lines.push_str(&format!("{request}\n"));
        }
    }
    assert_eq!(seen.len(), 10, "the corpus holds ten questions");
    lines
}

fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn with_the_call_grammar_every_started_call_is_a_valid_call_to_a_runnable_tool() {
    let home = tempfile::tempdir().unwrap();
    let model = model_path();
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    // Every reply is started with the call marker, so every reply is a started call.
    let output = run_imurun(
        &[
            "ask",
            "--model",
            model.to_str().unwrap(),
            "--dry-run",
            "--jsonl",
            "--call-prefill",
            "always",
            "--max-tokens",
            "200",
        ],
        &ten_questions(),
        &envs,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let specs = imurun_tools::builtin_specs();
    let results = lines(&output.stdout);
    assert_eq!(results.len(), 10);
    for result in &results {
        let calls = result["calls"].as_array().unwrap();
        assert!(
            !calls.is_empty(),
            "a started call that did not parse: {result}"
        );
        for call in calls {
            let name = call["name"].as_str().unwrap();
            let spec = specs
                .iter()
                .find(|spec| spec.name == name)
                .unwrap_or_else(|| panic!("not a runnable tool: {result}"));
            let args = call["args"].as_object().unwrap();
            for required in spec.required() {
                assert!(
                    args.contains_key(required),
                    "`{name}` without `{required}`: {result}"
                );
            }
        }
    }
}

#[test]
fn a_turn_with_the_embedded_model_runs_a_tool_and_answers_from_its_result() {
    let home = tempfile::tempdir().unwrap();
    let model = model_path();
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    // The defaults: grammar, worked examples, the call prefill for questions about the present.
    let output = run_imurun(
        &[
            "ask",
            "--model",
            model.to_str().unwrap(),
            "--jsonl",
            "--max-tokens",
            "200",
        ],
        "{\"id\": 1, \"prompt\": \"What time is it now?\"}\n",
        &envs,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = &lines(&output.stdout)[0];
    assert_eq!(result["status"], "done", "{result}");
    assert_eq!(result["tool_calls"][0]["name"], "get_time", "{result}");
    // `get_time` reports an ISO 8601 date; the answer carries it (in whatever zone the
    // model asked for, so today's date give or take a day).
    let answer = result["answer"].as_str().unwrap();
    let today = jiff::Zoned::now().date();
    let dates = [today.yesterday().unwrap(), today, today.tomorrow().unwrap()];
    assert!(
        dates.iter().any(|date| answer.contains(&date.to_string())),
        "the answer does not use the tool's result: {result}"
    );
}
