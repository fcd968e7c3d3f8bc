//! A local upstream that counts what reaches it, and a name lookup that answers what a test
//! tells it to.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use imurun_net::Lookup;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An HTTP/1.1 server on 127.0.0.1 answering each request with what `answer` makes of its
/// head (`GET /path HTTP/1.1\r\nheaders...`), and recording every request it got.
pub(crate) struct Upstream {
    pub(crate) port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    pub(crate) async fn start(answer: fn(&str) -> String) -> Self {
        Self::serve(answer, None).await
    }

    /// The same over TLS, with a certificate for `name` made for the test; also returns the
    /// certificate (DER) for the client to trust.
    pub(crate) async fn start_tls(answer: fn(&str) -> String, name: &str) -> (Self, Vec<u8>) {
        let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()]).unwrap();
        let der = certified.cert.der().to_vec();
        let key = rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        (Self::serve(answer, Some(acceptor)).await, der)
    }

    async fn serve(answer: fn(&str) -> String, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = Arc::clone(&recorded);
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                exchange(stream, answer, recorded).await;
                            }
                        }
                        None => exchange(stream, answer, recorded).await,
                    }
                });
            }
        });
        Self { port, requests }
    }

    /// How many requests reached it.
    pub(crate) fn hits(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one request, records it, and writes `answer`'s reply.
async fn exchange<S>(mut stream: S, answer: fn(&str) -> String, recorded: Arc<Mutex<Vec<String>>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
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
        .unwrap()
        .push(text + &String::from_utf8_lossy(&body));
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A plain answer with `body`.
pub(crate) fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A redirect to `location`.
pub(crate) fn redirect(location: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

/// Answers each name with the next of its answers (the last one again once they run out),
/// counting lookups.
#[derive(Default)]
pub(crate) struct ScriptedLookup {
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    lookups: AtomicUsize,
}

impl ScriptedLookup {
    pub(crate) fn answering(name: &str, answers: &[&[&str]]) -> Arc<Self> {
        let lookup = Self::default();
        lookup.answers.lock().unwrap().insert(
            name.to_owned(),
            answers
                .iter()
                .map(|answer| answer.iter().map(|ip| ip.parse().unwrap()).collect())
                .collect(),
        );
        Arc::new(lookup)
    }

    pub(crate) fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

impl Lookup for ScriptedLookup {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().unwrap();
        let answer = match answers.get_mut(host) {
            Some(queue) if queue.len() > 1 => queue.pop_front(),
            Some(queue) => queue.front().cloned(),
            None => None,
        };
        Box::pin(async move { answer.ok_or_else(|| std::io::Error::other("no such name")) })
    }
}
