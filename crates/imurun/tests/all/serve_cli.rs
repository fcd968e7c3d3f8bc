//! `imurun serve` as a person starts it: it prints its URL, answers prompts over HTTP, and a
//! server killed with SIGKILL reopens with every message it had committed.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{model_path, run_imurun};

const WAIT_MAX: Duration = Duration::from_secs(60);
/// How long a test waits for a turn of the embedded model to end: a guard against a hang,
/// not a speed check.
const TURN_WAIT_MAX: Duration = Duration::from_secs(600);

/// Starts `imurun serve --model MODEL --addr 127.0.0.1:0 ARGS` under `home` with `envs`, and
/// reads its first line: the process, and the address it says it listens on over `scheme`.
pub(crate) fn spawn_serve(
    home: &Path,
    model: &str,
    args: &[&str],
    envs: &[(&str, &OsStr)],
    scheme: &str,
) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_imurun"))
        .args(["serve", "--model", model, "--addr", "127.0.0.1:0"])
        .args(args)
        .env("IMURUN_HOME", home)
        .env(
            "IMURUN_THREADS",
            imurun_testkit::MODEL_TEST_THREADS.to_string(),
        )
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
    let prefix = format!("imurun is listening on {scheme}://");
    let addr = line
        .trim()
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (child, addr)
}

