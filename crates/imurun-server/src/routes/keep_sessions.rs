//! Keep sessions under `/v1`: a person starts an agent in a cell, sends it messages and files,
//! stops it, watches their own events, decides the proposals it made and answers its egress
//! approvals. Every route is a person's: the operator's token gets 403, and another person's
//! session, proposal or approval reads as one that does not exist (404).

use std::convert::Infallible;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;

use crate::error::{ApiError, StrictJson};
use crate::keep_auth::{KeepCaller, while_authorized};
use crate::keep_wire::{
    AnyProposal, ApprovalAnswer, ApprovalAnswered, ApprovalInfo, ApprovalList, FileBody,
    MessageBody, ProposalAccept, ProposalInfo, ProposalList, Replies, SessionCreate, SessionInfo,
    SessionList, ToolReviewInfo,
};
use crate::openapi::ErrorBody;
use crate::sse::{HEARTBEAT_TEXT, last_event_id, sse_message};
use crate::state::ServerState;

/// The largest body of these routes: a 128 KiB file, escaped.
const SESSION_BODY_BYTES_MAX: usize = 256 << 10;

type Strict<T> = StrictJson<T, SESSION_BODY_BYTES_MAX>;

/// `POST /v1/sessions`.
#[utoipa::path(post, path = "/v1/sessions", tag = "keep", operation_id = "keep_start_session",
    summary = "Start a session of an agent in force, in a cell with what its manifest grants (a person's token)",
    request_body = SessionCreate,
    responses(
        (status = 201, description = "Started.", body = SessionInfo),
        (status = 400, description = "The body is not a `SessionCreate`; `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); the agent's stored policy no longer verifies (`bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No such agent is in force (`not_found`); `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Four sessions are live already (`conflict`); the component imports what its manifest does not grant (`not_granted`) or does not compile (`compile`); an old agent row (`rolled_back`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 503, description = "Every cell slot is taken (`no_slot`); the host does not run sessions (`unavailable`).", body = ErrorBody),
    ))]
