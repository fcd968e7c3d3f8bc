//! Helpers shared by the test modules: publishing by type, draining a subscription, and an
//! axum server on 127.0.0.1:0 with a small raw SSE client over TCP (no TLS stack to build).

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::get;
use imurun_server::{EventHub, StreamQuery, Subscription, last_event_id, sse_response};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// How long a test waits for the next SSE message before it fails. A safety net so that a bug
/// fails the test instead of hanging it, not a timing assertion.
const WAIT_MAX: Duration = Duration::from_secs(20);

/// Publishes `{"type": event_type}` for `session` and returns its id.
pub(crate) fn publish(hub: &EventHub, session: Option<&str>, event_type: &str) -> u64 {
    hub.publish_value(session, json!({"type": event_type, "session_id": session}))
        .expect("an object with a type is an event")
}

/// Every record ready now, as JSON values.
pub(crate) fn drain(subscription: &mut Subscription) -> Vec<Value> {
    std::iter::from_fn(|| subscription.try_recv())
        .map(|record| record.value())
        .collect()
}

/// The `id` field of each value (`None` for the hub's notices).
pub(crate) fn ids(values: &[Value]) -> Vec<Option<u64>> {
    values.iter().map(|value| value["id"].as_u64()).collect()
}

/// The `type` field of each value.
pub(crate) fn types(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|value| value["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Replaces every `"ts":<digits>` with `"ts":"<ts>"`, so wire text can be compared.
pub(crate) fn without_timestamps(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"ts\":") {
        let (before, after) = rest.split_at(at + "\"ts\":".len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        assert!(digits > 0, "ts is a number of milliseconds: {text}");
        out.push_str("\"<ts>\"");
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[derive(Clone)]
struct ServerState {
    hub: EventHub,
    heartbeat_interval: Duration,
}

/// Serves `GET /events` from `hub` on a free local port, the way the real route will.
pub(crate) async fn serve(hub: &EventHub, heartbeat_interval: Duration) -> SocketAddr {
    let state = ServerState {
        hub: hub.clone(),
        heartbeat_interval,
    };
    let app = Router::new()
        .route("/events", get(events))
        .with_state(state);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn events(
    State(state): State<ServerState>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> impl IntoResponse {
    sse_response(
        &state.hub,
        query.session_filter(),
        last_event_id(&headers),
        state.heartbeat_interval,
    )
}

/// One SSE message as read from the wire.
#[derive(Debug)]
pub(crate) struct SseMessage {
    /// The message's lines without the blank line that ends it.
    pub(crate) text: String,
}

impl SseMessage {
    pub(crate) fn is_comment(&self) -> bool {
        self.text.lines().all(|line| line.starts_with(':'))
    }

    pub(crate) fn id(&self) -> Option<u64> {
        self.field("id").and_then(|id| id.parse().ok())
    }

    pub(crate) fn data(&self) -> Value {
        let data = self.field("data").expect("a message with data");
        serde_json::from_str(data).expect("data is one JSON object")
    }

    fn field(&self, name: &str) -> Option<&str> {
        self.text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
    }
}

/// A minimal SSE client: HTTP/1.1 over TCP with a chunked-body decoder.
pub(crate) struct SseClient {
    reader: BufReader<TcpStream>,
    /// Decoded body text not yet split into messages.
    pending: String,
    /// The response headers, lower-cased.
    pub(crate) headers: String,
}

impl SseClient {
    /// Sends `GET path` with `Last-Event-ID` when given and reads the response head. When this
    /// returns, the handler has run, so the subscription exists.
    pub(crate) async fn connect(
        addr: SocketAddr,
        path: &str,
        last_event_id: Option<&str>,
    ) -> SseClient {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let last_event_id = last_event_id
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{last_event_id}\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .expect("send request");
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            tokio::time::timeout(WAIT_MAX, reader.read_line(&mut line))
                .await
                .expect("response head in time")
                .expect("read head");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line.to_ascii_lowercase());
        }
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        SseClient {
            reader,
            pending: String::new(),
            headers: head,
        }
    }

    /// The next message, comments included; `None` when the response has ended.
    pub(crate) async fn next_message(&mut self) -> Option<SseMessage> {
        tokio::time::timeout(WAIT_MAX, self.read_message())
            .await
            .expect("an SSE message in time")
    }

    /// The next message that is not a comment; `None` when the response has ended.
    pub(crate) async fn next_event(&mut self) -> Option<SseMessage> {
        loop {
            let message = self.next_message().await?;
            if !message.is_comment() {
                return Some(message);
            }
        }
    }

    async fn read_message(&mut self) -> Option<SseMessage> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let text = self.pending[..end].to_owned();
                self.pending.drain(..end + 2);
                return Some(SseMessage { text });
            }
            let chunk = self.read_chunk().await?;
            self.pending.push_str(&chunk);
        }
    }

    async fn read_chunk(&mut self) -> Option<String> {
        let mut size_line = String::new();
        self.reader
            .read_line(&mut size_line)
            .await
            .expect("chunk size");
        let size = usize::from_str_radix(size_line.trim(), 16).ok()?;
        if size == 0 {
            return None;
        }
        let mut chunk = vec![0; size + 2];
        self.reader
            .read_exact(&mut chunk)
            .await
            .expect("chunk body");
        chunk.truncate(size);
        Some(String::from_utf8(chunk).expect("UTF-8 body"))
    }
}
