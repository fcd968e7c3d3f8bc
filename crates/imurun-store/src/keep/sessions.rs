//! Keep sessions: who runs which agent version, whether the session is tainted, and how it
//! ended.

use sqlx::FromRow;

use super::{KEEP_LIST_ROWS_MAX, KeepTx};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A Keep session's row.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct SessionRow {
    pub id: String,
    pub user_name: String,
    pub agent: String,
    pub agent_version: i64,
    pub created_at_ms: i64,
    pub tainted_at_ms: Option<i64>,
    pub taint_source: Option<String>,
    pub ended_at_ms: Option<i64>,
    pub end_reason: Option<String>,
    /// Its agent's name and the first words of its first message, once it had one.
    pub title: Option<String>,
    /// When its person deleted its conversation.
    pub deleted_at_ms: Option<i64>,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! session_columns {
    () => {
        "id, user_name, agent, agent_version, created_at_ms, tainted_at_ms, taint_source, \
         ended_at_ms, end_reason, title, deleted_at_ms"
    };
}

impl Store {
    /// The session with this id, whoever's it is.
    pub async fn keep_session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            session_columns!(),
            " FROM keep_sessions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// `user`'s sessions, newest first, but for the deleted ones.
    pub async fn keep_sessions(&self, user: &str) -> Result<Vec<SessionRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            session_columns!(),
            " FROM keep_sessions WHERE user_name = $1 AND deleted_at_ms IS NULL \
             ORDER BY created_at_ms DESC, id LIMIT $2"
        ))
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }
}

impl KeepTx {
    /// Records a new session, run by the host named `host_id`.
    pub async fn insert_session(
        &mut self,
        (id, user): (&str, &str),
        (agent, agent_version): (&str, i64),
        host_id: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_sessions \
             (id, user_name, agent, agent_version, created_at_ms, host_id) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(user)
        .bind(agent)
        .bind(agent_version)
        .bind(now_ms())
        .bind(host_id)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Marks session `id` tainted by `source`, unless it already is; whether it was not.
    pub async fn taint_session(&mut self, id: &str, source: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_sessions SET tainted_at_ms = $2, taint_source = $3 \
             WHERE id = $1 AND tainted_at_ms IS NULL",
        )
        .bind(id)
        .bind(now_ms())
        .bind(source)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends session `id` with `reason`, unless it has ended; whether it had not.
    pub async fn end_session(&mut self, id: &str, reason: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_sessions SET ended_at_ms = $2, end_reason = $3 \
             WHERE id = $1 AND ended_at_ms IS NULL",
        )
        .bind(id)
        .bind(now_ms())
        .bind(reason)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

impl KeepTx {
    /// Session `id` of `user` as read under the write lock: when it started and when it ended
    /// (`None` for a session of someone else's, or none).
    pub async fn session_times(
        &mut self,
        id: &str,
        user: &str,
    ) -> Result<Option<(i64, Option<i64>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT created_at_ms, ended_at_ms FROM keep_sessions WHERE id = $1 AND user_name = $2",
        )
        .bind(id)
        .bind(user)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// The ids of `user`'s sessions that have not ended, on any host.
    pub async fn sessions_running_of(&mut self, user: &str) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM keep_sessions WHERE user_name = $1 AND ended_at_ms IS NULL \
             ORDER BY created_at_ms, id LIMIT $2",
        )
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The sessions (id, person) that have not ended and that the host named `host_id` ran
    /// (or a host before hosts were named), or every host when `all` (one host on the
    /// database), oldest first: what a host holds no cell for when it starts.
    pub async fn sessions_left_running(
        &mut self,
        host_id: &str,
        all: bool,
    ) -> Result<Vec<(String, String)>, StoreError> {
        if all {
            return Ok(sqlx::query_as(
                "SELECT id, user_name FROM keep_sessions WHERE ended_at_ms IS NULL \
                 ORDER BY created_at_ms, id LIMIT $1",
            )
            .bind(KEEP_LIST_ROWS_MAX)
            .fetch_all(&mut *self.tx)
            .await?);
        }
        Ok(sqlx::query_as(
            "SELECT id, user_name FROM keep_sessions \
             WHERE ended_at_ms IS NULL AND (host_id = $1 OR host_id IS NULL) \
             ORDER BY created_at_ms, id LIMIT $2",
        )
        .bind(host_id)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(&mut *self.tx)
        .await?)
    }
}
