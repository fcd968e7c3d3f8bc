//! One refusal path: every refusal of a signed-in identity outside a cell is journaled here,
//! whether the service refused (through [`Core::refuse`]) or the server's door did (the
//! strict reader, the role check, another person's id), at most
//! [`REFUSALS_JOURNALED_PER_MINUTE_MAX`] per identity per minute.
//!
//! The server runs each request inside [`noting_refusals`], so a refusal the service journaled
//! already is not journaled twice at the door.

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use super::{Core, Identity, Journal, append};
use crate::KeepError;
use crate::cells::Bound;
use crate::events::KeepEvent;
use crate::journal_detail::{
    BoundRule, ClaimedDetail, DoorAction, DoorRefused, RefusalDetail, RefusalsBound,
};

/// Refusals outside a cell journaled per identity per minute; one more entry says the rest of
/// that minute are events only.
pub const REFUSALS_JOURNALED_PER_MINUTE_MAX: u32 = 20;

/// The longest text from outside (a reason, a path, a claimed value) a refusal entry keeps,
/// after escaping.
pub const REFUSAL_TEXT_CHARS_MAX: usize = 200;

/// Identities remembered by the per-minute bound before the older minutes are forgotten.
const COUNTED_IDENTITIES_MAX: usize = 4_096;

tokio::task_local! {
    static JOURNALED: Cell<bool>;
}

/// Runs `future` (one request), and says whether a refusal was journaled while it ran.
pub async fn noting_refusals<F: Future>(future: F) -> (F::Output, bool) {
    JOURNALED
        .scope(Cell::new(false), async move {
            let output = future.await;
            (output, JOURNALED.with(Cell::get))
        })
        .await
}

/// The rules of a door refusal whose words can quote what the request held.
const QUOTING_RULES: [&str; 3] = ["bad_request", "invalid", "not_canonical"];

/// A version and a key id read from a body the strict reader refused: what the body claims,
/// never verified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claimed {
    pub version: Option<String>,
    pub key_id: Option<String>,
}

/// A refusal at the server's door.
#[derive(Debug, Clone)]
pub struct DoorRefusal {
    /// The error code the answer carries (`not_found`, `forbidden`, `not_canonical`, ...).
    pub rule: String,
    /// `METHOD /path` as asked.
    pub subject: String,
    pub reason: String,
    pub status: u16,
    /// Journaled where only the operator reads it: a probe of an id that is not the caller's
    /// (answered exactly as an id that never existed).
    pub operator_only: bool,
    pub claimed: Option<Claimed>,
}

/// Per identity: the minute counted and how many refusals were journaled in it.
#[derive(Debug, Default)]
pub(crate) struct RefusalCounts(Mutex<HashMap<String, (i64, u32)>>);

impl RefusalCounts {
    fn count(&self, actor: &str, minute: i64, max: u32) -> Bound {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if counts.len() >= COUNTED_IDENTITIES_MAX {
            counts.retain(|_, (counted, _)| *counted == minute);
        }
        let entry = counts.entry(actor.to_owned()).or_insert((minute, 0));
        if entry.0 != minute {
            *entry = (minute, 0);
        }
        entry.1 = entry.1.saturating_add(1);
        match entry.1 {
            count if count <= max => Bound::Journal,
            count if count == max + 1 => Bound::LastEntry,
            _ => Bound::EventsOnly,
        }
    }
}

/// `text` as one line, every control and bidi character escaped, then cut to
/// [`REFUSAL_TEXT_CHARS_MAX`].
pub fn escaped_and_cut(text: &str) -> String {
    crate::proposals::one_line(text, REFUSAL_TEXT_CHARS_MAX)
}

impl Journal<'_> {
    /// Journals a refusal at the server's door (unless this request's service journaled one
    /// already: see [`noting_refusals`]).
    pub async fn door_refusal(
        self,
        caller: &Identity,
        refusal: &DoorRefusal,
    ) -> Result<(), KeepError> {
        // A person's body that did not read is refused with words that can quote it (a value,
        // a member's name): the operator reads the journal, so they are kept as their hash.
        let reason = if caller.user().is_some() && QUOTING_RULES.contains(&refusal.rule.as_str()) {
            format!(
                "the words are in the answer the person was given (SHA-256 {})",
                crate::keys::sha256_hex(refusal.reason.as_bytes())
            )
        } else {
            escaped_and_cut(&refusal.reason)
        };
        let detail = RefusalDetail::Door(DoorRefused {
            action: DoorAction::Request,
            rule: escaped_and_cut(&refusal.rule),
            reason,
            status: refusal.status,
            claimed: refusal.claimed.as_ref().map(|claimed| ClaimedDetail {
                version: claimed.version.as_deref().map(escaped_and_cut),
                key_id: claimed.key_id.as_deref().map(escaped_and_cut),
                unverified: true,
            }),
        });
        let user = if refusal.operator_only {
            None
        } else {
            caller.user()
        };
        let subject = escaped_and_cut(&refusal.subject);
        self.core
            .journal_refusal(caller, user, &subject, detail)
            .await
    }
}

impl Core {
    /// Journals one refusal entry, within the per-identity bound; past it, the refusal goes to
    /// the person's event stream (the operator's to the log).
    pub(crate) async fn journal_refusal(
        &self,
        caller: &Identity,
        user: Option<&str>,
        subject: &str,
        detail: RefusalDetail,
    ) -> Result<(), KeepError> {
        let _ = JOURNALED.try_with(|journaled| journaled.set(true));
        let minute = self.now_s().div_euclid(60);
        let bound =
            self.refusal_counts
                .count(&caller.actor(), minute, REFUSALS_JOURNALED_PER_MINUTE_MAX);
        let (user, subject, detail) = match bound {
            Bound::Journal => (user, subject, detail),
            // Shown to the person whose refusals they are, and naming none of them.
            Bound::LastEntry => (
                caller.user(),
                "refusals",
                RefusalDetail::Bound(RefusalsBound {
                    action: detail.action().to_owned(),
                    rule: BoundRule::JournalBound,
                    reason: format!(
                        "more than {REFUSALS_JOURNALED_PER_MINUTE_MAX} refusals of this \
                         identity this minute: the rest of the minute are events only"
                    ),
                    session: None,
                }),
            ),
            Bound::EventsOnly => {
                self.refusal_event(caller, subject, &detail);
                return Ok(());
            }
        };
        let mut tx = self.store().keep_begin().await?;
        append(&mut tx, caller, user, subject, detail).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Counts one refusal of `user`'s cells against the person's bound: as many a minute,
    /// over all their sessions, as one session may journal.
    pub(crate) fn cell_refusal_bound(&self, user: &str) -> Bound {
        let max = u32::try_from(crate::cells::REFUSALS_JOURNALED_PER_SESSION_MAX).unwrap_or(64);
        self.refusal_counts
            .count(&format!("cells:{user}"), self.now_s().div_euclid(60), max)
    }

    fn refusal_event(&self, caller: &Identity, subject: &str, detail: &RefusalDetail) {
        match (caller.user(), &self.events) {
            (Some(user), Some(events)) => events.publish(
                user,
                KeepEvent::Refusal {
                    session_id: None,
                    subject: subject.to_owned(),
                    detail: detail.clone(),
                },
            ),
            _ => {
                let detail = serde_json::to_string(detail).unwrap_or_default();
                tracing::info!(actor = %caller.actor(), %subject, %detail, "refused (not journaled: over the bound)")
            }
        }
    }
}
