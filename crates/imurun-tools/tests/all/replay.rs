//! A local HTTP server that replays a provider's answers and records what it was asked, so
//! the network tools run their real code path against 127.0.0.1 and never the internet.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Response;
use imurun_core::{StopFlag, Tool, ToolOutput};
use imurun_net::http::Url;
use imurun_testkit::{context, object};
use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: HashMap<String, String>,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
}

/// What the server answers.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
    /// Waits this long before answering (a server that hangs).
    pub(crate) delay: Duration,
}

impl Reply {
    pub(crate) fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub(crate) fn json(status: u16, body: &str) -> Self {
        Self::new(status, "application/json", body)
    }

    pub(crate) fn html(status: u16, body: &str) -> Self {
        Self::new(status, "text/html; charset=utf-8", body)
    }

    /// A 302 to `location`.
    pub(crate) fn redirect(location: &str) -> Self {
        Self {
            status: 302,
            headers: vec![("location", location.to_owned())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// Answers only after `delay`, longer than any timeout a test sets.
    pub(crate) fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
}

type Answer = dyn Fn(&Recorded) -> Reply + Send + Sync;

struct Shared {
    answer: Box<Answer>,
    requests: Mutex<Vec<Recorded>>,
}

/// A running replay server; it stops with the test's runtime.
pub(crate) struct ReplayServer {
    pub(crate) addr: SocketAddr,
    shared: Arc<Shared>,
}

impl ReplayServer {
    /// Serves `answer`'s reply to every request.
    pub(crate) async fn start(answer: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Shared {
            answer: Box::new(answer),
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, shared }
    }

    /// The same reply every time.
    pub(crate) async fn always(reply: Reply) -> Self {
        Self::start(move |_| reply.clone()).await
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The one request the server got.
    pub(crate) fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        requests.into_iter().next().unwrap()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let query = parts
        .uri
        .query()
        .map(|query| {
            Url::parse(&format!("http://x/?{query}"))
                .unwrap()
                .query_pairs()
                .map(|(name, value)| (name.into_owned(), value.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query,
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    value.to_str().unwrap_or("").to_owned(),
                )
            })
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let reply = (shared.answer)(&recorded);
    shared.requests.lock().unwrap().push(recorded);
    tokio::time::sleep(reply.delay).await;
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(*name, value);
    }
    response.body(Body::from(reply.body)).unwrap()
}

/// Runs `tool` directly (no executor: these tests are about the tool's own answers).
pub(crate) async fn run(tool: &dyn Tool, args: Value) -> ToolOutput {
    assert!(args.is_object(), "arguments are an object: {args}");
    tool.run(&context(StopFlag::new()), &object(args)).await
}

/// Asserts `output` failed and its text holds every one of `expected`.
#[track_caller]
pub(crate) fn assert_failed(output: &ToolOutput, expected: &[&str]) {
    assert!(!output.ok, "expected a failure, got: {}", output.text);
    assert!(output.text.starts_with("FAILED: "), "{}", output.text);
    for part in expected {
        assert!(
            output.text.contains(part),
            "missing {part:?} in: {}",
            output.text
        );
    }
}

/// Asserts `output` succeeded and its text holds every one of `expected`.
#[track_caller]
pub(crate) fn assert_ok(output: &ToolOutput, expected: &[&str]) {
    assert!(output.ok, "expected success, got: {}", output.text);
    for part in expected {
        assert!(
            output.text.contains(part),
            "missing {part:?} in: {}",
            output.text
        );
    }
}
