//! Keep hosts on one PostgreSQL database (docs/keep/scaling.md), measured end to end: two
//! `imurun serve --keep` processes on a throwaway PostgreSQL server of their own.
//!
//! - **Journal appends per second**, with one host and with two: operator vault writes (each
//!   one Keep write: a row and a journal entry under the journal head's lock), sent by eight
//!   clients per host at once. Several rounds; the median of each and their ratio.
//! - **Approval-to-deploy latency across hosts**: a tool proposed by a session on host A is
//!   approved with `imurun keep approve` against host B, and the time is taken until a session
//!   on host A gets the tool's answer; beside it, the same with the approval given on host A
//!   (the baseline, in the same run).
//!
//! `cargo bench --workspace --bench keep_hosts` (it needs Debian's postgresql: scripts/setup).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use imurun_testkit::{Guest, PostgresServer};
use serde_json::{Value, json};

const ROUNDS: usize = 3;
const APPENDS_PER_ROUND: usize = 2_000;
const CLIENTS_PER_HOST: usize = 8;
const DEPLOYS: usize = 5;

fn imurun_bin() -> &'static str {
    env!("CARGO_BIN_EXE_imurun")
}

/// Runs `imurun` for the host whose home is `home`; its standard output.
fn imurun(home: &Path, url: &str, args: &[&str], envs: &[(&str, &str)]) -> String {
    let output = Command::new(imurun_bin())
        .args(args)
        .env("IMURUN_HOME", home)
        .env("IMURUN_DATABASE_URL", url)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "imurun {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap()
}

/// A running `imurun serve --keep`.
struct Host {
    child: Child,
    addr: String,
}

