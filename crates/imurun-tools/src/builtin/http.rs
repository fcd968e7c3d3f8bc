//! What the network tools share: building their HTTP client, reading a body with a bound,
//! and the words for a request that never got an answer.

use std::time::Duration;

use reqwest::{Client, ClientBuilder, Response};

/// The most of a response body a network tool reads. Search and weather answers are a few
/// kilobytes; a page past this is cut, not read to the end.
pub(crate) const RESPONSE_BYTES_MAX: usize = 2 * 1024 * 1024;

/// How the tools name themselves to the services they call.
const USER_AGENT: &str = concat!("imurun/", env!("CARGO_PKG_VERSION"));

/// A client whose every request, body included, ends after `timeout`. Building fails only
/// when the TLS stack cannot start; the tool then reports itself unavailable.
pub(crate) fn client(timeout: Duration) -> Result<Client, String> {
    builder(timeout)
        .build()
        .map_err(|error| format!("the HTTP client could not start: {error}"))
}

/// The settings every network tool's client starts from.
/// A network tool's availability: ready once its HTTP client was built, else why not.
pub(crate) fn availability(client: &Result<Client, String>) -> imurun_core::Availability {
    match client {
        Ok(_) => imurun_core::Availability::Ready,
        Err(reason) => imurun_core::Availability::Unavailable(reason.clone()),
    }
}

pub(crate) fn builder(timeout: Duration) -> ClientBuilder {
    Client::builder().timeout(timeout).user_agent(USER_AGENT)
}

/// A body read up to a bound.
#[derive(Debug)]
pub(crate) struct Body {
    pub(crate) bytes: Vec<u8>,
    /// The server had more to send than the bound; the rest was not read.
    pub(crate) cut: bool,
}

/// Reads `response`'s body, stopping once `bytes_max` bytes have arrived.
pub(crate) async fn read_body(
    mut response: Response,
    bytes_max: usize,
) -> Result<Body, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = bytes_max.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body { bytes, cut: false })
}

/// Why a request to `service` got no usable answer, in words a person can act on.
pub(crate) fn transport_failure(
    service: &str,
    error: &reqwest::Error,
    timeout: Duration,
) -> String {
    if error.is_timeout() {
        format!(
            "{service} did not answer within {}; try again later",
            describe_duration(timeout)
        )
    } else if error.is_connect() {
        format!("could not connect to {service} (is the network up?): {error}")
    } else {
        format!("the request to {service} failed: {error}")
    }
}

/// `10 s`, or `250 ms` for the short timeouts tests use.
pub(crate) fn describe_duration(duration: Duration) -> String {
    if duration.as_millis().is_multiple_of(1000) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// The `Retry-After` header as words to append, when the server sent one in seconds.
pub(crate) fn retry_after(response: &Response) -> String {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(|seconds| format!(" (it asks to wait {seconds} s)"))
        .unwrap_or_default()
}

/// `text` cut to `chars_max` characters, with `…` when something was dropped.
pub(crate) fn clip(text: &str, chars_max: usize) -> String {
    match text.char_indices().nth(chars_max) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_owned(),
    }
}
