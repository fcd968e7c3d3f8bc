//! The operator and two people in a real browser: `imurun serve --keep` with the embedded
//! model; the operator's console adds alice and bob, deploys the example agent from a pack
//! signed offline (`keep sign --bundle`) and puts a signed ceiling in force, and `keep deploy`
//! sends its next version; `web/tests/keep-talk-e2e.mjs` drives Debian's chromium through the
//! console, alice's conversation, a restart, the operator's revocation and the journal; see that
//! file for the checks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use imurun_testkit::{Guest, Upstream, ok};

use crate::keep_page::browser_checks;
use crate::serve_cli::Server;
use crate::support::{model_path, run_imurun};

/// What the local service answers every request with.
const UPSTREAM_BODY: &str = "sunny, 21 degrees";

/// Runs `imurun` with `IMURUN_HOME` and `envs`; its stdout, after asserting it succeeded.
fn imurun(home: &Path, args: &[&str], envs: &[(&str, &OsStr)]) -> String {
    let mut all = vec![("IMURUN_HOME", home.as_os_str())];
    all.extend_from_slice(envs);
    let output = run_imurun(args, "", &all);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "imurun {args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Alice's ceiling, from the example's, reaching the local service at `port`, signed with
/// the policy key into a file as `imurun keep sign` writes it.
fn signed_ceiling(home: &Path, port: &str) -> PathBuf {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/keep/packs/helper/ceiling.json");
    let mut ceiling: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example).unwrap()).unwrap();
    ceiling["egress"][0]["port"] = serde_json::json!(port.parse::<u16>().unwrap());
    ceiling["version"] = serde_json::json!(1);
    ceiling["expires_at"] = serde_json::json!(imurun_core::now_unix_s() + 86_400);
    let unsigned = home.join("ceiling.json");
    std::fs::write(&unsigned, ceiling.to_string()).unwrap();
    let policy_key = home.join("keep/policy.key");
    let signed = imurun(
        home,
        &[
            "keep",
            "sign",
            "--key",
            policy_key.to_str().unwrap(),
            unsigned.to_str().unwrap(),
        ],
        &[],
    );
    let file = home.join("ceiling-alice.signed.json");
    std::fs::write(&file, signed).unwrap();
    file
}

fn start(home: &Path, operator: &str, port: &str) -> Server {
    let model = model_path();
    Server::start_as(
        home,
        model.to_str().unwrap(),
        &["--keep"],
        &[("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", OsStr::new(port))],
        Some(operator),
    )
}

#[test]
fn a_person_talks_to_the_example_agent_in_the_page_and_reads_it_again_after_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let init = imurun(home, &["keep", "init"], &[]);
    let operator = init
        .lines()
        .find(|line| line.starts_with("imk_"))
        .unwrap()
        .to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::start(|_| ok(UPSTREAM_BODY)));
    let port = upstream.port.to_string();
    let server = start(home, &operator, &port);
    let url = format!("http://{}", server.addr);
    let as_operator = [
        ("IMURUN_URL", OsStr::new(&url)),
        ("IMURUN_KEEP_TOKEN", OsStr::new(&operator)),
    ];

    // What the operator signs on her own machine: the example pack (its component and
    // manifest), and alice's ceiling. The console uploads both; keys never reach the page.
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/keep/packs");
    let component = home.join("chat_agent.wasm");
    std::fs::write(&component, Guest::Chat.bytes()).unwrap();
    let pack = home.join("helper-1.pack.json");
    imurun(
        home,
        &[
            "keep",
            "sign",
            "--bundle",
            example.join("helper").to_str().unwrap(),
            "--component",
            component.to_str().unwrap(),
            "--out",
            pack.to_str().unwrap(),
        ],
        &[],
    );
    let ceiling = signed_ceiling(home, &port);

    // The operator, in the console: adds alice and bob, deploys the signed pack, puts alice's
    // ceiling in force.
    let state = home.join("talk-state.json");
    let envs = [
        ("KEEP_OPERATOR", OsStr::new(&operator)),
        ("KEEP_PACK", pack.as_os_str()),
        ("KEEP_CEILING", ceiling.as_os_str()),
        ("KEEP_UPSTREAM_PORT", OsStr::new(&port)),
        ("KEEP_STATE", state.as_os_str()),
    ];
    browser_checks("keep-talk-e2e.mjs", &server.addr, &["console"], &envs);

    // The next version, with one command.
    let next = home.join("helper-2");
    std::fs::create_dir_all(&next).unwrap();
    let manifest = std::fs::read_to_string(example.join("helper/manifest.json"))
        .unwrap()
        .replacen("\"version\": 1", "\"version\": 2", 1);
    std::fs::write(next.join("manifest.json"), manifest).unwrap();
    let deployed = imurun(
        home,
        &[
            "keep",
            "deploy",
            next.to_str().unwrap(),
            "--component",
            component.to_str().unwrap(),
        ],
        &as_operator,
    );
    assert!(
        deployed.starts_with("deployed helper version 2"),
        "{deployed}"
    );

    browser_checks("keep-talk-e2e.mjs", &server.addr, &["before"], &envs);
    // The use alice approved in the page reached the service.
    assert!(
        upstream
            .requests()
            .iter()
            .any(|request| request.starts_with("GET /weather")),
        "{:?}",
        upstream.requests()
    );

    // The host restarts; the operator revokes alice's tool in the console and reads the
    // journal; alice reads her conversation again and meets the revocation.
    drop(server);
    let server = start(home, &operator, &port);
    browser_checks("keep-talk-e2e.mjs", &server.addr, &["revoke"], &envs);
    browser_checks("keep-talk-e2e.mjs", &server.addr, &["after"], &envs);

    let verified = imurun(home, &["keep", "journal", "verify"], &[]);
    assert!(verified.contains("\"first_bad\":null"), "{verified}");
}
