//! Approvals: a call the policy says to ask about waits here for a person's decision.
//!
//! Asking publishes `tool.approval_needed` and waits for one of: [`ApprovalBroker::decide`]
//! (the server's `POST /api/tools/approvals/{id}`), the approval timeout (denied), or the
//! turn's stop flag (denied). With no client subscribed to the session's events nobody could
//! see the card, so the call is denied at once. Only the asking call waits: other calls, of
//! this session or any other, keep running.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use imurun_core::{DenyReason, Event, EventSink, StopFlag, cut_long_strings};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use crate::ExecError;
use crate::ids::{new_id, now_ms};

/// `permissions.approvalTimeout`'s default.
pub const APPROVAL_TIMEOUT_DEFAULT: Duration = Duration::from_secs(180);

/// Approvals that may wait at once, over all sessions. One person answers cards one at a
/// time; past this, something is asking in a loop, and further asks are denied at once.
pub const PENDING_APPROVALS_MAX: usize = 256;

/// The message of a denial for want of a client, in the seed's words.
pub const NO_CLIENT_MESSAGE: &str = "no client is connected to approve it";

/// A waiting approval, as `GET /api/tools/approvals` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingApproval {
    pub approval_id: String,
    pub call_id: String,
    pub session_id: Option<String>,
    pub tool: String,
    /// The call's arguments, long strings cut as in events.
    pub args: Map<String, Value>,
    /// When it times out, in milliseconds since the Unix epoch.
    pub deadline_ms: i64,
    /// Whether "always for this session" may be offered (never for deletes).
    pub rememberable: bool,
    pub depth: u8,
    /// Why the policy asks, for the card.
    pub reason: String,
    /// The session read untrusted content: the reason is the taint's.
    pub tainted: bool,
}

/// What the executor asks about.
#[derive(Debug)]
pub(crate) struct ApprovalRequest<'a> {
    pub(crate) call_id: &'a str,
    pub(crate) session_id: Option<&'a str>,
    pub(crate) tool: &'a str,
    pub(crate) args: &'a Map<String, Value>,
    pub(crate) rememberable: bool,
    pub(crate) depth: u8,
    pub(crate) reason: &'a str,
    pub(crate) tainted: bool,
}

/// How an approval ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApprovalAnswer {
    Approved {
        approval_id: String,
        remember: bool,
    },
    Denied {
        approval_id: Option<String>,
        reason: DenyReason,
        message: String,
    },
}

/// Holds the approvals that wait for a person. Cloning shares it.
#[derive(Clone)]
pub struct ApprovalBroker {
    inner: Arc<Inner>,
}

struct Inner {
    waiting: Mutex<HashMap<String, Waiting>>,
    /// `permissions.approvalTimeout`, in milliseconds; a change applies to the next card.
    timeout_ms: AtomicU64,
}

struct Waiting {
    card: PendingApproval,
    answer: oneshot::Sender<Decided>,
}

#[derive(Debug, Clone, Copy)]
struct Decided {
    approved: bool,
    remember: bool,
}

impl ApprovalBroker {
    /// A broker whose cards wait at most `timeout` each.
    pub fn new(timeout: Duration) -> Self {
        let broker = Self {
            inner: Arc::new(Inner {
                waiting: Mutex::new(HashMap::new()),
                timeout_ms: AtomicU64::new(0),
            }),
        };
        broker.set_approval_timeout(timeout);
        broker
    }

    /// How long a new card waits for a person.
    pub fn approval_timeout(&self) -> Duration {
        Duration::from_millis(self.inner.timeout_ms.load(Ordering::Relaxed))
    }

    /// Sets how long cards published from now on wait; cards already waiting keep theirs.
    pub fn set_approval_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.inner.timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// A person's decision on a waiting approval. `remember` asks to let the tool run without
    /// asking for the rest of the session; it is ignored for deletes.
    pub fn decide(
        &self,
        approval_id: &str,
        approved: bool,
        remember: bool,
    ) -> Result<(), ExecError> {
        let waiting = self.waiting().remove(approval_id);
        let unknown = || ExecError::UnknownApproval {
            approval_id: approval_id.to_string(),
        };
        let waiting = waiting.ok_or_else(unknown)?;
        // The asking call may have stopped waiting (stopped, timed out) in the same instant.
        waiting
            .answer
            .send(Decided { approved, remember })
            .map_err(|_| unknown())
    }

