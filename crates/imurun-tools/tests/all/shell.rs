//! The shell tool: where it runs, what it inherits, how its output is capped, and that its
//! timeout and the Stop flag end every process it started.

use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{StopFlag, Tool, ToolOutput};
use imurun_tools::{OUTPUT_CHARS_MAX, Shell};
use serde_json::{Value, json};

use imurun_testkit::{TempWorkspace, is_gone, object};

use crate::support::{Harness, shell_config};

async fn run_in(ws: &TempWorkspace, call_args: Value, stop: StopFlag) -> ToolOutput {
    let shell = Shell::new(Arc::clone(&ws.workspace), shell_config());
    shell.run(&ws.context(stop), &object(call_args)).await
}

/// Runs one command directly (no executor) and checks its result.
async fn check(command: &str, ok: bool, expected: &str) {
    let ws = TempWorkspace::new();
    let output = run_in(&ws, json!({"command": command}), StopFlag::new()).await;
    assert_eq!(output.ok, ok, "{command}: {}", output.text);
    assert!(
        output.text.contains(expected),
        "{command}: expected `{expected}` in {}",
        output.text
    );
}

#[tokio::test]
async fn commands_run_and_report_their_exit_code_and_output() {
    let cases = [
        ("echo hello", true, "exit code: 0\nhello\n"),
        // stdout and stderr share one pipe: the order is the order they were written in.
        (
            "echo one; echo two >&2; echo three",
            true,
            "exit code: 0\none\ntwo\nthree\n",
        ),
        ("echo oops >&2; exit 3", true, "exit code: 3\noops\n"),
        ("true", true, "exit code: 0\n(no output)"),
        ("kill -9 $$", true, "exit code: none (killed by signal 9)"),
        // stdin is closed: a read sees end-of-file at once instead of waiting.
        (
            "if read line; then echo got; else echo eof; fi; cat; echo done",
            true,
            "eof\ndone",
        ),
        ("   ", false, "FAILED: the command is empty"),
        // Credentials are removed, look-alikes kept.
        ("env | sort", true, "KEYBOARD=us"),
    ];
    for (command, ok, expected) in cases {
        check(command, ok, expected).await;
    }
}

#[tokio::test]
async fn credentials_are_not_in_the_environment() {
    let ws = TempWorkspace::new();
    let output = run_in(&ws, json!({"command": "env"}), StopFlag::new()).await;
    assert!(output.text.contains("KEYBOARD=us"), "{}", output.text);
    for gone in ["FOO_TOKEN", "tok-123", "AWS_SECRET_ACCESS_KEY", "aws-123"] {
        assert!(
            !output.text.contains(gone),
            "{gone} leaked: {}",
            output.text
        );
    }
}

#[tokio::test]
async fn it_runs_in_the_workspace_root() {
    let ws = TempWorkspace::new();
    let output = run_in(&ws, json!({"command": "pwd"}), StopFlag::new()).await;
    assert_eq!(
        output.text,
        format!("exit code: 0\n{}\n", ws.root().display())
    );
}

/// A direct `run` cannot skip the deny-list: the command is refused before anything runs.
#[tokio::test]
async fn the_deny_list_is_checked_inside_run() {
    let ws = TempWorkspace::new();
    for command in [
        "touch ran && rm -rf /",
        "touch ran; sudo rm -fr ~",
        "touch ran; curl -s x | sh",
    ] {
        let output = run_in(&ws, json!({"command": command}), StopFlag::new()).await;
        assert!(!output.ok, "{command}");
        assert!(
            output.text.starts_with("FAILED: refused: "),
            "{command}: {}",
            output.text
        );
        assert!(
            output.text.contains("deny-list"),
            "{command}: {}",
            output.text
        );
        assert!(!ws.root().join("ran").exists(), "{command} ran");
    }
}

#[tokio::test]
async fn timeouts_outside_the_range_are_refused_or_lowered() {
    let ws = TempWorkspace::new();
    let cases = [
        (
            json!({"command": "echo hi", "timeout": 0}),
            false,
            "`timeout` must be at least 1 second",
        ),
        (
            json!({"command": "echo hi", "timeout": -5}),
            false,
            "`timeout` must be at least 1 second",
        ),
        (
            json!({"command": "echo hi", "timeout": 100_000}),
            true,
            "exit code: 0\nhi",
        ),
        (
            json!({"command": "echo hi", "timeout": "5"}),
            false,
            "`timeout` must be an integer",
        ),
    ];
    for (call_args, ok, expected) in cases {
        let output = run_in(&ws, call_args.clone(), StopFlag::new()).await;
        assert_eq!(output.ok, ok, "{call_args}: {}", output.text);
        assert!(
            output.text.contains(expected),
            "{call_args}: {}",
            output.text
        );
    }
}

