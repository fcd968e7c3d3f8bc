//! The live event hub: it numbers every event, keeps the latest ones for replay, and fans them
//! out to subscribers without ever waiting for a slow one.
//!
//! Every published event becomes an [`EventRecord`]: the event's JSON object with an `id` (a
//! `u64` that increases by one per event, starting at 1) and a `ts` (milliseconds since the Unix
//! epoch) stamped in. The hub keeps the last [`HubConfig::buffer_events_max`] records in a ring
//! buffer so that a client that reconnects with the last id it saw gets exactly what it missed.
//!
//! Besides the events, a subscription can yield three notices from the hub itself. They carry a
//! `ts` but no `id`, are never buffered and never replayed:
//!
//! - `{"type":"stream.gap","missed_from":a,"missed_to":b}`: the events with ids `a..=b` fell out
//!   of the buffer before the client came back; what follows starts after them.
//! - `{"type":"stream.reset","last_event_id":n,"replay_from":m}`: the hub never issued id `n`
//!   (typically the server restarted and ids began again at 1); what follows is everything still
//!   buffered, from id `m`.
//! - `{"type":"stream.lagged","missed_from":a,"queue_events_max":q}`: the client did not keep up
//!   and its queue of `q` events was full when event `a` came. It is the last message of the
//!   subscription; reconnecting with the last id received replays what is still buffered.
//!
//! Events come in typed ([`EventHub::publish_event`]: an `imurun_core::Event`, a
//! [`crate::ServerEvent`], a turn's stamped event) and are serialized once, here.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};

use futures_util::Stream;
use imurun_core::{Event, EventSink};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// How many events the hub keeps for replay unless configured otherwise. At a few hundred bytes
/// per event this is a few megabytes at most, and covers a reconnect in the middle of a turn.
pub const BUFFER_EVENTS_MAX_DEFAULT: usize = 4096;

/// How many events may wait for one subscriber unless configured otherwise. A client further
/// behind than this is dropped rather than slowing the publisher down.
pub const QUEUE_EVENTS_MAX_DEFAULT: usize = 1024;

/// The bounds of an [`EventHub`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubConfig {
    /// The most events kept for replay; the oldest is forgotten first. Zero turns replay off
    /// (every reconnect with an id older than the newest event then gets a `stream.gap`).
    pub buffer_events_max: usize,
    /// The most events waiting for one subscriber. One more slot is reserved on top of it for
    /// the `stream.lagged` notice, so that notice is always delivered.
    pub queue_events_max: usize,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            buffer_events_max: BUFFER_EVENTS_MAX_DEFAULT,
            queue_events_max: QUEUE_EVENTS_MAX_DEFAULT,
        }
    }
}

/// Why an event could not be published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    /// The value was not a JSON object with a string `type` field; clients dispatch on `type`,
    /// so such a value would be unreadable for them.
    #[error("an event must be a JSON object with a string \"type\" field")]
    NotAnEvent,
}

/// The live event hub. Cloning it is cheap and every clone publishes to the same subscribers.
///
/// Publishing takes one short lock and never waits for a subscriber: a subscriber whose queue
/// is full is sent `stream.lagged` and dropped.
#[derive(Debug, Clone)]
pub struct EventHub {
    inner: Arc<Inner>,
}

/// One event as the hub numbered and stamped it, or one of the hub's own notices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    id: Option<u64>,
    session_id: Option<String>,
    event_type: String,
    ts_ms: u64,
    json: String,
}

/// The events one subscriber receives: first the replayed ones (after a gap or reset notice if
/// there is one), then live ones, in id order with no gap and no duplicate.
///
/// It ends after a `stream.lagged` notice, or when every clone of the hub is gone. Dropping it
/// unsubscribes at once.
#[derive(Debug)]
pub struct Subscription {
    /// The notice and replayed records, bounded by the hub's buffer, handed out before `live`.
    backlog: VecDeque<Arc<EventRecord>>,
    live: mpsc::Receiver<Arc<EventRecord>>,
    subscriber_id: u64,
    /// Weak so that a forgotten subscription does not keep the hub alive: when the last hub
    /// clone goes, the senders go with it and the subscription ends.
    hub: Weak<Inner>,
}

