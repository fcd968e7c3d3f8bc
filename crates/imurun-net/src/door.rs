//! The door: an HTTP client whose every connection goes to an address the [`AddressRule`]
//! allows. Host names are resolved by the door itself and every address of the answer is
//! checked; the connection then goes to exactly those addresses (no second lookup a DNS
//! answer could change in between). An IP written in a URL is checked before the request
//! leaves, every redirect target is checked the same way, no proxy is used (a proxy would
//! connect wherever it likes), and every exchange ends after the door's timeout.

use std::error::Error as StdError;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Client, Method, RequestBuilder, Response, redirect};
use url::{Host, Url};

use crate::address::LOOPBACK;
use crate::error::NetError;
use crate::rule::AddressRule;
use crate::url::check_http_url;

/// How imurun names itself to the services it calls.
pub const USER_AGENT: &str = concat!("imurun/", env!("CARGO_PKG_VERSION"));

/// Redirects a door follows unless configured otherwise.
pub const REDIRECTS_MAX_DEFAULT: usize = 5;

/// How a door is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoorConfig {
    pub rule: AddressRule,
    /// The longest a whole exchange may take: lookup, connection, redirects and body.
    pub timeout: Duration,
    /// Redirects followed, each one checked; 0 follows none (the 3xx is the answer).
    pub redirects_max: usize,
}

impl DoorConfig {
    /// Public addresses only, `timeout`, [`REDIRECTS_MAX_DEFAULT`] redirects.
    pub fn public(timeout: Duration) -> Self {
        Self {
            rule: AddressRule::public_only(),
            timeout,
            redirects_max: REDIRECTS_MAX_DEFAULT,
        }
    }
}

/// How a door finds a host's addresses. The system's resolver unless a door is given
/// another ([`Door::with_lookup`]): a test's, answering what it is told to.
pub trait Lookup: Send + Sync + 'static {
    /// Every address `host` has.
    fn lookup<'a>(
        &'a self,
        host: &'a str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>>;
}

/// The system's resolver (`getaddrinfo`, on a blocking thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>> {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host, 0))
                .await?
                .map(|address| address.ip())
                .collect())
        })
    }
}

/// The one way out to the network. Cloning shares the client and its connection pool.
#[derive(Debug, Clone)]
pub struct Door {
    client: Client,
    rule: Arc<AddressRule>,
    timeout: Duration,
    redirects_max: usize,
}

impl Door {
    /// A door with `config`, resolving names with the system's resolver. Fails only when the
    /// TLS stack cannot start.
    pub fn new(config: DoorConfig) -> Result<Self, NetError> {
        Self::with_lookup(config, Arc::new(SystemLookup))
    }

    /// A door that resolves names with `lookup`; every address it answers is checked as
    /// always.
    pub fn with_lookup(config: DoorConfig, lookup: Arc<dyn Lookup>) -> Result<Self, NetError> {
        Self::with_lookup_and_roots(config, lookup, &[])
    }

    /// A door that resolves names with `lookup` and also trusts the certificate authorities
    /// `extra_roots` (DER), beside the usual ones: an organisation's own CA, or a test's.
    pub fn with_lookup_and_roots(
        config: DoorConfig,
        lookup: Arc<dyn Lookup>,
        extra_roots: &[Vec<u8>],
    ) -> Result<Self, NetError> {
        let rule = Arc::new(config.rule);
        let redirects_max = config.redirects_max;
        let policy = {
            let rule = Arc::clone(&rule);
            redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > redirects_max {
                    let target = attempt.previous().first().map(Url::to_string);
                    return attempt.error(NetError::TooManyRedirects {
                        target: target.unwrap_or_default(),
                        redirects_max,
                    });
                }
                match check_target(&rule, attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(why) => {
                        let error = NetError::Redirect {
                            target: attempt
                                .previous()
                                .last()
                                .map(Url::to_string)
                                .unwrap_or_default(),
                            to: attempt.url().to_string(),
                            why: why.to_string(),
                        };
                        attempt.error(error)
                    }
                }
            })
        };
        let mut builder = Client::builder();
        for der in extra_roots {
            let certificate =
                reqwest::Certificate::from_der(der).map_err(|error| NetError::Client {
                    message: format!(
                        "a trusted root is not a certificate: {}",
                        error_chain(&error)
                    ),
                })?;
            builder = builder.add_root_certificate(certificate);
        }
        let client = builder
            .timeout(config.timeout)
            .user_agent(USER_AGENT)
            .redirect(if redirects_max == 0 {
                redirect::Policy::none()
            } else {
                policy
            })
            .no_proxy()
            .dns_resolver(CheckedResolver {
                rule: Arc::clone(&rule),
                lookup,
            })
            .build()
            .map_err(|error| NetError::Client {
                message: error_chain(&error),
            })?;
        Ok(Self {
            client,
            rule,
            timeout: config.timeout,
            redirects_max,
        })
    }

    /// A request to `url`, once the URL passes the door's rules (scheme, no credentials, an
    /// IP written in it allowed). Headers, query and body are the caller's; the host is not.
    pub fn request(&self, method: Method, url: Url) -> Result<RequestBuilder, NetError> {
        check_target(&self.rule, &url)?;
        Ok(self.client.request(method, url))
    }

    /// `GET url`, checked as [`Door::request`] checks.
    pub fn get(&self, url: Url) -> Result<RequestBuilder, NetError> {
        self.request(Method::GET, url)
    }

    /// Sends `request` (made by this door), naming `target` in any failure. A redirect to a
    /// target the door does not go to is a failure too, even when the HTTP client left it
    /// unfollowed rather than asking the door (a `file:` URL is no HTTP address to it).
    pub async fn send(&self, request: RequestBuilder, target: &str) -> Result<Response, NetError> {
        let response = request
            .send()
            .await
            .map_err(|error| self.explain(target, &error))?;
        if self.redirects_max > 0
            && let Some(refusal) = unfollowed_redirect(&response)
        {
            return Err(refusal);
        }
        Ok(response)
    }

    /// The client itself, for protocols that take one (an MCP server over HTTP): its
    /// connections obey the same rule, but a URL given to it directly skips the literal-IP
    /// check, so check it with [`Door::check_url`] first.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether `url` passes the door's rules before anything resolves.
    pub fn check_url(&self, url: &Url) -> Result<(), NetError> {
        check_target(&self.rule, url)
    }

    pub fn rule(&self) -> &AddressRule {
        &self.rule
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn redirects_max(&self) -> usize {
        self.redirects_max
    }

    /// A `reqwest` failure in the door's words: a refusal the resolver or the redirect
    /// check made comes back as itself.
    pub fn explain(&self, target: &str, error: &reqwest::Error) -> NetError {
        if let Some(inner) = find_net_error(error) {
            return inner;
        }
        if error.is_timeout() {
            NetError::Timeout {
                target: target.to_owned(),
                timeout: self.timeout,
            }
        } else if error.is_connect() {
            NetError::Connect {
                target: target.to_owned(),
                message: error_chain(error),
            }
        } else {
            NetError::Transport {
                target: target.to_owned(),
                message: error_chain(error),
            }
        }
    }
}