/// A running `imurun serve` and its address; killed when dropped, the test passing or not.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: String,
    /// The bearer token every request of [`Server::request`] carries (a Keep host's operator
    /// token), if any.
    token: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub(crate) fn start(home: &Path, model: &str) -> Server {
        Self::start_with(home, model, &[])
    }

    /// A server with extra environment variables.
    pub(crate) fn start_with(home: &Path, model: &str, envs: &[(&str, &OsStr)]) -> Server {
        Self::start_with_args(home, model, &[], envs)
    }

    /// A server with extra `imurun serve` arguments and environment variables.
    pub(crate) fn start_with_args(
        home: &Path,
        model: &str,
        args: &[&str],
        envs: &[(&str, &OsStr)],
    ) -> Server {
        Self::start_as(home, model, args, envs, None)
    }

    /// A server whose requests carry `token` (`imurun serve --keep` and its operator's token).
    pub(crate) fn start_as(
        home: &Path,
        model: &str,
        args: &[&str],
        envs: &[(&str, &OsStr)],
        token: Option<&str>,
    ) -> Server {
        let (child, addr) = spawn_serve(home, model, args, envs, "http");
        let server = Server {
            child,
            addr,
            token: token.map(str::to_owned),
        };
        server.wait_until(|server| server.get("/api/model").1["status"] == "ready");
        server
    }

    pub(crate) fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let (status, _, body) = self.request_as(self.token.as_deref(), method, path, body);
        (status, body)
    }

    /// A request with this bearer token (or none): the status, the body's text and its JSON.
    pub(crate) fn request_as(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, String, Value) {
        crate::keep_hosts_kit::request(&self.addr, token, method, path, body)
    }

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        self.request("GET", path, None)
    }

    pub(crate) fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.request("POST", path, Some(&body))
    }

    pub(crate) fn wait_until(&self, done: impl Fn(&Server) -> bool) {
        self.wait_until_within(WAIT_MAX, done);
    }

    pub(crate) fn wait_until_within(&self, limit: Duration, done: impl Fn(&Server) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(started.elapsed() < limit, "the server never got there");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn transcript(&self, session: &str) -> Vec<Value> {
        self.get(&format!("/api/sessions/{session}")).1["transcript"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the process to end; returns its exit status.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
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

    pub(crate) fn kill(mut self) {
        // SIGKILL: no shutdown, no flush.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

pub(crate) fn script(dir: &Path, replies: &Value) -> String {
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
    // The turn is followed by its own view: the model may call a tool before it answers, and
    // beside the other model tests on two cores a turn can take minutes.
    let turn = format!(
        "/api/sessions/{session}/turns/{}",
        body["turn_id"].as_str().unwrap()
    );
    server.wait_until_within(TURN_WAIT_MAX, |server| {
        server.get(&turn).1["status"] != "running"
    });
    let (_, view) = server.get(&turn);
    assert!(
        ["done", "max-steps"].contains(&view["status"].as_str().unwrap_or_default()),
        "{view}"
    );
    let answer = &view["answer"];
    assert!(
        answer.as_str().is_some_and(|text| !text.trim().is_empty()),
        "an empty answer: {view}"
    );
    let transcript = server.transcript(&session);
    assert_eq!(
        transcript.last().unwrap()["content"],
        *answer,
        "{transcript:?}"
    );
    server.kill();
}

/// Reads a session's SSE stream on a thread of its own; each event's JSON arrives on the
/// channel.
pub(crate) fn subscribe(addr: &str, session: &str) -> std::sync::mpsc::Receiver<Value> {
    sse_events(addr, &format!("/api/events?session={session}"), None)
}

/// Opens the SSE stream at `path` (with `token`, if any) and reads it on a thread of its own:
/// each event's JSON arrives on the channel. It returns once the server has answered the
/// request's head (it has subscribed the client by then).
pub(crate) fn sse_events(
    addr: &str,
    path: &str,
    token: Option<&str>,
) -> std::sync::mpsc::Receiver<Value> {
    let mut stream = TcpStream::connect(addr).unwrap();
    let authorization = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{authorization}Accept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains(" 200 "), "the event stream {path}: {line}");
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
            break;
        }
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

/// The MCP test server from `crates/imurun-integrations/tests/mcp` (installed by `scripts/setup`).
fn everything_server() -> std::path::PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../imurun-integrations/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
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

/// Every byte of every file under `dir`, and the names of the files holding `needle`.
fn files_holding(dir: &Path, needle: &str) -> (usize, Vec<String>) {
    let mut read = 0;
    let mut holding = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        read += bytes.len();
        if !needle.is_empty()
            && bytes
                .windows(needle.len())
                .any(|window| window == needle.as_bytes())
        {
            holding.push(path.display().to_string());
        }
    }
    (read, holding)
}

/// The log files hold what a person needs and never an argument value or a secret, even at
/// `debug`; prompt text stays out of them at the default level.
#[test]
fn log_files_never_hold_argument_values_or_secrets() {
    const ARGUMENT: &str = "canary-arg-7d3e41";
    const SECRET: &str = "canary-secret-b92c05";
    const PROMPT: &str = "canary-prompt-51aa0f";
    let home = tempfile::tempdir().unwrap();
    let call = |name: &str, args: Value| json!({"text": format!("```tool\n{}\n```", json!({"name": name, "args": args}))});
    let replies = json!([
        call("file_write", json!({"path": "notes.txt", "content": ARGUMENT})),
        call("shell", json!({"command": format!("echo {ARGUMENT} > out.txt")})),
        {"text": "Done."},
        {"text": "Hello again."}
    ]);
    let model = script(home.path(), &replies);
    let secret = OsStr::new(SECRET);
    let envs: [(&str, &OsStr); 5] = [
        ("IMURUN_LOG", OsStr::new("debug")),
        ("IMURUN_MODE", OsStr::new("allow-all")),
        ("IMURUN_GITHUB_TOKEN", secret),
        ("IMURUN_BRAVE_API_KEY", secret),
        ("OPENAI_API_KEY", secret),
    ];
    let server = Server::start_with(home.path(), &model, &envs);
    let (_, session) = server.post("/api/sessions", json!({}));
    let session = session["id"].as_str().unwrap().to_owned();
    let (status, _) = server.post(
        &format!("/api/sessions/{session}/prompts"),
        json!({"prompt": "Write the note and run the command."}),
    );
    assert_eq!(status, 202);
    server.wait_until(|server| server.transcript(&session).len() == 2);
    assert_eq!(server.transcript(&session)[1]["content"], "Done.");
    // The tools really ran with the canary.
    let workspace = home.path().join("workspace");
    let written = std::fs::read_to_string(workspace.join("notes.txt")).unwrap();
    assert_eq!(written, ARGUMENT);
    assert!(server.terminate().success());
    // The server audits every call its turns make, through the same wiring as every command.
    let calls: Vec<(String, String, String)> = crate::support::audit_rows(home.path())
        .into_iter()
        .map(|(tool, source, _, outcome)| (tool, source, outcome))
        .collect();
    let model_call = |tool: &str| (tool.to_owned(), "model".to_owned(), "ok".to_owned());
    assert_eq!(calls, [model_call("file_write"), model_call("shell")]);

    let logs = home.path().join("logs");
    let (read, _) = files_holding(&logs, "");
    assert!(read > 0, "the server wrote no log");
    let (_, with_requests) = files_holding(&logs, "\"route\":\"/api/sessions/{id}/prompts\"");
    assert!(!with_requests.is_empty(), "no request span in the logs");
    for needle in [ARGUMENT, SECRET] {
        let (_, holding) = files_holding(&logs, needle);
        assert!(holding.is_empty(), "{needle} is in {holding:?}");
    }

    // The default level: the prompt's text stays out too.
    let server = Server::start(home.path(), &model);
    let (status, _) = server.post(
        &format!("/api/sessions/{session}/prompts"),
        json!({"prompt": format!("Say hello, {PROMPT}.")}),
    );
    assert_eq!(status, 202);
    server.wait_until(|server| server.transcript(&session).len() == 4);
    assert!(server.terminate().success());
    for needle in [ARGUMENT, SECRET, PROMPT] {
        let (_, holding) = files_holding(&logs, needle);
        assert!(holding.is_empty(), "{needle} is in {holding:?}");
    }
}

/// `imurun chat` against the real server running the scripted model: the prompt starts a
/// turn, the write asks (allow-reads), the person's "y" goes through the approvals route, the
/// write happens, and the answer streams.
#[test]
fn chat_talks_to_the_real_server() {
    let home = tempfile::tempdir().unwrap();
    let replies = json!([
        {"text": "```tool\n{\"name\": \"file_write\", \"args\": {\"path\": \"plan.txt\", \"content\": \"step one\"}}\n```"},
        {"text": "I wrote plan.txt."}
    ]);
    let model = script(home.path(), &replies);
    let server = Server::start(home.path(), &model);
    let url = format!("http://{}", server.addr);
    let output = crate::chat_cli::chat(home.path(), &["--url", &url], "write the plan\ny\n");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for part in ["Allow file_write", "← file_write ok", "I wrote plan.txt."] {
        assert!(stdout.contains(part), "{part:?} not in\n{stdout}\n{stderr}");
    }
    let written = std::fs::read_to_string(home.path().join("workspace/plan.txt")).unwrap();
    assert_eq!(written, "step one");
    let (_, sessions) = server.get("/api/sessions");
    let session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    let transcript: Vec<Value> = server
        .transcript(&session)
        .iter()
        .map(|message| message["content"].clone())
        .collect();
    assert_eq!(
        transcript,
        [json!("write the plan"), json!("I wrote plan.txt.")]
    );
    assert!(server.terminate().success());
}
