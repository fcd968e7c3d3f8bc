//! `imurun serve` as a person starts it: it prints its URL, answers prompts over HTTP, and a
//! server killed with SIGKILL reopens with every message it had committed.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{model_path, run_imurun};

const WAIT_MAX: Duration = Duration::from_secs(60);

/// A running `imurun serve` and its address.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(home: &Path, model: &str) -> Server {
        Self::start_with(home, model, &[])
    }

    /// A server with extra environment variables.
    fn start_with(home: &Path, model: &str, envs: &[(&str, &OsStr)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_imurun"))
            .args(["serve", "--model", model, "--addr", "127.0.0.1:0"])
            .env("IMURUN_HOME", home)
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
        let server = Server { child, addr };
        server.wait_until(|server| server.get("/api/model").1["status"] == "ready");
        server
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(WAIT_MAX)).unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

    fn get(&self, path: &str) -> (u16, Value) {
        self.request("GET", path, None)
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.request("POST", path, Some(&body))
    }

    fn wait_until(&self, done: impl Fn(&Server) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(started.elapsed() < WAIT_MAX, "the server never got there");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn transcript(&self, session: &str) -> Vec<Value> {
        self.get(&format!("/api/sessions/{session}")).1["transcript"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the process to end; returns its exit status.
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < WAIT_MAX, "the server ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(mut self) {
        // SIGKILL: no shutdown, no flush.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn script(dir: &Path, replies: &Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({"replies": replies}).to_string()).unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn a_served_turn_answers_and_a_killed_server_keeps_every_committed_message() {
    let home = tempfile::tempdir().unwrap();
    let model = script(
        home.path(),
        &json!([
            {"text": "First answer."},
            {"text": "Second answer."},
            {"text": "Third answer."},
            {"text": "An answer that never comes.", "delay_ms": 60000}
        ]),
    );
    let server = Server::start(home.path(), &model);
    let (status, session) = server.post("/api/sessions", json!({"title": "kept"}));
    assert_eq!(status, 201, "{session}");
    let session = session["id"].as_str().unwrap().to_owned();
    for (number, prompt) in ["One?", "Two?", "Three?"].iter().enumerate() {
        let (status, body) = server.post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": prompt}),
        );
        assert_eq!(status, 202, "{body}");
        server.wait_until(|server| server.transcript(&session).len() == 2 * (number + 1));
    }
    let answers: Vec<Value> = server
        .transcript(&session)
        .iter()
        .map(|message| message["content"].clone())
        .collect();
    assert_eq!(
        answers,
        [
            "One?",
            "First answer.",
            "Two?",
            "Second answer.",
            "Three?",
            "Third answer."
        ]
    );
    // A fourth turn is running (its reply is slow) when the server dies.
    let (status, _) = server.post(
        &format!("/api/sessions/{session}/prompts"),
        json!({"prompt": "Four?"}),
    );
    assert_eq!(status, 202);
    server.kill();

    let server = Server::start(home.path(), &model);
    let kept = server.transcript(&session);
    assert_eq!(kept.len(), 7, "{kept:?}");
    assert_eq!(
        kept[6]["content"], "Four?",
        "the prompt was committed before 202"
    );
    let (_, turns) = server.get(&format!("/api/sessions/{session}/turns"));
    let last = turns["turns"]
        .as_array()
        .and_then(|turns| turns.last())
        .cloned();
    assert_eq!(
        last.as_ref().map(|turn| turn["status"].clone()),
        Some(json!("interrupted")),
        "{turns}"
    );
    server.kill();
}

#[test]
fn serving_beyond_loopback_without_a_token_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let output = run_imurun(&["serve", "--addr", "0.0.0.0:0"], "", &envs);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("token"), "{stderr}");
}

#[test]
fn the_server_answers_a_prompt_with_the_embedded_model() {
    let home = tempfile::tempdir().unwrap();
    let model = model_path();
    let server = Server::start(home.path(), model.to_str().unwrap());
    let (_, status) = server.get("/api/model");
    assert_eq!(status["name"], "SmolLM2-135M-Instruct.Q4_1", "{status}");
    let (_, session) = server.post("/api/sessions", json!({}));
    let session = session["id"].as_str().unwrap().to_owned();
    let (status, body) = server.post(
        &format!("/api/sessions/{session}/prompts"),
        json!({"prompt": "Say hello in one short sentence."}),
    );
    assert_eq!(status, 202, "{body}");
    server.wait_until(|server| server.transcript(&session).len() == 2);
    let answer = server.transcript(&session)[1]["content"].clone();
    assert!(
        answer.as_str().is_some_and(|text| !text.trim().is_empty()),
        "an empty answer: {answer}"
    );
    server.kill();
}

/// Reads a session's SSE stream on a thread of its own; each event's JSON arrives on the
/// channel.
fn subscribe(addr: &str, session: &str) -> std::sync::mpsc::Receiver<Value> {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /api/events?session={session} HTTP/1.1\r\nHost: {addr}\r\n\
         Accept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    // The response's head comes once the server has subscribed this client.
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && line.trim() != "" {
        line.clear();
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in reader.lines() {
            let Ok(line) = line else { return };
            if let Some(data) = line.strip_prefix("data: ")
                && let Ok(event) = serde_json::from_str::<Value>(data)
                && sender.send(event).is_err()
            {
                return;
            }
        }
    });
    receiver
}

