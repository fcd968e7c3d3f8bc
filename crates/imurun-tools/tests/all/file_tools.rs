//! The file tools in a temporary workspace: each operation, and each failure as a `FAILED:`
//! result. The seed's `tests/test_agentic_tools.py` list.

use std::fs;
use std::os::unix::fs::symlink;

use imurun_core::{StopFlag, Tool};
use imurun_exec::Outcome;
use imurun_policy::Mode;
use imurun_testkit::{TempWorkspace, object};
use imurun_tools::{FILE_READ_BYTES_MAX, file_read_tool, list_dir_tool};
use serde_json::{Value, json};

use crate::support::Harness;

/// Runs one call through the executor in allow-all mode and checks its result.
async fn check(harness: &Harness, name: &str, call_args: Value, ok: bool, expected: &str) {
    let execution = harness.call(name, call_args.clone()).await;
    let text = &execution.output.text;
    assert_eq!(execution.output.ok, ok, "{name} {call_args}: {text}");
    if !ok {
        assert!(text.starts_with("FAILED: "), "{name} {call_args}: {text}");
    }
    assert!(
        text.contains(expected),
        "{name} {call_args}: expected `{expected}` in {text}"
    );
}

#[tokio::test]
async fn each_file_tool_works_in_the_workspace() {
    let h = Harness::new(Mode::AllowAll);
    let root = h.ws.root().to_path_buf();

    check(
        &h,
        "file_write",
        json!({"path": "notes/today.md", "content": "héllo"}),
        true,
        "wrote 6 bytes to `notes/today.md`",
    )
    .await;
    assert_eq!(
        fs::read_to_string(root.join("notes/today.md")).unwrap(),
        "héllo"
    );
    check(
        &h,
        "file_read",
        json!({"path": "notes/today.md"}),
        true,
        "héllo",
    )
    .await;
    check(
        &h,
        "file_write",
        json!({"path": "notes/today.md", "content": "two"}),
        true,
        "wrote 3 bytes",
    )
    .await;
    check(
        &h,
        "file_read",
        json!({"path": "./notes/../notes/today.md"}),
        true,
        "two",
    )
    .await;
    check(
        &h,
        "file_write",
        json!({"path": "empty.txt", "content": ""}),
        true,
        "wrote 0 bytes",
    )
    .await;
    check(
        &h,
        "file_read",
        json!({"path": "empty.txt"}),
        true,
        "(`empty.txt` is empty)",
    )
    .await;

    check(
        &h,
        "make_dir",
        json!({"path": "a/b/c"}),
        true,
        "created the folder `a/b/c`",
    )
    .await;
    assert!(root.join("a/b/c").is_dir());
    check(
        &h,
        "make_dir",
        json!({"path": "a/b"}),
        true,
        "already exists",
    )
    .await;

    h.ws.write(".env", "KEY=1");
    symlink("notes/today.md", root.join("link")).unwrap();
    check(&h, "list_dir", json!({}), true, "the workspace root:\n.env  (5 bytes)  (protected: tools may not open it)\na/\nempty.txt  (0 bytes)\nlink  (symlink)\nnotes/").await;
    check(
        &h,
        "list_dir",
        json!({"path": "notes"}),
        true,
        "`notes`:\ntoday.md  (3 bytes)",
    )
    .await;
    check(
        &h,
        "list_dir",
        json!({"path": "a/b/c"}),
        true,
        "`a/b/c` is empty",
    )
    .await;

    check(
        &h,
        "delete",
        json!({"path": "link"}),
        true,
        "deleted `link`",
    )
    .await;
    assert!(
        root.join("notes/today.md").exists(),
        "deleting a link keeps its target"
    );
    check(
        &h,
        "delete",
        json!({"path": "notes/today.md"}),
        true,
        "deleted `notes/today.md`",
    )
    .await;
    check(
        &h,
        "delete",
        json!({"path": "a"}),
        true,
        "deleted the folder `a` and everything in it",
    )
    .await;
    assert!(!root.join("a").exists());
}

