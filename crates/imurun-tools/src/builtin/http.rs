//! What the network tools share on top of `imurun-net`'s door: building their door,
//! reading a bounded body, the `Retry-After` words, and clipping.

use std::time::Duration;

use imurun_net::http::{Response, header};
use imurun_net::{AddressRule, Door, DoorConfig, NetError, REDIRECTS_MAX_DEFAULT};

/// The most of a response body a network tool reads. Search and weather answers are a few
/// kilobytes; a page past this is cut, not read to the end.
pub(crate) const RESPONSE_BYTES_MAX: usize = 2 * 1024 * 1024;

/// A door for a service at `endpoints` (the configured addresses, whose hosts are trusted
/// wherever they resolve: a person configured them) that otherwise reaches public addresses
/// only, every exchange ending after `timeout`. `Err` says why the HTTP client could not start;
/// the tool then reports itself unavailable.
pub(crate) fn service_door<'a>(
    endpoints: impl IntoIterator<Item = &'a str>,
    timeout: Duration,
) -> Result<Door, String> {
    Door::new(DoorConfig {
        rule: AddressRule::public_and_endpoints(endpoints),
        timeout,
        redirects_max: REDIRECTS_MAX_DEFAULT,
    })
    .map_err(|error| error.to_string())
}

/// A network tool's availability: ready once its door was built, else why not.
pub(crate) fn availability(door: &Result<Door, String>) -> imurun_core::Availability {
    match door {
        Ok(_) => imurun_core::Availability::Ready,
        Err(reason) => imurun_core::Availability::Unavailable(reason.clone()),
    }
}

/// A service's answer: status, the `Retry-After` words, and the body within
/// [`RESPONSE_BYTES_MAX`] (`cut` when there was more).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) retry_after: String,
    pub(crate) bytes: Vec<u8>,
    pub(crate) cut: bool,
}

/// Sends `request` (made by `door`) to `service` and reads its answer.
pub(crate) async fn exchange(
    door: &Door,
    request: imurun_net::http::RequestBuilder,
    service: &str,
) -> Result<Answer, NetError> {
    let response = door.send(request, service).await?;
    let status = response.status().as_u16();
    let retry_after = retry_after(&response);
    let body = imurun_net::read_body(door, response, RESPONSE_BYTES_MAX, service).await?;
    Ok(Answer {
        status,
        retry_after,
        bytes: body.bytes,
        cut: body.cut,
    })
}

/// The `Retry-After` header as words to append, when the server sent one in seconds.
pub(crate) fn retry_after(response: &Response) -> String {
    response
        .headers()
        .get(header::RETRY_AFTER)
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
