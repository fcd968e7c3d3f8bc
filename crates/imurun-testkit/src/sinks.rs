//! Sinks that keep what they are given: events (with a switch for "a client is watching")
//! and audit records.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use imurun_core::{AuditRecord, AuditSink, Event, EventSink};
use serde_json::{Value, json};

/// Records every event; `subscribed` says whether a client is watching (every session).
#[derive(Debug, Default)]
pub struct RecordingEvents {
    events: Mutex<Vec<Event>>,
    subscribed: AtomicBool,
}

impl RecordingEvents {
    pub fn new(subscribed: bool) -> Arc<Self> {
        let events = Self::default();
        events.subscribed.store(subscribed, Ordering::SeqCst);
        Arc::new(events)
    }

    /// Whether approvals see a client from now on.
    pub fn set_subscribed(&self, subscribed: bool) {
        self.subscribed.store(subscribed, Ordering::SeqCst);
    }

    pub fn all(&self) -> Vec<Event> {
        self.events.lock().expect("events lock").clone()
    }

    /// Each event's `type`, in order.
    pub fn types(&self) -> Vec<String> {
        self.all().iter().map(event_type).collect()
    }

    /// Each event as wire JSON, `call_id`s blanked (they are random).
    pub fn wire(&self) -> Vec<Value> {
        self.all()
            .iter()
            .map(|event| {
                let mut wire = serde_json::to_value(event).expect("events serialize");
                if let Some(id) = wire.get_mut("call_id") {
                    *id = json!("call-*");
                }
                wire
            })
            .collect()
    }

    /// Each event's type, a step's with its kind (`step:tool`) and consecutive `token`
    /// events merged into one: the shape of a turn, for comparing sequences.
    pub fn merged_types(&self) -> Vec<String> {
        let mut types: Vec<String> = Vec::new();
        for wire in self.wire() {
            let kind = wire["type"].as_str().unwrap_or_default().to_owned();
            let kind = match wire.get("kind").and_then(Value::as_str) {
                Some(step) if kind == "step" => format!("step:{step}"),
                _ => kind,
            };
            if kind == "token" && types.last().is_some_and(|last| last == "token") {
                continue;
            }
            types.push(kind);
        }
        types
    }

    /// The streamed answer text: every `token` event's text, joined.
    pub fn streamed(&self) -> String {
        self.all()
            .iter()
            .filter_map(|event| match event {
                Event::Token { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Forgets what was recorded.
    pub fn clear(&self) {
        self.events.lock().expect("events lock").clear();
    }
}

/// An event's `type` field, as clients see it.
pub fn event_type(event: &Event) -> String {
    serde_json::to_value(event).expect("events serialize")["type"]
        .as_str()
        .expect("events have a type")
        .to_string()
}

impl EventSink for RecordingEvents {
    fn publish(&self, event: Event) {
        self.events.lock().expect("events lock").push(event);
    }

    fn has_subscriber(&self, _session_id: Option<&str>) -> bool {
        self.subscribed.load(Ordering::SeqCst)
    }
}

/// Records every audit record.
#[derive(Debug, Default)]
pub struct RecordingAudit {
    records: Mutex<Vec<AuditRecord>>,
}

impl RecordingAudit {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn all(&self) -> Vec<AuditRecord> {
        self.records.lock().expect("audit lock").clone()
    }
}

impl AuditSink for RecordingAudit {
    fn record(&self, record: AuditRecord) {
        self.records.lock().expect("audit lock").push(record);
    }
}
