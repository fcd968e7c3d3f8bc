//! The messages table: each session's transcript, the prompts delivered and the final answers.
//!
//! The caller decides what is a transcript message; intermediate steps belong in the turn view.
//! An append is durable when it returns: it commits in its own transaction, and the database
//! syncs the WAL at every commit (see `store.rs`).

use std::fmt;

use sqlx::FromRow;

use crate::bounds::{check_bytes, check_id};
use crate::clock::now_ms;
use crate::sessions::{session_not_found, touch_session};
use crate::{Store, StoreError};

/// Largest message content, in bytes of UTF-8: far past any prompt or answer a person reads,
/// small enough that a transcript page stays in memory.
pub const MESSAGE_CONTENT_BYTES_MAX: usize = 1 << 20;

/// Most messages one session's transcript holds; an append past it fails with
/// [`StoreError::RowsMaxReached`]. A chat this long is a runaway loop, not a conversation.
pub const TRANSCRIPT_MESSAGES_MAX: u64 = 100_000;

/// Most messages [`Store::transcript`] returns in one call; page with `after_seq` for more.
pub const TRANSCRIPT_READ_ROWS_MAX: u32 = 1_000;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A prompt the user sent and the agent received.
    User,
    /// The agent's final answer to a prompt.
    Assistant,
}

impl Role {
    /// `user` or `assistant`, as stored and as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    /// The inverse of [`Role::as_str`].
    pub fn parse(text: &str) -> Option<Role> {
        [Role::User, Role::Assistant]
            .into_iter()
            .find(|role| role.as_str() == text)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// One message of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// 1 for the session's first message, then one more for each; orders the transcript.
    pub seq: i64,
    pub role: Role,
    pub content: String,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// A row as the database returns it, before the role is checked.
#[derive(FromRow)]
struct MessageRow {
    seq: i64,
    role: String,
    content: String,
    created_at_ms: i64,
}

impl TryFrom<MessageRow> for Message {
    type Error = StoreError;

    fn try_from(row: MessageRow) -> Result<Message, StoreError> {
        let role = Role::parse(&row.role).ok_or(StoreError::Decode {
            column: "role",
            value: row.role,
        })?;
        Ok(Message {
            seq: row.seq,
            role,
            content: row.content,
            created_at_ms: row.created_at_ms,
        })
    }
}

/// The next number is computed in the insert itself, so no other writer can slip in between a
/// read of the last number and the insert (SQLite takes its write lock before the statement
/// reads; on PostgreSQL a race would fail on the primary key, never duplicate a number).
const APPEND_MESSAGE: &str = "INSERT INTO messages (session_id, seq, role, content, created_at_ms) \
     SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4 FROM messages WHERE session_id = $1 \
     RETURNING seq, role, content, created_at_ms";

const READ_TRANSCRIPT: &str = "SELECT seq, role, content, created_at_ms FROM messages \
     WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";

const SESSION_EXISTS: &str = "SELECT COUNT(*) FROM sessions WHERE id = $1";

impl Store {
    /// Appends a message to the transcript of `session_id` and returns it with its number. When
    /// this returns `Ok`, the message is committed and synced: a crash right after loses nothing.
    /// The session's `updated_at_ms` moves to the message's time.
    ///
    /// Fails with [`StoreError::NotFound`] for a missing session, [`StoreError::TooLarge`] past
    /// [`MESSAGE_CONTENT_BYTES_MAX`], [`StoreError::RowsMaxReached`] past
    /// [`TRANSCRIPT_MESSAGES_MAX`].
    pub async fn append_message(
        &self,
        session_id: &str,
        role: Role,
        content: &str,
    ) -> Result<Message, StoreError> {
        check_id("session", session_id)?;
        check_bytes("message content", content, MESSAGE_CONTENT_BYTES_MAX)?;
        let now_ms = now_ms();
        let mut transaction = self.pool().begin().await?;
        touch_session(&mut transaction, session_id, now_ms).await?;
        let row: MessageRow = sqlx::query_as(APPEND_MESSAGE)
            .bind(session_id)
            .bind(role.as_str())
            .bind(content)
            .bind(now_ms)
            .fetch_one(&mut *transaction)
            .await?;
        if u64::try_from(row.seq).unwrap_or(u64::MAX) > TRANSCRIPT_MESSAGES_MAX {
            // Dropping the transaction rolls it back.
            return Err(StoreError::RowsMaxReached {
                what: "messages in one transcript",
                rows_max: TRANSCRIPT_MESSAGES_MAX,
            });
        }
        transaction.commit().await?;
        Message::try_from(row)
    }

    /// The messages of `session_id` numbered after `after_seq` (0 for the start), oldest first,
    /// at most `limit` of them (at most [`TRANSCRIPT_READ_ROWS_MAX`]).
    pub async fn transcript(
        &self,
        session_id: &str,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Message>, StoreError> {
        check_id("session", session_id)?;
        let limit = i64::from(limit.min(TRANSCRIPT_READ_ROWS_MAX));
        let rows: Vec<MessageRow> = sqlx::query_as(READ_TRANSCRIPT)
            .bind(session_id)
            .bind(after_seq)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        // An empty page is either the end of a transcript or a session that does not exist; the
        // caller must be able to tell the two apart.
        if rows.is_empty() && !self.session_exists(session_id).await? {
            return Err(session_not_found(session_id));
        }
        rows.into_iter().map(Message::try_from).collect()
    }

    pub(crate) async fn session_exists(&self, session_id: &str) -> Result<bool, StoreError> {
        let count: i64 = sqlx::query_scalar(SESSION_EXISTS)
            .bind(session_id)
            .fetch_one(self.pool())
            .await?;
        Ok(count > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_back_as_written() {
        let cases = [
            ("user", Some(Role::User)),
            ("assistant", Some(Role::Assistant)),
            ("system", None),
            ("User", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(Role::parse(text), expected, "role {text:?}");
            if let Some(role) = expected {
                assert_eq!(role.to_string(), text);
            }
        }
    }
}
