//! A minimal SSE client for tests: HTTP/1.1 over TCP with a chunked-body decoder, so no TLS
//! stack or HTTP client is built for it. It reads exactly what a browser's `EventSource`
//! would: messages separated by blank lines, comments included.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How long a test waits for the next SSE message before it fails. A safety net so that a
/// bug fails the test instead of hanging it, not a timing assertion.
pub const SSE_WAIT_MAX: Duration = Duration::from_secs(20);

/// One SSE message as read from the wire.
#[derive(Debug, Clone)]
pub struct SseMessage {
    /// The message's lines without the blank line that ends it.
    pub text: String,
}

impl SseMessage {
    /// Whether the message is only comments (a heartbeat).
    pub fn is_comment(&self) -> bool {
        self.text.lines().all(|line| line.starts_with(':'))
    }

    /// The `id:` field.
    pub fn id(&self) -> Option<u64> {
        self.field("id").and_then(|id| id.parse().ok())
    }

    /// The `data:` field as JSON.
    pub fn data(&self) -> Value {
        let data = self.field("data").expect("a message with data");
        serde_json::from_str(data).expect("data is one JSON object")
    }

    fn field(&self, name: &str) -> Option<&str> {
        self.text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
    }
}

/// An SSE subscription over one TCP connection.
#[derive(Debug)]
pub struct SseClient {
    reader: BufReader<TcpStream>,
    /// Decoded body text not yet split into messages.
    pending: String,
    /// The response head, lower-cased.
    pub headers: String,
}

impl SseClient {
    /// Sends `GET path` (with `Last-Event-ID` when given) and reads the response head. When
    /// this returns, the handler has run, so the subscription exists. Panics unless the
    /// answer is a 200 with a chunked body.
    pub async fn connect(addr: SocketAddr, path: &str, last_event_id: Option<&str>) -> Self {
        let extra = last_event_id
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        Self::connect_with(addr, path, &extra).await
    }

    /// As [`SseClient::connect`], with `headers` (each line ending in `\r\n`) added.
    pub async fn connect_with(addr: SocketAddr, path: &str, headers: &str) -> Self {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{headers}\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .expect("send request");
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            tokio::time::timeout(SSE_WAIT_MAX, reader.read_line(&mut line))
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
        Self {
            reader,
            pending: String::new(),
            headers: head,
        }
    }

    /// The next message, comments included; `None` when the response has ended.
    pub async fn next_message(&mut self) -> Option<SseMessage> {
        tokio::time::timeout(SSE_WAIT_MAX, self.read_message())
            .await
            .expect("an SSE message in time")
    }

    /// The next message that is not a comment; `None` when the response has ended.
    pub async fn next_event(&mut self) -> Option<SseMessage> {
        loop {
            let message = self.next_message().await?;
            if !message.is_comment() {
                return Some(message);
            }
        }
    }

    /// The data of events until one of type `event_type` (included); panics if the stream
    /// ends first.
    pub async fn until_type(&mut self, event_type: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next_event().await.expect("the stream ended");
            let data = message.data();
            let done = data["type"] == event_type;
            seen.push(data);
            if done {
                return seen;
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
