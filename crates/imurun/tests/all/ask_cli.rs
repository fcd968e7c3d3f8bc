//! `imurun ask` through the real loop with the scripted model: a tool turn, a dry run, and
//! clear errors.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::run_imurun;

fn script(dir: &Path, replies: Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({"replies": replies}).to_string()).unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn a_tool_turn_runs_the_tool_and_prints_the_answer() {
    let home = tempfile::tempdir().unwrap();
    let model = script(
        home.path(),
        json!([
            // Not a question about the present (the pre-fetch looks nothing up): the model
            // calls the tool itself, then answers from its result.
            {"text": "```tool\n{\"name\": \"get_time\", \"args\": {\"timezone\": \"UTC\"}}\n```"},
            {"text": "It is 13:09 in UTC, on 1 December 2026."}
        ]),
    );
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let output = run_imurun(
        &[
            "ask",
            "--model",
            &model,
            "--clock",
            "2026-12-01T13:09:41Z",
            "Use",
            "get_time",
            "with",
            "the",
            "UTC",
            "zone",
        ],
        "",
        &envs,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "It is 13:09 in UTC, on 1 December 2026."
    );
    // Every call the turn made is audited: the model's call.
    let rows = crate::support::audit_rows(home.path());
    let calls: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|(tool, source, _, outcome)| (tool.as_str(), source.as_str(), outcome.as_str()))
        .collect();
    assert_eq!(calls, [("get_time", "model", "ok")], "{rows:?}");
}

#[test]
fn a_dry_run_prints_the_first_steps_calls_without_running_them() {
    let home = tempfile::tempdir().unwrap();
    let model = script(
        home.path(),
        json!([
            {"text": "```tool\n{\"name\": \"lookup_order\", \"args\": {\"order_id\": \"42\"}}\n```"},
            {"text": "A plain answer."}
        ]),
    );
    let tools = home.path().join("tools.json");
    let spec = json!([{"name": "lookup_order", "description": "Find an order.", "parameters":
        {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}}]);
    std::fs::write(&tools, spec.to_string()).unwrap();
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let input = "{\"id\": \"a\", \"prompt\": \"Where is order 42?\"}\n{\"id\": \"b\", \"prompt\": \"Hello\"}\n";
    let output = run_imurun(
        &[
            "ask",
            "--dry-run",
            "--jsonl",
            "--model",
            &model,
            "--tools",
            tools.to_str().unwrap(),
        ],
        input,
        &envs,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        json!({"id": "a", "calls": [{"name": "lookup_order", "args": {"order_id": 42}}], "answer": ""})
    );
    assert_eq!(
        lines[1],
        json!({"id": "b", "calls": [], "answer": "A plain answer."})
    );
}

#[test]
fn bad_settings_and_a_missing_model_are_clear_errors() {
    let home = tempfile::tempdir().unwrap();
    let model = script(home.path(), json!([{"text": "hi"}]));
    let bad_steps: [(&str, &OsStr); 2] = [
        ("IMURUN_HOME", home.path().as_os_str()),
        ("IMURUN_MAX_STEPS", OsStr::new("lots")),
    ];
    let output = run_imurun(&["ask", "--model", &model, "hi"], "", &bad_steps);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("IMURUN_MAX_STEPS"));

    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let missing = run_imurun(
        &["ask", "--model", "/nonexistent/model.gguf", "hi"],
        "",
        &envs,
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("fetch-model.sh"));
}

#[test]
fn a_stored_skill_token_is_taken_out_of_the_prompt_and_an_unknown_one_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let skill = home.path().join("skills/haiku");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: haiku\ndescription: Answer in a haiku.\n---\nAnswer in a haiku.\n",
    )
    .unwrap();
    let path = home.path().join("script.json");
    std::fs::write(
        &path,
        json!({
            "replies": [{"when_last_user_contains": "/", "text": "the token reached the model"}],
            "fallback": {"text": "the token was taken out"}
        })
        .to_string(),
    )
    .unwrap();
    let model = format!("scripted:{}", path.display());
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let answer = |prompt: &str| {
        let output = run_imurun(&["ask", "--model", &model, prompt], "", &envs);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    assert_eq!(answer("/haiku the sea"), "the token was taken out");
    assert_eq!(answer("/sonnet the sea"), "the token reached the model");
}
