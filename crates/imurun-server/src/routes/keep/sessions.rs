//! Keep sessions under `/v1`: a person starts an agent in a cell, sends it messages and files,
//! stops it, and watches their own events (`GET /v1/events`). Every route is a person's: the
//! operator's token gets 403, and another person's session reads as one that does not exist
//! (404).

use std::convert::Infallible;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};

use super::Strict;
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::{KeepCaller, while_authorized};
use crate::keep_wire::{
    ConversationView, FileBody, MessageBody, Replies, SessionCreate, SessionList, SessionView,
};
use crate::openapi::ErrorBody;
use crate::sse::{HEARTBEAT_TEXT, last_event_id, sse_message};
use crate::state::ServerState;

/// `POST /v1/sessions`.
#[utoipa::path(post, path = "/v1/sessions", tag = "keep", operation_id = "keep_start_session",
    summary = "Start a session of an agent in force, in a cell with what its manifest grants (a person's token)",
    request_body = SessionCreate,
    responses(
        (status = 201, description = "Started.", body = SessionView),
        (status = 400, description = "The body is not a `SessionCreate`; `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); the agent's stored policy no longer verifies (`bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No such agent is in force (`not_found`); `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Four sessions are live already (`conflict`); the component imports what its manifest does not grant (`not_granted`) or does not compile (`compile`); an old agent row (`rolled_back`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 503, description = "Every cell slot is taken (`no_slot`); the host does not run sessions (`unavailable`).", body = ErrorBody),
    ))]