#[tokio::test]
async fn each_file_tool_failure_is_a_failed_result() {
    let h = Harness::new(Mode::AllowAll);
    h.ws.write("bin.dat", b"\x00\x01\x02\xff");
    h.ws.write("latin1.txt", b"caf\xe9");
    h.ws.write(
        "big.txt",
        vec![b'a'; usize::try_from(FILE_READ_BYTES_MAX).unwrap() + 1],
    );
    h.ws.write("folder/inner.txt", "x");
    let cases = [
        (
            "file_read",
            json!({"path": "missing.txt"}),
            "cannot open `missing.txt`",
        ),
        (
            "file_read",
            json!({"path": "bin.dat"}),
            "`bin.dat` is a binary file, not UTF-8 text",
        ),
        (
            "file_read",
            json!({"path": "latin1.txt"}),
            "`latin1.txt` is a binary file",
        ),
        (
            "file_read",
            json!({"path": "big.txt"}),
            "more than the 262144 file_read returns",
        ),
        (
            "file_read",
            json!({"path": "folder"}),
            "`folder` is not a regular file",
        ),
        (
            "file_read",
            json!({"path": "../outside/secret.txt"}),
            "denied by policy: `../outside/secret.txt` is outside the workspace",
        ),
        (
            "file_read",
            json!({"path": ".env"}),
            "denied by policy: `.env` is protected",
        ),
        (
            "file_read",
            json!({}),
            "invalid arguments for `file_read`: `path` is required but missing",
        ),
        (
            "file_write",
            json!({"path": "folder", "content": "x"}),
            "`folder` is not a regular file",
        ),
        (
            "file_write",
            json!({"path": "folder/inner.txt/deeper", "content": "x"}),
            "FAILED: ",
        ),
        (
            "file_write",
            json!({"path": "x.txt"}),
            "`content` is required but missing",
        ),
        (
            "file_write",
            json!({"path": "x.txt", "content": 5}),
            "`content` must be a string, got an integer",
        ),
        (
            "list_dir",
            json!({"path": "missing"}),
            "cannot open `missing`",
        ),
        (
            "list_dir",
            json!({"path": "folder/inner.txt"}),
            "`folder/inner.txt` is not a folder",
        ),
        (
            "list_dir",
            json!({"path": "/etc"}),
            "denied by policy: `/etc` is outside the workspace",
        ),
        (
            "make_dir",
            json!({"path": "folder/inner.txt"}),
            "cannot create `folder/inner.txt`",
        ),
        (
            "make_dir",
            json!({"path": ".git/hooks"}),
            "denied by policy: `.git/hooks` is protected",
        ),
        (
            "delete",
            json!({"path": "missing.txt"}),
            "cannot inspect `missing.txt`",
        ),
        ("delete", json!({"path": "."}), "denied by policy"),
        (
            "delete",
            json!({"path": "../outside"}),
            "denied by policy: `../outside` is outside the workspace",
        ),
    ];
    for (name, call_args, expected) in cases {
        check(&h, name, call_args, false, expected).await;
    }
    assert!(h.ws.base.join("outside/secret.txt").exists());
}

/// A direct `run` (no executor, no policy step) still confines paths: the tools check again.
#[tokio::test]
async fn file_tools_check_paths_again_when_run_directly() {
    let ws = TempWorkspace::new();
    ws.write("ok.txt", "fine");
    symlink(ws.base.join("outside"), ws.root().join("escape")).unwrap();
    let read = file_read_tool(ws.workspace.clone());
    let list = list_dir_tool(ws.workspace.clone());
    let context = ws.context(StopFlag::new());
    let cases: [(&dyn Tool, Value, bool, &str); 6] = [
        (&read, json!({"path": "ok.txt"}), true, "fine"),
        (
            &read,
            json!({"path": "../outside/secret.txt"}),
            false,
            "is outside the workspace",
        ),
        (
            &read,
            json!({"path": "escape/secret.txt"}),
            false,
            "is outside the workspace",
        ),
        (
            &read,
            json!({"path": "/etc/passwd"}),
            false,
            "is outside the workspace",
        ),
        (&read, json!({"path": 7}), false, "`path` must be a string"),
        (
            &list,
            json!({"path": "escape"}),
            false,
            "is outside the workspace",
        ),
    ];
    for (tool, call_args, ok, expected) in cases {
        let output = tool.run(&context, &object(call_args.clone())).await;
        assert_eq!(output.ok, ok, "{call_args}: {}", output.text);
        assert!(
            output.text.contains(expected),
            "{call_args}: {}",
            output.text
        );
    }
}

#[tokio::test]
async fn a_write_is_atomic_and_leaves_no_temporary_file() {
    let h = Harness::new(Mode::AllowAll);
    let execution = h
        .call("file_write", json!({"path": "a.txt", "content": "body"}))
        .await;
    assert_eq!(execution.outcome, Outcome::Ok);
    let names: Vec<String> = fs::read_dir(h.ws.root())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.txt"]);
}

#[tokio::test]
async fn get_time_and_which_tools_are_ready() {
    let h = Harness::new(Mode::AllowReads);
    check(
        &h,
        "get_time",
        json!({"timezone": "UTC"}),
        true,
        "(UTC, UTC+00:00)",
    )
    .await;
    check(&h, "get_time", json!({}), true, "ISO 8601: ").await;
    check(
        &h,
        "get_time",
        json!({"timezone": "Nowhere/City"}),
        false,
        "`Nowhere/City` is not a known time zone",
    )
    .await;
    check(
        &h,
        "run_agent",
        json!({"task": "t"}),
        false,
        "`run_agent` is unavailable",
    )
    .await;
    let run_agent = h.executor.registry().get("run_agent").unwrap();
    assert!(matches!(
        run_agent.available(),
        imurun_core::Availability::Unavailable(_)
    ));
    // The network tools have providers (DuckDuckGo and Open-Meteo need no key); they are
    // run against local servers in `providers`, `weather` and `fetch_url`, never here.
    for name in ["file_read", "web_search", "get_weather", "fetch_url"] {
        let ready = h.executor.registry().get(name).unwrap().available();
        assert_eq!(ready, imurun_core::Availability::Ready, "{name}");
    }
}
