//! The API under test: a whole server (store, executor, hub, model slot) on 127.0.0.1:0, a
//! small HTTP/1.1 client over raw TCP, and a test model that replays replies, each optionally
//! held back (whole, or after some of its pieces) by a gate the test opens.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use imurun_agent::{AgentConfig, SkillStore};
use imurun_core::{
    BoxFuture, GenerateRequest, Message, Model, ModelError, NullAudit, StopFlag, Tool,
};
use imurun_exec::{Registry, ToolExecutor};
use imurun_policy::{Settings, Workspace, WorkspaceConfig};
use imurun_server::{EventHub, ModelSlot, ServerOptions, ServerParts, ServerState, serve};
use imurun_store::Store;
use imurun_tools::{BuiltinConfig, builtin_tools};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;

use crate::support::SseClient;

/// A bound on every wait of these tests: a bug fails the test instead of hanging it.
pub(crate) const WAIT_MAX: Duration = Duration::from_secs(20);

/// One reply of the [`TestModel`].
pub(crate) struct Reply {
    text: String,
    gate: Option<Arc<Semaphore>>,
    outcome: Outcome,
    /// Streamed as these pieces, one token each; empty: the whole text as one token.
    pieces: Vec<String>,
    /// Stops before the piece at this index until the gate has a permit.
    held_before: Option<(usize, Arc<Semaphore>)>,
}

/// How a reply ends once its gate (if any) opens.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Answer,
    /// Fails with a transport error whose message is the reply's text.
    Fail,
    /// Panics, as a buggy back-end would.
    Panic,
}

impl Reply {
    pub(crate) fn text(text: &str) -> Reply {
        Reply {
            text: text.to_owned(),
            gate: None,
            outcome: Outcome::Answer,
            pieces: Vec::new(),
            held_before: None,
        }
    }

    /// A reply streamed as these pieces, one token each.
    pub(crate) fn pieces(pieces: &[&str]) -> Reply {
        Reply {
            pieces: pieces.iter().map(|piece| (*piece).to_owned()).collect(),
            ..Reply::text(&pieces.concat())
        }
    }

    /// The reply stops before its piece `index` until `gate` has a permit (or the turn stops).
    pub(crate) fn held_before(self, index: usize, gate: &Arc<Semaphore>) -> Reply {
        Reply {
            held_before: Some((index, Arc::clone(gate))),
            ..self
        }
    }

    /// A generation that fails with a transport error saying `message`.
    pub(crate) fn error(message: &str) -> Reply {
        Reply {
            outcome: Outcome::Fail,
            ..Reply::text(message)
        }
    }

    /// A generation that panics.
    pub(crate) fn panic() -> Reply {
        Reply {
            outcome: Outcome::Panic,
            ..Reply::text("")
        }
    }

    /// The reply is given only once `gate` has a permit (the test adds one to open it).
    pub(crate) fn gated(text: &str, gate: &Arc<Semaphore>) -> Reply {
        Reply {
            gate: Some(Arc::clone(gate)),
            ..Reply::text(text)
        }
    }
}

/// A model that replays replies in order, then "That is all.", and keeps the messages of
/// every request. A gated reply waits for its gate, or for the request's stop flag.
pub(crate) struct TestModel {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Vec<Message>>>,
}

