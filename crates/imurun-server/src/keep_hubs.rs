//! Keep's live events, one hub per person: a person's `GET /v1/events` subscribes to their own
//! hub, so no event of another person (nor its id, nor a gap left by it) can reach them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use imurun_keep::cells::KeepEvents;
use imurun_keep::events::KeepEvent;
use serde::Serialize;
use serde_json::Value;

use crate::hub::{EventHub, HubConfig, Subscription};
use crate::keep_events::{kept, to_json};

pub use crate::keep_events::KEEP_EVENT_BYTES_MAX;

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

    /// Publishes `notice` to every person's hub this host has (a notice that concerns every
    /// stream, such as events missed from another host).
    pub fn publish_all<T: Serialize>(&self, notice: &T) {
        let event = to_json(notice);
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

    /// Publishes to `user`'s hub an event another host sent, as it sent it (its host kept it
    /// within [`crate::keep_events::KEEP_EVENT_BYTES_MAX`] and its notice's size).
    pub(crate) fn publish_heard(&self, user: &str, event: Value) {
        // Every Keep event is an object with a `type`; one that is not is dropped.
        let _ = self.hub(user).publish_value(None, event);
    }

    /// Publishes `event`, serialized as `json`, to `user`'s hub: whole, or the notice in its
    /// place when it is too large to keep.
    pub(crate) fn publish_serialized(&self, user: &str, event: &KeepEvent, json: Value) {
        let _ = self.hub(user).publish_value(None, kept(event, json));
    }

    /// A subscription to `user`'s events, replaying those after `last_event_id`.
    pub fn subscribe(&self, user: &str, last_event_id: Option<u64>) -> Subscription {
        self.hub(user).subscribe(None, last_event_id)
    }
}

impl KeepEvents for KeepHubs {
    fn publish(&self, user: &str, event: KeepEvent) {
        let json = to_json(&event);
        self.publish_serialized(user, &event, json);
    }
}
