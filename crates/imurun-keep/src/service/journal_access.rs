//! Reading and checking the journal: the operator reads all of it, a user the entries about
//! them; one entry by sequence number answers "not found" alike for another user's entry and
//! for one that does not exist.

use serde::Serialize;
use serde_json::Value;

use super::{Identity, KeepService, entry_from_row};
use crate::KeepError;
use crate::journal::{ChainReport, Head, JournalEntry, verify_chain};

/// A journal entry as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalView {
    pub seq: i64,
    pub at_ms: i64,
    pub actor: String,
    pub user: Option<String>,
    pub kind: String,
    pub subject: String,
    pub detail: Value,
    pub prev_hash: String,
    pub hash: String,
}

impl From<JournalEntry> for JournalView {
    fn from(entry: JournalEntry) -> Self {
        JournalView {
            seq: entry.seq,
            at_ms: entry.at_ms,
            actor: entry.actor,
            user: entry.user,
            kind: entry.kind,
            subject: entry.subject,
            detail: entry.detail,
            prev_hash: entry.prev_hash,
            hash: entry.hash,
        }
    }
}

impl KeepService {
    /// The entries the caller may read, oldest first.
    pub async fn journal(&self, caller: &Identity) -> Result<Vec<JournalView>, KeepError> {
        let rows = self.store().keep_journal(caller.user()).await?;
        rows.iter()
            .map(|row| entry_from_row(row).map(JournalView::from))
            .collect()
    }

    /// One entry the caller may read.
    pub async fn journal_entry(
        &self,
        caller: &Identity,
        seq: i64,
    ) -> Result<JournalView, KeepError> {
        self.journal(caller)
            .await?
            .into_iter()
            .find(|entry| entry.seq == seq)
            .ok_or(KeepError::NotFound("journal entry"))
    }

    /// Checks the whole chain against its recorded head (operator only).
    pub async fn verify_journal(&self, caller: &Identity) -> Result<ChainReport, KeepError> {
        caller.require_operator()?;
        let rows = self.store().keep_journal(None).await?;
        let (seq, hash) = self.store().keep_journal_head().await?;
        let mut entries = Vec::with_capacity(rows.len());
        for row in &rows {
            match entry_from_row(row) {
                Ok(entry) => entries.push(entry),
                Err(error) => {
                    return Ok(ChainReport {
                        entries: rows.len(),
                        first_bad: Some(crate::journal::BadEntry {
                            seq: row.seq,
                            reason: format!("it cannot be read: {error}"),
                        }),
                    });
                }
            }
        }
        Ok(verify_chain(&entries, Some(&Head { seq, hash })))
    }
}
