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
        let mut child = Command::new(env!("CARGO_BIN_EXE_imurun"))
            .args(["serve", "--model", model, "--addr", "127.0.0.1:0"])
            .env("IMURUN_HOME", home)
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
