//! The SSE endpoint: turns a hub subscription into a `text/event-stream` response, and reads
//! the `Last-Event-ID` header and `?session=` query that pick what the stream carries.
//!
//! # Wire format (a stable contract)
//!
//! Each hub record is one SSE message:
//!
//! ```text
//! id: 42
//! data: {"type":"tool.call","call_id":"c1","session_id":"s1",…,"id":42,"ts":1767225600000}
//!
//! ```
//!
//! - `data:` is exactly one JSON object on one line, with its `type` field. Clients dispatch on
//!   that field, not on the SSE event name.
//! - `id:` is the event id, the same number as the object's `id` field. The hub's own notices
//!   (`stream.gap`, `stream.reset`, `stream.lagged`) have no id and so no `id:` line, which
//!   leaves the browser's last event id at the last real event.
//! - `event:` is never sent, so every message reaches `EventSource.onmessage`; naming each type
//!   would force a listener per type and silently drop types the page does not know yet.
//! - While nothing is sent for [`HEARTBEAT_INTERVAL_DEFAULT`], the server sends the comment
//!   `: heartbeat` so that proxies keep the connection open and a dead client is noticed.
//! - After `stream.lagged` the response ends; the client reconnects with `Last-Event-ID`, which
//!   `EventSource` does on its own.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;

use crate::hub::{EventHub, EventRecord};

/// How long a stream may stay silent before a heartbeat comment is sent.
pub const HEARTBEAT_INTERVAL_DEFAULT: Duration = Duration::from_secs(15);

/// The comment text of a heartbeat: it goes on the wire as `: heartbeat`.
pub const HEARTBEAT_TEXT: &str = "heartbeat";

/// The request header in which an SSE client names the last event it received.
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// The query of the events endpoint: `?session=<id>` narrows the stream to one session (plus
/// the session-less events); without it the stream carries every event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct StreamQuery {
    /// The session to watch. An empty value counts as absent.
    pub session: Option<String>,
}

impl StreamQuery {
    /// The session filter to subscribe with: `None` when the query has no non-empty `session`.
    pub fn session_filter(&self) -> Option<String> {
        self.session.clone().filter(|session| !session.is_empty())
    }
}

/// The id in the `Last-Event-ID` header, if there is one and it is a number. Anything else
/// counts as absent and the client gets a fresh stream: a malformed header must not cost it
/// the live events.
pub fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(LAST_EVENT_ID_HEADER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// An SSE response that carries `hub`'s events for `filter` (a session id, or `None` for every
/// event), starting after `last_event_id` when it is given, with a heartbeat comment after
/// `heartbeat_interval` of silence ([`HEARTBEAT_INTERVAL_DEFAULT`] outside tests).
///
/// The subscription is made before this returns, so events published after the call reach
/// the response. It is dropped, and the client unsubscribed, when the connection closes; a
/// client that vanishes without closing is noticed at the next write, at the latest at the
/// next heartbeat.
pub fn sse_response(
    hub: &EventHub,
    filter: Option<String>,
    last_event_id: Option<u64>,
    heartbeat_interval: Duration,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>> + Send + use<>> {
    let messages = hub
        .subscribe(filter, last_event_id)
        .map(|record| Ok(sse_message(&record)));
    Sse::new(messages).keep_alive(
        KeepAlive::new()
            .interval(heartbeat_interval)
            .text(HEARTBEAT_TEXT),
    )
}

/// The SSE message of one record: an `id:` line when the record has an id, then the JSON as one
/// `data:` line.
pub fn sse_message(record: &Arc<EventRecord>) -> SseEvent {
    // The JSON is compact, so it holds no line break and goes out as a single `data:` line.
    let message = match record.id() {
        Some(id) => SseEvent::default().id(id.to_string()),
        None => SseEvent::default(),
    };
    message.data(record.json())
}
