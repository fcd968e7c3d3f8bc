//! `imurun chat` against a tiny fake server that speaks just enough HTTP and SSE: it creates
//! a session, accepts a prompt, streams a tool call that needs approval, drops the stream
//! there so the client must resume it with `Last-Event-ID`, and records every request. (Its
//! test against the real server is in `serve_cli.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How long the fake server waits for the client's next request before giving up.
const WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    last_event_id: Option<String>,
    body: String,
}

#[derive(Default)]
struct Recorded {
    requests: Mutex<Vec<Request>>,
    changed: Condvar,
}

impl Recorded {
    fn push(&self, request: Request) {
        self.requests.lock().unwrap().push(request);
        self.changed.notify_all();
    }

    /// Waits until a request to `path` has arrived.
    fn wait_for(&self, path: &str) {
        let requests = self.requests.lock().unwrap();
        let (_requests, timeout) = self
            .changed
            .wait_timeout_while(requests, WAIT, |requests| {
                !requests.iter().any(|request| request.path == path)
            })
            .unwrap();
        assert!(!timeout.timed_out(), "no request to {path}");
    }

    fn find(&self, method: &str, path: &str) -> Vec<Request> {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .filter(|request| request.method == method && request.path == path)
            .cloned()
            .collect()
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let (mut length, mut authorization, mut last_event_id) = (0, None, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let value = value.trim().to_owned();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().ok()?,
            "authorization" => authorization = Some(value),
            "last-event-id" => last_event_id = Some(value),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        authorization,
        last_event_id,
        body: String::from_utf8(body).ok()?,
    })
}

fn respond(mut stream: &TcpStream, status: &str, body: &Value) {
    let body = body.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn send_events(mut stream: &TcpStream, events: &[(u64, Value)]) {
    for (id, event) in events {
        let mut event = event.clone();
        event["id"] = json!(id);
        event["session_id"] = json!("s1");
        write!(stream, "id: {id}\ndata: {event}\n\n").unwrap();
    }
    stream.flush().unwrap();
}

/// The SSE stream: the first connection carries the turn up to the approval card and then
/// drops; the client's reconnection, after the approval, carries the rest.
fn events(mut stream: &TcpStream, request: &Request, recorded: &Recorded) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n: heartbeat\n\n"
    );
    let _ = stream.flush();
    let args = json!({"command": "date"});
    if request.last_event_id.is_none() {
        recorded.wait_for("/api/sessions/s1/prompts");
        send_events(
            stream,
            &[
                (
                    1,
                    json!({"type": "tool.call", "call_id": "c1", "name": "shell", "args": args, "source": "model", "depth": 0}),
                ),
                (
                    2,
                    json!({"type": "tool.approval_needed", "approval_id": "a1", "call_id": "c1", "name": "shell",
                           "args": args, "deadline_ms": 4_102_444_800_000_i64, "rememberable": true, "depth": 0}),
                ),
            ],
        );
        return;
    }
    recorded.wait_for("/api/tools/approvals/a1");
    send_events(
        stream,
        &[
            (
                3,
                json!({"type": "tool.approved", "approval_id": "a1", "call_id": "c1", "name": "shell", "remember": false}),
            ),
            (
                4,
                json!({"type": "tool.result", "call_id": "c1", "name": "shell", "ok": true, "text": "Mon Jan 1\n", "depth": 0}),
            ),
            (
                5,
                json!({"type": "step", "step": 1, "kind": "tool", "text": "Using `shell` {\"command\": \"date\"}"}),
            ),
            (6, json!({"type": "token", "step": 2, "text": "It is "})),
            (7, json!({"type": "token", "step": 2, "text": "Monday."})),
            (
                8,
                json!({"type": "step", "step": 2, "kind": "answer", "text": "It is Monday."}),
            ),
            (
                9,
                json!({"type": "turn.end", "status": "done", "tool_calls": 1, "skills": [], "steps": 2}),
            ),
        ],
    );
    // Hold the stream open, as a real server does, until the client goes away.
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(200));
        if write!(stream, ": heartbeat\n\n")
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

