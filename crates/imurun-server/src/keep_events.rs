//! What a person's Keep event stream (`GET /v1/events`) carries beside Keep's own events
//! ([`imurun_keep::events::KeepEvent`]): an event too large to keep or to cross to another
//! host, replaced by a notice of it ([`OmittedEvent`]), and the notice that events from
//! another host may have been missed ([`KeepNotice`]). Typed like the events, so nothing here
//! builds event JSON by hand.

use imurun_keep::events::KeepEvent;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// The largest event kept for a person, as JSON; a larger one is replaced by a notice that
/// says how large it was (the hub keeps 512 events for replay).
pub const KEEP_EVENT_BYTES_MAX: usize = 128 << 10;

/// An event too large to keep for replay (over 128 KiB) or to cross to another host, in its
/// place: its `type` (the event's own, so a client reloads what it is about), its session and
/// its size. What it said is in the database's views.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct OmittedEvent {
    /// The omitted event's own `type` (one of `KeepEvent`'s).
    #[serde(rename = "type")]
    pub event_type: String,
    /// The omitted event's session, `null` for an event of no session.
    pub session_id: Option<String>,
    /// The omitted event's size, as JSON.
    pub omitted_bytes: usize,
    /// The host it happened on, for an event another host could not send whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub happened_on: Option<String>,
}

impl OmittedEvent {
    /// The notice in place of `event`, `omitted_bytes` long as JSON.
    pub fn of(event: &KeepEvent, omitted_bytes: usize, happened_on: Option<&str>) -> OmittedEvent {
        OmittedEvent {
            event_type: event.event_type().to_owned(),
            session_id: event.session_id().map(str::to_owned),
            omitted_bytes,
            happened_on: happened_on.map(str::to_owned),
        }
    }
}

/// The host's notices to a person's streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum KeepNotice {
    /// Events from another host may have been missed (a lost connection to the database, a
    /// late or unread notice): what is shown should be loaded again.
    #[serde(rename = "stream.missed")]
    StreamMissed { reason: String },
}

impl KeepNotice {
    /// The notice that events from another host may have been missed.
    pub fn missed() -> KeepNotice {
        KeepNotice::StreamMissed {
            reason: "events from another host may have been missed; what is shown should be \
                     loaded again"
                .to_owned(),
        }
    }
}

/// `event` as JSON for a person's hub: whole, or the notice in its place when it is over
/// [`KEEP_EVENT_BYTES_MAX`]. `json` is `event` serialized (once, by the caller).
pub(crate) fn kept(event: &KeepEvent, json: Value) -> Value {
    let bytes = json.to_string().len();
    if bytes <= KEEP_EVENT_BYTES_MAX {
        return json;
    }
    to_json(&OmittedEvent::of(event, bytes, None))
}

/// A typed event or notice as JSON (a JSON object with its `type`).
pub(crate) fn to_json<T: Serialize>(event: &T) -> Value {
    serde_json::to_value(event).unwrap_or(Value::Null)
}