    /// Every approval waiting now, soonest deadline first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        let mut cards: Vec<PendingApproval> = self
            .waiting()
            .values()
            .map(|waiting| waiting.card.clone())
            .collect();
        cards.sort_by(|a, b| {
            a.deadline_ms
                .cmp(&b.deadline_ms)
                .then(a.approval_id.cmp(&b.approval_id))
        });
        cards
    }

    /// Publishes a card to `events` (the asking turn's sink) and waits for its answer, the
    /// timeout, or `stop`.
    pub(crate) async fn ask(
        &self,
        request: ApprovalRequest<'_>,
        stop: &StopFlag,
        events: &dyn EventSink,
    ) -> ApprovalAnswer {
        let denied = |approval_id, reason, message: &str| ApprovalAnswer::Denied {
            approval_id,
            reason,
            message: message.to_string(),
        };
        if !events.has_subscriber(request.session_id) {
            return denied(None, DenyReason::NoClient, NO_CLIENT_MESSAGE);
        }
        if stop.is_stopped() {
            return denied(None, DenyReason::Stopped, "the turn was stopped");
        }
        let approval_id = new_id("approval");
        let timeout = self.approval_timeout();
        let card = PendingApproval {
            approval_id: approval_id.clone(),
            call_id: request.call_id.to_string(),
            session_id: request.session_id.map(str::to_string),
            tool: request.tool.to_string(),
            args: cut_long_strings(request.args),
            deadline_ms: now_ms()
                .saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)),
            rememberable: request.rememberable,
            depth: request.depth,
            reason: request.reason.to_string(),
            tainted: request.tainted,
        };
        let (answer, answered) = oneshot::channel();
        {
            let mut waiting = self.waiting();
            if waiting.len() >= PENDING_APPROVALS_MAX {
                // DenyReason has no "overloaded"; it could not wait, which is what a timeout is.
                return denied(
                    None,
                    DenyReason::Timeout,
                    &format!(
                        "{PENDING_APPROVALS_MAX} approvals are already waiting; this one could not wait too"
                    ),
                );
            }
            waiting.insert(
                approval_id.clone(),
                Waiting {
                    card: card.clone(),
                    answer,
                },
            );
        }
        // Removes the card however the wait ends, including this future being dropped.
        let _cleanup = RemoveOnDrop {
            broker: self,
            approval_id: &approval_id,
        };
        events.publish(Event::ToolApprovalNeeded {
            approval_id: card.approval_id,
            call_id: card.call_id,
            session_id: card.session_id,
            name: card.tool,
            args: card.args,
            deadline_ms: card.deadline_ms,
            rememberable: card.rememberable,
            depth: card.depth,
            reason: card.reason,
            tainted: card.tainted,
        });
        let some_id = Some(approval_id.clone());
        tokio::select! {
            decided = answered => match decided {
                Ok(Decided { approved: true, remember }) => {
                    ApprovalAnswer::Approved { approval_id: approval_id.clone(), remember }
                }
                Ok(Decided { approved: false, .. }) => {
                    denied(some_id, DenyReason::User, "a person denied it")
                }
                // The sender is dropped only when the card is removed without an answer.
                Err(_) => denied(some_id, DenyReason::Stopped, "the approval was withdrawn"),
            },
            () = tokio::time::sleep(timeout) => {
                let message = format!("nobody approved it within {}", shown(timeout));
                denied(some_id, DenyReason::Timeout, &message)
            }
            () = stop.stopped() => denied(some_id, DenyReason::Stopped, "the turn was stopped"),
        }
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<String, Waiting>> {
        // A panic while holding this lock leaves the map consistent (inserts and removes are
        // single operations), so a poisoned lock is still safe to use.
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("timeout", &self.approval_timeout())
            .field("pending", &self.waiting().len())
            .finish()
    }
}

/// A timeout as a person reads it: whole seconds, or milliseconds below one second.
fn shown(timeout: Duration) -> String {
    if timeout.as_secs() >= 1 {
        format!("{} s", timeout.as_secs())
    } else {
        format!("{} ms", timeout.as_millis())
    }
}

struct RemoveOnDrop<'a> {
    broker: &'a ApprovalBroker,
    approval_id: &'a str,
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        self.broker.waiting().remove(self.approval_id);
    }
}
