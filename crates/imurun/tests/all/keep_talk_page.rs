//! A person talks to an agent in a real browser: `imurun serve --keep` with the embedded model,
//! the operator's one-command steps (`keep people add`, `keep ceiling set`, `keep deploy` of the
//! example agent), and `web/tests/keep-talk-e2e.mjs` driving Debian's chromium before and after
//! the host restarts; see that file for the checks.

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

/// `name`'s value on the line of `keep people add`'s output that starts with it.
fn printed(out: &str, name: &str) -> String {
    out.lines()
        .find_map(|line| line.trim().strip_prefix(name))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_else(|| panic!("{name} is not printed: {out}"))
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

    // The operator's steps, one command each.
    let added = imurun(home, &["keep", "people", "add", "alice"], &as_operator);
    let (alice, code) = (printed(&added, "token"), printed(&added, "enrolment code"));
    let bob = printed(
        &imurun(home, &["keep", "people", "add", "bob"], &as_operator),
        "token",
    );
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/keep/packs");
    let ceiling = std::fs::read_to_string(example.join("helper/ceiling.json"))
        .unwrap()
        .replace("8080", &port);
    let ceiling_file = home.join("ceiling.json");
    std::fs::write(&ceiling_file, ceiling).unwrap();
    imurun(
        home,
        &[
            "keep",
            "ceiling",
            "set",
            "alice",
            ceiling_file.to_str().unwrap(),
        ],
        &as_operator,
    );
    let component = home.join("chat_agent.wasm");
    std::fs::write(&component, Guest::Chat.bytes()).unwrap();
    let deployed = imurun(
        home,
        &[
            "keep",
            "deploy",
            example.join("helper").to_str().unwrap(),
            "--component",
            component.to_str().unwrap(),
        ],
        &as_operator,
    );
    assert!(
        deployed.starts_with("deployed helper version 1"),
        "{deployed}"
    );

    let state = home.join("talk-state.json");
    let envs = [
        ("KEEP_ALICE", OsStr::new(&alice)),
        ("KEEP_BOB", OsStr::new(&bob)),
        ("KEEP_ALICE_CODE", OsStr::new(&code)),
        ("KEEP_UPSTREAM_PORT", OsStr::new(&port)),
        ("KEEP_STATE", state.as_os_str()),
    ];
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

    // The host restarts; the operator revokes alice's tool.
    drop(server);
    let server = start(home, &operator, &port);
    let url = format!("http://{}", server.addr);
    imurun(
        home,
        &["keep", "revoke", "u/alice/fetch"],
        &[
            ("IMURUN_URL", OsStr::new(&url)),
            ("IMURUN_KEEP_TOKEN", OsStr::new(&operator)),
        ],
    );
    browser_checks("keep-talk-e2e.mjs", &server.addr, &["after"], &envs);

    let verified = imurun(home, &["keep", "journal", "verify"], &[]);
    assert!(verified.contains("\"first_bad\":null"), "{verified}");
}
