//! The journal's hash chain: each entry holds the SHA-256 of the one before it, and its own hash
//! covers every field, so an edited, deleted, inserted or reordered entry breaks the chain at the
//! first place it touched. [`verify_chain`] names that place.
//!
//! What an entry holds is decided by its writer (the host's Keep service): names, versions,
//! hashes and authority diffs; never code, never secrets, never tokens.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::RuleError;
use crate::canonical::canonical_document;
use crate::keys::sha256_hex;

/// The `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One journal entry as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// 1, 2, 3, ... with no gaps.
    pub seq: i64,
    /// When it was written, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Who did it: `operator`, `user:<name>`, `host`.
    pub actor: String,
    /// The user it is about, if any: they may read it.
    pub user: Option<String>,
    /// What happened: `deploy`, `refusal`, `ceiling`, `trust_root`, `token`, `device`, ...
    pub kind: String,
    /// What it happened to: an agent's name and version, a user, a key id.
    pub subject: String,
    /// Names, versions, hashes, diffs, and for a refusal the rule that fired.
    pub detail: Value,
    /// The previous entry's `hash` ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// The SHA-256 of this entry's canonical form without `hash`.
    pub hash: String,
}

impl JournalEntry {
    /// The hash this entry should have, computed from its fields.
    pub fn compute_hash(&self) -> Result<String, RuleError> {
        let body = json!({
            "seq": self.seq,
            "at_ms": self.at_ms,
            "actor": self.actor,
            "user": self.user,
            "kind": self.kind,
            "subject": self.subject,
            "detail": self.detail,
            "prev_hash": self.prev_hash,
        });
        Ok(sha256_hex(&canonical_document(&body)?))
    }
}

/// The result of checking a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainReport {
    /// Entries read.
    pub entries: usize,
    /// The first entry that breaks the chain and why; `None` when the chain holds.
    pub first_bad: Option<BadEntry>,
}

/// Where and why a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadEntry {
    /// The sequence number of the first bad entry (or, for a missing tail, the last one kept).
    pub seq: i64,
    /// What is wrong with it.
    pub reason: String,
}

/// The chain's recorded head (last sequence number and hash), kept apart from the entries so
/// that deleting the newest entries is found too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub seq: i64,
    pub hash: String,
}

/// Checks `entries` (in the order they are stored, by sequence number) as one chain from the
/// first entry, and against `head` when there is one.
pub fn verify_chain(entries: &[JournalEntry], head: Option<&Head>) -> ChainReport {
    let mut check = ChainCheck::new();
    for entry in entries {
        if !check.push(entry) {
            break;
        }
    }
    check.finish(head)
}

/// The chain checked one entry at a time, so that a journal of any length is read in pages
/// without holding it all.
#[derive(Debug, Clone)]
pub struct ChainCheck {
    previous_hash: String,
    last_seq: i64,
    entries: usize,
    first_bad: Option<BadEntry>,
}

impl Default for ChainCheck {
    fn default() -> Self {
        ChainCheck::new()
    }
}

impl ChainCheck {
    /// A check at the start of the chain.
    pub fn new() -> ChainCheck {
        ChainCheck {
            previous_hash: GENESIS_HASH.to_owned(),
            last_seq: 0,
            entries: 0,
            first_bad: None,
        }
    }

    /// Checks the next entry; whether the chain still holds (once broken, the first bad entry
    /// is kept and every later push is `false`).
    pub fn push(&mut self, entry: &JournalEntry) -> bool {
        if self.first_bad.is_some() {
            return false;
        }
        self.entries += 1;
        let want_seq = self.last_seq + 1;
        let bad = if entry.seq != want_seq {
            Some(if entry.seq > want_seq {
                format!(
                    "entry {want_seq} is missing: the entry after {} is {}",
                    self.last_seq, entry.seq
                )
            } else {
                format!(
                    "entry {} appears where entry {want_seq} should be",
                    entry.seq
                )
            })
        } else if entry.prev_hash != self.previous_hash {
            Some(
                "it does not follow the entry before it (entries removed, inserted or reordered)"
                    .to_owned(),
            )
        } else {
            match entry.compute_hash() {
                Ok(hash) if hash == entry.hash => None,
                Ok(_) => Some("its content was changed after it was written".to_owned()),
                Err(error) => Some(format!("it cannot be read: {error}")),
            }
        };
        match bad {
            Some(reason) => {
                self.first_bad = Some(BadEntry {
                    seq: entry.seq,
                    reason,
                });
                false
            }
            None => {
                self.previous_hash = entry.hash.clone();
                self.last_seq = entry.seq;
                true
            }
        }
    }

