//! A local HTTP/1.1 server that replays canned responses, for the HTTP back-end tests.
//!
//! It is written on `std::net` rather than wiremock or axum because the tests need what
//! those hide: a body sent in chosen pieces with pauses between them, a connection closed
//! in the middle of a chunked body, and whether the client hung up mid-stream. It listens
//! on 127.0.0.1 only, records every request, and answers each path from a queue of
//! responses (the last one repeats); unknown paths get 404.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use imurun_core::{GenerateRequest, Model, ModelError};
use imurun_model::{HttpOptions, RetryPolicy};
use serde_json::Value;

/// A fixture's text, from `tests/fixtures/http/`.
pub(crate) fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/http")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Options for tests: short waits, so retries take milliseconds.
pub(crate) fn fast_options(attempts_max: u32) -> HttpOptions {
    HttpOptions {
        retry: RetryPolicy {
            attempts_max,
            backoff_initial_ms: 10,
            backoff_max_ms: 40,
            retry_after_max_ms: 2_000,
        },
        connect_timeout_ms: 2_000,
        read_timeout_ms: 10_000,
        probe_timeout_ms: 2_000,
    }
}

/// How a body goes out.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    /// In one piece, with `Content-Length`.
    Whole(String),
    /// Chunked, one chunk per piece, `pause_ms` apart; `cut` closes the connection after the
    /// pieces without the final empty chunk, as a server that died mid-reply does.
    Chunked {
        pieces: Vec<Vec<u8>>,
        pause_ms: u64,
        cut: bool,
    },
    /// Without length or chunking: the body ends when the connection closes.
    UntilClose(String),
    /// No answer at all: the connection closes once the request is read, as a server
    /// closing a kept-alive connection the client just sent on does.
    Hangup,
}

/// One canned response.
#[derive(Debug, Clone)]
pub(crate) struct Canned {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Body,
    /// A wait before the status line, as a server reading a long prompt makes.
    pub(crate) delay_ms: u64,
}

impl Canned {
    pub(crate) fn json(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Whole(body.into()),
            delay_ms: 0,
        }
    }

    /// A server-sent event stream, one event per chunk.
    pub(crate) fn sse(text: &str) -> Self {
        Self::stream("text/event-stream", sse_events(text), 0)
    }

    /// An NDJSON stream, one line per chunk.
    pub(crate) fn ndjson(text: &str) -> Self {
        let pieces = text.split_inclusive('\n').map(str::to_owned).collect();
        Self::stream("application/x-ndjson", pieces, 0)
    }

    pub(crate) fn stream(content_type: &str, pieces: Vec<String>, pause_ms: u64) -> Self {
        let pieces = pieces.into_iter().map(String::into_bytes).collect();
        Self {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: Body::Chunked {
                pieces,
                pause_ms,
                cut: false,
            },
            delay_ms: 0,
        }
    }

    #[must_use]
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same body, chunked in pieces of `size` bytes instead (some cut inside a line or
    /// a UTF-8 character), `pause_ms` apart.
    #[must_use]
    pub(crate) fn in_pieces_of(mut self, size: usize, pause_ms: u64) -> Self {
        let bytes = self.body_bytes();
        let pieces = bytes.chunks(size).map(<[u8]>::to_vec).collect();
        self.body = Body::Chunked {
            pieces,
            pause_ms,
            cut: false,
        };
        self
    }

    /// Keeps only the first `pieces` pieces of a chunked body and cuts the connection there.
    #[must_use]
    pub(crate) fn cut_after(mut self, count: usize) -> Self {
        if let Body::Chunked { pieces, cut, .. } = &mut self.body {
            pieces.truncate(count);
            *cut = true;
        }
        self
    }

    #[must_use]
    pub(crate) fn paced(mut self, pause_ms_each: u64) -> Self {
        if let Body::Chunked { pause_ms, .. } = &mut self.body {
            *pause_ms = pause_ms_each;
        }
        self
    }

    #[must_use]
    pub(crate) fn delayed(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    fn body_bytes(&self) -> Vec<u8> {
        match &self.body {
            Body::Whole(text) | Body::UntilClose(text) => text.clone().into_bytes(),
            Body::Hangup => Vec::new(),
            Body::Chunked { pieces, .. } => pieces.concat(),
        }
    }
}

/// The events of an SSE text, each with its blank line.
pub(crate) fn sse_events(text: &str) -> Vec<String> {
    text.split_inclusive("\n\n").map(str::to_owned).collect()
}

/// A request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
    /// Whether writing the response failed because the client had gone.
    pub(crate) client_left: bool,
}

