//! The sessions table: one row per conversation, with its title and its times.
//!
//! Deleting a session deletes its transcript and its turn views with it (`ON DELETE CASCADE`).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::FromRow;

use crate::bounds::{check_chars, check_id, is_unique_violation};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// Longest session title, in characters: a line in a list, not a paragraph.
pub const SESSION_TITLE_CHARS_MAX: usize = 200;

/// Most sessions [`Store::list_sessions`] returns in one call.
pub const SESSION_LIST_ROWS_MAX: u32 = 1_000;

/// One stored session.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Session {
    /// Given by the caller, or 32 random hex digits; see [`crate::ID_CHARS_MAX`] for the alphabet.
    pub id: String,
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Milliseconds since the Unix epoch of the last rename, appended message or new turn.
    pub updated_at_ms: i64,
}

const INSERT_SESSION: &str = "INSERT INTO sessions (id, title, created_at_ms, updated_at_ms) \
     VALUES ($1, $2, $3, $3) \
     RETURNING id, title, created_at_ms, updated_at_ms";

const LIST_SESSIONS: &str = "SELECT id, title, created_at_ms, updated_at_ms FROM sessions \
     ORDER BY updated_at_ms DESC, created_at_ms DESC, id DESC LIMIT $1";

const GET_SESSION: &str =
    "SELECT id, title, created_at_ms, updated_at_ms FROM sessions WHERE id = $1";

const RENAME_SESSION: &str = "UPDATE sessions SET title = $2, updated_at_ms = $3 WHERE id = $1 \
     RETURNING id, title, created_at_ms, updated_at_ms";

const DELETE_SESSION: &str = "DELETE FROM sessions WHERE id = $1";

/// Moves a session's `updated_at_ms` forward; the transcript and turn modules run it first in
/// their transactions, which also tells them whether the session exists.
const TOUCH_SESSION: &str = "UPDATE sessions SET updated_at_ms = $2 WHERE id = $1";

/// Marks the session updated at `now_ms` inside `transaction`, or says it does not exist. Call
/// it first in a transaction that writes under a session: the write takes SQLite's write lock
/// before anything is read, since a read first could leave the transaction on a snapshot
/// another writer has since moved past, and SQLite would then refuse the upgrade without
/// waiting.
pub(crate) async fn touch_session(
    transaction: &mut sqlx::Transaction<'_, sqlx::Any>,
    session_id: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let touched = sqlx::query(TOUCH_SESSION)
        .bind(session_id)
        .bind(now_ms)
        .execute(&mut **transaction)
        .await?;
    if touched.rows_affected() == 0 {
        return Err(session_not_found(session_id));
    }
    Ok(())
}

impl Store {
    /// Creates a session. Without an `id`, the store makes one of 32 random hex digits.
    ///
    /// Fails with [`StoreError::AlreadyExists`] if the id is taken, [`StoreError::InvalidId`] for
    /// an id outside the alphabet, [`StoreError::TooLarge`] for a title past
    /// [`SESSION_TITLE_CHARS_MAX`].
    pub async fn create_session(
        &self,
        id: Option<&str>,
        title: Option<&str>,
    ) -> Result<Session, StoreError> {
        let id = match id {
            Some(id) => {
                check_id("session", id)?;
                id.to_owned()
            }
            None => random_session_id(),
        };
        check_title(title)?;
        sqlx::query_as(INSERT_SESSION)
            .bind(id.as_str())
            .bind(title)
            .bind(now_ms())
            .fetch_one(self.pool())
            .await
            .map_err(|error| {
                if is_unique_violation(&error) {
                    StoreError::AlreadyExists {
                        what: "session",
                        id,
                    }
                } else {
                    StoreError::from(error)
                }
            })
    }

    /// The `limit` most recently updated sessions (at most [`SESSION_LIST_ROWS_MAX`]), newest
    /// first.
    pub async fn list_sessions(&self, limit: u32) -> Result<Vec<Session>, StoreError> {
        let limit = i64::from(limit.min(SESSION_LIST_ROWS_MAX));
        let sessions = sqlx::query_as(LIST_SESSIONS)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        Ok(sessions)
    }

    /// The session `id`, or [`StoreError::NotFound`].
    pub async fn get_session(&self, id: &str) -> Result<Session, StoreError> {
        check_id("session", id)?;
        sqlx::query_as(GET_SESSION)
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| session_not_found(id))
    }

    /// Sets (or, with `None`, clears) the title of session `id` and returns the session as it is
    /// now.
    pub async fn rename_session(
        &self,
        id: &str,
        title: Option<&str>,
    ) -> Result<Session, StoreError> {
        check_id("session", id)?;
        check_title(title)?;
        sqlx::query_as(RENAME_SESSION)
            .bind(id)
            .bind(title)
            .bind(now_ms())
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| session_not_found(id))
    }

    /// Deletes session `id` with its transcript and its turns, in one statement.
    pub async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        check_id("session", id)?;
        let deleted = sqlx::query(DELETE_SESSION)
            .bind(id)
            .execute(self.pool())
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(session_not_found(id));
        }
        Ok(())
    }
}

pub(crate) fn session_not_found(id: &str) -> StoreError {
    StoreError::NotFound {
        what: "session",
        id: id.to_owned(),
    }
}

fn check_title(title: Option<&str>) -> Result<(), StoreError> {
    match title {
        Some(title) => check_chars("session title", title, SESSION_TITLE_CHARS_MAX),
        None => Ok(()),
    }
}

/// 128 bits as 32 hex digits, from the standard library alone.
///
/// `RandomState` keys SipHash from the operating system's random source (once per thread, then
/// incremented per instance), and SipHash is a keyed pseudo-random function: its outputs for
/// distinct inputs under an unknown key look independent and uniform. Hashing a counter that never
/// repeats within the process, under two fresh keys, therefore gives ids that do not collide in
/// practice. They are unique names, not secrets: nothing grants access by knowing an id. This
/// avoids a dependency for 16 bytes.
fn random_session_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let high = RandomState::new().hash_one((count, 0_u8));
    let low = RandomState::new().hash_one((count, 1_u8));
    format!("{high:016x}{low:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_32_hex_digits_and_distinct() {
        let ids: std::collections::HashSet<String> =
            (0..10_000).map(|_| random_session_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(10) {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id.bytes().all(|byte| byte.is_ascii_hexdigit()), "{id}");
            check_id("session", id).expect("a generated id passes the id check");
        }
    }
}
