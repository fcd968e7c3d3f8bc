//! A Keep session's conversation, kept for its person: the messages, replies, files, errors
//! and network uses of each session, bounded per session and per person.

use sqlx::FromRow;

use super::KEEP_LIST_ROWS_MAX;
use crate::{Store, StoreError};

/// Entries kept per session: past it, the oldest go.
pub const CONVERSATION_ENTRIES_MAX: i64 = 500;

/// Conversations kept per person: the newest sessions' (their entries); an older session keeps
/// its row and loses its entries when a new one starts.
pub const CONVERSATIONS_KEPT_MAX: i64 = 100;

/// One entry of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct MessageRow {
    pub id: i64,
    pub session_id: String,
    /// `person`, `agent`, `file`, `error` or `network`.
    pub role: String,
    pub text: String,
    /// The text's length before it was cut to the bound kept.
    pub bytes: i64,
    pub at_ms: i64,
}

/// An entry to add.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage<'a> {
    pub role: &'a str,
    pub text: &'a str,
    pub bytes: i64,
    pub at_ms: i64,
}

impl Store {
    /// Adds `entries` to session `id`'s conversation, in order, then drops its oldest entries
    /// past [`CONVERSATION_ENTRIES_MAX`]. A deleted conversation takes nothing.
    pub async fn keep_conversation_add(
        &self,
        id: &str,
        entries: &[NewMessage<'_>],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        for entry in entries {
            sqlx::query(
                "INSERT INTO keep_messages (session_id, role, text, bytes, at_ms) \
                 SELECT id, $2, $3, $4, $5 FROM keep_sessions \
                 WHERE id = $1 AND deleted_at_ms IS NULL",
            )
            .bind(id)
            .bind(entry.role)
            .bind(entry.text)
            .bind(entry.bytes)
            .bind(entry.at_ms)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "DELETE FROM keep_messages WHERE session_id = $1 AND id <= \
             (SELECT id FROM keep_messages WHERE session_id = $1 \
              ORDER BY id DESC LIMIT 1 OFFSET $2)",
        )
        .bind(id)
        .bind(CONVERSATION_ENTRIES_MAX)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Session `id`'s conversation, oldest first.
    pub async fn keep_conversation(&self, id: &str) -> Result<Vec<MessageRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, session_id, role, text, bytes, at_ms FROM keep_messages \
             WHERE session_id = $1 ORDER BY id LIMIT $2",
        )
        .bind(id)
        .bind(CONVERSATION_ENTRIES_MAX)
        .fetch_all(self.pool())
        .await?)
    }

    /// Gives session `id` its title, unless it has one.
    pub async fn keep_session_entitle(&self, id: &str, title: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE keep_sessions SET title = $2 WHERE id = $1 AND title IS NULL")
            .bind(id)
            .bind(title)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Forgets the conversations of `user`'s sessions past the newest
    /// [`CONVERSATIONS_KEPT_MAX`]; how many entries went.
    pub async fn keep_conversations_trim(&self, user: &str) -> Result<u64, StoreError> {
        let old: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM keep_sessions WHERE user_name = $1 \
             ORDER BY created_at_ms DESC, id LIMIT $2 OFFSET $3",
        )
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .bind(CONVERSATIONS_KEPT_MAX)
        .fetch_all(self.pool())
        .await?;
        let mut gone = 0;
        for (id,) in old {
            gone += sqlx::query("DELETE FROM keep_messages WHERE session_id = $1")
                .bind(id)
                .execute(self.pool())
                .await?
                .rows_affected();
        }
        Ok(gone)
    }
}

impl super::KeepTx {
    /// Deletes session `id`'s conversation (its entries and title): whether there was one to
    /// delete. The row stays, marked deleted, for what names it.
    pub async fn delete_conversation(&mut self, id: &str, at_ms: i64) -> Result<bool, StoreError> {
        sqlx::query("DELETE FROM keep_messages WHERE session_id = $1")
            .bind(id)
            .execute(&mut *self.tx)
            .await?;
        let done = sqlx::query(
            "UPDATE keep_sessions SET deleted_at_ms = $2, title = NULL \
             WHERE id = $1 AND deleted_at_ms IS NULL",
        )
        .bind(id)
        .bind(at_ms)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