impl EventHub {
    /// A hub with the given bounds.
    pub fn new(config: HubConfig) -> Self {
        EventHub {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State {
                    next_event_id: 1,
                    buffer: VecDeque::new(),
                    subscribers: Vec::new(),
                    next_subscriber_id: 1,
                }),
            }),
        }
    }

    /// The bounds this hub was built with.
    pub fn config(&self) -> HubConfig {
        self.inner.config
    }

    /// Serializes `event` (a typed event: its JSON is an object with a string `type`) and
    /// publishes it as [`EventHub::publish_value`] does; `None` if it was not an event.
    pub fn publish_event<T: serde::Serialize>(
        &self,
        session_id: Option<&str>,
        event: &T,
    ) -> Option<u64> {
        let value = serde_json::to_value(event).ok()?;
        self.publish_value(session_id, value).ok()
    }

    /// Numbers `event`, stamps `id` and `ts` into it (replacing fields of those names), keeps it
    /// for replay and hands it to every subscriber that watches `session_id` (or every
    /// subscriber, for a session-less event). Returns the id.
    ///
    /// `event` must be a JSON object with a string `type` field.
    pub fn publish_value(&self, session_id: Option<&str>, event: Value) -> Result<u64, HubError> {
        let Value::Object(mut fields) = event else {
            return Err(HubError::NotAnEvent);
        };
        let Some(event_type) = fields
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(HubError::NotAnEvent);
        };
        let queue_events_max = self.inner.config.queue_events_max;
        let buffer_events_max = self.inner.config.buffer_events_max;
        // Numbering, buffering and fan-out happen under one lock so that the buffer, every queue
        // and the ids agree on one order, and a new subscriber sees each event exactly once.
        let mut state = self.inner.lock();
        let id = state.next_event_id;
        state.next_event_id += 1;
        let ts_ms = unix_ms();
        fields.insert("id".to_owned(), Value::from(id));
        fields.insert("ts".to_owned(), Value::from(ts_ms));
        let record = Arc::new(EventRecord {
            id: Some(id),
            session_id: session_id.map(str::to_owned),
            event_type,
            ts_ms,
            json: Value::Object(fields).to_string(),
        });
        state.remember(&record, buffer_events_max);
        state
            .subscribers
            .retain(|subscriber| subscriber.offer(&record, queue_events_max));
        Ok(id)
    }

    /// Subscribes to the events of session `filter` and the session-less ones, or to every event
    /// when `filter` is `None`.
    ///
    /// With `last_event_id = Some(n)`, the subscription first yields the buffered events with an
    /// id above `n` that pass the filter, preceded by `stream.gap` if some of them are no longer
    /// buffered or `stream.reset` if the hub never issued `n`. The gap is reported whatever the
    /// filter, since the hub no longer knows which sessions the lost events belonged to.
    pub fn subscribe(&self, filter: Option<String>, last_event_id: Option<u64>) -> Subscription {
        // One slot more than the queue bound, kept free for the `stream.lagged` notice.
        let (sender, live) = mpsc::channel(self.inner.config.queue_events_max + 1);
        // Taking the replay and registering under the same lock is what makes "replay, then live"
        // free of gaps and duplicates: no event can be published in between.
        let mut state = self.inner.lock();
        let backlog = match last_event_id {
            Some(last_event_id) => state.replay_after(last_event_id, filter.as_deref()),
            None => VecDeque::new(),
        };
        let subscriber_id = state.next_subscriber_id;
        state.next_subscriber_id += 1;
        state.subscribers.push(Subscriber {
            id: subscriber_id,
            filter,
            sender,
        });
        drop(state);
        Subscription {
            backlog,
            live,
            subscriber_id,
            hub: Arc::downgrade(&self.inner),
        }
    }

    /// How many subscriptions are live: not dropped and not dropped by the hub for lagging.
    pub fn subscriber_count(&self) -> usize {
        let state = self.inner.lock();
        state
            .subscribers
            .iter()
            .filter(|subscriber| !subscriber.sender.is_closed())
            .count()
    }

    /// The id of the newest event, or `None` before the first one.
    pub fn last_event_id(&self) -> Option<u64> {
        let state = self.inner.lock();
        state.next_event_id.checked_sub(1).filter(|id| *id > 0)
    }
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new(HubConfig::default())
    }
}

impl EventSink for EventHub {
    /// Publishes the event in its session's stream (its `session_id`, if it has one).
    fn publish(&self, event: Event) {
        // Every `Event` serializes to an object with a `type`, so this cannot be refused.
        let _ = self.publish_event(event.session_id(), &event);
    }

    /// True when a live subscriber watches `session_id` or every session. For `None`, true when
    /// anyone at all is subscribed, since session-less events reach every subscriber.
    fn has_subscriber(&self, session_id: Option<&str>) -> bool {
        let state = self.inner.lock();
        state
            .subscribers
            .iter()
            .any(|subscriber| !subscriber.sender.is_closed() && subscriber.watches(session_id))
    }
}

impl EventRecord {
    /// The event id, or `None` for the hub's own `stream.*` notices.
    pub fn id(&self) -> Option<u64> {
        self.id
    }

    /// The session the event belongs to; `None` for global events and notices.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The event's `type` field, such as `tool.call` or `stream.gap`.
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// When the hub stamped it, in milliseconds since the Unix epoch (the `ts` field).
    pub fn ts_ms(&self) -> u64 {
        self.ts_ms
    }