/// The MCP test server from `crates/imurun-tools/tests/mcp` (installed by `scripts/setup`).
fn everything_server() -> std::path::PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../imurun-tools/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup to install the MCP test servers",
        path.display()
    );
    path
}

/// One turn through `imurun serve` and SSE that invokes a skill, calls a tool of a real MCP
/// server (approved by the watching client, since an undeclared MCP tool asks), and hands a
/// task to a sub-agent — the scripted model plays the main agent and its helper in turn.
#[test]
fn a_served_turn_uses_a_skill_an_mcp_tool_and_a_sub_agent() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp.servers]]\nname = \"everything\"\n\
             transport = {{ type = \"stdio\", command = \"node\", args = [{}] }}\n",
            toml_string(&everything_server().display().to_string())
        ),
    )
    .unwrap();
    let model = script(
        home.path(),
        &json!([
            {"text": "```tool\n{\"name\": \"everything__echo\", \"args\": {\"message\": \"hello from the turn\"}}\n```"},
            {"text": "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"Sum up what the echo returned.\", \"tools\": [\"get_time\"]}}\n```"},
            {"text": "The echo returned the greeting."},
            {"text": "Done: the echo said hello from the turn."}
        ]),
    );
    let envs: [(&str, &OsStr); 1] = [("IMURUN_CONFIG", config.as_os_str())];
    let server = Server::start_with(home.path(), &model, &envs);

    // The integrations route lists the MCP server, connected, with its namespaced tools.
    let (status, integrations) = server.get("/api/integrations");
    assert_eq!(status, 200, "{integrations}");
    let everything = &integrations["mcp_servers"][0];
    assert_eq!(everything["name"], "everything", "{integrations}");
    assert_eq!(everything["state"], "connected", "{integrations}");
    let echo = everything["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "everything__echo")
        .unwrap_or_else(|| panic!("no everything__echo: {integrations}"));
    assert_eq!(echo["category"], "external");
    assert_eq!(echo["available"], true);
    let services: Vec<&Value> = integrations["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|service| &service["id"])
        .collect();
    assert_eq!(services, ["github", "gmail", "cloudflare"]);

    let (status, skill) = server.post(
        "/api/skills",
        json!({"name": "Echo first", "body": "Always try the echo tool first."}),
    );
    assert_eq!(status, 201, "{skill}");
    let (_, session) = server.post("/api/sessions", json!({"title": "everything"}));
    let session = session["id"].as_str().unwrap().to_owned();
    let events = subscribe(&server.addr, &session);
    let (status, accepted) = server.post(
        &format!("/api/sessions/{session}/prompts"),
        json!({"prompt": "/echo-first say hello"}),
    );
    assert_eq!(status, 202, "{accepted}");

    let mut seen: Vec<Value> = Vec::new();
    let started = Instant::now();
    loop {
        let event = events
            .recv_timeout(WAIT_MAX.saturating_sub(started.elapsed()))
            .unwrap_or_else(|_| panic!("the turn never ended: {seen:#?}"));
        if event["type"] == "tool.approval_needed" {
            assert_eq!(event["name"], "everything__echo", "{event}");
            let id = event["approval_id"].as_str().unwrap().to_owned();
            let (status, decided) = server.post(
                &format!("/api/tools/approvals/{id}"),
                json!({"approved": true}),
            );
            assert_eq!(status, 200, "{decided}");
        }
        let ended = event["type"] == "turn.end";
        seen.push(event);
        if ended {
            break;
        }
    }
    let types: Vec<&str> = seen
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    let position = |kind: &str| {
        types
            .iter()
            .position(|seen| *seen == kind)
            .unwrap_or_else(|| panic!("no {kind} in {types:?}"))
    };
    assert!(position("skill.used") < position("tool.approval_needed"));
    assert!(position("tool.approved") < position("agent.start"));
    assert!(position("agent.start") < position("agent.end"));
    let skill_used = &seen[position("skill.used")];
    assert_eq!(skill_used["skills"], json!(["echo-first"]));
    let echo_result = seen
        .iter()
        .find(|event| event["type"] == "tool.result" && event["name"] == "everything__echo")
        .unwrap_or_else(|| panic!("no echo result: {seen:#?}"));
    assert_eq!(echo_result["ok"], true, "{echo_result}");
    let agent_start = &seen[position("agent.start")];
    assert_eq!(agent_start["depth"], 1);
    assert_eq!(agent_start["tools"], json!(["get_time"]));
    let end = seen.last().unwrap();
    assert_eq!(end["status"], "done", "{end}");
    assert_eq!(end["skills"], json!(["echo-first"]));

    // The transcript keeps the prompt as typed and the final answer; the turn view has the
    // model's calls.
    server.wait_until(|server| server.transcript(&session).len() == 2);
    let transcript = server.transcript(&session);
    assert_eq!(transcript[0]["content"], "/echo-first say hello");
    assert_eq!(
        transcript[1]["content"],
        "Done: the echo said hello from the turn."
    );
    let (_, turns) = server.get(&format!("/api/sessions/{session}/turns"));
    let calls: Vec<&Value> = turns["turns"][0]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| &call["name"])
        .collect();
    assert_eq!(calls, ["everything__echo", "run_agent"], "{turns}");
    // SIGTERM ends the server cleanly (MCP servers shut down, the audit flushed).
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}
