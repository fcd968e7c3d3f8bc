//! Two Keep hosts on one PostgreSQL database, for the tests (`tests/all/keep_hosts.rs`) and
//! the bench (`benches/keep_hosts.rs`): `imurun keep init` on host A, a copy of its Keep folder
//! for host B (the keys every host needs alike, as docs/keep/scaling.md says), two
//! `imurun serve --keep` processes, and what a person does on them (a device, a ceiling, the
//! scripted agent, a tool proposed, approved and called).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use imurun_testkit::Guest;
use serde_json::{Value, json};

/// How long one request may take.
const REQUEST_MAX: Duration = Duration::from_secs(60);

/// Runs `imurun` for the host whose home is `home`, on database `url`: its standard output.
pub(crate) fn imurun(home: &Path, url: &str, args: &[&str], envs: &[(&str, &str)]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_imurun"))
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

/// One request to the server at `addr` with this bearer token (or none), on a connection of
/// its own: the status, the body's text and its JSON.
pub(crate) fn request(
    addr: &str,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, String, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(REQUEST_MAX)).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let authorization = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {authorization}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (
        status,
        body.to_owned(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// A running `imurun serve --keep`, killed when dropped.
pub(crate) struct Host {
    child: Child,
    pub(crate) addr: String,
}

impl Host {
    /// Starts a host with home `home` on database `url`, with `envs` besides.
    pub(crate) fn start(home: &Path, url: &str, model: &str, envs: &[(&str, &str)]) -> Host {
        let mut child = Command::new(env!("CARGO_BIN_EXE_imurun"))
            .args(["serve", "--keep", "--model", model, "--addr", "127.0.0.1:0"])
            .env("IMURUN_HOME", home)
            .env("IMURUN_DATABASE_URL", url)
            .envs(envs.iter().copied())
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

    /// A request with this bearer token (or none): the status, the body's text and its JSON.
    pub(crate) fn request(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, String, Value) {
        request(&self.addr, token, method, path, body)
    }

    /// A request that must answer `status`: its JSON.
    pub(crate) fn expect(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
        status: u16,
    ) -> Value {
        let (got, text, answer) = self.request(Some(token), method, path, body);
        assert_eq!(got, status, "{method} {path} on {}: {text}", self.addr);
        answer
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Host {
    /// How the host ended, if it did within `within`.
    pub(crate) fn exit_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two hosts on one database, set up as docs/keep/scaling.md says.
pub(crate) struct Hosts {
    pub(crate) url: String,
    pub(crate) home_a: tempfile::TempDir,
    _home_b: tempfile::TempDir,
    pub(crate) a: Host,
    pub(crate) b: Host,
    pub(crate) operator: String,
}

impl Hosts {
    /// `imurun keep init` on host A's home, a copy of its Keep folder for host B, and both
    /// hosts started with `envs` besides.
    pub(crate) fn start(url: &str, envs: &[(&str, &str)]) -> Hosts {
        let home_a = tempfile::tempdir().unwrap();
        let home_b = tempfile::tempdir().unwrap();
        let init = imurun(home_a.path(), url, &["keep", "init"], &[]);
        let operator = init
            .lines()
            .find(|line| line.starts_with("imk_"))
            .expect("the operator token is printed")
            .to_owned();
        copy_folder(&home_a.path().join("keep"), &home_b.path().join("keep"));
        let script = home_a.path().join("script.json");
        std::fs::write(
            &script,
            json!({"replies": [{"text": "Hello."}]}).to_string(),
        )
        .unwrap();
        let model = format!("scripted:{}", script.display());
        let a = Host::start(home_a.path(), url, &model, envs);
        let b = Host::start(home_b.path(), url, &model, envs);
        Hosts {
            url: url.to_owned(),
            home_a,
            _home_b: home_b,
            a,
            b,
            operator,
        }
    }

    /// One more host on the database, with a home of its own holding a copy of the Keep
    /// folder, started with `envs` besides: its home and the host.
    pub(crate) fn another(&self, envs: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let home = tempfile::tempdir().unwrap();
        copy_folder(&self.home_a.path().join("keep"), &home.path().join("keep"));
        let model = format!(
            "scripted:{}",
            self.home_a.path().join("script.json").display()
        );
        let host = Host::start(home.path(), &self.url, &model, envs);
        (home, host)
    }

    /// Runs `imurun` at host A.
    pub(crate) fn imurun(&self, args: &[&str]) -> Value {
        let output = imurun(self.home_a.path(), &self.url, args, &[]);
        serde_json::from_str(output.trim()).unwrap_or(Value::String(output))
    }

    /// A user's token: its id and the token.
    pub(crate) fn user_token(&self, user: &str) -> (String, String) {
        let created = self.imurun(&["keep", "token", "create", "--user", user]);
        (
            created["id"].as_str().unwrap().to_owned(),
            created["token"].as_str().unwrap().to_owned(),
        )
    }

    /// Signs `document` with the Keep folder's `key` (`policy.key`, `signer.key`).
    pub(crate) fn signed(&self, name: &str, key: &str, document: &Value) -> Value {
        let path = self.home_a.path().join(name);
        std::fs::write(&path, document.to_string()).unwrap();
        let key = self.home_a.path().join("keep").join(key);
        self.imurun(&[
            "keep",
            "sign",
            "--key",
            key.to_str().unwrap(),
            path.to_str().unwrap(),
        ])
    }

    /// The operator deploys the scripted agent `maker` through host A, with `egress` as its
    /// manifest's egress.
    pub(crate) fn deploy_agent(&self, egress: &Value) {
        let agent = Guest::ScriptedFull.bytes();
        let agent_path = self.home_a.path().join("agent.wasm");
        std::fs::write(&agent_path, &agent).unwrap();
        let policy = self.signed(
            "policy.json",
            "policy.key",
            &json!({
                "type": "imurun.policy", "agent": "maker", "version": 1, "expires_at": in_an_hour(),
                "bundle_sha256": imurun_keep::keys::sha256_hex(&agent),
                "manifest": {
                    "name": "maker", "version": 1, "description": "The scripted agent.",
                    "egress": egress, "memory": "read", "model_socket": true,
                    "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20000},
                    "approval_timeout_s": 60,
                },
            }),
        );
        let signer = self.home_a.path().join("keep/signer.key");
        let bundle_signature = self.imurun(&[
            "keep",
            "sign",
            "--key",
            signer.to_str().unwrap(),
            "--bundle",
            agent_path.to_str().unwrap(),
        ]);
        let deploy = json!({"bundle": base64(&agent), "bundle_signature": bundle_signature, "policy": policy});
        self.a
            .expect(&self.operator, "POST", "/v1/agents", Some(&deploy), 201);
    }

    /// `user`'s first device, enrolled on host A with an enrolment code: its key file.
    pub(crate) fn enrol_device(&self, user: &str, token: &str) -> PathBuf {
        let key = self.home_a.path().join(format!("{user}-device.key"));
        let mut body = self.imurun(&[
            "keep",
            "device",
            "enrol",
            "--out",
            key.to_str().unwrap(),
            "--user",
            user,
        ]);
        // The command prints the key's id beside the body; the body is the rest.
        body.as_object_mut().unwrap().remove("key_id");
        body["enrol_code"] = self.imurun(&["keep", "enrol-code", "--user", user])["code"].clone();
        self.a
            .expect(token, "POST", "/v1/devices", Some(&body), 201);
        key
    }

    /// The operator lets `user`'s tools use what a pure tool needs (nothing outside).
    pub(crate) fn set_ceiling(&self, user: &str) {
        let ceiling = self.signed(
            "ceiling.json",
            "policy.key",
            &json!({"type": "imurun.ceiling", "user": user, "version": 1,
                "expires_at": in_an_hour(), "egress": [], "credentials": [], "memory": "none",
                "model_socket": false,
                "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}}),
        );
        self.a.expect(
            &self.operator,
            "PUT",
            &format!("/v1/ceilings/{user}"),
            Some(&ceiling),
            200,
        );
    }
}

/// Seconds since the epoch an hour from now: when test documents expire.
pub(crate) fn in_an_hour() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600
}

pub(crate) fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
}

/// A new session of the scripted agent for `token` on `host`: its id.
pub(crate) fn new_session(host: &Host, token: &str) -> String {
    host.expect(
        token,
        "POST",
        "/v1/sessions",
        Some(&json!({"agent": "maker"})),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Stops `token`'s session `session` on `host`: its slot is free (a person runs at most four
/// at once).
pub(crate) fn stop_session(host: &Host, token: &str, session: &str) {
    host.expect(
        token,
        "POST",
        &format!("/v1/sessions/{session}/stop"),
        None,
        200,
    );
}

/// One message to the scripted agent in `session`: its first reply.
pub(crate) fn say(host: &Host, token: &str, session: &str, step: &Value) -> Value {
    host.expect(
        token,
        "POST",
        &format!("/v1/sessions/{session}/messages"),
        Some(&json!({"text": step.to_string()})),
        200,
    )["replies"][0]
        .clone()
}

/// A session on `host` proposes the pure tool as `name` (version 1): the proposal's id.
pub(crate) fn propose_tool(host: &Host, token: &str, name: &str) -> String {
    let session = new_session(host, token);
    let bundle = base64(&Guest::PureTool.bytes());
    for chunk in bundle.as_bytes().chunks(40_000) {
        let chunk = std::str::from_utf8(chunk).unwrap();
        say(host, token, &session, &json!({"buffer": chunk}));
    }
    let manifest = json!({"name": name, "version": 1,
        "resources": {"memory_mb": 16, "cpu_ms": 200, "timeout_ms": 2000}, "approval_timeout_s": 30});
    let emitted = say(
        host,
        token,
        &session,
        &json!({"emit": {"type": "tool.propose", "name": name,
            "description": "Echoes its arguments.", "bundle": "$buffer", "manifest": manifest}}),
    );
    assert_eq!(emitted, "emitted");
    stop_session(host, token, &session);
    let proposals = host.expect(token, "GET", "/v1/proposals?kind=tool", None, 200);
    proposals["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == name && tool["state"] == "pending")
        .expect("the proposal is listed")["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Approves proposal `id` with `imurun keep approve` against `host`, signed by `device`.
pub(crate) fn approve(hosts: &Hosts, host: &Host, token: &str, device: &Path, id: &str) {
    imurun(
        hosts.home_a.path(),
        &hosts.url,
        &[
            "keep",
            "approve",
            id,
            "--device",
            device.to_str().unwrap(),
            "--url",
            &host.url(),
        ],
        &[("IMURUN_KEEP_TOKEN", token)],
    );
}

/// What tool `name` answers a call from `session` on `host` (its echo, or a refusal).
pub(crate) fn call_tool(host: &Host, token: &str, session: &str, name: &str) -> String {
    let answer = say(
        host,
        token,
        session,
        &json!({"tool": {"name": name, "args": {"n": 1}}}),
    );
    answer.as_str().unwrap_or_default().to_owned()
}

/// Calls tool `name` from `session` on `host` until it answers with its echo; how long that
/// took from `started`.
pub(crate) fn until_deployed(
    host: &Host,
    token: &str,
    session: &str,
    name: &str,
    started: Instant,
) -> Duration {
    loop {
        let answer = call_tool(host, token, session, name);
        if answer.contains("\"echo\"") {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name} never answered: {answer}"
        );
    }
}