pub(crate) async fn start(
    caller: KeepCaller,
    StrictJson(body): Strict<SessionCreate>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let view = caller
        .keep
        .sessions()
        .start(&caller.identity, &body.agent)
        .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// `GET /v1/sessions`.
#[utoipa::path(get, path = "/v1/sessions", tag = "keep", operation_id = "keep_sessions",
    summary = "The caller's sessions, newest first",
    responses(
        (status = 200, description = "The sessions.", body = SessionList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<SessionList>, ApiError> {
    let views = caller.keep.sessions().list(&caller.identity).await?;
    Ok(Json(SessionList { sessions: views }))
}

/// `GET /v1/sessions/{id}`.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "keep", operation_id = "keep_session",
    summary = "One of the caller's sessions",
    params(("id" = String, Path, description = "The session's id.")),
    responses(
        (status = 200, description = "The session.", body = SessionView),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "Another person's session reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    let view = caller.keep.sessions().get(&caller.identity, &id).await?;
    Ok(Json(view))
}

/// `GET /v1/sessions/{id}/messages`.
#[utoipa::path(get, path = "/v1/sessions/{id}/messages", tag = "keep", operation_id = "keep_conversation",
    summary = "One of the caller's sessions and its conversation: her messages and files, the agent's replies, errors and network uses, oldest first",
    params(("id" = String, Path, description = "The session's id.")),
    responses(
        (status = 200, description = "The session and its conversation (the newest 500 entries; a reply's text is kept up to 64 KiB).", body = ConversationView),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such session of the caller's, or its conversation was deleted; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn conversation(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<ConversationView>, ApiError> {
    let view = caller
        .keep
        .sessions()
        .conversation(&caller.identity, &id)
        .await?;
    Ok(Json(view))
}

/// `DELETE /v1/sessions/{id}`.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "keep", operation_id = "keep_delete_session",
    summary = "Delete a conversation: the session is stopped if it runs, its messages and title are deleted and it leaves the list (its proposals and tools stay)",
    params(("id" = String, Path, description = "The session's id.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such session of the caller's, or already deleted; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn delete(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.keep.sessions().delete(&caller.identity, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/sessions/{id}/messages`.
#[utoipa::path(post, path = "/v1/sessions/{id}/messages", tag = "keep", operation_id = "keep_message",
    summary = "Hand the session's agent a message and answer its replies",
    params(("id" = String, Path, description = "The session's id.")),
    request_body = MessageBody,
    responses(
        (status = 200, description = "The agent's replies.", body = Replies),
        (status = 400, description = "Not a `MessageBody`, or over 64 KiB; `bad_request`, `invalid`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such session of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "The message ended the session: `cpu_limit`, `memory_limit`, `timeout`, `trap`, `host`; or it had ended (`conflict`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 422, description = "The agent answered with an error of its own (`guest`); the session goes on.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn message(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): Strict<MessageBody>,
) -> Result<Json<Replies>, ApiError> {
    let replies = caller
        .keep
        .sessions()
        .send_message(&caller.identity, &id, &body.text)
        .await?;
    Ok(Json(Replies {
        session_id: id,
        replies,
    }))
}

/// `POST /v1/sessions/{id}/files`.
#[utoipa::path(post, path = "/v1/sessions/{id}/files", tag = "keep", operation_id = "keep_file",
    summary = "Hand the session a file: the session is tainted, then the agent receives `{\"file\": {\"name\", \"text\"}}`",
    params(("id" = String, Path, description = "The session's id.")),
    request_body = FileBody,
    responses(
        (status = 200, description = "The agent's replies.", body = Replies),
        (status = 400, description = "Not a `FileBody`, a bad name, or over 128 KiB; `bad_request`, `invalid`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such session of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "The file ended the session (`cpu_limit`, `memory_limit`, `timeout`, `trap`, `host`), or it had ended (`conflict`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 422, description = "The agent answered with an error of its own (`guest`).", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn file(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): Strict<FileBody>,
) -> Result<Json<Replies>, ApiError> {
    let replies = caller
        .keep
        .sessions()
        .upload_file(&caller.identity, &id, &body.name, &body.text)
        .await?;
    Ok(Json(Replies {
        session_id: id,
        replies,
    }))
}

/// `POST /v1/sessions/{id}/stop`.
#[utoipa::path(post, path = "/v1/sessions/{id}/stop", tag = "keep", operation_id = "keep_stop_session",
    summary = "Stop a session: a message in flight is dropped, the cell ends and its slot is free",
    params(("id" = String, Path, description = "The session's id.")),
    responses(
        (status = 200, description = "The session, ended.", body = SessionView),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such session of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn stop(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    let view = caller.keep.sessions().stop(&caller.identity, &id).await?;
    Ok(Json(view))
}

/// `GET /v1/events`.
#[utoipa::path(get, path = "/v1/events", tag = "keep", operation_id = "keep_events",
    summary = "The caller's own Keep events, as Server-Sent Events",
    params(
        ("Last-Event-ID" = Option<u64>, Header, description = "The id of the last event received: the stream starts with the caller's buffered events after it (the last 512 are kept). Ids are the caller's own."),
        ("access_token" = Option<String>, Query, description = "The token, for browsers' `EventSource`, which cannot send a header."),
    ),
    responses(
        (status = 200, description = "A `text/event-stream` in the wire format of `GET /api/events`, carrying only the caller's events, each a `KeepStreamEvent`: `session.*`, `egress.*`, `proposal.*`, `tool.*`, `refusal`, `journal.failed`. See `docs/keep/sessions.md`.", content_type = "text/event-stream", body = crate::openapi::KeepEventMessage),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn events(
    State(state): State<ServerState>,
    caller: KeepCaller,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let Some(user) = caller.identity.user() else {
        return Err(ApiError::from(imurun_keep::KeepError::Forbidden(
            "Keep events are a person's own: use a user token".into(),
        )));
    };
    let mut shutdown = state.inner.shutdown.subscribe();
    let KeepCaller { keep, identity } = caller.clone();
    // Each event is sent only while the token still works: a revoke ends the stream at the
    // next event, whoever revoked it.
    let records = state
        .options()
        .keep_events
        .subscribe(user, last_event_id(&headers));
    let messages = while_authorized(records, keep, identity)
        .map(|record| Ok(sse_message(&record)))
        .take_until(async move {
            let _ = shutdown.wait_for(|stopping| *stopping).await;
        });
    Ok(Sse::new(messages).keep_alive(
        KeepAlive::new()
            .interval(state.options().heartbeat_interval)
            .text(HEARTBEAT_TEXT),
    ))
}
