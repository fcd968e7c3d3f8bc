//! Keep across several hosts that share one PostgreSQL database (docs/keep/scaling.md).
//!
//! A person's page holds its event stream on whichever host the load balancer picked, while
//! the event happened on another: [`SharedKeepEvents`] publishes each event to this host's
//! hubs and tells the other hosts through PostgreSQL's `NOTIFY`; [`listen_to_other_hosts`]
//! hears theirs and publishes them here. It also hands this host's cells the answers other
//! hosts recorded for the egress uses they wait on.
//!
//! Any role that can connect to the database can send a notification, so every one is sealed
//! with the host key every host holds ([`NoticeSeal`]) and one that does not open is dropped.
//!
//! A notification is a hint: a host that lost its connection to the database (or could not
//! send for a while) tells every stream it serves `stream.missed`, on which the page reloads
//! what it shows from the database, and looks again at every answer its cells wait for.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use imurun_keep::cells::KeepEvents;
use imurun_keep::events::KeepEvent;
use imurun_keep::seal::{NOTICE_SEAL_BYTES, NoticeRefused, NoticeSeal};
use imurun_keep::service::{EGRESS_ANSWERS_CHANNEL, KeepService, now_ms};
use imurun_store::{Heard, NOTIFY_PAYLOAD_BYTES_MAX, Store};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::KeepHubs;
use crate::keep_events::{KeepNotice, OmittedEvent, to_json};

/// The channel Keep's events cross hosts on.
pub const KEEP_EVENTS_CHANNEL: &str = "imurun_keep_events";

/// How often a host looks in the database for answers to the uses its cells wait on, whatever
/// it heard: a notice that came late (a stalled host, clocks apart) or never came (a silent
/// connection) is made up for within this.
const ANSWER_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// At most one `stream.missed` for late or unread notices within this, however many.
const LATE_NOTICE_MISSED_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The most notices a host opens (checks the seal of) in one second. People's events come far
/// slower; past this (a flood from anyone who can reach the database) everything queued for
/// the host is dropped unread and the connection made anew (streams are told they missed
/// events), and answers are found by the 2-second look in the database: a flood costs a
/// bounded share of one core while it lasts, and no backlog after.
const NOTICES_PER_SECOND_MAX: u32 = 2_000;

/// Events waiting to be sent to the other hosts; past this (the database is slow or gone)
/// an event is not sent, and the other hosts are told they missed some.
const OUTGOING_EVENTS_MAX: usize = 1_024;

/// Keep's events for a host that shares its database: published here at once, and sent to
/// the other hosts in the order they happened.
#[derive(Clone)]
pub struct SharedKeepEvents {
    hubs: KeepHubs,
    host_id: Arc<str>,
    outgoing: mpsc::Sender<String>,
    /// Set when an event could not be sent: the next send tells the others first.
    dropped: Arc<AtomicBool>,
}

impl std::fmt::Debug for SharedKeepEvents {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SharedKeepEvents")
            .field("host_id", &self.host_id)
            .finish_non_exhaustive()
    }
}

impl SharedKeepEvents {
    /// Events published to `hubs` and sent, through `store`, to the other hosts, this one
    /// named `host_id`, sealed with `seal`. Starts the task that sends them (on the current
    /// runtime).
    pub fn start(
        store: &Store,
        hubs: KeepHubs,
        host_id: &str,
        seal: NoticeSeal,
    ) -> SharedKeepEvents {
        let (outgoing, mut queue) = mpsc::channel::<String>(OUTGOING_EVENTS_MAX);
        let dropped = Arc::new(AtomicBool::new(false));
        let events = SharedKeepEvents {
            hubs,
            host_id: Arc::from(host_id),
            outgoing,
            dropped: Arc::clone(&dropped),
        };
        let store = store.clone();
        let host = events.host_id.clone();
        tokio::spawn(async move {
            while let Some(payload) = queue.recv().await {
                if dropped.swap(false, Ordering::Relaxed) {
                    let missed = Crossing::Missed {
                        h: host.to_string(),
                        missed: true,
                    }
                    .text();
                    let missed = seal.seal(KEEP_EVENTS_CHANNEL, &missed, now_ms());
                    if store.notify(KEEP_EVENTS_CHANNEL, &missed).await.is_err() {
                        dropped.store(true, Ordering::Relaxed);
                    }
                }
                let payload = seal.seal(KEEP_EVENTS_CHANNEL, &payload, now_ms());
                if let Err(error) = store.notify(KEEP_EVENTS_CHANNEL, &payload).await {
                    tracing::warn!("an event could not be sent to the other hosts: {error}");
                    dropped.store(true, Ordering::Relaxed);
                }
            }
        });
        events
    }
}

