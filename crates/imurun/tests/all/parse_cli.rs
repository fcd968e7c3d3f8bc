//! `imurun parse` exactly as the contract in `docs/tool-calls.md` says, over the sample corpus.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::run_imurun;

/// The sample corpus in the repository's `testdata/corpus`.
fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/corpus")
}

fn corpus_tools_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../imurun-calls/tests/all/fixtures/corpus-tools.json")
}

/// Runs `imurun parse ARGS` with `input` on stdin; returns (exit code, stdout lines).
fn parse(args: &[&str], input: &str) -> (i32, Vec<Value>) {
    let mut full = vec!["parse"];
    full.extend_from_slice(args);
    let output = run_imurun(&full, input, &[]);
    let lines = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (output.status.code().unwrap(), lines)
}

fn corpus() -> Vec<Value> {
    let path = corpus_dir().join("toolcalls-sample.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn mismatch(got: &Value, case: &Value) -> Option<String> {
    let expect = &case["expect"];
    let mut problems = Vec::new();
    if got["kind"] != expect["kind"] {
        problems.push(format!("kind {} != {}", got["kind"], expect["kind"]));
    }
    if expect.get("calls").is_some() && got["calls"] != expect["calls"] {
        problems.push(format!("calls {} != {}", got["calls"], expect["calls"]));
    }
    for field in ["visible", "thought"] {
        if let Some(want) = expect.get(field).and_then(Value::as_str) {
            let have = got[field].as_str().unwrap_or_default();
            if have.trim() != want.trim() {
                problems.push(format!("{field} {have:?} != {want:?}"));
            }
        }
    }
    (!problems.is_empty()).then(|| format!("{}: {}", case["id"], problems.join("; ")))
}

fn check_corpus(extra_args: &[&str]) {
    let cases = corpus();
    let input: String = cases
        .iter()
        .map(|case| format!("{}\n", case["text"]))
        .collect();
    let mut args = vec!["--jsonl"];
    args.extend_from_slice(extra_args);
    let (code, lines) = parse(&args, &input);
    assert_eq!(code, 0);
    assert_eq!(lines.len(), cases.len());
    let failures: Vec<String> = lines
        .iter()
        .zip(&cases)
        .filter_map(|(got, case)| mismatch(got, case))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_corpus_parses_with_the_built_in_tools() {
    check_corpus(&[]);
}

#[test]
fn the_corpus_parses_with_its_own_tools_file() {
    let tools = corpus_tools_file();
    check_corpus(&["--tools", tools.to_str().unwrap()]);
}

#[test]
fn one_output_on_stdin_prints_the_contract_fields() {
    let (code, lines) = parse(
        &[],
        "Let me look.\n```tool\n{\"name\": \"list_dir\", \"args\": {\"path\": \"src\"}}\n```",
    );
    assert_eq!(code, 0);
    assert_eq!(
        lines,
        [
            json!({"kind": "calls", "calls": [{"name": "list_dir", "args": {"path": "src"}}],
                "visible": "Let me look.", "thought": "", "retry": null})
        ]
    );
    let (_, retry) = parse(&[], "```tool\nnonsense\n```");
    assert_eq!(retry[0]["kind"], "retry");
    assert!(retry[0]["retry"].as_str().unwrap().contains("web_search"));
}

#[test]
fn stream_mode_reports_what_the_guard_released() {
    let tokens = json!([
        "Checking",
        " now.\n``",
        "`to",
        "ol\n{\"name\": \"get_time\", \"args\": {}}\n```"
    ]);
    let (code, lines) = parse(&["--stream"], &tokens.to_string());
    assert_eq!(code, 0);
    assert_eq!(lines[0]["kind"], "calls");
    assert_eq!(lines[0]["streamed"], "Checking now.\n");

    // With --jsonl, one token array per line; the corpus streaming case releases nothing.
    let case = corpus()
        .into_iter()
        .find(|case| case.get("chunks").is_some())
        .unwrap();
    let (_, lines) = parse(
        &["--stream", "--jsonl"],
        &format!("{}\n{}\n", case["chunks"], json!(["plain ", "answer"])),
    );
    assert_eq!(lines[0]["streamed"], "");
    assert_eq!(lines[1]["streamed"], "plain answer");
    assert_eq!(lines[1]["kind"], "answer");
}

#[test]
fn a_bad_line_gets_an_error_in_its_place_and_the_rest_still_parse() {
    let (code, lines) = parse(&["--jsonl"], "\"fine\"\nnot json\n42\n\"also fine\"\n");
    assert_eq!(code, 1, "bad lines are reported in the exit code");
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["kind"], "answer");
    assert!(lines[1]["error"].as_str().unwrap().contains("line 2"));
    assert!(
        lines[2]["error"]
            .as_str()
            .unwrap()
            .contains("expected a JSON string")
    );
    assert_eq!(lines[3]["visible"], "also fine");
}

#[test]
fn a_bad_tools_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(&path, "{\"name\": \"not a list\"}").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_imurun"))
        .args(["parse", "--tools", path.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("expected a JSON array"), "{stderr}");
    let missing = Command::new(env!("CARGO_BIN_EXE_imurun"))
        .args(["parse", "--tools", "/nonexistent/tools.json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("reading the tools file"));
}
