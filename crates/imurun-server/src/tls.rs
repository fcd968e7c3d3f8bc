//! HTTPS from a certificate and key the operator gives (PEM files): what a browser on another
//! machine needs to use a Keep host, since WebCrypto, which makes a person's device key, works
//! only in a secure context. Handshakes run on tasks of their own, at most
//! [`HANDSHAKES_MAX`] at once and each within [`HANDSHAKE_TIME_MAX`], so a client that never
//! finishes one holds up nobody.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Handshakes under way at once; past it, a new connection waits to be handshaken.
pub const HANDSHAKES_MAX: usize = 256;

/// How long a client has to finish its handshake.
pub const HANDSHAKE_TIME_MAX: Duration = Duration::from_secs(10);

/// Why a certificate or key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading the certificate {path}: {reason}")]
    Certificate { path: String, reason: String },
    #[error("reading the private key {path}: {reason}")]
    Key { path: String, reason: String },
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(String),
}

/// An acceptor for the certificate chain at `cert` and its private key at `key`.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let shown = |path: &Path| path.display().to_string();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certificates| certificates.collect::<Result<_, _>>())
        .map_err(|error| TlsError::Certificate {
            path: shown(cert),
            reason: error.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Certificate {
            path: shown(cert),
            reason: "it holds no PEM certificate".into(),
        });
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|error| TlsError::Key {
        path: shown(key),
        reason: error.to_string(),
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| TlsError::Config(error.to_string()))?
    .with_no_client_auth()
    .with_single_cert(chain, private)
    .map_err(|error| TlsError::Config(error.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Connections on a TCP listener, each handed on once its TLS handshake is done.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl TlsListener {
    /// Handshakes every connection `listener` accepts with `acceptor`, in the background.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> io::Result<TlsListener> {
        let addr = listener.local_addr()?;
        let (done, ready) = mpsc::channel(HANDSHAKES_MAX);
        let slots = Arc::new(Semaphore::new(HANDSHAKES_MAX));
        tokio::spawn(async move {
            loop {
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                    return;
                };
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    let shaken =
                        tokio::time::timeout(HANDSHAKE_TIME_MAX, acceptor.accept(stream)).await;
                    match shaken {
                        Ok(Ok(stream)) => {
                            let _ = done.send((stream, peer)).await;
                        }
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "a TLS handshake failed");
                        }
                        Err(_) => tracing::debug!(%peer, "a TLS handshake took too long"),
                    }
                    drop(slot);
                });
            }
        });
        Ok(TlsListener { ready, addr })
    }
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TlsListener")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task ended (its listener failed for good): nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
