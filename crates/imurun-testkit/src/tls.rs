//! The local upstream over TLS (feature `tls`), with a certificate made for the test: a
//! credential only travels over `https`, so the tests that follow one to its upstream need it.

use std::sync::Arc;

use crate::upstream::{Accept, Accepted, Upstream, UpstreamStream};

impl Upstream {
    /// An [`Upstream`] over TLS whose certificate names `name`; also returns the certificate
    /// (DER) for the client to trust.
    pub async fn start_tls(answer: fn(&str) -> String, name: &str) -> (Upstream, Vec<u8>) {
        let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()])
            .expect("a certificate for the test upstream");
        let der = certified.cert.der().to_vec();
        let key = rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .expect("the certificate's key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .expect("the upstream's TLS configuration");
        let acceptor = Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config)));
        (
            Upstream::start_accepting(answer, Some(Arc::new(acceptor))).await,
            der,
        )
    }
}

/// A self-signed certificate for `name`, as PEM files' text (certificate, private key), and
/// the certificate (DER) for a client to trust: what `imurun serve --tls-cert --tls-key` reads.
pub fn self_signed_pem(name: &str) -> (String, String, Vec<u8>) {
    let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()])
        .expect("a certificate for the test server");
    (
        certified.cert.pem(),
        certified.signing_key.serialize_pem(),
        certified.cert.der().to_vec(),
    )
}

/// A TLS handshake before the exchange.
struct Tls(tokio_rustls::TlsAcceptor);

impl Accept for Tls {
    fn accept(&self, stream: tokio::net::TcpStream) -> Accepted {
        let acceptor = self.0.clone();
        Box::pin(async move {
            let stream = acceptor.accept(stream).await.ok()?;
            Some(Box::new(stream) as Box<dyn UpstreamStream>)
        })
    }
}
