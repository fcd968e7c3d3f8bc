//! The API token: when the server is given one (and in Keep mode, its tokens: `keep_auth.rs`), every route except `GET /api/health` needs
//! `Authorization: Bearer <token>` (or `?access_token=<token>` on `GET /api/events` and `GET /v1/events`, for
//! browsers' `EventSource`, which cannot set headers). The binary requires a token for any
//! bind address beyond loopback, because the API can run shell commands on this machine.
//! The web page's static files are open too: they hold nothing secret, and the page must load
//! to ask for the token.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::ServerState;

/// Routes anyone may call: a health check says nothing about the machine.
const OPEN_PATHS: &[&str] = &["/api/health"];

/// The routes whose token may come in the query string: the event streams.
const EVENTS_PATHS: &[&str] = &["/api/events", "/v1/events"];

/// Refuses a request without the server's token, when it has one.
pub(crate) async fn require_token(
    State(state): State<ServerState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let keep = state.options().keep.clone();
    // In Keep mode every `/api` and `/v1` route needs a token, the health check included: a
    // probe sends the operator's token like any client.
    let open = OPEN_PATHS.contains(&path) && keep.is_none();
    if open || is_page_path(path) {
        return next.run(request).await;
    }
    let expected = state.options().api_token.clone();
    if keep.is_none() && expected.is_none() {
        return next.run(request).await;
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let query = EVENTS_PATHS
        .contains(&request.uri().path())
        .then(|| request.uri().query())
        .flatten()
        .and_then(|query| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix("access_token="))
        });
    // A query token arrives percent-encoded when it has characters a URL cannot carry as
    // they are (a browser's `encodeURIComponent`); the header's is sent as it is.
    let given = bearer
        .map(|token| token.as_bytes().to_vec())
        .or_else(|| query.map(imurun_core::percent_decoded_bytes));
    if let Some(keep) = keep {
        return crate::keep_auth::check(&keep, request, given, next).await;
    }
    let expected = expected.unwrap_or_default();
    if given
        .as_deref()
        .is_some_and(|given| same(given, expected.as_bytes()))
    {
        return next.run(request).await;
    }
    let message = if given.is_some() {
        "the API token is wrong"
    } else {
        "this server needs its API token: send `Authorization: Bearer <token>`"
    };
    let mut response =
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// `GET /` and `GET /assets/...`: the page's files (any method reaches the router, which
/// answers 405 for the others).
fn is_page_path(path: &str) -> bool {
    path == crate::routes::page::INDEX_PATH || path.starts_with(crate::routes::page::ASSETS_PREFIX)
}

/// Compares in time that depends only on the lengths, so the token cannot be guessed a byte
/// at a time from response times.
fn same(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secreT", b"secret"));
        assert!(!same(b"secret", b"secret-longer"));
        assert!(!same(b"", b"secret"));
    }
}
