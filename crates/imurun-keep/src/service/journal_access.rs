//! Reading and checking the journal: the operator reads all of it, a user the entries about
//! them; one entry by sequence number answers "not found" alike for another user's entry and
//! for one that does not exist. Anyone may check the whole chain; a user learns no more of
//! another user's entries from the check than that one breaks it.

use serde::Serialize;

use super::{Identity, Journal, entry_from_row};
use crate::KeepError;
use crate::journal::{ChainCheck, ChainReport, Head, JournalEntry};
use crate::journal_detail::JOURNAL_KINDS;
use imurun_store::JournalFilter;

/// A journal entry as the API shows it: the entry of the chain itself.
pub type JournalView = JournalEntry;

/// Which entries a list keeps (`GET /v1/journal?user=&kind=&before=`): each field left
/// `None` keeps every entry the caller may read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalQuery {
    /// Entries about this user (the operator's filter; a person's own name changes nothing).
    pub user: Option<String>,
    /// Entries of this kind (one of [`JOURNAL_KINDS`]).
    pub kind: Option<String>,
    /// Entries older than this sequence number: the next page.
    pub before_seq: Option<i64>,
}

/// Entries `GET /v1/journal` returns at most, newest first.
pub const JOURNAL_LIST_ENTRIES_MAX: i64 = 1_000;

/// Why the chain breaks, as a user is told when the entry that breaks it is not about them:
/// another user's entry's number and reason are that user's business.
pub const BREAK_NOT_ABOUT_YOU: &str = "an entry that is not about you breaks the chain";

/// The journal's check as the caller may see it. The check is always the whole chain's; the
/// operator sees all of it, a user the number of entries about them it read and where the
/// chain breaks only when the entry that breaks it is about them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalCheckView {
    /// Entries the check read: all of them for the operator, those about them for a user.
    pub entries: usize,
    /// The first entry that breaks the chain; `None` when the whole chain holds.
    pub first_bad: Option<BadEntryView>,
}

/// Where and why the chain breaks, as the caller may see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadEntryView {
    /// The first bad entry's sequence number; `None` for a user when it is not about them.
    pub seq: Option<i64>,
    /// What is wrong with it, or [`BREAK_NOT_ABOUT_YOU`].
    pub reason: String,
}

/// Entries read per page while the chain is checked.
const CHECK_PAGE_ENTRIES: i64 = 1_000;

/// For how many seconds (of the host's clock) a person's check answers again for a journal
/// whose head did not move: any token may ask, and each check reads the whole journal.
pub const USER_CHECK_REUSE_S: i64 = 2;

/// People's checks at most remembered; past it they are forgotten together.
const USER_CHECKS_MAX: usize = 1_024;

/// People's last checks, by name: the head they were made at, when (seconds), and the answer.
/// The lock is held while a person's check runs, so they run one at a time.
pub(crate) type UserChecks =
    tokio::sync::Mutex<std::collections::HashMap<String, (Head, i64, JournalCheckView)>>;

