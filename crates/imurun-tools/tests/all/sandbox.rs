//! The shell under the OS sandbox (Landlock on Linux), through the executor: commands the
//! deny-list lets through in `allow-all`, and commands it cannot read that a person approved,
//! still cannot write outside the workspace; with the `network` toggle off they cannot open
//! TCP connections.

use std::fs;
use std::net::TcpListener;
use std::path::Path;

use imurun_core::{Decision, SandboxStatus};
use imurun_exec::{Execution, Outcome};
use imurun_policy::{CommandRisk, Mode, Rule, Settings, Toggles, command_risk};
use imurun_tools::sandbox_status;
use serde_json::json;

use crate::support::Harness;

/// Whether this machine says it has no Landlock: only then may the sandbox be missing.
fn landlock_excused() -> bool {
    std::env::var("IMURUN_TEST_NO_LANDLOCK").is_ok_and(|value| value == "1")
}

/// The sandbox on this machine: its ABI and whether signals are scoped. A test of what it
/// enforces fails when it is missing, unless the machine says it lacks Landlock (then `None`).
fn landlock() -> Option<(u32, bool)> {
    match sandbox_status() {
        SandboxStatus::Landlock {
            abi,
            filesystem,
            network,
            scoped,
        } => {
            assert!(filesystem, "Landlock without filesystem rules");
            assert!(network, "Landlock ABI {abi} has no network rules");
            Some((abi, scoped))
        }
        SandboxStatus::None { reason } => {
            assert!(
                landlock_excused(),
                "no OS sandbox on this machine: {reason} (IMURUN_TEST_NO_LANDLOCK=1 says the \
                 machine lacks Landlock)"
            );
            assert!(reason.contains("own rights"), "{reason}");
            None
        }
    }
}

#[test]
fn landlock_is_in_force_with_network_rules() {
    if let Some((abi, _)) = landlock() {
        assert!(abi >= 4, "ABI {abi}");
    }
}

/// Commands that write outside their folder in ways the deny-list does not judge destructive.
/// `{dir}` is the folder they aim at; each starts from `{dir}/victim.txt` holding "canary".
const ESCAPES: [&str; 14] = [
    // A verb built from a variable, and from pieces: nobody can tell what they run, so
    // `allow-all` refuses them and a person is asked.
    "v=rm; $v -f {dir}/victim.txt",
    "r=r; m=m; $r$m {dir}/victim.txt",
    // Inline code that computes what it runs.
    "python3 -c 'import os; c=\"rm -f {dir}/victim.txt\"; os.system(c)'",
    "python3 -c 'import os; p=\"{dir}\"; os.remove(p + \"/victim.txt\")'",
    // Interpreter one-liners.
    "python3 -c 'import os; os.remove(\"{dir}/victim.txt\")'",
    "python3 -c 'open(\"{dir}/victim.txt\", \"w\").write(\"gone\")'",
    "perl -e 'unlink \"{dir}/victim.txt\"'",
    // A script the command writes first, in the workspace: no list can read it.
    "printf 'rm -f \"$1\"\\n' > wipe.sh && sh wipe.sh {dir}/victim.txt",
    // Plain writes, renames, truncation, new files, folders and links.
    "echo overwritten > {dir}/victim.txt",
    ": > {dir}/victim.txt",
    "mv {dir}/victim.txt {dir}/moved.txt",
    "cp /etc/hostname {dir}/copy.txt",
    "mkdir {dir}/made",
    "ln -s /etc/hostname {dir}/link",
];

/// A canary folder holding `victim.txt`.
fn canary(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("victim.txt"), "canary").unwrap();
}

/// The folder's entries, sorted, and what `victim.txt` holds.
fn state(dir: &Path) -> (Vec<String>, Option<String>) {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (names, fs::read_to_string(dir.join("victim.txt")).ok())
}

/// Runs each of [`ESCAPES`] aimed at a fresh canary folder `dir` through `harness`, and
/// hands `check` the command, its execution and the folder's state afterwards. A command the
/// deny-list cannot read is refused in `allow-all` (checked here) and run as a person's
/// approval in `ask` mode; the rest run in `allow-all`.
async fn run_escapes(
    harness: &Harness,
    dir: &Path,
    mut check: impl FnMut(&str, &Execution, (Vec<String>, Option<String>)),
) {
    for template in ESCAPES {
        canary(dir);
        let command = template.replace("{dir}", &dir.display().to_string());
        let args = json!({"command": command});
        let execution = match command_risk(&command) {
            None => harness.call("shell", args).await,
            Some(CommandRisk::Opaque(_)) => {
                let refused = harness.call("shell", args.clone()).await;
                assert_eq!(refused.decision, Decision::Deny, "{command}");
                assert_eq!(
                    refused.verdict.map(|v| v.rule),
                    Some(Rule::OpaqueCommand),
                    "{command}"
                );
                harness.call_approved("shell", args).await
            }
            Some(CommandRisk::Destructive(reason)) => panic!("{command}: {reason}"),
        };
        assert_eq!(
            execution.outcome,
            Outcome::Ok,
            "{command}: {}",
            execution.output.text
        );
        check(&command, &execution, state(dir));
        fs::remove_dir_all(dir).unwrap();
    }
}

/// The canary folder as it was made.
fn untouched() -> (Vec<String>, Option<String>) {
    (vec!["victim.txt".to_string()], Some("canary".to_string()))
}