impl KeepEvents for SharedKeepEvents {
    fn publish(&self, user: &str, event: KeepEvent) {
        let json = to_json(&event);
        let payload = crossing_payload(&self.host_id, user, &event, &json);
        self.hubs.publish_serialized(user, &event, json);
        if self.outgoing.try_send(payload).is_err() {
            self.dropped.store(true, Ordering::Relaxed);
        }
    }
}

/// What one host tells the others on [`KEEP_EVENTS_CHANNEL`] (before its seal).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Crossing {
    /// `e`, an event (as its host serialized it) for person `u`, from host `h`.
    Event { h: String, u: String, e: Value },
    /// Host `h` could not send some events: streams reload.
    Missed { h: String, missed: bool },
}

impl Crossing {
    fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What crosses to the other hosts for `user`'s `event` (serialized as `json`, before its
/// seal): the whole event, or, when it would not fit in a notification, a notice of its type,
/// its session and its size (the page reloads what an event is about; an API client reads the
/// rest from the database's views).
fn crossing_payload(host: &str, user: &str, event: &KeepEvent, json: &Value) -> String {
    let crossing = |e: Value| {
        Crossing::Event {
            h: host.to_owned(),
            u: user.to_owned(),
            e,
        }
        .text()
    };
    let whole = crossing(json.clone());
    if whole.len() <= NOTIFY_PAYLOAD_BYTES_MAX - NOTICE_SEAL_BYTES {
        return whole;
    }
    let omitted = OmittedEvent::of(event, json.to_string().len(), Some(host));
    crossing(to_json(&omitted))
}

/// Hears the other hosts for as long as the task runs: their events go to this host's hubs,
/// and their answers to the egress uses this host's cells wait on. `Ok(false)` on SQLite
/// (one host: nothing to hear); otherwise it runs until the runtime ends.
pub async fn listen_to_other_hosts(
    store: &Store,
    keep: KeepService,
    hubs: KeepHubs,
) -> Result<bool, imurun_store::StoreError> {
    let Some(listener) = store
        .listen(&[KEEP_EVENTS_CHANNEL, EGRESS_ANSWERS_CHANNEL])
        .await?
    else {
        return Ok(false);
    };
    tokio::spawn(sweep(keep.clone()));
    tokio::spawn(hear(listener, Hearing::new(keep, hubs)));
    Ok(true)
}

/// Looks in the database every [`ANSWER_SWEEP_EVERY`] for answers to the uses this host's
/// cells wait on and for revokes of the tools they call, whatever was heard.
async fn sweep(keep: KeepService) {
    let mut sweep = tokio::time::interval(ANSWER_SWEEP_EVERY);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        sweep.tick().await;
        if let Err(error) = keep.approvals().deliver_missed().await {
            tracing::warn!("answers from other hosts were not looked up: {error}");
        }
        // A revoke whose notice this host missed ends its calls here at the next sweep.
        if let Err(error) = keep.tools().end_revoked_calls().await {
            tracing::warn!("revoked tools' calls in flight were not looked up: {error}");
        }
    }
}

/// Hears `listener` until the runtime ends.
async fn hear(mut listener: imurun_store::Listener, mut hearing: Hearing) {
    loop {
        match listener.next().await {
            Heard::Notification { channel, payload } => {
                if hearing.flooded() {
                    // A flood: what is queued for this host is let go of unread (it may be
                    // gigabytes), and the connection made anew (heard as `Missed`).
                    tracing::warn!(
                        "more notices came than a host opens in a second: those queued are \
                         dropped unread"
                    );
                    listener.drop_backlog();
                    continue;
                }
                if hearing.open(&channel, &payload).await {
                    listener.drop_backlog();
                }
                // Many notices at once (a flood from anyone who can reach the database)
                // never hold the runtime: each one lets the rest run.
                tokio::task::yield_now().await;
            }
            Heard::Missed => {
                tracing::warn!(
                    "the connection to the database was lost: streams are told they may \
                     have missed events"
                );
                hearing.hubs.publish_all(&KeepNotice::missed());
                if let Err(error) = hearing.keep.approvals().deliver_missed().await {
                    tracing::warn!("answers from other hosts were not looked up: {error}");
                }
            }
        }
    }
}

/// What a host hearing the others keeps: where what it hears goes, and its counts.
struct Hearing {
    keep: KeepService,
    hubs: KeepHubs,
    host_id: String,
    seal: NoticeSeal,
    /// When streams were last told of a late notice.
    late_told: Option<std::time::Instant>,
    /// The second notices are counted in, and how many were opened in it.
    second: std::time::Instant,
    opened: u32,
}

impl Hearing {
    fn new(keep: KeepService, hubs: KeepHubs) -> Hearing {
        Hearing {
            host_id: keep.host_id().to_owned(),
            seal: keep.notice_seal(),
            keep,
            hubs,
            late_told: None,
            second: std::time::Instant::now(),
            opened: 0,
        }
    }

