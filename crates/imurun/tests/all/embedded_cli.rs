//! `imurun ask` with the real default model (SmolLM2-135M-Instruct Q4_1), greedy: the call
//! grammar and the call prefill on the ten tool-needing questions of the sample corpus, and a
//! whole turn that runs a tool and answers from its result. The model is found through
//! `IMURUN_MODEL`, else where `scripts/fetch-model.sh` puts it.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{model_path, run_imurun};

/// The distinct questions of `testdata/corpus/smollm2-samples.jsonl`, as `ask --jsonl` lines.
fn ten_questions() -> String {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/corpus/smollm2-samples.jsonl");
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
            "--clock",
            FROZEN_CLOCKS[1],
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

/// The times of day the real-model tests run at: greedy output depends on the clock in the
/// prompt and in `get_time`'s result, so each test freezes the clock at several hours (around
/// midnight, where the date changes, among them) instead of reading the machine's.
const FROZEN_CLOCKS: [&str; 4] = [
    "2026-12-01T00:04:09+00:00[UTC]",
    "2026-12-01T21:46:27+09:00[Asia/Tokyo]",
    "2026-06-15T12:00:00-04:00[America/New_York]",
    "2026-12-31T23:59:30+01:00[Europe/Paris]",
];

#[test]
fn a_turn_with_the_embedded_model_runs_a_tool_and_answers_whatever_the_hour() {
    let model = model_path();
    for clock in FROZEN_CLOCKS {
        let home = tempfile::tempdir().unwrap();
        let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
        // The defaults: grammar, worked examples, the call prefill for questions about the
        // present, the pre-fetch.
        let output = run_imurun(
            &[
                "ask",
                "--model",
                model.to_str().unwrap(),
                "--jsonl",
                "--max-tokens",
                "200",
                "--clock",
                clock,
            ],
            "{\"id\": 1, \"prompt\": \"What time is it now?\"}\n",
            &envs,
        );
        assert!(
            output.status.success(),
            "{clock}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let result = &lines(&output.stdout)[0];
        // What imurun guarantees: the pre-fetch ran `get_time` for a question about the
        // present, the turn ended without an error (an answer, or the step limit's sentence
        // when the model kept calling), and no call syntax reached the answer.
        assert!(
            result["status"] == "done" || result["status"] == "max-steps",
            "{clock}: {result}"
        );
        assert!(result["error"].is_null(), "{clock}: {result}");
        assert_eq!(
            result["lookups"][0]["name"], "get_time",
            "{clock}: {result}"
        );
        let answer = result["answer"].as_str().unwrap();
        assert!(!answer.trim().is_empty(), "{clock}: {result}");
        for marker in ["```tool", "<tool_call>", "{\"name\""] {
            assert!(!answer.contains(marker), "{clock}: {result}");
        }
    }
}
