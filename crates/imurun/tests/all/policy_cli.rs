//! `imurun policy` and `imurun tools` as the contract in `../shared/DESIGN.md` says.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::run_imurun;

/// Runs imurun with `args` and `input` on stdin, with its data folder in `home`.
fn imurun(home: &Path, args: &[&str], input: &str) -> Output {
    run_imurun(args, input, &[("IMURUN_HOME", home.as_os_str())])
}

fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn policy_check_prints_one_decision_per_line() {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("ws");
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"tool": "file_read", "args": {"path": "notes.txt"}}"#,
            "allow-reads",
            "allow",
        ),
        (
            r#"{"tool": "file_read", "args": {"path": "../outside.txt"}}"#,
            "allow-all",
            "deny",
        ),
        (
            r#"{"tool": "file_write", "args": {"path": "a.txt", "content": "x"}}"#,
            "allow-reads",
            "ask",
        ),
        (
            r#"{"tool": "file_write", "args": {"path": "a.txt", "content": "x"}}"#,
            "allow-edits",
            "allow",
        ),
        (
            r#"{"tool": "file_write", "args": {"path": ".git/config", "content": "x"}}"#,
            "allow-all",
            "deny",
        ),
        (
            r#"{"tool": "shell", "args": {"command": "ls"}}"#,
            "allow-edits",
            "ask",
        ),
        (
            r#"{"tool": "shell", "args": {"command": "ls"}}"#,
            "allow-all",
            "allow",
        ),
        (
            r#"{"tool": "shell", "args": {"command": "sudo rm -rf /"}}"#,
            "allow-all",
            "deny",
        ),
        (
            r#"{"tool": "read_file", "args": {"path": "a.txt"}}"#,
            "ask",
            "ask",
        ),
        (r#"{"tool": "get_time", "args": {}}"#, "ask", "allow"),
        (
            r#"{"tool": "no_such_tool", "args": {}}"#,
            "allow-all",
            "deny",
        ),
        (r#"{"tool": "file_read", "args": {}}"#, "allow-all", "deny"),
    ];
    for (line, mode, expect) in cases {
        let output = imurun(
            home.path(),
            &[
                "policy",
                "check",
                "--workspace",
                workspace.to_str().unwrap(),
                "--mode",
                mode,
            ],
            &format!("{line}\n"),
        );
        assert!(
            output.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let got = lines(&output);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["decision"], *expect, "{line} in {mode}: {}", got[0]);
        assert!(!got[0]["reason"].as_str().unwrap().is_empty());
    }
}

/// imurun's own configuration file is protected wherever `--config` or `IMURUN_CONFIG` put
/// it, inside the workspace too: a tool that rewrote it could change its own permissions.
#[test]
fn the_configuration_file_is_protected_wherever_it_is() {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let file = workspace.join("settings.toml");
    std::fs::write(&file, "[agent]\nmax_steps = 3\n").unwrap();
    let input = [
        r#"{"tool": "file_read", "args": {"path": "settings.toml"}}"#,
        r#"{"tool": "file_write", "args": {"path": "settings.toml", "content": "x"}}"#,
        r#"{"tool": "delete", "args": {"path": "settings.toml"}}"#,
        r#"{"tool": "file_read", "args": {"path": "other.toml"}}"#,
    ]
    .join("\n");
    let check = [
        "policy",
        "check",
        "--workspace",
        workspace.to_str().unwrap(),
        "--mode",
        "allow-all",
    ];
    let by_flag: Vec<&str> = ["--config", file.to_str().unwrap()]
        .into_iter()
        .chain(check)
        .collect();
    let runs = [
        imurun(home.path(), &by_flag, &input),
        run_imurun(
            &check,
            &input,
            &[
                ("IMURUN_HOME", home.path().as_os_str()),
                ("IMURUN_CONFIG", file.as_os_str()),
            ],
        ),
    ];
    for output in runs {
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let got = lines(&output);
        for verdict in &got[..3] {
            assert_eq!(verdict["decision"], "deny", "{verdict}");
            assert!(
                verdict["reason"]
                    .as_str()
                    .unwrap()
                    .contains("imurun's own configuration"),
                "{verdict}"
            );
        }
        assert_eq!(got[3]["decision"], "allow", "{}", got[3]);
    }
}

