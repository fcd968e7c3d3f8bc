//! Why a request through the door got no usable answer, in words a person (or a model) can
//! act on. Tools put these sentences in their `FAILED:` results.

use std::net::IpAddr;
use std::time::Duration;

use crate::address::AddressClass;

/// What went wrong on the way to an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The text is not a usable URL.
    #[error("`{url}` is not a URL imurun reads: {why}")]
    BadUrl { url: String, why: String },
    /// A host that does not parse.
    #[error("`{host}` is not a host name: {why}")]
    BadHost { host: String, why: String },
    /// Only `http` and `https` are spoken.
    #[error("`{scheme}` URLs are not fetched; only http and https")]
    Scheme { scheme: String },
    /// The address rule refuses where the host is (or resolved to).
    #[error(
        "refused: {host} is {ip}, {}; only public addresses are reached unless a person allows more",
        class.describe()
    )]
    Refused {
        host: String,
        ip: IpAddr,
        class: AddressClass,
    },
    /// The host (or what it resolved to) is this machine.
    #[error("refused: {host} is {ip}, one of this machine's own addresses")]
    OwnAddress { host: String, ip: IpAddr },
    /// The host has no address.
    #[error("could not find the address of {host}: {message}")]
    Resolve { host: String, message: String },
    /// No connection could be made.
    #[error("could not connect to {target} (is the network up?): {message}")]
    Connect { target: String, message: String },
    /// The whole exchange took longer than allowed.
    #[error("{target} did not answer within {}; try again later", describe_duration(*timeout))]
    Timeout { target: String, timeout: Duration },
    /// Redirected more often than allowed.
    #[error("{target} redirected more than {redirects_max} times")]
    TooManyRedirects {
        target: String,
        redirects_max: usize,
    },
    /// A redirect went somewhere the door does not go (its reason inside).
    #[error("{target} redirected to {to}, which is not followed: {why}")]
    Redirect {
        target: String,
        to: String,
        why: String,
    },
    /// The HTTP client could not start (the TLS stack failed).
    #[error("the HTTP client could not start: {message}")]
    Client { message: String },
    /// Anything else that broke the exchange.
    #[error("the request to {target} failed: {message}")]
    Transport { target: String, message: String },
}

/// `10 s`, or `250 ms` for the short timeouts tests use.
pub fn describe_duration(duration: Duration) -> String {
    if duration.as_millis().is_multiple_of(1000) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}
