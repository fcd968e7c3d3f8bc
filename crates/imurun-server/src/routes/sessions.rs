//! Sessions, their prompts and turns, the Stop button and the kill switch.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use imurun_store::{SESSION_LIST_ROWS_MAX, Session, TRANSCRIPT_READ_ROWS_MAX, TURN_LIST_ROWS_MAX};

use crate::error::{ApiError, ApiJson, OptionalApiJson};
use crate::events::ServerEvent;
use crate::openapi::{ErrorBody, ModelNotLoadedBody};
use crate::routes::settings::revoke;
use crate::state::{ServerState, lock};
use crate::turns::{check_prompt, live_view, submit_prompt, turn_view};
use crate::wire::{
    KillSwitch, PromptAccepted, PromptRequest, SessionCreate, SessionDeleted, SessionDetail,
    SessionInfo, SessionList, SessionPath, SessionUpdate, Stopped, TranscriptMessage, TurnList,
    TurnPath, TurnView,
};

/// `POST /api/sessions` `{title?}` (the body may be empty) → 201 the session. Publishes a
/// global `session.created` event `{session_id, session}`.
#[utoipa::path(
    post,
    path = "/api/sessions",
    tag = "sessions",
    operation_id = "create_session",
    summary = "Create a session",
    // Not required: `openapi::ApiDoc`'s `OptionalBodies` marks it so (the macro cannot).
    request_body(content = SessionCreate, description = "Optional: an empty body (or none) creates a session without a title."),
    responses(
        (status = 201, description = "The new session; a global `session.created` event follows.", body = SessionInfo, links(
            ("get_session" = (operation_id = "get_session", parameters(("id" = "$response.body#/id")), description = "The session with its transcript.")),
            ("rename_session" = (operation_id = "rename_session", parameters(("id" = "$response.body#/id")), description = "Rename it.")),
            ("delete_session" = (operation_id = "delete_session", parameters(("id" = "$response.body#/id")), description = "Delete it.")),
            ("send_prompt" = (operation_id = "send_prompt", parameters(("id" = "$response.body#/id")), description = "Send it a prompt.")),
            ("stop_session" = (operation_id = "stop_session", parameters(("id" = "$response.body#/id")), description = "Stop its turn.")),
            ("list_turns" = (operation_id = "list_turns", parameters(("id" = "$response.body#/id")), description = "Its turns.")),
        )),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused); `bad_request`.", body = ErrorBody),
        (status = 413, description = "The title is over 200 characters, or the body over the server's limit (256 KiB by default); `too_large`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn create(
    State(state): State<ServerState>,
    OptionalApiJson(request): OptionalApiJson<SessionCreate>,
) -> Result<(StatusCode, Json<SessionInfo>), ApiError> {
    let request = request.unwrap_or_default();
    let session = state
        .store()
        .create_session(None, request.title.as_deref())
        .await?;
    let session = session_info(session);
    publish_session_event(
        &state,
        &ServerEvent::SessionCreated {
            session_id: session.id.clone(),
            session: session.clone(),
        },
    );
    Ok((StatusCode::CREATED, Json(session)))
}