#[test]
fn policy_check_keeps_going_past_a_bad_line() {
    let home = tempfile::tempdir().unwrap();
    let input = "{\"tool\": \"get_time\", \"args\": {}}\nnot json\n{\"tool\": \"get_time\"}\n";
    let output = imurun(
        home.path(),
        &[
            "policy",
            "check",
            "--workspace",
            home.path().join("ws").to_str().unwrap(),
        ],
        input,
    );
    assert_eq!(output.status.code(), Some(1));
    let got = lines(&output);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0]["decision"], "allow");
    assert!(got[1]["error"].as_str().unwrap().contains("line 2"));
    assert_eq!(got[2]["decision"], "allow");

    let bad_mode = imurun(
        home.path(),
        &["policy", "check", "--workspace", "ws", "--mode", "yolo"],
        "",
    );
    assert_eq!(bad_mode.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_mode.stderr).contains("yolo"));
}

#[test]
fn policy_env_says_strip_or_keep() {
    let home = tempfile::tempdir().unwrap();
    let output = imurun(
        home.path(),
        &[
            "policy",
            "env",
            "GITHUB_TOKEN",
            "KEYBOARD",
            "PATH",
            "db_password",
            "MONKEY",
            "OPENAI_API_KEY",
        ],
        "",
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "strip\nkeep\nkeep\nstrip\nkeep\nstrip\n"
    );
}

#[test]
fn tools_run_goes_through_the_executor_and_the_audit() {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("ws");
    let ws = workspace.to_str().unwrap();
    let canary = "canary-6f1d0c2e-secret";

    // A write asks in the default mode; with no terminal it is declined and nothing is written.
    let declined = imurun(
        home.path(),
        &[
            "tools",
            "run",
            "file_write",
            "--workspace",
            ws,
            "--args",
            &format!(r#"{{"path": "a.txt", "content": "{canary}"}}"#),
        ],
        "",
    );
    assert_eq!(declined.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&declined.stdout).starts_with("FAILED:"));
    assert!(!workspace.join("a.txt").exists());

    // --yes approves it; the alias works; the read sees the content.
    let written = imurun(
        home.path(),
        &[
            "tools",
            "run",
            "write_file",
            "--yes",
            "--workspace",
            ws,
            "--args",
            &format!(r#"{{"path": "a.txt", "content": "{canary}"}}"#),
        ],
        "",
    );
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stdout)
    );
    let read = imurun(
        home.path(),
        &[
            "tools",
            "run",
            "file_read",
            "--workspace",
            ws,
            "--args",
            r#"{"path": "a.txt"}"#,
        ],
        "",
    );
    assert!(String::from_utf8_lossy(&read.stdout).contains(canary));

    // A hard denial holds even with --yes and allow-all.
    let denied = imurun(
        home.path(),
        &[
            "tools",
            "run",
            "shell",
            "--yes",
            "--mode",
            "allow-all",
            "--workspace",
            ws,
            "--args",
            r#"{"command": "rm -rf /"}"#,
        ],
        "",
    );
    assert_eq!(denied.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&denied.stdout).contains("deny-list"));

    // Bad arguments are a clear error, not a crash.
    let bad = imurun(
        home.path(),
        &[
            "tools",
            "run",
            "file_read",
            "--workspace",
            ws,
            "--args",
            "[1]",
        ],
        "",
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("JSON object"));

    // The audit recorded the calls, and never the canary in their arguments.
    let mut audit_bytes = Vec::new();
    for entry in std::fs::read_dir(home.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("imurun.db")
        {
            audit_bytes.extend(std::fs::read(&path).unwrap());
        }
    }
    assert!(!audit_bytes.is_empty(), "the audit database was written");
    assert!(
        !audit_bytes
            .windows(canary.len())
            .any(|window| window == canary.as_bytes()),
        "the canary reached the audit database"
    );
    let text = String::from_utf8_lossy(&audit_bytes);
    assert!(
        text.contains("G3-tool") && text.contains("file_write"),
        "audit rows are there"
    );
    // One row per run that reached the executor, as the executor decided it.
    let row = |tool: &str, decision: &str, outcome: &str| {
        (
            tool.to_owned(),
            "user".to_owned(),
            decision.to_owned(),
            outcome.to_owned(),
        )
    };
    assert_eq!(
        crate::support::audit_rows(home.path()),
        [
            row("file_write", "ask", "denied: user"),
            row("file_write", "ask", "ok"),
            row("file_read", "allow", "ok"),
            row("shell", "deny", "denied: policy"),
        ]
    );
}

#[test]
fn tools_list_names_every_built_in_tool() {
    let home = tempfile::tempdir().unwrap();
    let output = imurun(home.path(), &["tools", "list", "--json"], "");
    assert!(output.status.success());
    let names: Vec<String> = lines(&output)
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    for name in [
        "web_search",
        "file_read",
        "file_write",
        "list_dir",
        "make_dir",
        "delete",
        "shell",
        "get_time",
        "get_weather",
        "run_agent",
        "fetch_url",
    ] {
        assert!(
            names.iter().any(|have| have == name),
            "{name} missing from {names:?}"
        );
    }
}