    /// Counts one notice: whether more came this second than a host opens.
    fn flooded(&mut self) -> bool {
        if self.second.elapsed() >= std::time::Duration::from_secs(1) {
            (self.second, self.opened) = (std::time::Instant::now(), 0);
        }
        self.opened += 1;
        let flooded = self.opened > NOTICES_PER_SECOND_MAX;
        if flooded {
            (self.second, self.opened) = (std::time::Instant::now(), 0);
        }
        flooded
    }

    /// Opens one notice and acts on it: whether what is queued behind it should be let go of.
    async fn open(&mut self, channel: &str, payload: &str) -> bool {
        match self.seal.open(channel, payload, now_ms()) {
            Ok(payload) if channel == EGRESS_ANSWERS_CHANNEL => {
                if let Err(error) = self.keep.approvals().deliver(payload).await {
                    tracing::warn!("an answer from another host was not delivered: {error}");
                }
                false
            }
            Ok(payload) => {
                if heard_event(&self.hubs, &self.host_id, payload).as_deref()
                    == Some("tool.revoked")
                    && let Err(error) = self.keep.tools().end_revoked_calls().await
                {
                    tracing::warn!("a revoked tool's calls in flight were not ended: {error}");
                }
                false
            }
            // Sealed, but late: streams reload (the answers' sweep finds an answer), and what
            // is queued behind it, likely late too (a backlog), is let go of as after a flood,
            // at most every 5 seconds.
            Err(NoticeRefused::Stale) => self.tell_missed(
                "a notice from another host came late (a stalled host, a backlog, or clocks \
                 more than a minute apart)",
            ),
            Err(NoticeRefused::Forged) => {
                tracing::debug!(%channel, "a notice not sealed by a host was dropped");
                false
            }
        }
    }

    /// Tells every stream events may have been missed, at most every
    /// [`LATE_NOTICE_MISSED_EVERY`]: whether it did.
    fn tell_missed(&mut self, why: &str) -> bool {
        let tell = self
            .late_told
            .is_none_or(|told| told.elapsed() >= LATE_NOTICE_MISSED_EVERY);
        if tell {
            tracing::warn!("{why}: streams are told they may have missed events");
            self.hubs.publish_all(&KeepNotice::missed());
            self.late_told = Some(std::time::Instant::now());
        }
        tell
    }
}

/// Publishes an event another host sent to this host's hubs; the event's type, if it had one.
fn heard_event(hubs: &KeepHubs, host_id: &str, payload: &str) -> Option<String> {
    match serde_json::from_str::<Crossing>(payload).ok()? {
        Crossing::Event { h, .. } | Crossing::Missed { h, .. } if h == host_id => None,
        Crossing::Missed { missed, .. } => {
            if missed {
                hubs.publish_all(&KeepNotice::missed());
            }
            None
        }
        Crossing::Event { u, e, .. } => {
            let event_type = e.get("type").and_then(Value::as_str).map(str::to_owned);
            hubs.publish_heard(&u, e);
            event_type
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crossing(event: &KeepEvent) -> String {
        crossing_payload("a", "alice", event, &to_json(event))
    }

    #[test]
    fn an_event_too_large_to_cross_becomes_a_notice_of_its_type_and_size() {
        let small = KeepEvent::SessionTainted {
            session_id: "s1".into(),
            source: "a file".into(),
        };
        let payload: Value = serde_json::from_str(&crossing(&small)).unwrap();
        assert_eq!(payload["e"], to_json(&small));
        assert_eq!(
            (payload["h"].as_str(), payload["u"].as_str()),
            (Some("a"), Some("alice"))
        );

        let large = KeepEvent::SessionTainted {
            session_id: "s1".into(),
            source: "x".repeat(9_000),
        };
        let crossed = crossing(&large);
        assert!(
            crossed.len() + NOTICE_SEAL_BYTES <= NOTIFY_PAYLOAD_BYTES_MAX,
            "{}",
            crossed.len()
        );
        let payload: Value = serde_json::from_str(&crossed).unwrap();
        assert_eq!(payload["e"]["type"], "session.tainted");
        assert_eq!(payload["e"]["session_id"], "s1");
        assert_eq!(
            payload["e"]["omitted_bytes"],
            to_json(&large).to_string().len()
        );
        assert_eq!(payload["e"]["happened_on"], "a");
    }

    #[test]
    fn a_host_ignores_its_own_events_and_publishes_the_others() {
        let hubs = KeepHubs::default();
        let mut stream = hubs.subscribe("alice", None);
        let own = json!({"h": "me", "u": "alice", "e": {"type": "tool.revoked"}}).to_string();
        heard_event(&hubs, "me", &own);
        let other =
            json!({"h": "other", "u": "alice", "e": {"type": "proposal.created"}}).to_string();
        heard_event(&hubs, "me", &other);
        heard_event(&hubs, "me", "not json");
        let first = stream.try_recv().expect("one event");
        assert_eq!(first.event_type(), "proposal.created");
        assert!(stream.try_recv().is_none(), "only the other host's event");
    }
}