/// `GET /api/sessions` → 200 `{"sessions": [...]}`, most recently updated first (at most 1000).
#[utoipa::path(
    get,
    path = "/api/sessions",
    tag = "sessions",
    operation_id = "list_sessions",
    summary = "The sessions, most recently updated first (at most 1000)",
    responses(
        (status = 200, description = "The sessions.", body = SessionList, links(
            ("get_session" = (operation_id = "get_session", parameters(("id" = "$response.body#/sessions/0/id")), description = "The first (most recently updated) session.")),
        )),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn list(State(state): State<ServerState>) -> Result<Json<SessionList>, ApiError> {
    let sessions = state.store().list_sessions(SESSION_LIST_ROWS_MAX).await?;
    Ok(Json(SessionList {
        sessions: sessions.into_iter().map(session_info).collect(),
    }))
}

/// `GET /api/sessions/{id}` → 200 `{session, transcript, running_turn_id}`; 404.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}",
    tag = "sessions",
    operation_id = "get_session",
    summary = "A session with its transcript and running turn",
    params(SessionPath),
    responses(
        (status = 200, description = "The session.", body = SessionDetail, links(
            ("list_turns" = (operation_id = "list_turns", parameters(("id" = "$request.path.id")), description = "Its turns.")),
        )),
        (status = 400, description = "The id is malformed (ASCII letters, digits, `.`, `_`, `-`, at most 128); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No session has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn detail(
    State(state): State<ServerState>,
    Path(SessionPath { id }): Path<SessionPath>,
) -> Result<Json<SessionDetail>, ApiError> {
    let session = state.store().get_session(&id).await?;
    let transcript = state
        .store()
        .transcript(&id, 0, TRANSCRIPT_READ_ROWS_MAX)
        .await?
        .into_iter()
        .map(|message| TranscriptMessage {
            seq: message.seq,
            role: message.role.as_str().to_owned(),
            content: message.content,
            created_at_ms: message.created_at_ms,
        })
        .collect();
    Ok(Json(SessionDetail {
        session: session_info(session),
        transcript,
        running_turn_id: state.running_turn_id(&id),
    }))
}

/// `PATCH /api/sessions/{id}` `{title}` (`null` clears it) → 200 the session; 404. Publishes
/// a global `session.updated` event `{session_id, session}`.
#[utoipa::path(
    patch,
    path = "/api/sessions/{id}",
    tag = "sessions",
    operation_id = "rename_session",
    summary = "Rename a session (`null` clears the title)",
    params(SessionPath),
    request_body = SessionUpdate,
    responses(
        (status = 200, description = "The session; a global `session.updated` event follows.", body = SessionInfo, links(
            ("get_session" = (operation_id = "get_session", parameters(("id" = "$response.body#/id")), description = "The renamed session.")),
        )),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused), or the id is malformed (ASCII letters, digits, `.`, `_`, `-`, at most 128); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No session has this id; `not_found`.", body = ErrorBody),
        (status = 413, description = "The title is over 200 characters, or the body over the server's limit (256 KiB by default); `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn rename(
    State(state): State<ServerState>,
    Path(SessionPath { id }): Path<SessionPath>,
    ApiJson(update): ApiJson<SessionUpdate>,
) -> Result<Json<SessionInfo>, ApiError> {
    let session = state
        .store()
        .rename_session(&id, update.title.as_deref())
        .await?;
    let session = session_info(session);
    publish_session_event(
        &state,
        &ServerEvent::SessionUpdated {
            session_id: session.id.clone(),
            session: session.clone(),
        },
    );
    Ok(Json(session))
}

/// `DELETE /api/sessions/{id}` → 200 `{deleted: true, stopped_turn}`; 404. A running turn is
/// stopped first and waited for (bounded); the session's grants are forgotten. Publishes a
/// global `session.deleted` event `{session_id}`.
#[utoipa::path(
    delete,
    path = "/api/sessions/{id}",
    tag = "sessions",
    operation_id = "delete_session",
    summary = "Delete a session, stopping its turn first",
    params(SessionPath),
    responses(
        (status = 200, description = "Deleted; a global `session.deleted` event follows.", body = SessionDeleted),
        (status = 400, description = "The id is malformed (ASCII letters, digits, `.`, `_`, `-`, at most 128); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No session has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn remove(
    State(state): State<ServerState>,
    Path(SessionPath { id }): Path<SessionPath>,
) -> Result<Json<SessionDeleted>, ApiError> {
    state.store().get_session(&id).await?;
    let running = {
        let turns = lock(&state.inner.turns);
        turns.get(&id).map(|turn| {
            turn.stop.stop();
            turn.ended.clone()
        })
    };
    let stopped_turn = running.is_some();
    if let Some(mut ended) = running {
        // Bounded: a turn that does not end in time is deleted under; its last writes then
        // fail on the missing session, which it tolerates.
        let _ =
            tokio::time::timeout(state.options().stop_wait, ended.wait_for(|ended| *ended)).await;
    }
    state.store().delete_session(&id).await?;
    revoke(&state, Some(&id));
    publish_session_event(
        &state,
        &ServerEvent::SessionDeleted {
            session_id: id.clone(),
        },
    );
    Ok(Json(SessionDeleted {
        deleted: true,
        stopped_turn,
    }))
}

/// `POST /api/sessions/{id}/prompts` `{prompt}` → 202 `{turn_id, queued}`.
///
/// With no turn running, a turn starts on its own task (`queued: false`); it publishes
/// `turn.start` `{session_id, turn_id, prompt}`, then the loop's events (each with `turn_id`),
/// and ends with `turn.end`. With a turn running, the prompt waits in its queue and is handed
/// to the model at the next answer boundary (`prompt.delivered`), `queued: true`; a prompt
/// left in the queue when the turn ends starts the next turn. Errors: 400 empty prompt, 413
/// over 32 000 characters, 404 unknown session, 429 the queue is full, 503 no model.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/prompts",
    tag = "sessions",
    operation_id = "send_prompt",
    summary = "Send a prompt: start a turn, or queue it in the running one",
    params(SessionPath),
    request_body = PromptRequest,
    responses(
        (status = 202, description = "Accepted: follow the turn on `GET /api/events` (`turn.start` … `turn.end`) or `GET /api/sessions/{id}/turns/{turn_id}`.", body = PromptAccepted, links(
            ("get_turn" = (operation_id = "get_turn", parameters(("id" = "$request.path.id"), ("turn_id" = "$response.body#/turn_id")), description = "The turn the prompt started or was queued in.")),
            ("list_turns" = (operation_id = "list_turns", parameters(("id" = "$request.path.id")), description = "The session's turns.")),
        )),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused), the prompt is empty or only white space, or the id is malformed; `bad_request`.", body = ErrorBody),
        (status = 404, description = "No session has this id; `not_found`.", body = ErrorBody),
        (status = 413, description = "The prompt is over 32 000 characters, or the body over the server's limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 429, description = "The running turn's prompt queue is full; `queue_full`.", body = ErrorBody),
        (status = 503, description = "No model is ready (none configured, still loading, or failed); `model_not_loaded` with the slot's `status`.", body = ModelNotLoadedBody),
        (status = 507, description = "The session's transcript holds its most messages (100 000); `store_full`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn prompt(
    State(state): State<ServerState>,
    Path(SessionPath { id }): Path<SessionPath>,
    ApiJson(request): ApiJson<PromptRequest>,
) -> Result<(StatusCode, Json<PromptAccepted>), ApiError> {
    check_prompt(&request.prompt)?;
    let accepted = submit_prompt(&state, &id, request.prompt).await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// `POST /api/sessions/{id}/stop` → 200 `{stopped}`: whether a turn was running and was told
/// to stop. An approval the turn waits on is denied (`tool.denied`, reason `stopped`).
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/stop",
    tag = "sessions",
    operation_id = "stop_session",
    summary = "Stop the session's running turn (the Stop button)",
    params(("id" = String, Path, description = "The session id; any other string answers `stopped: false`.")),
    responses((status = 200, description = "Whether a turn was running and was told to stop; it ends with `turn.end` `stopped`.", body = Stopped)),
)]
pub(crate) async fn stop(
    State(state): State<ServerState>,
    Path(id): Path<String>,
) -> Json<Stopped> {
    let stopped = lock(&state.inner.turns)
        .get(&id)
        .map(|turn| turn.stop.stop())
        .is_some();
    Json(Stopped { stopped })
}

/// `POST /api/stop`, the kill switch → 200 `{stopped, approvals_denied}`: every running turn
/// is told to stop and every pending approval is denied.
#[utoipa::path(
    post,
    path = "/api/stop",
    tag = "sessions",
    operation_id = "kill_switch",
    summary = "The kill switch: stop every turn and deny every pending approval",
    responses((status = 200, description = "What was stopped and denied; a global `stop.all` event follows.", body = KillSwitch)),
)]
pub(crate) async fn kill_switch(State(state): State<ServerState>) -> Json<KillSwitch> {
    let stopped = {
        let turns = lock(&state.inner.turns);
        for turn in turns.values() {
            turn.stop.stop();
        }
        turns.len()
    };
    let approvals = state.executor().approvals();
    let approvals_denied = approvals
        .pending()
        .into_iter()
        .filter(|card| approvals.decide(&card.approval_id, false, false).is_ok())
        .count();
    let event = ServerEvent::StopAll {
        stopped,
        approvals_denied,
    };
    state.hub().publish_event(None, &event);
    Json(KillSwitch {
        stopped,
        approvals_denied,
    })
}

/// `GET /api/sessions/{id}/turns` → 200 `{"turns": [...]}`, the last 1000, oldest first; 404.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/turns",
    tag = "sessions",
    operation_id = "list_turns",
    summary = "The session's turns, the last 1000, oldest first",
    params(SessionPath),
    responses(
        (status = 200, description = "The turns, a running one with its live view.", body = TurnList),
        (status = 400, description = "The id is malformed (ASCII letters, digits, `.`, `_`, `-`, at most 128); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No session has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn turns(
    State(state): State<ServerState>,
    Path(SessionPath { id }): Path<SessionPath>,
) -> Result<Json<TurnList>, ApiError> {
    let turns = state.store().list_turns(&id, TURN_LIST_ROWS_MAX).await?;
    let turns = turns
        .into_iter()
        .map(|turn| {
            let live = live_view(&state, &id, &turn.turn_id);
            turn_view(turn, live)
        })
        .collect();
    Ok(Json(TurnList { turns }))
}

/// `GET /api/sessions/{id}/turns/{turn_id}` → 200 the turn view `{turn_id, session_id, prompt,
/// status, started_at_ms, ended_at_ms, answer, error?, steps, tool_calls, skills,
/// delivered_prompts, grounding}`; 404.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/turns/{turn_id}",
    tag = "sessions",
    operation_id = "get_turn",
    summary = "One turn: status, steps, tool calls, skills, grounding and answer",
    params(TurnPath),
    responses(
        (status = 200, description = "The turn, live while it runs.", body = TurnView),
        (status = 400, description = "An id is malformed (ASCII letters, digits, `.`, `_`, `-`, at most 128); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No such session or turn; `not_found`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn turn(
    State(state): State<ServerState>,
    Path(TurnPath { id, turn_id }): Path<TurnPath>,
) -> Result<Json<TurnView>, ApiError> {
    let turn = state.store().get_turn(&id, &turn_id).await?;
    let live = live_view(&state, &id, &turn_id);
    Ok(Json(turn_view(turn, live)))
}

fn session_info(session: Session) -> SessionInfo {
    SessionInfo {
        id: session.id,
        title: session.title,
        created_at_ms: session.created_at_ms,
        updated_at_ms: session.updated_at_ms,
    }
}

/// Session events are global: a page's session list must hear of sessions it is not watching.
fn publish_session_event(state: &ServerState, event: &ServerEvent) {
    state.hub().publish_event(None, event);
}