pub(crate) async fn start_session(
    caller: KeepCaller,
    StrictJson(body): Strict<SessionCreate>,
) -> Result<(StatusCode, Json<SessionInfo>), ApiError> {
    let view = caller
        .keep
        .start_session(&caller.identity, &body.agent)
        .await?;
    Ok((StatusCode::CREATED, Json(session_info(view))))
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
pub(crate) async fn sessions(caller: KeepCaller) -> Result<Json<SessionList>, ApiError> {
    let views = caller.keep.sessions(&caller.identity).await?;
    Ok(Json(SessionList {
        sessions: views.into_iter().map(session_info).collect(),
    }))
}

/// `GET /v1/sessions/{id}`.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "keep", operation_id = "keep_session",
    summary = "One of the caller's sessions",
    params(("id" = String, Path, description = "The session's id.")),
    responses(
        (status = 200, description = "The session.", body = SessionInfo),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "Another person's session reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn session(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<SessionInfo>, ApiError> {
    let view = caller.keep.session(&caller.identity, &id).await?;
    Ok(Json(session_info(view)))
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
        (status = 200, description = "The session, ended.", body = SessionInfo),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such session of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn stop_session(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<SessionInfo>, ApiError> {
    let view = caller.keep.stop_session(&caller.identity, &id).await?;
    Ok(Json(session_info(view)))
}

/// `GET /v1/events`.
#[utoipa::path(get, path = "/v1/events", tag = "keep", operation_id = "keep_events",
    summary = "The caller's own Keep events, as Server-Sent Events",
    params(
        ("Last-Event-ID" = Option<u64>, Header, description = "The id of the last event received: the stream starts with the caller's buffered events after it (the last 512 are kept). Ids are the caller's own."),
        ("access_token" = Option<String>, Query, description = "The token, for browsers' `EventSource`, which cannot send a header."),
    ),
    responses(
        (status = 200, description = "A `text/event-stream` in the wire format of `GET /api/events`, carrying only the caller's events: `session.*`, `egress.*`, `proposal.*`. See `docs/keep/sessions.md`.", content_type = "text/event-stream", body = crate::openapi::EventMessage),
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

/// The query of `GET /v1/proposals`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProposalQuery {
    /// Only proposals of this kind: `memory`, `suggestion`, `plan`, `card` or `tool`.
    kind: Option<String>,
}

/// `GET /v1/proposals`.
#[utoipa::path(get, path = "/v1/proposals", tag = "keep", operation_id = "keep_proposals",
    summary = "The caller's proposals (memory entries, suggestions, plans, cards, and tools with their reviews), newest first",
    params(ProposalQuery),
    responses(
        (status = 200, description = "The proposals.", body = ProposalList),
        (status = 400, description = "An unknown `kind`; `invalid`, `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn proposals(
    caller: KeepCaller,
    query: Result<Query<ProposalQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ProposalList>, ApiError> {
    let Query(query) = query.map_err(|error| ApiError::bad_request(error.body_text()))?;
    let kind = query.kind.as_deref();
    let proposals = match kind {
        Some("tool") => Vec::new(),
        _ => caller.keep.proposals(&caller.identity, kind).await?,
    };
    let tools = match kind {
        None | Some("tool") => caller.keep.tool_proposals(&caller.identity).await?,
        Some(_) => Vec::new(),
    };
    Ok(Json(ProposalList {
        proposals: proposals.into_iter().map(proposal_info).collect(),
        tools: tools.into_iter().map(ToolReviewInfo::from).collect(),
    }))
}

/// `GET /v1/proposals/{id}`.
#[utoipa::path(get, path = "/v1/proposals/{id}", tag = "keep", operation_id = "keep_proposal",
    summary = "One of the caller's proposals",
    params(("id" = String, Path, description = "The proposal's id.")),
    responses(
        (status = 200, description = "The proposal: a tool's review (ids `kt-...`), or another kind.", body = AnyProposal),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "Another person's proposal reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn proposal(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<AnyProposal>, ApiError> {
    if id.starts_with(imurun_keep::service::TOOL_PROPOSAL_ID_PREFIX) {
        let review = caller.keep.tool_proposal(&caller.identity, &id).await?;
        return Ok(Json(AnyProposal::Tool(Box::new(review.into()))));
    }
    let view = caller.keep.proposal(&caller.identity, &id).await?;
    Ok(Json(AnyProposal::Other(Box::new(proposal_info(view)))))
}

/// `POST /v1/proposals/{id}/accept`.
#[utoipa::path(post, path = "/v1/proposals/{id}/accept", tag = "keep", operation_id = "keep_accept_proposal",
    summary = "Accept one of the caller's pending proposals; one from a tainted session needs `confirm_tainted`",
    params(("id" = String, Path, description = "The proposal's id.")),
    request_body = ProposalAccept,
    responses(
        (status = 200, description = "Accepted.", body = ProposalInfo),
        (status = 400, description = "Not a `ProposalAccept`; `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such proposal of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Decided already (`conflict`); tainted and not confirmed (`confirm_tainted`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn accept_proposal(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): Strict<ProposalAccept>,
) -> Result<Json<ProposalInfo>, ApiError> {
    let view = caller
        .keep
        .decide_proposal(&caller.identity, &id, true, body.confirm_tainted)
        .await?;
    Ok(Json(proposal_info(view)))
}

/// `POST /v1/proposals/{id}/reject`.
#[utoipa::path(post, path = "/v1/proposals/{id}/reject", tag = "keep", operation_id = "keep_reject_proposal",
    summary = "Reject one of the caller's pending proposals",
    params(("id" = String, Path, description = "The proposal's id.")),
    responses(
        (status = 200, description = "Rejected.", body = ProposalInfo),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such proposal of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Decided already; `conflict`.", body = ErrorBody),
    ))]
pub(crate) async fn reject_proposal(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<ProposalInfo>, ApiError> {
    let view = caller
        .keep
        .decide_proposal(&caller.identity, &id, false, false)
        .await?;
    Ok(Json(proposal_info(view)))
}

/// `GET /v1/approvals`.
#[utoipa::path(get, path = "/v1/approvals", tag = "keep", operation_id = "keep_approvals",
    summary = "The caller's egress uses waiting for an answer, oldest first",
    responses(
        (status = 200, description = "The waiting uses.", body = ApprovalList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn approvals(caller: KeepCaller) -> Result<Json<ApprovalList>, ApiError> {
    let list = caller.keep.approvals(&caller.identity).await?;
    Ok(Json(ApprovalList {
        approvals: list.into_iter().map(approval_info).collect(),
    }))
}

/// `POST /v1/approvals/{id}`.
#[utoipa::path(post, path = "/v1/approvals/{id}", tag = "keep", operation_id = "keep_answer_approval",
    summary = "Approve or deny a waiting egress use; a rule demanding a device signature is approved only by a signed `approve_egress` decision",
    params(("id" = String, Path, description = "The waiting use's id.")),
    request_body = ApprovalAnswer,
    responses(
        (status = 200, description = "Handed to the waiting request.", body = ApprovalAnswered),
        (status = 400, description = "Not an `ApprovalAnswer`; `bad_request`, `invalid`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); a decision missing, refused or replayed (`decision_refused`, `bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No such waiting use of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "The request stopped waiting meanwhile; `conflict`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn answer_approval(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): Strict<ApprovalAnswer>,
) -> Result<Json<ApprovalAnswered>, ApiError> {
    let decision = body.decision.map(|decision| decision.into_signed());
    let approved = caller
        .keep
        .answer_approval(&caller.identity, &id, body.approve, decision.as_ref())
        .await?;
    Ok(Json(ApprovalAnswered { id, approved }))
}

fn session_info(view: imurun_keep::service::SessionView) -> SessionInfo {
    SessionInfo {
        id: view.id,
        agent: view.agent,
        agent_version: view.agent_version,
        created_at_ms: view.created_at_ms,
        live: view.live,
        tainted: view.tainted,
        taint_source: view.taint_source,
        tainted_at_ms: view.tainted_at_ms,
        ended_at_ms: view.ended_at_ms,
        end_reason: view.end_reason,
    }
}

fn proposal_info(view: imurun_keep::service::ProposalView) -> ProposalInfo {
    ProposalInfo {
        id: view.id,
        session_id: view.session_id,
        agent: view.agent,
        kind: view.kind,
        payload: view.payload,
        tainted: view.tainted,
        taint_source: view.taint_source,
        state: view.state,
        created_at_ms: view.created_at_ms,
        decided_at_ms: view.decided_at_ms,
    }
}

fn approval_info(view: imurun_keep::service::ApprovalView) -> ApprovalInfo {
    let waiting = view.waiting;
    ApprovalInfo {
        id: view.id,
        session_id: waiting.session_id,
        agent: waiting.agent,
        agent_version: waiting.agent_version,
        method: waiting.method,
        url: waiting.url,
        headers: waiting.headers.into_iter().map(Vec::from).collect(),
        tainted: waiting.tainted,
        body_bytes: waiting.body_bytes,
        body_sha256: waiting.body_sha256,
        credentials: waiting.credentials,
        device_signature: waiting.device_signature,
        hashes: waiting.hashes,
        asked_at_ms: waiting.asked_at_ms,
    }
}