    /// Marks `seq` as an entry that cannot be read at all.
    pub fn unreadable(&mut self, seq: i64, reason: String) {
        if self.first_bad.is_none() {
            self.entries += 1;
            self.first_bad = Some(BadEntry { seq, reason });
        }
    }

    /// The report, checking the end of the chain against `head` when there is one.
    pub fn finish(self, head: Option<&Head>) -> ChainReport {
        if self.first_bad.is_some() {
            return ChainReport {
                entries: self.entries,
                first_bad: self.first_bad,
            };
        }
        let ends_at_head = head.is_none_or(|head| {
            head.seq == self.last_seq && (self.last_seq == 0 || head.hash == self.previous_hash)
        });
        let first_bad = (!ends_at_head).then(|| BadEntry {
            seq: self.last_seq,
            reason: format!(
                "the journal ends at entry {}, but its recorded head is entry {}",
                self.last_seq,
                head.map_or(0, |head| head.seq)
            ),
        });
        ChainReport {
            entries: self.entries,
            first_bad,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(count: i64) -> Vec<JournalEntry> {
        let mut entries: Vec<JournalEntry> = Vec::new();
        for seq in 1..=count {
            let mut entry = JournalEntry {
                seq,
                at_ms: 1_000 + seq,
                actor: "operator".into(),
                user: (seq % 2 == 0).then(|| "alice".to_owned()),
                kind: "deploy".into(),
                subject: format!("agent-{seq}@1"),
                detail: json!({"version": seq}),
                prev_hash: entries
                    .last()
                    .map_or(GENESIS_HASH.to_owned(), |e| e.hash.clone()),
                hash: String::new(),
            };
            entry.hash = entry.compute_hash().expect("hash");
            entries.push(entry);
        }
        entries
    }

    fn first_bad(entries: &[JournalEntry], head: Option<&Head>) -> Option<i64> {
        verify_chain(entries, head).first_bad.map(|bad| bad.seq)
    }

    #[test]
    fn an_untouched_chain_holds() {
        let entries = chain(5);
        let head = Head {
            seq: 5,
            hash: entries[4].hash.clone(),
        };
        assert_eq!(first_bad(&entries, Some(&head)), None);
        assert_eq!(
            first_bad(
                &[],
                Some(&Head {
                    seq: 0,
                    hash: String::new()
                })
            ),
            None
        );
    }

    #[test]
    fn edits_deletions_insertions_and_reorders_are_found_where_they_are() {
        let entries = chain(6);
        let head = Head {
            seq: 6,
            hash: entries[5].hash.clone(),
        };

        let mut edited = entries.clone();
        edited[2].detail = json!({"version": 99});
        assert_eq!(first_bad(&edited, Some(&head)), Some(3));

        let mut rehashed = entries.clone();
        rehashed[2].subject = "other@1".into();
        rehashed[2].hash = rehashed[2].compute_hash().expect("hash");
        assert_eq!(first_bad(&rehashed, Some(&head)), Some(4));

        let mut deleted = entries.clone();
        deleted.remove(3);
        assert_eq!(first_bad(&deleted, Some(&head)), Some(5));

        let mut renumbered = entries.clone();
        renumbered.remove(3);
        for entry in renumbered.iter_mut().skip(3) {
            entry.seq -= 1;
        }
        assert_eq!(first_bad(&renumbered, Some(&head)), Some(4));

        let mut inserted = entries.clone();
        let mut extra = entries[1].clone();
        extra.seq = 3;
        inserted.insert(2, extra);
        for entry in inserted.iter_mut().skip(3) {
            entry.seq += 1;
        }
        assert_eq!(first_bad(&inserted, Some(&head)), Some(3));

        let mut reordered = entries.clone();
        reordered.swap(1, 2);
        reordered[1].seq = 2;
        reordered[2].seq = 3;
        assert_eq!(first_bad(&reordered, Some(&head)), Some(2));

        let truncated = entries[..4].to_vec();
        assert_eq!(first_bad(&truncated, None), None);
        assert_eq!(first_bad(&truncated, Some(&head)), Some(4));
    }
}