#[tokio::test]
async fn commands_the_deny_list_misses_cannot_write_outside_the_workspace() {
    if landlock().is_none() {
        return;
    }
    let harness = Harness::new(Mode::AllowAll);
    let outside = tempfile::tempdir().unwrap();
    let dir = outside.path().join("canary");
    let mut opaque = 0;
    run_escapes(&harness, &dir, |command, execution, after| {
        opaque += usize::from(matches!(
            command_risk(command),
            Some(CommandRisk::Opaque(_))
        ));
        assert_ne!(execution.decision, Decision::Deny, "{command}");
        let text = &execution.output.text;
        assert_eq!(
            after,
            untouched(),
            "{command} changed a folder outside the workspace: {text}"
        );
        // perl's `unlink` fails quietly; `os.system` reports the refusal but exits 0;
        // everything else says it failed.
        let failed = !text.starts_with("exit code: 0\n") || text.contains("Permission denied");
        assert!(
            failed || command.contains("perl"),
            "{command} should have failed: {text}"
        );
    })
    .await;
    // Both kinds ran: commands the list lets through, and approved ones it cannot read.
    assert_eq!(opaque, 4, "opaque escapes");
}

#[tokio::test]
async fn the_same_commands_work_inside_the_workspace() {
    if landlock().is_none() {
        return;
    }
    let harness = Harness::new(Mode::AllowAll);
    let dir = harness.ws.root().join("canary");
    run_escapes(&harness, &dir, |command, execution, after| {
        let text = &execution.output.text;
        assert_ne!(
            after,
            untouched(),
            "{command} did nothing inside the workspace: {text}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_run_writes_its_private_temporary_folder_and_the_null_devices() {
    if landlock().is_none() {
        return;
    }
    let harness = Harness::new(Mode::AllowAll);
    let command = "echo kept > \"$TMPDIR/note\" && cat \"$TMPDIR/note\" && echo \"tmp=$TMPDIR\" \
                   && mktemp >/dev/null && echo discarded > /dev/null && echo to-stderr > /dev/stderr";
    let execution = harness.call("shell", json!({"command": command})).await;
    let text = &execution.output.text;
    assert!(text.starts_with("exit code: 0\nkept\n"), "{text}");
    assert!(text.contains("to-stderr"), "{text}");
    let temp = text
        .lines()
        .find_map(|line| line.strip_prefix("tmp="))
        .unwrap();
    assert!(temp.contains("imurun-run-"), "{temp}");
    assert!(!Path::new(temp).exists(), "{temp} outlived its run");
}

#[tokio::test]
async fn with_the_network_toggle_off_a_command_cannot_use_tcp() {
    if landlock().is_none() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'"
    );
    let bind = "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"bound\")'";
    let harness = Harness::new(Mode::AllowAll);

    let on = harness.call("shell", json!({"command": connect})).await;
    assert!(on.output.text.contains("connected"), "{}", on.output.text);
    let on = harness.call("shell", json!({"command": bind})).await;
    assert!(on.output.text.contains("bound"), "{}", on.output.text);

    harness.executor.set_settings(Settings {
        mode: Mode::AllowAll,
        toggles: Toggles {
            network: false,
            ..Toggles::default()
        },
    });
    for command in [connect.as_str(), bind] {
        let off = harness.call("shell", json!({"command": command})).await;
        assert_eq!(off.outcome, Outcome::Ok, "{}", off.output.text);
        let text = &off.output.text;
        assert!(
            !text.contains("connected") && !text.contains("bound"),
            "{text}"
        );
        assert!(text.contains("PermissionError"), "{text}");
    }
    drop(listener);
}

#[tokio::test]
async fn a_command_cannot_signal_processes_outside_its_sandbox() {
    let Some((_, scoped)) = landlock() else {
        return;
    };
    let harness = Harness::new(Mode::AllowAll);
    let own = std::process::id();
    let command = format!("kill -0 {own} && echo reached || echo refused; kill -0 $$ && echo self");
    let execution = harness.call("shell", json!({"command": command})).await;
    let text = &execution.output.text;
    // Before ABI 6 signals are not scoped, and the report says so.
    if scoped {
        assert!(
            text.contains("refused") && !text.contains("reached"),
            "{text}"
        );
    } else {
        assert!(text.contains("reached"), "{text}");
    }
    assert!(text.contains("self"), "{text}");
}

#[tokio::test]
async fn with_the_network_toggle_off_udp_and_mptcp_are_refused_too() {
    if landlock().is_none() {
        return;
    }
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = receiver.local_addr().unwrap().port();
    let udp = format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
         s.sendto(b\"ping\", (\"127.0.0.1\", {port})); print(\"sent\")'"
    );
    // MPTCP (protocol 262) falls back to plain TCP toward any server: Landlock's TCP rules do
    // not see it.
    let mptcp = "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); \
                 print(\"made\")'";
    let harness = Harness::new(Mode::AllowAll);

    let on = harness.call("shell", json!({"command": udp})).await;
    assert!(on.output.text.contains("sent"), "{}", on.output.text);
    let mut buffer = [0u8; 16];
    let (n, _) = receiver.recv_from(&mut buffer).unwrap();
    assert_eq!(&buffer[..n], b"ping");

    harness.executor.set_settings(Settings {
        mode: Mode::AllowAll,
        toggles: Toggles {
            network: false,
            ..Toggles::default()
        },
    });
    for command in [udp.as_str(), mptcp] {
        let off = harness.call("shell", json!({"command": command})).await;
        let text = &off.output.text;
        assert!(!text.contains("sent") && !text.contains("made"), "{text}");
        assert!(text.contains("PermissionError"), "{command}: {text}");
    }
    assert!(
        receiver.recv_from(&mut buffer).is_err(),
        "a datagram got out"
    );
    // A TCP socket may still be made (Landlock refuses its connect and bind), and the shell
    // itself runs as before.
    let tcp = "python3 -c 'import socket; socket.socket(); print(\"tcp made\")'";
    let off = harness.call("shell", json!({"command": tcp})).await;
    assert!(off.output.text.contains("tcp made"), "{}", off.output.text);
}
