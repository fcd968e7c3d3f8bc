//! `GET /api/events?session=ID`: the live events over SSE (wire format in [`crate::sse`]).

use std::convert::Infallible;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};

use imurun_keep::service::Identity;

use crate::keep_auth::while_authorized;
use crate::sse::{HEARTBEAT_TEXT, StreamQuery, last_event_id, sse_message};
use crate::state::ServerState;

/// `GET /api/events` → `text/event-stream`. `?session=ID` narrows it to one session plus the
/// global events; `Last-Event-ID` replays what the client missed. While a stream for a session
/// is open, approvals in that session wait for a person instead of being denied at once. The
/// stream ends when the server shuts down, and on a Keep host when the operator's token is
/// revoked (at the next event).
#[utoipa::path(
    get,
    path = "/api/events",
    tag = "events",
    operation_id = "events",
    summary = "The live events, as Server-Sent Events",
    params(
        ("session" = Option<String>, Query, description = "Only this session's events, plus the global ones (events without a session). Absent or empty: every event."),
        ("Last-Event-ID" = Option<u64>, Header, description = "The id of the last event received: the stream starts with the buffered events after it (the last 4096 are kept), preceded by `stream.gap` or `stream.reset` when some cannot be replayed. Browsers' `EventSource` sends it when it reconnects."),
    ),
    responses((
        status = 200,
        description = "A `text/event-stream` that stays open. Each message (`EventMessage`) is an `id:` line (absent on `stream.*` notices) and one `data:` line holding one JSON object, a `StreamEvent`, whose `type` field says what happened; no `event:` line is sent. After 15 s of silence the comment `: heartbeat` is sent. After `stream.lagged` the response ends; reconnect with `Last-Event-ID`.",
        content_type = "text/event-stream",
        body = crate::openapi::EventMessage,
        example = json!({"id": "7", "data": "{\"type\":\"turn.start\",\"session_id\":\"s-1\",\"turn_id\":\"turn-19a-0\",\"prompt\":\"hi\",\"id\":7,\"ts\":1767225600000}"}),
    )),
)]
pub(crate) async fn stream(
    State(state): State<ServerState>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
    caller: Option<Extension<Identity>>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let mut shutdown = state.inner.shutdown.subscribe();
    let records = state
        .hub()
        .subscribe(query.session_filter(), last_event_id(&headers));
    // On a Keep host the operator's token is checked again before each event, as a person's
    // is on `GET /v1/events`: a revoke ends the stream at its next event.
    let records = match (state.options().keep.clone(), caller) {
        (Some(keep), Some(Extension(identity))) => {
            while_authorized(records, keep, identity).boxed()
        }
        // Keep mode's door always names the caller; without one nothing is sent.
        (Some(_), None) => futures_util::stream::empty().boxed(),
        (None, _) => records.boxed(),
    };
    let messages = records
        .map(|record| Ok(sse_message(&record)))
        .take_until(async move {
            // Ends the stream when the flag turns true (or the state is gone).
            let _ = shutdown.wait_for(|stopping| *stopping).await;
        });
    Sse::new(messages).keep_alive(
        KeepAlive::new()
            .interval(state.options().heartbeat_interval)
            .text(HEARTBEAT_TEXT),
    )
}
