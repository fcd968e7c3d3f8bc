//! Reading and checking the journal: the operator reads all of it, a user the entries about
//! them; one entry by sequence number answers "not found" alike for another user's entry and
//! for one that does not exist.

use super::{Identity, KeepService, entry_from_row};
use crate::KeepError;
use crate::journal::{ChainCheck, ChainReport, Head, JournalEntry};

/// A journal entry as the API shows it: the entry of the chain itself.
pub type JournalView = JournalEntry;

/// Entries `GET /v1/journal` returns at most, newest first.
pub const JOURNAL_LIST_ENTRIES_MAX: i64 = 1_000;

/// Entries read per page while the chain is checked.
const CHECK_PAGE_ENTRIES: i64 = 1_000;

impl KeepService {
    /// The newest entries the caller may read (at most [`JOURNAL_LIST_ENTRIES_MAX`]), newest
    /// first.
    pub async fn journal(&self, caller: &Identity) -> Result<Vec<JournalView>, KeepError> {
        let rows = self
            .store()
            .keep_journal_newest(caller.user(), JOURNAL_LIST_ENTRIES_MAX)
            .await?;
        rows.iter().map(entry_from_row).collect()
    }

    /// One entry the caller may read; another user's answers as one that does not exist.
    pub async fn journal_entry(
        &self,
        caller: &Identity,
        seq: i64,
    ) -> Result<JournalView, KeepError> {
        let row = self
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

    /// Checks the whole chain against its recorded head (operator only), as one snapshot read
    /// in pages: entries appended while it runs are not part of the check.
    pub async fn verify_journal(&self, caller: &Identity) -> Result<ChainReport, KeepError> {
        caller.require_operator()?;
        let mut snapshot = self.store().keep_journal_snapshot().await?;
        let (seq, hash) = snapshot.head().await?;
        let mut check = ChainCheck::new();
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
                let holds = match entry_from_row(row) {
                    Ok(entry) => check.push(&entry),
                    Err(error) => {
                        check.unreadable(row.seq, format!("it cannot be read: {error}"));
                        false
                    }
                };
                if !holds {
                    return Ok(check.finish(None));
                }
            }
        }
        Ok(check.finish(Some(&Head { seq, hash })))
    }
}