impl TestModel {
    pub(crate) fn new(replies: Vec<Reply>) -> Arc<TestModel> {
        Arc::new(TestModel {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// The messages of every request, oldest first.
    pub(crate) fn requests(&self) -> Vec<Vec<Message>> {
        self.requests.lock().expect("the requests' lock").clone()
    }
}

impl Model for TestModel {
    fn name(&self) -> &str {
        "test-model"
    }

    fn context_limit(&self) -> usize {
        8192
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        Box::pin(async move {
            self.requests
                .lock()
                .expect("the requests' lock")
                .push(request.messages.clone());
            let reply = self
                .replies
                .lock()
                .expect("the replies' lock")
                .pop_front()
                .unwrap_or_else(|| Reply::text("That is all."));
            if let Some(gate) = &reply.gate
                && !wait_for(gate, &request.stop).await
            {
                return Ok(String::new());
            }
            if !reply.pieces.is_empty() {
                let mut streamed = String::new();
                for (index, piece) in reply.pieces.iter().enumerate() {
                    if let Some((held, gate)) = &reply.held_before
                        && *held == index
                        && !wait_for(gate, &request.stop).await
                    {
                        return Ok(streamed);
                    }
                    on_token(piece);
                    streamed.push_str(piece);
                }
                return Ok(streamed);
            }
            match reply.outcome {
                Outcome::Answer => {}
                Outcome::Fail => {
                    return Err(ModelError::Transport {
                        message: reply.text,
                    });
                }
                Outcome::Panic => panic!("the test model panics, as asked"),
            }
            on_token(&reply.text);
            Ok(reply.text)
        })
    }
}

/// Waits until `gate` has a permit (and takes it): true, or false once `stop` is set.
async fn wait_for(gate: &Semaphore, stop: &StopFlag) -> bool {
    loop {
        if stop.is_stopped() {
            return false;
        }
        let permit = tokio::time::timeout(Duration::from_millis(20), gate.acquire());
        if let Ok(Ok(permit)) = permit.await {
            permit.forget();
            return true;
        }
    }
}

/// A running server and what it was built from.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    pub(crate) state: ServerState,
    pub(crate) store: Store,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

/// Where a server keeps its files: the workspace and the database.
pub(crate) struct Dirs {
    _temp: tempfile::TempDir,
    pub(crate) workspace: PathBuf,
    pub(crate) db: PathBuf,
    pub(crate) skills: PathBuf,
}

impl Dirs {
    pub(crate) fn new() -> Dirs {
        let temp = tempfile::tempdir().expect("temp dir");
        let workspace = temp.path().join("workspace");
        std::fs::create_dir_all(&workspace).expect("workspace");
        let db = temp.path().join("data/imurun.db");
        let skills = temp.path().join("data/skills");
        Dirs {
            workspace,
            db,
            skills,
            _temp: temp,
        }
    }
}

impl TestServer {
    /// A server over `dirs` with `model` in its slot (or none).
    pub(crate) async fn start(dirs: &Dirs, model: Option<Arc<dyn Model>>) -> TestServer {
        Self::start_with(dirs, model, ServerOptions::default()).await
    }

    /// A server with these options (the heartbeat is always short).
    pub(crate) async fn start_with(
        dirs: &Dirs,
        model: Option<Arc<dyn Model>>,
        options: ServerOptions,
    ) -> TestServer {
        Self::start_with_tools(dirs, model, options, Vec::new()).await
    }

    /// A server whose registry also holds `tools` (offered to the model).
    pub(crate) async fn start_with_tools(
        dirs: &Dirs,
        model: Option<Arc<dyn Model>>,
        options: ServerOptions,
        tools: Vec<Arc<dyn Tool>>,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Self::start_listening(listener, dirs, model, options, tools).await
    }

    /// A server with these options on `listener`, bound by the caller: a Keep host learns its
    /// own API's port before it starts, as `imurun serve` binds first.
    pub(crate) async fn start_on(
        listener: TcpListener,
        dirs: &Dirs,
        model: Option<Arc<dyn Model>>,
        options: ServerOptions,
    ) -> TestServer {
        Self::start_listening(listener, dirs, model, options, Vec::new()).await
    }

    async fn start_listening(
        listener: TcpListener,
        dirs: &Dirs,
        model: Option<Arc<dyn Model>>,
        options: ServerOptions,
        tools: Vec<Arc<dyn Tool>>,
    ) -> TestServer {
        let hub = EventHub::default();
        let workspace = Workspace::open(&WorkspaceConfig {
            root: dirs.workspace.clone(),
            home: None,
            guarded: Vec::new(),
        })
        .expect("workspace");
        let workspace = Arc::new(workspace);
        let mut registry = Registry::new();
        for tool in builtin_tools(&workspace, BuiltinConfig::default()) {
            registry.insert(tool, true);
        }
        for tool in tools {
            registry.insert(tool, true);
        }
        let executor = ToolExecutor::new(
            registry,
            workspace,
            Settings::default(),
            Arc::new(hub.clone()),
            Arc::new(NullAudit),
        )
        .with_approval_timeout(Duration::from_secs(60));
        let store = Store::open(&dirs.db).await.expect("store");
        let slot = match model {
            Some(model) => ModelSlot::ready(model),
            None => ModelSlot::new(),
        };
        let state = ServerState::new(ServerParts {
            mcp: std::sync::Arc::default(),
            store: store.clone(),
            executor: Arc::new(executor),
            hub,
            model: slot,
            skills: SkillStore::open(&dirs.skills).expect("skill store"),
            // A persona with no name: the scripted replies answer greetings without one, and
            // the loop would correct them (`api_grounding` tests that with its own persona).
            agent_config: AgentConfig::default().with_persona("You are a test assistant."),
            options: ServerOptions {
                heartbeat_interval: Duration::from_millis(500),
                ..options
            },
        });
        let addr = listener.local_addr().expect("addr");
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, state.clone(), async move {
            let _ = stop.await;
        }));
        let server = TestServer {
            addr,
            state,
            store,
            shutdown: Some(shutdown),
            task: Some(task),
        };
        // `serve` runs start-up before it accepts; wait until it answers.
        server.wait_until_healthy().await;
        server
    }

    async fn wait_until_healthy(&self) {
        let deadline = tokio::time::Instant::now() + WAIT_MAX;
        loop {
            // 200, or 401 on a Keep host (whose health check needs a token): either way it
            // answers.
            if let Ok((200 | 401, _)) = self.try_request("GET", "/api/health", None).await {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "server never answered"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Shuts the server down and waits for it.
    pub(crate) async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT_MAX, task)
                .await
                .expect("the server shuts down in time")
                .expect("the server task")
                .expect("serve");
        }
        self.store.close().await;
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.request("GET", path, None).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.request("POST", path, Some(body.to_string())).await
    }

    pub(crate) async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        self.request("PATCH", path, Some(body.to_string())).await
    }

