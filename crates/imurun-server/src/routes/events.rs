//! `GET /api/events?session=ID`: the live events over SSE (wire format in [`crate::sse`]).

use std::convert::Infallible;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};

use crate::sse::{HEARTBEAT_TEXT, StreamQuery, last_event_id, sse_message};
use crate::state::ServerState;

/// `GET /api/events` → `text/event-stream`. `?session=ID` narrows it to one session plus the
/// global events; `Last-Event-ID` replays what the client missed. While a stream for a session
/// is open, approvals in that session wait for a person instead of being denied at once. The
/// stream ends when the server shuts down.
pub(super) async fn stream(
    State(state): State<ServerState>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let mut shutdown = state.inner.shutdown.subscribe();
    let messages = state
        .hub()
        .subscribe(query.session_filter(), last_event_id(&headers))
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
