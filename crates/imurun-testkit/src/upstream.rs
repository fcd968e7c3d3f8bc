//! A local HTTP/1.1 upstream that answers what a test tells it to and records every request
//! that reaches it, so a test can say that nothing was sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A connection the upstream serves: plain TCP, or what an [`Accept`] made of it (TLS).
pub trait UpstreamStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> UpstreamStream for T {}

/// What an [`Accept`] resolves to: the stream to serve, or `None` to drop the connection.
pub type Accepted = Pin<Box<dyn Future<Output = Option<Box<dyn UpstreamStream>>> + Send>>;

/// Turns an accepted TCP connection into the stream to serve (a TLS handshake); `None` drops
/// it.
pub trait Accept: Send + Sync + 'static {
    fn accept(&self, stream: TcpStream) -> Accepted;
}

/// An HTTP/1.1 server on 127.0.0.1 answering each request with what `answer` makes of its
/// head (`GET /path HTTP/1.1\r\nheaders...`), recording every request with its body.
#[derive(Debug)]
pub struct Upstream {
    pub port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    pub async fn start(answer: fn(&str) -> String) -> Self {
        Self::start_accepting(answer, None).await
    }

    /// The same, each connection first handed to `accept`.
    pub async fn start_accepting(
        answer: fn(&str) -> String,
        accept: Option<Arc<dyn Accept>>,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the upstream");
        let port = listener
            .local_addr()
            .expect("the upstream's address")
            .port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = Arc::clone(&recorded);
                let accept = accept.clone();
                tokio::spawn(async move {
                    match accept {
                        Some(accept) => {
                            if let Some(stream) = accept.accept(stream).await {
                                exchange(stream, answer, recorded).await;
                            }
                        }
                        None => exchange(Box::new(stream), answer, recorded).await,
                    }
                });
            }
        });
        Self { port, requests }
    }

    /// How many requests reached it.
    pub fn hits(&self) -> usize {
        self.requests().len()
    }

    /// Every request that reached it, head and body.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Reads one request, records it, and writes `answer`'s reply.
async fn exchange(
    mut stream: Box<dyn UpstreamStream>,
    answer: fn(&str) -> String,
    recorded: Arc<Mutex<Vec<String>>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let length = text
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body).await;
    let reply = answer(&text);
    recorded
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(text + &String::from_utf8_lossy(&body));
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A plain `200 OK` answer with `body`.
pub fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A `302` redirect to `location`.
pub fn redirect(location: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}