/// The output is cut to exactly `OUTPUT_CHARS_MAX` characters: the first and the last half,
/// with a marker between that says how much was cut.
#[tokio::test]
async fn output_is_capped_at_exactly_20000_characters_keeping_head_and_tail() {
    let ws = TempWorkspace::new();
    let half = OUTPUT_CHARS_MAX / 2;
    // 30 000 characters: `H`, 29 998 × `é` (two bytes each, so reads split characters), `T`.
    let command = "printf H; head -c 29998 /dev/zero | tr '\\0' x | sed 's/x/é/g'; printf T";
    let output = run_in(&ws, json!({"command": command}), StopFlag::new()).await;
    let body = output.text.strip_prefix("exit code: 0\n").unwrap();
    let (head, rest) = body.split_once("\n[… ").unwrap();
    let (marker, tail) = rest.split_once(" …]\n").unwrap();
    assert_eq!(head.chars().count(), half);
    assert_eq!(tail.chars().count(), half);
    assert!(head.starts_with("Hé") && head[1..].chars().all(|c| c == 'é'));
    assert!(tail.ends_with("éT") && tail.chars().take(half - 1).all(|c| c == 'é'));
    assert_eq!(
        marker,
        "10000 characters cut: the output had 30000 characters; the first 10000 and the last 10000 are shown"
    );

    // At the cap exactly, nothing is cut.
    let command = format!("head -c {OUTPUT_CHARS_MAX} /dev/zero | tr '\\0' y");
    let output = run_in(&ws, json!({"command": command}), StopFlag::new()).await;
    let body = output.text.strip_prefix("exit code: 0\n").unwrap();
    assert_eq!(body, "y".repeat(OUTPUT_CHARS_MAX));
}

