//! The hash-chained journal and its head: reads, snapshot reads, and appends.

use sqlx::{Any, FromRow, Transaction};

use super::{KEEP_JOURNAL_READ_ROWS_MAX, KeepTx};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A journal entry as stored.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct JournalRow {
    pub seq: i64,
    pub at_ms: i64,
    pub actor: String,
    pub user_name: Option<String>,
    pub kind: String,
    pub subject: String,
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// A journal entry to append: the store gives it its sequence number, time and previous hash,
/// then asks `hash` for its own.
#[derive(Debug, Clone)]
pub struct JournalDraft {
    pub actor: String,
    pub user_name: Option<String>,
    pub kind: String,
    pub subject: String,
    pub detail: String,
}

/// Which journal entries a read keeps: each field left `None` keeps every entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalFilter<'a> {
    /// Entries about this user.
    pub user: Option<&'a str>,
    /// Entries of this kind.
    pub kind: Option<&'a str>,
    /// Entries older than this sequence number (the next page of a list read newest first).
    pub before_seq: Option<i64>,
}

/// A read of the journal as one snapshot; see [`Store::keep_journal_snapshot`].
#[derive(Debug)]
pub struct JournalSnapshot {
    tx: Transaction<'static, Any>,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! journal_columns {
    () => {
        "seq, at_ms, actor, user_name, kind, subject, detail, prev_hash, hash"
    };
}

impl Store {
    /// The newest journal entries that `filter` keeps, newest first; at most `limit` (capped
    /// at [`KEEP_JOURNAL_READ_ROWS_MAX`]).
    pub async fn keep_journal_newest(
        &self,
        filter: &JournalFilter<'_>,
        limit: i64,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let limit = limit.clamp(0, KEEP_JOURNAL_READ_ROWS_MAX);
        let query = concat!(
            "SELECT ",
            journal_columns!(),
            " FROM keep_journal WHERE ($1 IS NULL OR user_name = $1) \
             AND ($2 IS NULL OR kind = $2) AND ($3 IS NULL OR seq < $3) \
             ORDER BY seq DESC LIMIT $4"
        );
        Ok(sqlx::query_as(query)
            .bind(filter.user)
            .bind(filter.kind)
            .bind(filter.before_seq)
            .bind(limit)
            .fetch_all(self.pool())
            .await?)
    }

    /// The journal entry `seq`, whoever it is about.
    pub async fn keep_journal_entry(&self, seq: i64) -> Result<Option<JournalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            journal_columns!(),
            " FROM keep_journal WHERE seq = $1"
        ))
        .bind(seq)
        .fetch_optional(self.pool())
        .await?)
    }

    /// A read of the whole journal as one snapshot (a read transaction): its head, then its
    /// entries page by page, all as they were at the first read, whatever is appended meanwhile.
    pub async fn keep_journal_snapshot(&self) -> Result<JournalSnapshot, StoreError> {
        let mut tx = self.pool().begin().await?;
        // SQLite's read transaction sees one snapshot from its first read on. PostgreSQL's
        // default (read committed) takes a new one at every statement; repeatable read keeps
        // the first.
        if self.backend() == crate::Backend::Postgres {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut *tx)
                .await?;
        }
        Ok(JournalSnapshot { tx })
    }

    /// The journal's recorded head: the last sequence number and hash (0 and `""` when empty).
    pub async fn keep_journal_head(&self) -> Result<(i64, String), StoreError> {
        Ok(
            sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
                .fetch_one(self.pool())
                .await?,
        )
    }
}

impl JournalSnapshot {
    /// The recorded head: the last sequence number and hash (0 and `""` when empty). Read it
    /// first: the snapshot starts at the first read.
    pub async fn head(&mut self) -> Result<(i64, String), StoreError> {
        Ok(
            sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
                .fetch_one(&mut *self.tx)
                .await?,
        )
    }

    /// Up to `limit` entries after `after_seq` (by sequence number), oldest first; at most
    /// [`KEEP_JOURNAL_READ_ROWS_MAX`]. Start from `i64::MIN`, so that a row with a sequence
    /// number below 1 (written behind the store's back) is read too.
    pub async fn page(
        &mut self,
        after_seq: i64,
        limit: i64,
    ) -> Result<Vec<JournalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            journal_columns!(),
            " FROM keep_journal WHERE seq > $1 ORDER BY seq LIMIT $2"
        ))
        .bind(after_seq)
        .bind(limit.clamp(1, KEEP_JOURNAL_READ_ROWS_MAX))
        .fetch_all(&mut *self.tx)
        .await?)
    }
}

impl KeepTx {
    /// Appends `draft` to the journal: gives it the next sequence number, the time and the
    /// previous entry's hash, asks `hash` for its own hash, and moves the head.
    pub async fn append_journal<E>(
        &mut self,
        draft: JournalDraft,
        hash: impl FnOnce(&JournalRow) -> Result<String, E>,
    ) -> Result<Result<JournalRow, E>, StoreError> {
        let (head_seq, head_hash): (i64, String) =
            sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
                .fetch_one(&mut *self.tx)
                .await?;
        let mut row = JournalRow {
            seq: head_seq + 1,
            at_ms: now_ms(),
            actor: draft.actor,
            user_name: draft.user_name,
            kind: draft.kind,
            subject: draft.subject,
            detail: draft.detail,
            prev_hash: if head_seq == 0 {
                "0".repeat(64)
            } else {
                head_hash
            },
            hash: String::new(),
        };
        row.hash = match hash(&row) {
            Ok(hash) => hash,
            Err(error) => return Ok(Err(error)),
        };
        sqlx::query(concat!(
            "INSERT INTO keep_journal (",
            journal_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .bind(row.seq)
        .bind(row.at_ms)
        .bind(&row.actor)
        .bind(&row.user_name)
        .bind(&row.kind)
        .bind(&row.subject)
        .bind(&row.detail)
        .bind(&row.prev_hash)
        .bind(&row.hash)
        .execute(&mut *self.tx)
        .await?;
        sqlx::query("UPDATE keep_journal_head SET seq = $1, hash = $2 WHERE one = 1")
            .bind(row.seq)
            .bind(&row.hash)
            .execute(&mut *self.tx)
            .await?;
        Ok(Ok(row))
    }
}