impl Host {
    fn start(home: &Path, url: &str, model: &str) -> Host {
        let mut child = Command::new(imurun_bin())
            .args(["serve", "--keep", "--model", model, "--addr", "127.0.0.1:0"])
            .env("IMURUN_HOME", home)
            .env("IMURUN_DATABASE_URL", url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("imurun is listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        Host { child, addr }
    }

    fn request(&self, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Authorization: Bearer {token}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    fn expect(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
        status: u16,
    ) -> Value {
        let (got, answer) = self.request(token, method, path, body);
        assert_eq!(got, status, "{method} {path}: {answer}");
        answer
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Sends `APPENDS_PER_ROUND` journaled writes spread over `hosts`, `CLIENTS_PER_HOST` clients
/// each, and returns the writes per second.
fn appends_per_second(hosts: &[&Host], operator: &str, round: usize) -> f64 {
    let per_client = APPENDS_PER_ROUND / (hosts.len() * CLIENTS_PER_HOST);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (host_index, host) in hosts.iter().enumerate() {
            for client in 0..CLIENTS_PER_HOST {
                scope.spawn(move || {
                    for at in 0..per_client {
                        let name = format!("r{round}-h{host_index}-c{client}-{}", at % 4);
                        host.expect(
                            operator,
                            "PUT",
                            &format!("/v1/vault/{name}"),
                            Some(&json!({"value": "v"})),
                            200,
                        );
                    }
                });
            }
        }
    });
    let writes = per_client * hosts.len() * CLIENTS_PER_HOST;
    writes as f64 / started.elapsed().as_secs_f64()
}

/// One message to the scripted agent in `session`: its first reply.
fn say(host: &Host, token: &str, session: &str, step: &Value) -> Value {
    host.expect(
        token,
        "POST",
        &format!("/v1/sessions/{session}/messages"),
        Some(&json!({"text": step.to_string()})),
        200,
    )["replies"][0]
        .clone()
}

struct People<'a> {
    home: &'a Path,
    url: &'a str,
    operator: &'a str,
    alice: String,
    device: PathBuf,
}

/// Proposes tool `name` from a session on `proposing`, approves it on `approving`, and
/// returns the time from the approval's start until a session on `proposing` gets the tool's
/// answer.
fn approval_to_deploy(
    people: &People<'_>,
    proposing: &Host,
    approving: &Host,
    name: &str,
) -> Duration {
    let alice = &people.alice;
    let new_session = || {
        proposing.expect(
            alice,
            "POST",
            "/v1/sessions",
            Some(&json!({"agent": "maker"})),
            201,
        )["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let session = new_session();
    let bundle = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(Guest::PureTool.bytes())
    };
    for chunk in bundle.as_bytes().chunks(40_000) {
        say(
            proposing,
            alice,
            &session,
            &json!({"buffer": std::str::from_utf8(chunk).unwrap()}),
        );
    }
    let manifest = json!({"name": name, "version": 1,
        "resources": {"memory_mb": 16, "cpu_ms": 200, "timeout_ms": 2000}, "approval_timeout_s": 30});
    let emitted = say(
        proposing,
        alice,
        &session,
        &json!({"emit": {"type": "tool.propose",
        "name": name, "description": "Echoes its arguments.", "bundle": "$buffer", "manifest": manifest}}),
    );
    assert_eq!(emitted, "emitted");
    let proposals = proposing.expect(alice, "GET", "/v1/proposals?kind=tool", None, 200);
    let id = proposals["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == name && tool["state"] == "pending")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let caller = new_session();
    let started = Instant::now();
    imurun(
        people.home,
        people.url,
        &[
            "keep",
            "approve",
            &id,
            "--device",
            people.device.to_str().unwrap(),
            "--url",
            &approving.url(),
        ],
        &[("IMURUN_KEEP_TOKEN", alice)],
    );
    loop {
        let answer = say(
            proposing,
            alice,
            &caller,
            &json!({"tool": {"name": name, "args": {"n": 1}}}),
        );
        if answer
            .as_str()
            .is_some_and(|text| text.contains("\"echo\""))
        {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never deployed: {answer}"
        );
    }
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let server = PostgresServer::start();
    let database = server.database();
    let url = database.url().to_owned();
    let home_a = tempfile::tempdir().unwrap();
    let home_b = tempfile::tempdir().unwrap();
    let init = imurun(home_a.path(), &url, &["keep", "init"], &[]);
    let operator = init
        .lines()
        .find(|line| line.starts_with("imk_"))
        .unwrap()
        .to_owned();
    std::fs::create_dir_all(home_b.path().join("keep")).unwrap();
    for entry in std::fs::read_dir(home_a.path().join("keep")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            home_b.path().join("keep").join(entry.file_name()),
        )
        .unwrap();
    }
    let script = home_a.path().join("script.json");
    std::fs::write(
        &script,
        json!({"replies": [{"text": "Hello."}]}).to_string(),
    )
    .unwrap();
    let model = format!("scripted:{}", script.display());
    let a = Host::start(home_a.path(), &url, &model);
    let b = Host::start(home_b.path(), &url, &model);

    // Journal appends per second: one host, then two, in alternating rounds.
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        one.push(appends_per_second(&[&a], &operator, 2 * round));
        two.push(appends_per_second(&[&a, &b], &operator, 2 * round + 1));
    }
    let (one, two) = (median(one), median(two));
    println!(
        "journal appends, {APPENDS_PER_ROUND} per round, {CLIENTS_PER_HOST} clients per host, median of {ROUNDS} rounds:"
    );
    println!("  one host:  {one:.0} appends/s");
    println!(
        "  two hosts: {two:.0} appends/s ({:.2} x one host)",
        two / one
    );

    // Approval-to-deploy latency.
    let home = home_a.path();
    let alice = json_of(&imurun(
        home,
        &url,
        &["keep", "token", "create", "--user", "alice"],
        &[],
    ))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let device = home.join("alice.key");
    let mut enrol = json_of(&imurun(
        home,
        &url,
        &[
            "keep",
            "device",
            "enrol",
            "--out",
            device.to_str().unwrap(),
            "--user",
            "alice",
        ],
        &[],
    ));
    enrol.as_object_mut().unwrap().remove("key_id");
    enrol["enrol_code"] = json_of(&imurun(
        home,
        &url,
        &["keep", "enrol-code", "--user", "alice"],
        &[],
    ))["code"]
        .clone();
    a.expect(&alice, "POST", "/v1/devices", Some(&enrol), 201);
    let expires_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let sign = |name: &str, key: &str, document: &Value| {
        let path = home.join(name);
        std::fs::write(&path, document.to_string()).unwrap();
        json_of(&imurun(
            home,
            &url,
            &[
                "keep",
                "sign",
                "--key",
                home.join("keep").join(key).to_str().unwrap(),
                path.to_str().unwrap(),
            ],
            &[],
        ))
    };
    let ceiling = sign(
        "ceiling.json",
        "policy.key",
        &json!({"type": "imurun.ceiling", "user": "alice",
        "version": 1, "expires_at": expires_at, "egress": [], "credentials": [], "memory": "none",
        "model_socket": false, "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}}),
    );
    a.expect(&operator, "PUT", "/v1/ceilings/alice", Some(&ceiling), 200);
    let agent = Guest::ScriptedFull.bytes();
    let agent_path = home.join("agent.wasm");
    std::fs::write(&agent_path, &agent).unwrap();
    let policy = sign(
        "policy.json",
        "policy.key",
        &json!({"type": "imurun.policy", "agent": "maker",
        "version": 1, "expires_at": expires_at, "bundle_sha256": imurun_keep::keys::sha256_hex(&agent),
        "manifest": {"name": "maker", "version": 1, "description": "The scripted agent.",
            "egress": {"mode": "deny", "rules": []}, "memory": "read", "model_socket": true,
            "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20000}, "approval_timeout_s": 30}}),
    );
    let bundle_signature = json_of(&imurun(
        home,
        &url,
        &[
            "keep",
            "sign",
            "--key",
            home.join("keep/signer.key").to_str().unwrap(),
            "--bundle",
            agent_path.to_str().unwrap(),
        ],
        &[],
    ));
    let deploy = {
        use base64::Engine;
        json!({"bundle": base64::engine::general_purpose::STANDARD.encode(&agent),
            "bundle_signature": bundle_signature, "policy": policy})
    };
    a.expect(&operator, "POST", "/v1/agents", Some(&deploy), 201);
    let people = People {
        home,
        url: &url,
        operator: &operator,
        alice,
        device,
    };
    let (mut same, mut across) = (Vec::new(), Vec::new());
    for round in 0..DEPLOYS {
        same.push(approval_to_deploy(&people, &a, &a, &format!("same{round}")).as_secs_f64() * 1e3);
        across.push(
            approval_to_deploy(&people, &a, &b, &format!("across{round}")).as_secs_f64() * 1e3,
        );
    }
    let (same, across) = (median(same), median(across));
    let _ = people.operator;
    println!(
        "approval to deploy (`imurun keep approve` started until host A's session gets the tool's answer), median of {DEPLOYS}:"
    );
    println!("  approved on host A: {same:.0} ms");
    println!(
        "  approved on host B: {across:.0} ms ({:.2} x on host A)",
        across / same
    );
}