impl Journal<'_> {
    /// The newest entries the caller may read (at most [`JOURNAL_LIST_ENTRIES_MAX`]), newest
    /// first.
    pub async fn list(self, caller: &Identity) -> Result<Vec<JournalView>, KeepError> {
        self.find(caller, &JournalQuery::default()).await
    }

    /// The newest entries the caller may read that `query` keeps (at most
    /// [`JOURNAL_LIST_ENTRIES_MAX`]), newest first. A person who names another user gets no
    /// entry, as for a user with none; a kind that no entry has is refused.
    pub async fn find(
        self,
        caller: &Identity,
        query: &JournalQuery,
    ) -> Result<Vec<JournalView>, KeepError> {
        if let Some(kind) = query.kind.as_deref()
            && !JOURNAL_KINDS.contains(&kind)
        {
            return Err(KeepError::invalid(
                "kind",
                format!(
                    "no journal entry is of kind {kind:?}; the kinds are {}",
                    JOURNAL_KINDS.join(", ")
                ),
            ));
        }
        let user = match (caller.user(), query.user.as_deref()) {
            (Some(own), Some(named)) if own != named => return Ok(Vec::new()),
            (Some(own), _) => Some(own),
            (None, named) => named,
        };
        let filter = JournalFilter {
            user,
            kind: query.kind.as_deref(),
            before_seq: query.before_seq,
        };
        let rows = self
            .core
            .store()
            .keep_journal_newest(&filter, JOURNAL_LIST_ENTRIES_MAX)
            .await?;
        rows.iter().map(entry_from_row).collect()
    }

    /// One entry the caller may read; another user's answers as one that does not exist.
    pub async fn entry(self, caller: &Identity, seq: i64) -> Result<JournalView, KeepError> {
        let row = self
            .core
            .store()
            .keep_journal_entry(seq)
            .await?
            .filter(|row| match caller.user() {
                None => true,
                Some(user) => row.user_name.as_deref() == Some(user),
            })
            .ok_or(KeepError::NotFound("journal entry"))?;
        entry_from_row(&row)
    }

    /// Checks the whole chain against its recorded head, as one snapshot read in pages:
    /// entries appended while it runs are not part of the check. Anyone may ask; the operator
    /// sees the whole result, a user the same check told through what they may read (see
    /// [`JournalCheckView`]).
    pub async fn verify(self, caller: &Identity) -> Result<JournalCheckView, KeepError> {
        let Some(user) = caller.user() else {
            return self.check_view(caller).await;
        };
        // Any token may ask, and a check reads the whole journal: people's checks run one at a
        // time, and the same person asking again within [`USER_CHECK_REUSE_S`], the head
        // unmoved, gets the last answer rather than another read of everything.
        let mut checks = self.core.user_checks.lock().await;
        let (seq, hash) = self
            .core
            .store()
            .keep_journal_snapshot()
            .await?
            .head()
            .await?;
        let head = Head { seq, hash };
        let now = self.core.now_s();
        if let Some((at, when, view)) = checks.get(user)
            && *at == head
            && now.saturating_sub(*when) < USER_CHECK_REUSE_S
        {
            return Ok(view.clone());
        }
        let view = self.check_view(caller).await?;
        if checks.len() >= USER_CHECKS_MAX {
            checks.clear();
        }
        checks.insert(user.to_owned(), (head, now, view.clone()));
        Ok(view)
    }

    /// The whole chain's check, as `caller` may see it.
    async fn check_view(self, caller: &Identity) -> Result<JournalCheckView, KeepError> {
        let checked = self.check_chain(caller.user()).await?;
        let (entries, bad_entry_shown) = match caller.user() {
            None => (checked.report.entries, true),
            Some(_) => (checked.entries_about_user, checked.first_bad_about_user),
        };
        let first_bad = checked.report.first_bad.map(|bad| {
            if bad_entry_shown {
                BadEntryView {
                    seq: Some(bad.seq),
                    reason: bad.reason,
                }
            } else {
                BadEntryView {
                    seq: None,
                    reason: BREAK_NOT_ABOUT_YOU.to_owned(),
                }
            }
        });
        Ok(JournalCheckView { entries, first_bad })
    }

    /// The whole chain's check, counting on the way the entries about `user` (when one is
    /// named) and noting whether the entry that breaks the chain is about them.
    async fn check_chain(self, user: Option<&str>) -> Result<CheckedChain, KeepError> {
        let mut snapshot = self.core.store().keep_journal_snapshot().await?;
        let (seq, hash) = snapshot.head().await?;
        let mut check = ChainCheck::new();
        let mut entries_about_user = 0;
        // From the lowest possible number: a row below 1, written behind the store's back, is
        // read and breaks the chain rather than being skipped.
        let mut after = i64::MIN;
        loop {
            let page = snapshot.page(after, CHECK_PAGE_ENTRIES).await?;
            let Some(last) = page.last() else {
                break;
            };
            after = last.seq;
            for row in &page {
                // The row's own column, not the parsed entry's: an entry that cannot be read
                // still says whom it is about.
                let about_user = user.is_some() && row.user_name.as_deref() == user;
                if about_user {
                    entries_about_user += 1;
                }
                let holds = match entry_from_row(row) {
                    Ok(entry) => check.push(&entry),
                    Err(error) => {
                        check.unreadable(row.seq, format!("it cannot be read: {error}"));
                        false
                    }
                };
                if !holds {
                    return Ok(CheckedChain {
                        report: check.finish(None),
                        entries_about_user,
                        first_bad_about_user: about_user,
                    });
                }
            }
        }
        // Every row holds; a break now is a missing tail, which is about no row anyone can
        // still read, and its reason names the journal's length: a user is not told either.
        Ok(CheckedChain {
            report: check.finish(Some(&Head { seq, hash })),
            entries_about_user,
            first_bad_about_user: false,
        })
    }
}

/// The whole chain's check and what a user's answer is made of.
struct CheckedChain {
    report: ChainReport,
    /// Entries the check read that are about the user it was asked for (0 for none).
    entries_about_user: usize,
    /// Whether the first bad entry is a row about that user.
    first_bad_about_user: bool,
}