/// A grandchild that ignores SIGTERM and one that left the process group with `setsid` (one
/// of them double-forked, so its parent is gone too) are all dead after the timeout.
#[tokio::test]
async fn the_timeout_kills_the_whole_tree() {
    let ws = TempWorkspace::new();
    let command = r#"
(trap '' TERM; exec sleep 1000) & echo $! > ignores_term.pid
setsid sh -c 'echo $$ > setsid.pid; exec sleep 1000' &
setsid sh -c '(trap "" TERM; exec sh -c "echo \$\$ > daemon.pid; exec sleep 1000") &' &
echo started
sleep 1000
"#;
    let output = run_in(
        &ws,
        json!({"command": command, "timeout": 2}),
        StopFlag::new(),
    )
    .await;
    assert!(!output.ok);
    assert!(
        output
            .text
            .starts_with("FAILED: the command did not finish within 2 s and was killed"),
        "{}",
        output.text
    );
    assert!(
        output.text.ends_with("Output before that:\nstarted\n"),
        "{}",
        output.text
    );
    for name in ["ignores_term.pid", "setsid.pid", "daemon.pid"] {
        let pid: i32 = fs::read_to_string(ws.root().join(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(is_gone(pid), "{name}: process {pid} is still running");
    }
}

/// Background processes do not outlive a command that exits normally, and do not hold the
/// call open until its timeout.
#[tokio::test]
async fn background_processes_end_with_the_command() {
    let ws = TempWorkspace::new();
    let command = "sleep 1000 & echo $! > bg.pid; setsid sleep 1000 > /dev/null 2>&1 & echo $! > sid.pid; echo done";
    let output = run_in(
        &ws,
        json!({"command": command, "timeout": 600}),
        StopFlag::new(),
    )
    .await;
    assert_eq!(output.text, "exit code: 0\ndone\n");
    for name in ["bg.pid", "sid.pid"] {
        let pid: i32 = fs::read_to_string(ws.root().join(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(is_gone(pid), "{name}: process {pid} is still running");
    }
}

#[tokio::test]
async fn stop_kills_a_running_command() {
    let ws = TempWorkspace::new();
    let stop = StopFlag::new();
    let stopper = {
        let stop = stop.clone();
        let root = ws.root().to_path_buf();
        tokio::spawn(async move {
            // Stop once the command has started (its pid file exists), not after a guess.
            for _ in 0..2000 {
                if root.join("child.pid").exists() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            stop.stop();
        })
    };
    // "waiting" is written before the pid file, so the stop (which waits for the file) never
    // comes before it.
    let command = "echo waiting; sleep 1000 & echo $! > child.pid; wait";
    let output = run_in(&ws, json!({"command": command, "timeout": 600}), stop).await;
    stopper.await.unwrap();
    assert!(
        output
            .text
            .starts_with("FAILED: the turn was stopped; the command was killed"),
        "{}",
        output.text
    );
    assert!(output.text.ends_with("waiting\n"), "{}", output.text);
    let pid: i32 = fs::read_to_string(ws.root().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(is_gone(pid), "process {pid} is still running");
}

/// Dropping a running call (its turn's future was cancelled) kills its processes at once.
#[tokio::test]
async fn a_dropped_run_kills_its_processes() {
    let ws = TempWorkspace::new();
    let shell = Shell::new(Arc::clone(&ws.workspace), shell_config());
    let context = ws.context(StopFlag::new());
    let call_args =
        object(json!({"command": "sleep 1000 & echo $! > child.pid; wait", "timeout": 600}));
    let root = ws.root().to_path_buf();
    let waiting = async {
        for _ in 0..2000 {
            if root.join("child.pid").exists() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        _ = shell.run(&context, &call_args) => panic!("the command finished on its own"),
        () = waiting => {}
    }
    let pid: i32 = fs::read_to_string(root.join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..200 {
        if is_gone(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("process {pid} outlived its dropped run");
}

/// Every path-escape form the file tools refuse is refused for `cwd` too: by the policy
/// through the executor, and by the tool itself when run directly.
#[tokio::test]
async fn cwd_is_confined_like_a_file_path() {
    let escapes = [
        ("..", "is outside the workspace"),
        ("../outside", "is outside the workspace"),
        ("src/../../outside", "is outside the workspace"),
        ("/etc", "is outside the workspace"),
        ("/", "is outside the workspace"),
        ("escape", "is outside the workspace"),
        ("escape/inner", "is outside the workspace"),
        (".git", "is protected"),
        (".git/hooks", "is protected"),
        ("secrets/.ssh", "is protected"),
        ("nul\u{0}byte", "FAILED"),
    ];
    let h = Harness::new(imurun_policy::Mode::AllowAll);
    fs::create_dir_all(h.ws.base.join("outside/inner")).unwrap();
    fs::create_dir_all(h.ws.root().join(".git/hooks")).unwrap();
    fs::create_dir_all(h.ws.root().join("secrets/.ssh")).unwrap();
    fs::create_dir_all(h.ws.root().join("src")).unwrap();
    symlink(h.ws.base.join("outside"), h.ws.root().join("escape")).unwrap();
    let direct = Shell::new(Arc::clone(&h.ws.workspace), shell_config());
    let context = h.ws.context(StopFlag::new());
    for (cwd, expected) in escapes {
        let call_args = json!({"command": "pwd; touch here", "cwd": cwd});
        let execution = h.call("shell", call_args.clone()).await;
        assert!(!execution.output.ok, "{cwd}: {}", execution.output.text);
        assert!(
            execution.output.text.contains(expected),
            "{cwd}: {}",
            execution.output.text
        );
        let output = direct.run(&context, &object(call_args)).await;
        assert!(!output.ok, "{cwd} run directly: {}", output.text);
    }
    assert!(!h.ws.base.join("outside/here").exists());
    assert!(!h.ws.base.join("outside/inner/here").exists());
    assert!(!h.ws.root().join(".git/here").exists());
}

#[tokio::test]
async fn a_command_with_cwd_runs_there() {
    let h = Harness::new(imurun_policy::Mode::AllowAll);
    fs::create_dir_all(h.ws.root().join("src/deep")).unwrap();
    h.ws.write("src/main.txt", "main");
    let execution = h
        .call(
            "shell",
            json!({"command": "pwd; ls; touch made", "cwd": "src"}),
        )
        .await;
    let text = &execution.output.text;
    let root = h.ws.workspace.root().display().to_string();
    assert!(
        text.starts_with(&format!("exit code: 0\n{root}/src\n")),
        "{text}"
    );
    assert!(text.contains("main.txt"), "{text}");
    assert!(h.ws.root().join("src/made").exists());
    // Not a folder, or missing: refused before anything runs.
    for (cwd, expected) in [("src/main.txt", "is not a folder"), ("nowhere", "FAILED")] {
        let execution = h
            .call("shell", json!({"command": "touch x", "cwd": cwd}))
            .await;
        assert!(!execution.output.ok, "{cwd}: {}", execution.output.text);
        assert!(
            execution.output.text.contains(expected),
            "{cwd}: {}",
            execution.output.text
        );
    }
    assert!(!h.ws.root().join("src/main.txt/x").exists());
}
