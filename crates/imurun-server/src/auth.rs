//! The API token: when the server is given one, every route except `GET /api/health` needs
//! `Authorization: Bearer <token>` (or `?access_token=<token>` on `GET /api/events`, for
//! browsers' `EventSource`, which cannot set headers). The binary requires a token for any
//! bind address beyond loopback, because the API can run shell commands on this machine.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::ServerState;

/// Routes anyone may call: a health check says nothing about the machine.
const OPEN_PATHS: &[&str] = &["/api/health"];

/// The route whose token may come in the query string.
const EVENTS_PATH: &str = "/api/events";

/// Refuses a request without the server's token, when it has one.
pub(crate) async fn require_token(
    State(state): State<ServerState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.options().api_token.as_deref() else {
        return next.run(request).await;
    };
    if OPEN_PATHS.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let query = (request.uri().path() == EVENTS_PATH)
        .then(|| request.uri().query())
        .flatten()
        .and_then(|query| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix("access_token="))
        });
    let given = bearer.or(query);
    if given.is_some_and(|given| same(given.as_bytes(), expected.as_bytes())) {
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