/// The URL rules and, for an IP written in the URL, the address rule.
fn check_target(rule: &AddressRule, url: &Url) -> Result<(), NetError> {
    check_http_url(url)?;
    let host = url.host_str().unwrap_or_default();
    let literal = match url.host() {
        Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    match literal {
        Some(ip) => rule.check(host, ip),
        None => Ok(()),
    }
}

/// The refusal for a redirect the client handed back instead of following, when its target
/// breaks the URL rules; `None` for any other answer (a 300 or 304 is an answer, not a
/// redirect).
fn unfollowed_redirect(response: &Response) -> Option<NetError> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = response.headers().get(reqwest::header::LOCATION)?;
    let location = String::from_utf8_lossy(location.as_bytes()).into_owned();
    let why = match response.url().join(&location) {
        Ok(next) => check_http_url(&next).err()?.to_string(),
        Err(error) => format!("it is not a valid address: {error}"),
    };
    Some(NetError::Redirect {
        target: response.url().to_string(),
        to: location,
        why,
    })
}

/// Resolves names for the door's client and refuses an answer with any address the rule
/// does not allow, so the client only ever connects to checked addresses.
struct CheckedResolver {
    rule: Arc<AddressRule>,
    lookup: Arc<dyn Lookup>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let rule = Arc::clone(&self.rule);
        let lookup = Arc::clone(&self.lookup);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // `localhost` and the names below it are this machine (RFC 6761): never asked of
            // a resolver, which might send `localhost.` to the network's DNS.
            let found = if imurun_core::host::is_loopback_name(&host) {
                LOOPBACK.to_vec()
            } else {
                lookup
                    .lookup(&host)
                    .await
                    .map_err(|error| NetError::Resolve {
                        host: host.clone(),
                        message: error.to_string(),
                    })?
            };
            let addresses: Vec<SocketAddr> =
                found.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            if addresses.is_empty() {
                return Err(NetError::Resolve {
                    host,
                    message: "it has no address".to_owned(),
                }
                .into());
            }
            for address in &addresses {
                rule.check(&host, address.ip())?;
            }
            let addrs: Addrs = Box::new(addresses.into_iter());
            Ok(addrs)
        })
    }
}

/// The door's own error inside a `reqwest` error's chain, if one is there.
fn find_net_error(error: &reqwest::Error) -> Option<NetError> {
    let mut source: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(cause) = source {
        if let Some(found) = cause.downcast_ref::<NetError>() {
            return Some(found.clone());
        }
        source = cause.source();
    }
    None
}

/// An error and its causes on one line, without repeating a cause already in the text.
pub fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A body read up to a bound.
#[derive(Debug)]
pub struct Body {
    pub bytes: Vec<u8>,
    /// The server had more to send than the bound; the rest was not read.
    pub cut: bool,
}

/// Reads `response`'s body, stopping once `bytes_max` bytes have arrived.
pub async fn read_body(
    door: &Door,
    mut response: Response,
    bytes_max: usize,
    target: &str,
) -> Result<Body, NetError> {
    let mut bytes = Vec::new();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|error| door.explain(target, &error))?;
        let Some(chunk) = chunk else {
            return Ok(Body { bytes, cut: false });
        };
        let room = bytes_max.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
}