    pub(crate) async fn delete(&self, path: &str) -> (u16, Value) {
        self.request("DELETE", path, None).await
    }

    /// A request with a raw body (sent as JSON).
    pub(crate) async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> (u16, Value) {
        tokio::time::timeout(WAIT_MAX, self.try_request(method, path, body.as_deref()))
            .await
            .expect("an answer in time")
            .expect("an HTTP answer")
    }

    /// A request with a bearer token (or none), answering the status, the body as JSON and
    /// the body's exact text.
    pub(crate) async fn request_as(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> (u16, Value, String) {
        tokio::time::timeout(
            WAIT_MAX,
            self.try_request_as(token, method, path, body.as_deref()),
        )
        .await
        .expect("an answer in time")
        .expect("an HTTP answer")
    }

    async fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> std::io::Result<(u16, Value)> {
        let (status, value, _) = self.try_request_as(None, method, path, body).await?;
        Ok((status, value))
    }

    async fn try_request_as(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> std::io::Result<(u16, Value, String)> {
        let mut stream = TcpStream::connect(self.addr).await?;
        let body = body.unwrap_or("");
        let authorization = token
            .map(|token| format!("Authorization: Bearer {token}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             {authorization}Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        let text = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        let value = serde_json::from_str(&body).unwrap_or(Value::String(body.clone()));
        Ok((status, value, body))
    }

    /// The status of a bodiless request with these extra header lines (each ending `\r\n`).
    pub(crate) async fn status_with_headers(&self, method: &str, path: &str, headers: &str) -> u16 {
        let mut stream = TcpStream::connect(self.addr).await.expect("connect");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{headers}Connection: close\r\n\r\n",
            self.addr
        );
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut status_line = [0u8; 12];
        tokio::time::timeout(WAIT_MAX, stream.read_exact(&mut status_line))
            .await
            .expect("an answer in time")
            .expect("a status line");
        String::from_utf8_lossy(&status_line[9..12])
            .parse()
            .unwrap_or(0)
    }

    /// An SSE stream of `session`'s events (every event for `None`).
    pub(crate) async fn events(&self, session: Option<&str>) -> SseClient {
        let path = match session {
            Some(session) => format!("/api/events?session={session}"),
            None => "/api/events".to_owned(),
        };
        SseClient::connect(self.addr, &path, None).await
    }

    /// Creates a session and returns its id.
    pub(crate) async fn new_session(&self) -> String {
        let (status, session) = self.post("/api/sessions", serde_json::json!({})).await;
        assert_eq!(status, 201, "{session}");
        session["id"].as_str().expect("an id").to_owned()
    }

    /// Polls the turn until it is no longer running, and returns its view.
    pub(crate) async fn finished_turn(&self, session: &str, turn_id: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT_MAX;
        loop {
            let (status, view) = self
                .get(&format!("/api/sessions/{session}/turns/{turn_id}"))
                .await;
            assert_eq!(status, 200, "{view}");
            if view["status"] != "running" && self.state.running_turn_id(session).is_none() {
                return view;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the turn never ended: {view}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// Reads events (comments and tokens skipped) until one of type `until`, and returns them all.
pub(crate) async fn events_until(client: &mut SseClient, until: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let message = client.next_event().await.expect("the stream goes on");
        let event = message.data();
        if event["type"] == "token" {
            continue;
        }
        let done = event["type"] == until;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// The `type` of each event.
pub(crate) fn event_types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or_default())
        .collect()
}

/// A model reply that calls `name` with `args`, in the taught format.
pub(crate) fn tool_reply(name: &str, args: Value) -> String {
    format!(
        "```tool\n{}\n```",
        serde_json::json!({"name": name, "args": args})
    )
}

/// Writes `text` to `name` inside the workspace.
pub(crate) fn write_file(dirs: &Dirs, name: &str, text: &str) {
    std::fs::write(Path::new(&dirs.workspace).join(name), text).expect("write file");
}
