//! Keep's live events, one hub per person: a person's `GET /v1/events` subscribes to their own
//! hub, so no event of another person (nor its id, nor a gap left by it) can reach them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use imurun_keep::cells::KeepEvents;
use serde_json::Value;

use crate::hub::{EventHub, HubConfig, Subscription};

/// Events kept per person for replay after a reconnect.
pub const KEEP_BUFFER_EVENTS_MAX: usize = 512;
/// Events that may wait for one of a person's streams before it is dropped as lagging.
pub const KEEP_QUEUE_EVENTS_MAX: usize = 256;

/// Every person's hub. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct KeepHubs {
    hubs: Arc<Mutex<HashMap<String, EventHub>>>,
}

impl KeepHubs {
    /// `user`'s hub, made on first use.
    pub fn hub(&self, user: &str) -> EventHub {
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        hubs.entry(user.to_owned())
            .or_insert_with(|| {
                EventHub::new(HubConfig {
                    buffer_events_max: KEEP_BUFFER_EVENTS_MAX,
                    queue_events_max: KEEP_QUEUE_EVENTS_MAX,
                })
            })
            .clone()
    }

    /// Publishes `event` to every person's hub this host has (a notice that concerns every
    /// stream, such as events missed from another host).
    pub fn publish_all(&self, event: Value) {
        let hubs: Vec<EventHub> = self
            .hubs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for hub in hubs {
            let _ = hub.publish_value(None, event.clone());
        }
    }

    /// A subscription to `user`'s events, replaying those after `last_event_id`.
    pub fn subscribe(&self, user: &str, last_event_id: Option<u64>) -> Subscription {
        self.hub(user).subscribe(None, last_event_id)
    }
}

/// The largest event kept for a person, as JSON; a larger one is replaced by a notice that
/// says how large it was (the hub keeps 512 events for replay).
pub const KEEP_EVENT_BYTES_MAX: usize = 128 << 10;

impl KeepEvents for KeepHubs {
    fn publish(&self, user: &str, event: Value) {
        let bytes = event.to_string().len();
        let event = if bytes > KEEP_EVENT_BYTES_MAX {
            serde_json::json!({
                "type": event.get("type").cloned().unwrap_or(Value::Null),
                "session_id": event.get("session_id").cloned().unwrap_or(Value::Null),
                "omitted_bytes": bytes,
            })
        } else {
            event
        };
        // Every Keep event is an object with a `type`; one that is not is dropped.
        let _ = self.hub(user).publish_value(None, event);
    }
}