fn handle(stream: TcpStream, recorded: Arc<Recorded>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    recorded.push(request.clone());
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/api/sessions") => {
            respond(&stream, "201 Created", &json!({"id": "s1", "title": null}))
        }
        ("POST", "/api/sessions/s1/prompts") => respond(
            &stream,
            "202 Accepted",
            &json!({"turn_id": "t1", "queued": false}),
        ),
        ("POST", "/api/tools/approvals/a1") => respond(&stream, "200 OK", &json!({"ok": true})),
        ("GET", "/api/events?session=s1") => events(&stream, &request, &recorded),
        _ => respond(
            &stream,
            "404 Not Found",
            &json!({"error": {"code": "not_found", "message": "no such route"}}),
        ),
    }
}

fn fake_server() -> (SocketAddr, Arc<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let recorded = Arc::new(Recorded::default());
    let state = Arc::clone(&recorded);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let state = Arc::clone(&state);
            std::thread::spawn(move || handle(stream, state));
        }
    });
    (addr, recorded)
}

/// Runs `imurun chat ARGS` with `input` on stdin and a clean environment; kills it if it has
/// not finished within a minute, so that a hang fails the test instead of stalling it.
pub(crate) fn chat(home: &Path, args: &[&str], input: &str) -> Output {
    chat_within(home, args, input, Duration::from_secs(60))
}

/// `chat`, killed if it has not finished within `wait_max`.
pub(crate) fn chat_within(home: &Path, args: &[&str], input: &str, wait_max: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_imurun"))
        .env_clear()
        .env("HOME", home)
        .env("IMURUN_HOME", home)
        .arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output().unwrap()));
    match receiver.recv_timeout(wait_max) {
        Ok(output) => output,
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("imurun chat did not finish within {wait_max:?}");
        }
    }
}

#[test]
fn chat_streams_the_answer_and_sends_the_approval() {
    let home = tempfile::tempdir().unwrap();
    let (addr, recorded) = fake_server();
    let url = format!("http://{addr}");
    let output = chat(
        home.path(),
        &["--url", &url, "--token", "t0k"],
        "hello\ny\n",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for part in [
        "→ shell {\"command\":\"date\"}",
        "Allow shell {\"command\":\"date\"}? [y]es / [n]o / [a]lways: ",
        "← shell ok (Mon Jan 1)",
        "· step 1: tool — Using `shell`",
        "It is Monday.",
    ] {
        assert!(stdout.contains(part), "{part:?} not in\n{stdout}\n{stderr}");
    }

    let prompts = recorded.find("POST", "/api/sessions/s1/prompts");
    assert_eq!(prompts.len(), 1);
    assert_eq!(
        serde_json::from_str::<Value>(&prompts[0].body).unwrap(),
        json!({"prompt": "hello"})
    );
    let approvals = recorded.find("POST", "/api/tools/approvals/a1");
    assert_eq!(approvals.len(), 1);
    assert_eq!(
        serde_json::from_str::<Value>(&approvals[0].body).unwrap(),
        json!({"approved": true, "remember": false})
    );
    let created = recorded.find("POST", "/api/sessions");
    assert_eq!(
        serde_json::from_str::<Value>(&created[0].body).unwrap(),
        json!({"title": null})
    );
    // The stream dropped after event 2 and was resumed from there.
    let streams = recorded.find("GET", "/api/events?session=s1");
    assert_eq!(streams[0].last_event_id, None);
    assert_eq!(streams[1].last_event_id.as_deref(), Some("2"));
    let requests = recorded.requests.lock().unwrap();
    assert!(
        requests
            .iter()
            .all(|request| request.authorization.as_deref() == Some("Bearer t0k")),
        "{requests:?}"
    );
}

#[test]
fn chat_without_a_server_says_how_to_start_one() {
    let home = tempfile::tempdir().unwrap();
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}");
    let output = chat(home.path(), &["--url", &url], "hello\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no imurun server at {url} — start one with `imurun serve`"
        )),
        "{stderr}"
    );
}
