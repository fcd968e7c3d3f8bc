//! The Keep review screens in a real browser: `imurun serve --keep` with two users (alice and
//! bob), the scripted agent deployed by the operator, a local HTTP service its egress rules
//! reach, and `web/tests/keep-e2e.mjs` driving Debian's chromium. The script drives alice's
//! sessions through the API (the agent proposes tools, plans, cards, asks to use the network)
//! and checks what each person's page shows and what its device signs; see that file for the
//! checks and `docs/keep/page.md` for the screens.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use imurun_testkit::{Guest, Upstream, ok};
use serde_json::{Value, json};

use crate::keep_cli::{base64_of, sha256_hex};
use crate::serve_cli::{Server, script};
use crate::support::run_imurun;

/// What the local service answers every request with.
const UPSTREAM_BODY: &str = "the local service says hello";

/// How long the browser checks may take at most.
const BROWSER_MAX: Duration = Duration::from_secs(600);

fn imurun(home: &Path, args: &[&str]) -> Value {
    let output = run_imurun(args, "", &[("IMURUN_HOME", home.as_os_str())]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "imurun {args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or(Value::String(stdout.into_owned()))
}

fn rule(scheme: &str, host: &str, port: u16, methods: &[&str], path: &str) -> Value {
    json!({"scheme": scheme, "host": host, "port": port, "methods": methods, "path_prefix": path})
}

/// Signs `document` with `key` through the command line, as an operator would.
fn signed(home: &Path, key: &Path, name: &str, document: &Value) -> Value {
    let path = home.join(name);
    std::fs::write(&path, document.to_string()).unwrap();
    imurun(
        home,
        &[
            "keep",
            "sign",
            "--key",
            key.to_str().unwrap(),
            path.to_str().unwrap(),
        ],
    )
}

/// Runs `web/tests/SCRIPT` with node against the server at `addr` (its screenshots under the
/// target directory's `page-screenshots`), `args` after those two, and `envs`; fails the test
/// with its output when a check fails or it runs past [`BROWSER_MAX`].
pub(crate) fn browser_checks(
    script: &str,
    addr: &str,
    args: &[&str],
    envs: &[(&str, &std::ffi::OsStr)],
) {
    let web = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web");
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("page-screenshots");
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut command =
        Command::new(std::env::var_os("IMURUN_NODE").unwrap_or_else(|| "node".into()));
    command
        .arg(web.join("tests").join(script))
        .arg(format!("http://{addr}/"))
        .arg(&artifacts)
        .args(args)
        .envs(envs.iter().copied());
    let started = Instant::now();
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| {
            panic!("cannot run node ({error}): install Node.js 20 or later, then scripts/setup")
        });
    // Its output is read while it runs (a full pipe would stop it), on a thread of its own.
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match finished.recv_timeout(BROWSER_MAX) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{script} did not end within {BROWSER_MAX:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{script} {args:?} failed ({}) after {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status,
        started.elapsed()
    );
}

fn expect(answer: (u16, String, Value), status: u16, what: &str) -> Value {
    assert_eq!(answer.0, status, "{what}: {}", answer.1);
    answer.2
}

#[test]
fn a_person_reviews_and_decides_on_their_keep_host_in_the_page() {
    let web = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web");
    assert!(
        web.join("tests/node_modules/playwright-core").is_dir()
            && web.join("tests/node_modules/axe-core").is_dir(),
        "web/tests/node_modules lacks playwright-core or axe-core: run scripts/setup"
    );
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: run scripts/setup (it installs Debian's chromium)"
    );
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let init = run_imurun(&["keep", "init"], "", &[("IMURUN_HOME", home.as_os_str())]);
    assert!(init.status.success());
    let operator = String::from_utf8_lossy(&init.stdout)
        .lines()
        .find(|line| line.starts_with("imk_"))
        .expect("the operator token is printed")
        .to_owned();
    let token = |user: &str| {
        imurun(home, &["keep", "token", "create", "--user", user])["token"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let code = imurun(home, &["keep", "enrol-code", "--user", "alice"])["code"]
        .as_str()
        .unwrap()
        .to_owned();

    // The local service the agent's rules reach, on a loopback port the operator opens.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::start(|_| ok(UPSTREAM_BODY)));
    let port = upstream.port;
    let port_text = port.to_string();
    let model = script(home, &json!([{"text": "Hello."}]));
    let server = Server::start_as(
        home,
        &model,
        &["--keep"],
        &[("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", port_text.as_ref())],
        Some(&operator),
    );
    let keep = home.join("keep");
    let expires_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;

    // Alice may grant tools two outside hosts, her weather key and the local service.
    let ceiling = json!({
        "type": "imurun.ceiling", "user": "alice", "version": 1, "expires_at": expires_at,
        "egress": [
            rule("https", "api.weather.example", 443, &["GET"], "/"),
            rule("https", "mail.example", 443, &["POST"], "/"),
            rule("http", "127.0.0.1", port, &["GET"], "/"),
        ],
        "credentials": ["weather"], "memory": "read", "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000},
    });
    let ceiling = signed(home, &keep.join("policy.key"), "ceiling.json", &ceiling);
    expect(
        server.request_as(Some(&operator), "PUT", "/v1/ceilings/alice", Some(&ceiling)),
        200,
        "the ceiling",
    );
    expect(
        server.request_as(
            Some(&alice),
            "PUT",
            "/v1/vault/weather",
            Some(&json!({"value": "alice-weather-key"})),
        ),
        200,
        "alice's weather key",
    );

    // The scripted agent: it asks before each use of the local service, and a POST to
    // `/signed` needs a device's signature.
    let agent = Guest::ScriptedFull.bytes();
    let agent_path = home.join("agent.wasm");
    std::fs::write(&agent_path, &agent).unwrap();
    let sha = sha256_hex(&agent);
    let mut signed_post = rule("http", "127.0.0.1", port, &["POST"], "/signed");
    signed_post["device_signature"] = json!(true);
    let policy = json!({
        "type": "imurun.policy", "agent": "maker", "version": 1, "expires_at": expires_at,
        "bundle_sha256": sha,
        "manifest": {
            "name": "maker", "version": 1, "description": "The scripted agent.",
            "egress": {"mode": "ask", "rules": [rule("http", "127.0.0.1", port, &["GET"], "/"), signed_post]},
            "memory": "write", "model_socket": true, "card": true,
            "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20000},
            "approval_timeout_s": 120,
        },
    });
    let policy = signed(home, &keep.join("policy.key"), "policy.json", &policy);
    let bundle_signature = imurun(
        home,
        &[
            "keep",
            "sign",
            "--key",
            keep.join("signer.key").to_str().unwrap(),
            "--bundle",
            agent_path.to_str().unwrap(),
        ],
    );
    let deploy = json!({
        "bundle": base64_of(&agent),
        "bundle_signature": bundle_signature,
        "policy": policy,
    });
    expect(
        server.request_as(Some(&operator), "POST", "/v1/agents", Some(&deploy)),
        201,
        "the agent's deploy",
    );
    let tool_path = home.join("pure_tool.wasm");
    std::fs::write(&tool_path, Guest::PureTool.bytes()).unwrap();

    let envs = [
        (
            "IMURUN_BIN",
            Path::new(env!("CARGO_BIN_EXE_imurun")).as_os_str(),
        ),
        ("IMURUN_HOME", home.as_os_str()),
        ("KEEP_OPERATOR", operator.as_ref()),
        ("KEEP_ALICE", alice.as_ref()),
        ("KEEP_BOB", bob.as_ref()),
        ("KEEP_ALICE_CODE", code.as_ref()),
        ("KEEP_TOOL_WASM", tool_path.as_os_str()),
        ("KEEP_UPSTREAM_PORT", port_text.as_ref()),
        ("KEEP_UPSTREAM_BODY", UPSTREAM_BODY.as_ref()),
    ];
    browser_checks("keep-e2e.mjs", &server.addr, &[], &envs);

    // The use approved in the page, and the one its device signed, reached the service.
    let requests = upstream.requests();
    for wanted in ["GET /approved", "POST /signed"] {
        assert!(
            requests.iter().any(|request| request.starts_with(wanted)),
            "{wanted} never reached the service: {requests:?}"
        );
    }
    assert!(
        !requests
            .iter()
            .any(|request| request.starts_with("GET /denied")),
        "a use denied in the page went out: {requests:?}"
    );

    // Whatever the page did, the journal's chain still holds.
    let verified = imurun(home, &["keep", "journal", "verify"]);
    assert_eq!(verified["first_bad"], Value::Null, "{verified}");
}