impl Received {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

#[derive(Debug, Default)]
struct State {
    routes: HashMap<String, Vec<Canned>>,
    received: Vec<Received>,
}

/// The replay server; it stops with the test process.
#[derive(Debug, Clone)]
pub(crate) struct ReplayServer {
    pub(crate) url: String,
    state: Arc<Mutex<State>>,
}

impl ReplayServer {
    /// A server on 127.0.0.1 answering `routes`: `("POST /v1/chat/completions", [...])`.
    pub(crate) fn start(routes: Vec<(&str, Vec<Canned>)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = State {
            routes: routes
                .into_iter()
                .map(|(route, canned)| (route.to_owned(), canned))
                .collect(),
            received: Vec::new(),
        };
        let state = Arc::new(Mutex::new(state));
        let shared = Arc::clone(&state);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&shared);
                thread::spawn(move || serve(stream, &shared));
            }
        });
        Self { url, state }
    }

    /// Every request received so far, in order.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// The requests to one path.
    pub(crate) fn received_at(&self, path: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }
}

/// A URL where nothing listens: a port bound and released.
pub(crate) fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .map_or(0, |n| n.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();

    let route = format!("{method} {path}");
    let (canned, index) = {
        let mut state = state.lock().unwrap();
        let canned = match state.routes.get_mut(&route) {
            Some(queue) if queue.len() > 1 => Some(queue.remove(0)),
            Some(queue) => queue.first().cloned(),
            None => None,
        };
        state.received.push(Received {
            method,
            path,
            headers,
            body: String::from_utf8(body).unwrap(),
            client_left: false,
        });
        (canned, state.received.len() - 1)
    };
    let canned = canned.unwrap_or_else(|| Canned {
        status: 404,
        headers: vec![("content-type".into(), "text/plain".into())],
        body: Body::Whole("Not Found".into()),
        delay_ms: 0,
    });
    if respond(stream, &canned).is_err() {
        state.lock().unwrap().received[index].client_left = true;
    }
}

fn respond(mut stream: TcpStream, canned: &Canned) -> std::io::Result<()> {
    thread::sleep(Duration::from_millis(canned.delay_ms));
    if matches!(canned.body, Body::Hangup) {
        return stream.shutdown(std::net::Shutdown::Both);
    }
    let mut head = format!("HTTP/1.1 {} Canned\r\nconnection: close\r\n", canned.status);
    for (name, value) in &canned.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match &canned.body {
        Body::Whole(text) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", text.len()));
            stream.write_all(head.as_bytes())?;
            stream.write_all(text.as_bytes())?;
        }
        Body::Hangup => {}
        Body::UntilClose(text) => {
            head.push_str("\r\n");
            stream.write_all(head.as_bytes())?;
            stream.write_all(text.as_bytes())?;
        }
        Body::Chunked {
            pieces,
            pause_ms,
            cut,
        } => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            stream.write_all(head.as_bytes())?;
            stream.flush()?;
            for (index, piece) in pieces.iter().enumerate() {
                if index > 0 {
                    thread::sleep(Duration::from_millis(*pause_ms));
                }
                stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                stream.write_all(piece)?;
                stream.write_all(b"\r\n")?;
                stream.flush()?;
            }
            if !cut {
                stream.write_all(b"0\r\n\r\n")?;
            }
        }
    }
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Both)
}

/// Runs one generation; its result and the pieces streamed.
pub(crate) async fn generate(
    model: &dyn Model,
    request: &GenerateRequest,
) -> (Result<String, ModelError>, Vec<String>) {
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| pieces.push(piece.to_owned());
    let result = model.generate(request, &mut on_token).await;
    (result, pieces)
}

/// The message of an error, for `contains` checks.
pub(crate) fn message(error: &ModelError) -> String {
    error.to_string()
}
