//! HTTPS from a certificate and key the operator gives (PEM files): what a browser on another
//! machine needs to use a Keep host, since WebCrypto, which makes a person's device key, works
//! only in a secure context. Handshakes run on tasks of their own, at most
//! [`HANDSHAKES_MAX`] at once and [`HANDSHAKES_PER_PEER_MAX`] from one address, each within
//! [`HANDSHAKE_TIME_MAX`], so a client that never finishes one holds up nobody else.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Handshakes under way at once; past it, a new connection is closed.
pub const HANDSHAKES_MAX: usize = 256;

/// Handshakes under way at once from one address; past it, its new connection is closed.
pub const HANDSHAKES_PER_PEER_MAX: usize = 16;

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

/// Handshakes under way, in all and per peer address.
#[derive(Default)]
struct Shaking {
    total: usize,
    by_peer: HashMap<IpAddr, usize>,
}

/// One handshake's place in [`Shaking`], given back when it ends however it ends.
struct Place {
    shaking: Arc<Mutex<Shaking>>,
    peer: IpAddr,
}

impl Place {
    /// A place for a handshake with `peer`, unless every place, or every place a peer may
    /// hold, is taken.
    fn take(shaking: &Arc<Mutex<Shaking>>, peer: IpAddr) -> Option<Place> {
        let mut now = shaking
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let of_peer = now.by_peer.get(&peer).copied().unwrap_or(0);
        if now.total >= HANDSHAKES_MAX || of_peer >= HANDSHAKES_PER_PEER_MAX {
            return None;
        }
        now.total += 1;
        now.by_peer.insert(peer, of_peer + 1);
        Some(Place {
            shaking: Arc::clone(shaking),
            peer,
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut now = self
            .shaking
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        now.total = now.total.saturating_sub(1);
        if let Some(count) = now.by_peer.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                now.by_peer.remove(&self.peer);
            }
        }
    }
}

impl TlsListener {
    /// Handshakes every connection `listener` accepts with `acceptor`, in the background.
    /// Accepting never waits on a handshake: a connection past [`HANDSHAKES_MAX`] under way,
    /// or past [`HANDSHAKES_PER_PEER_MAX`] from one address, is closed at once, so one client
    /// that opens connections and never finishes them cannot hold the others up.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> io::Result<TlsListener> {
        let addr = listener.local_addr()?;
        let (done, ready) = mpsc::channel(HANDSHAKES_MAX);
        let shaking = Arc::new(Mutex::new(Shaking::default()));
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Some(place) = Place::take(&shaking, peer.ip()) else {
                    tracing::debug!(%peer, "too many TLS handshakes under way: closed");
                    continue;
                };
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    let shaken =
                        tokio::time::timeout(HANDSHAKE_TIME_MAX, acceptor.accept(stream)).await;
                    drop(place);
                    match shaken {
                        Ok(Ok(stream)) => {
                            let _ = done.send((stream, peer)).await;
                        }
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "a TLS handshake failed");
                        }
                        Err(_) => tracing::debug!(%peer, "a TLS handshake took too long"),
                    }
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

#[cfg(test)]
mod tests {
    use super::{HANDSHAKES_MAX, HANDSHAKES_PER_PEER_MAX, Place, Shaking};
    use std::net::IpAddr;
    use std::sync::{Arc, Mutex};

    #[test]
    fn one_address_holds_at_most_its_share_of_handshakes_and_a_finished_one_gives_it_back() {
        let shaking = Arc::new(Mutex::new(Shaking::default()));
        let one: IpAddr = [192, 0, 2, 1].into();
        let other: IpAddr = [192, 0, 2, 2].into();
        let held: Vec<Place> = (0..HANDSHAKES_PER_PEER_MAX)
            .map(|_| Place::take(&shaking, one).expect("a place"))
            .collect();
        assert!(Place::take(&shaking, one).is_none(), "past its share");
        let elsewhere = Place::take(&shaking, other).expect("another address is served");
        drop(held);
        drop(elsewhere);
        assert!(
            Place::take(&shaking, one).is_some(),
            "given back when they end"
        );
        let now = shaking.lock().unwrap();
        assert_eq!(now.total, 0);
        assert!(now.by_peer.is_empty());
    }

    #[test]
    fn the_handshakes_of_every_address_together_are_bounded() {
        let shaking = Arc::new(Mutex::new(Shaking::default()));
        let held: Vec<Place> = (0..HANDSHAKES_MAX)
            .map(|n| {
                let peer: IpAddr = [10, 0, (n / 256) as u8, (n % 256) as u8].into();
                Place::take(&shaking, peer).expect("a place")
            })
            .collect();
        assert!(Place::take(&shaking, [10, 9, 9, 9].into()).is_none());
        drop(held);
    }
}