    /// The whole object as compact JSON on one line, `id` and `ts` included. Serialized once at
    /// publish time and shared by every subscriber.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The whole object parsed back into a value.
    pub fn value(&self) -> Value {
        // The text was produced by `serde_json` from a `Value`, so it always parses back.
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

impl Subscription {
    /// The next record, waiting for one if needed; `None` when the subscription has ended.
    pub async fn recv(&mut self) -> Option<Arc<EventRecord>> {
        if let Some(record) = self.backlog.pop_front() {
            return Some(record);
        }
        self.live.recv().await
    }

    /// The next record if one is ready now; `None` when none is ready or the subscription ended.
    pub fn try_recv(&mut self) -> Option<Arc<EventRecord>> {
        if let Some(record) = self.backlog.pop_front() {
            return Some(record);
        }
        self.live.try_recv().ok()
    }
}

impl Stream for Subscription {
    type Item = Arc<EventRecord>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(record) = this.backlog.pop_front() {
            return Poll::Ready(Some(record));
        }
        this.live.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            let mut state = hub.lock();
            state
                .subscribers
                .retain(|subscriber| subscriber.id != self.subscriber_id);
        }
    }
}

#[derive(Debug)]
struct Inner {
    config: HubConfig,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    next_event_id: u64,
    /// Ids in it are consecutive and increasing: records are only pushed at the back with the
    /// next id and only removed from the front.
    buffer: VecDeque<Arc<EventRecord>>,
    subscribers: Vec<Subscriber>,
    next_subscriber_id: u64,
}

#[derive(Debug)]
struct Subscriber {
    id: u64,
    filter: Option<String>,
    sender: mpsc::Sender<Arc<EventRecord>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing that can panic runs while the lock is held, and every update leaves the state
        // consistent, so a poisoned lock still guards good data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn remember(&mut self, record: &Arc<EventRecord>, buffer_events_max: usize) {
        if buffer_events_max == 0 {
            return;
        }
        while self.buffer.len() >= buffer_events_max {
            self.buffer.pop_front();
        }
        self.buffer.push_back(Arc::clone(record));
    }

    /// The notice, if any, and the buffered records after `last_event_id` that pass `filter`.
    fn replay_after(&self, last_event_id: u64, filter: Option<&str>) -> VecDeque<Arc<EventRecord>> {
        let newest_id = self.next_event_id - 1;
        let oldest_kept_id = self
            .buffer
            .front()
            .and_then(|record| record.id)
            .unwrap_or(self.next_event_id);
        let mut backlog = VecDeque::new();
        let replay_start = if last_event_id > newest_id {
            backlog.push_back(Arc::new(notice(
                "stream.reset",
                json!({"last_event_id": last_event_id, "replay_from": oldest_kept_id}),
            )));
            0
        } else {
            let first_missed_id = last_event_id + 1;
            if first_missed_id < oldest_kept_id {
                backlog.push_back(Arc::new(notice(
                    "stream.gap",
                    json!({"missed_from": first_missed_id, "missed_to": oldest_kept_id - 1}),
                )));
            }
            self.buffer
                .partition_point(|record| record.id <= Some(last_event_id))
        };
        backlog.extend(
            self.buffer
                .range(replay_start..)
                .filter(|record| passes(filter, record.session_id()))
                .cloned(),
        );
        backlog
    }
}

impl Subscriber {
    /// Queues `record` if this subscriber wants it. Returns whether the subscriber stays: false
    /// once it is gone or has been sent `stream.lagged`.
    fn offer(&self, record: &Arc<EventRecord>, queue_events_max: usize) -> bool {
        if self.sender.is_closed() {
            return false;
        }
        if !passes(self.filter.as_deref(), record.session_id()) {
            return true;
        }
        // Only the hub sends, and only under its lock, so the room counted here is still there
        // for the `try_send` below; the last free slot is the one kept for `stream.lagged`.
        if self.sender.capacity() > 1 {
            return self.sender.try_send(Arc::clone(record)).is_ok();
        }
        let lagged = notice(
            "stream.lagged",
            json!({"missed_from": record.id, "queue_events_max": queue_events_max}),
        );
        let _ = self.sender.try_send(Arc::new(lagged));
        false
    }

    fn watches(&self, session_id: Option<&str>) -> bool {
        passes(self.filter.as_deref(), session_id)
    }
}

/// Whether an event of `session_id` reaches a subscriber with `filter`: session-less events
/// reach everyone, session events reach their session's subscribers and unfiltered ones.
fn passes(filter: Option<&str>, session_id: Option<&str>) -> bool {
    match (filter, session_id) {
        (None, _) | (_, None) => true,
        (Some(filter), Some(session_id)) => filter == session_id,
    }
}

/// One of the hub's own `stream.*` messages: `fields` plus `type` and `ts`, without an id.
fn notice(event_type: &str, fields: Value) -> EventRecord {
    let ts_ms = unix_ms();
    let mut object = Map::new();
    object.insert("type".to_owned(), Value::from(event_type));
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    object.insert("ts".to_owned(), Value::from(ts_ms));
    EventRecord {
        id: None,
        session_id: None,
        event_type: event_type.to_owned(),
        ts_ms,
        json: Value::Object(object).to_string(),
    }
}

fn unix_ms() -> u64 {
    // A clock before 1970 is a broken clock; 0 keeps the field a number.
    u64::try_from(imurun_core::now_unix_ms()).unwrap_or(0)
}
