//! The operator's one-command steps against a real `imurun serve --keep` with the embedded
//! model: a person added, her ceiling set, the example agent deployed from its pack folder and
//! from a signed pack file, each refusal said; revoking her shuts her out. A person talking to
//! the agent is `keep_talk_page.rs`'s (in the page, across a restart) and
//! `scripts/demo-keep.sh`'s (the quick start's commands).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use imurun_testkit::Guest;
use serde_json::{Value, json};

use crate::serve_cli::Server;
use crate::support::{model_path, run_imurun};

/// Runs `imurun` with `IMURUN_HOME` and `envs`: its exit code, stdout and stderr.
fn imurun(home: &Path, args: &[&str], envs: &[(&str, &OsStr)]) -> (i32, String, String) {
    let mut all = vec![("IMURUN_HOME", home.as_os_str())];
    all.extend_from_slice(envs);
    let output = run_imurun(args, "", &all);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn example_pack() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/keep/packs/helper")
}

/// The example pack copied to `dir` with its component, its manifest at `version`.
fn pack_folder(dir: &Path, version: i64) -> PathBuf {
    let folder = dir.join(format!("helper-{version}"));
    std::fs::create_dir_all(&folder).unwrap();
    let text = std::fs::read_to_string(example_pack().join("manifest.json")).unwrap();
    let mut manifest: Value = serde_json::from_str(&text).unwrap();
    manifest["version"] = json!(version);
    std::fs::write(folder.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(folder.join("chat_agent.wasm"), Guest::Chat.bytes()).unwrap();
    folder
}

fn start(home: &Path, operator: &str) -> Server {
    let model = model_path();
    Server::start_as(
        home,
        model.to_str().unwrap(),
        &["--keep"],
        &[("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", OsStr::new("8080"))],
        Some(operator),
    )
}

#[test]
fn an_operator_deploys_the_example_agent_in_one_command_and_revokes_a_person() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (code, out, err) = imurun(home, &["keep", "init"], &[]);
    assert_eq!(code, 0, "{err}");
    let operator = out
        .lines()
        .find(|line| line.starts_with("imk_"))
        .unwrap()
        .to_owned();
    let server = start(home, &operator);
    let url = format!("http://{}", server.addr);
    let as_operator = [
        ("IMURUN_URL", OsStr::new(&url)),
        ("IMURUN_KEEP_TOKEN", OsStr::new(&operator)),
    ];
    let run = |args: &[&str]| imurun(home, args, &as_operator);

    let (code, out, err) = run(&["keep", "people", "add", "alice"]);
    assert_eq!(code, 0, "{err}");
    let alice = out
        .lines()
        .find_map(|line| line.trim().strip_prefix("token"))
        .map(|token| token.trim().to_owned())
        .expect("the token is printed");
    // The policy key signs a ceiling and nothing else through this command.
    let other = home.join("not-a-ceiling.json");
    std::fs::write(&other, r#"{"type": "imurun.trust_root", "version": 2}"#).unwrap();
    let (code, _, err) = run(&["keep", "ceiling", "set", "alice", other.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("nothing was signed"), "{err}");
    // A host URL with a query would swallow the route: refused before anything is sent.
    let (code, _, err) = imurun(
        home,
        &["keep", "people", "list"],
        &[
            ("IMURUN_URL", OsStr::new(&format!("{url}/v1/people/bob?"))),
            ("IMURUN_KEEP_TOKEN", OsStr::new(&operator)),
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("has a query"), "{err}");
    let ceiling = example_pack().join("ceiling.json");
    let (code, out, err) = run(&["keep", "ceiling", "set", "alice", ceiling.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("alice's ceiling version 1 is in force"),
        "{out}"
    );

    // A signed pack file, made on the operator's machine, deploys as it is; it holds
    // signatures and never a key.
    let work = tempfile::tempdir().unwrap();
    let first = pack_folder(work.path(), 1);
    let pack = work.path().join("helper.pack.json");
    let (code, out, err) = run(&[
        "keep",
        "sign",
        "--bundle",
        first.to_str().unwrap(),
        "--out",
        pack.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("signed helper version 1"), "{out}");
    let signed: Value = serde_json::from_slice(&std::fs::read(&pack).unwrap()).unwrap();
    let mut fields: Vec<&str> = signed
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, ["bundle", "bundle_signature", "policy"]);
    let pack_text = std::fs::read_to_string(&pack).unwrap();
    for key in ["policy.key", "signer.key"] {
        let secret = std::fs::read_to_string(home.join("keep").join(key)).unwrap();
        for line in secret.lines().filter(|line| line.len() > 16) {
            assert!(!pack_text.contains(line.trim()), "the pack holds {key}");
        }
    }
    // Signing never overwrites a file.
    let (code, _, err) = run(&[
        "keep",
        "sign",
        "--bundle",
        first.to_str().unwrap(),
        "--out",
        pack.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("an existing file is kept"), "{err}");
    let (code, out, err) = run(&["keep", "deploy", "--signed", pack.to_str().unwrap()]);
    assert_eq!(
        (code, out.trim()),
        (0, "deployed helper version 1"),
        "{err}"
    );

    // The pack folder in one command: a new version, its expiry stated.
    let second = pack_folder(work.path(), 2);
    let (code, out, err) = run(&["keep", "deploy", second.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("deployed helper version 2 (its policy expires "),
        "{out}"
    );
    // An old version is refused by the host, and said so.
    let (code, _, err) = run(&["keep", "deploy", "--signed", pack.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("the host refused"), "{err}");
    // A host that does not answer is named, with how to name another.
    let (code, _, err) = imurun(
        home,
        &["keep", "people", "list"],
        &[
            ("IMURUN_URL", OsStr::new("http://127.0.0.1:1")),
            ("IMURUN_KEEP_TOKEN", OsStr::new(&operator)),
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("http://127.0.0.1:1") && err.contains("IMURUN_URL"),
        "{err}"
    );

    // The agent in force is the one the folder deployed; a person talking to it is
    // `keep_talk_page.rs`'s (in the page) and `scripts/demo-keep.sh`'s (the quick start).
    let (status, _, agents) = server.request_as(Some(&alice), "GET", "/v1/agents", None);
    assert_eq!(status, 200, "{agents}");
    assert_eq!(agents["agents"][0]["name"], "helper", "{agents}");
    assert_eq!(agents["agents"][0]["version"], 2, "{agents}");

    // Revoking her shuts her out at once.
    let (code, out, err) = run(&["keep", "people", "revoke", "alice"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tokens revoked     1"), "{out}");
    let (status, _, _) = server.request_as(Some(&alice), "GET", "/v1/whoami", None);
    assert_eq!(status, 401);
}
