//! The turns table: one row per turn, with what the UI shows of it as one JSON document.
//!
//! The view (steps, tool calls, skills) is the caller's `serde_json::Value`, stored as TEXT; the
//! store checks only its size. The store stamps the times: `started_at_ms` at insert,
//! `ended_at_ms` when the turn first leaves [`TurnStatus::Running`].

use std::fmt;

use serde_json::Value;
use sqlx::FromRow;

use crate::bounds::{check_bytes, check_id, is_unique_violation, json_text, parse_json};
use crate::clock::now_ms;
use crate::sessions::{session_not_found, touch_session};
use crate::transcripts::MESSAGE_CONTENT_BYTES_MAX;
use crate::{Store, StoreError};

/// Largest prompt of a turn, in bytes: the same bound as a transcript message, since the prompt
/// becomes one.
pub const TURN_PROMPT_BYTES_MAX: usize = MESSAGE_CONTENT_BYTES_MAX;

/// Largest turn view, in bytes of JSON text. A view holds every step's tool calls and their
/// (already bounded) outputs, so it gets more room than one message.
pub const TURN_VIEW_BYTES_MAX: usize = 4 << 20;

/// Most turns [`Store::list_turns`] returns in one call.
pub const TURN_LIST_ROWS_MAX: u32 = 1_000;

/// Where a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnStatus {
    /// The agent is working on it.
    Running,
    /// The agent gave its final answer.
    Done,
    /// The user stopped it.
    Stopped,
    /// It ended on an error (the model back-end, a limit).
    Error,
    /// The process died while it ran; set by [`Store::mark_interrupted_turns`].
    Interrupted,
}

impl TurnStatus {
    const ALL: [TurnStatus; 5] = [
        TurnStatus::Running,
        TurnStatus::Done,
        TurnStatus::Stopped,
        TurnStatus::Error,
        TurnStatus::Interrupted,
    ];

    /// `running`, `done`, `stopped`, `error` or `interrupted`, as stored and as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Running => "running",
            TurnStatus::Done => "done",
            TurnStatus::Stopped => "stopped",
            TurnStatus::Error => "error",
            TurnStatus::Interrupted => "interrupted",
        }
    }

    /// The inverse of [`TurnStatus::as_str`].
    pub fn parse(text: &str) -> Option<TurnStatus> {
        TurnStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

impl fmt::Display for TurnStatus {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// One stored turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub session_id: String,
    /// Given by the caller; unique within the session.
    pub turn_id: String,
    pub prompt: String,
    pub status: TurnStatus,
    /// Milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// Milliseconds since the Unix epoch; `None` while the turn runs.
    pub ended_at_ms: Option<i64>,
    /// Steps, tool calls and skills, as the caller last wrote them.
    pub view: Value,
}

/// A row as the database returns it, before the status and the view are parsed.
#[derive(FromRow)]
struct TurnRow {
    session_id: String,
    turn_id: String,
    prompt: String,
    status: String,
    started_at_ms: i64,
    ended_at_ms: Option<i64>,
    view: String,
}

impl TryFrom<TurnRow> for Turn {
    type Error = StoreError;

    fn try_from(row: TurnRow) -> Result<Turn, StoreError> {
        let status = TurnStatus::parse(&row.status).ok_or(StoreError::Decode {
            column: "status",
            value: row.status,
        })?;
        Ok(Turn {
            view: parse_json("view", &row.view)?,
            session_id: row.session_id,
            turn_id: row.turn_id,
            prompt: row.prompt,
            status,
            started_at_ms: row.started_at_ms,
            ended_at_ms: row.ended_at_ms,
        })
    }
}

const INSERT_TURN: &str = "INSERT INTO turns \
     (session_id, turn_id, prompt, status, started_at_ms, ended_at_ms, view) \
     VALUES ($1, $2, $3, $4, $5, NULL, $6) \
     RETURNING session_id, turn_id, prompt, status, started_at_ms, ended_at_ms, view";

/// For a turn that is (again) running: no end time.
const UPDATE_RUNNING_TURN: &str = "UPDATE turns SET status = $3, view = $4, ended_at_ms = NULL \
     WHERE session_id = $1 AND turn_id = $2 \
     RETURNING session_id, turn_id, prompt, status, started_at_ms, ended_at_ms, view";

/// For a turn that has ended: the end time is the first one, so a later change of the view does
/// not move it.
const UPDATE_ENDED_TURN: &str = "UPDATE turns \
     SET status = $3, view = $4, ended_at_ms = COALESCE(ended_at_ms, $5) \
     WHERE session_id = $1 AND turn_id = $2 \
     RETURNING session_id, turn_id, prompt, status, started_at_ms, ended_at_ms, view";

const GET_TURN: &str = "SELECT session_id, turn_id, prompt, status, started_at_ms, ended_at_ms, \
     view FROM turns WHERE session_id = $1 AND turn_id = $2";

/// The last `$2` turns, oldest first, as the audit's "recent rows" query does it.
const LIST_TURNS: &str = "SELECT session_id, turn_id, prompt, status, started_at_ms, \
     ended_at_ms, view FROM (SELECT session_id, turn_id, prompt, status, started_at_ms, \
     ended_at_ms, view FROM turns WHERE session_id = $1 \
     ORDER BY started_at_ms DESC, turn_id DESC LIMIT $2) AS recent \
     ORDER BY started_at_ms, turn_id";

const MARK_INTERRUPTED: &str = "UPDATE turns SET status = $1, ended_at_ms = $2 WHERE status = $3";

impl Store {
    /// Records a new turn of `session_id`, [`TurnStatus::Running`], started now, and moves the
    /// session's `updated_at_ms`.
    ///
    /// Fails with [`StoreError::NotFound`] for a missing session, [`StoreError::AlreadyExists`]
    /// for a turn id the session has used, [`StoreError::TooLarge`] past
    /// [`TURN_PROMPT_BYTES_MAX`] or [`TURN_VIEW_BYTES_MAX`].
    pub async fn insert_turn(
        &self,
        session_id: &str,
        turn_id: &str,
        prompt: &str,
        view: &Value,
    ) -> Result<Turn, StoreError> {
        check_id("session", session_id)?;
        check_id("turn", turn_id)?;
        check_bytes("turn prompt", prompt, TURN_PROMPT_BYTES_MAX)?;
        let view = json_text("view", view, TURN_VIEW_BYTES_MAX)?;
        let now_ms = now_ms();
        let mut transaction = self.pool().begin().await?;
        touch_session(&mut transaction, session_id, now_ms).await?;
        let row: TurnRow = sqlx::query_as(INSERT_TURN)
            .bind(session_id)
            .bind(turn_id)
            .bind(prompt)
            .bind(TurnStatus::Running.as_str())
            .bind(now_ms)
            .bind(view)
            .fetch_one(&mut *transaction)
            .await
            .map_err(|error| {
                if is_unique_violation(&error) {
                    StoreError::AlreadyExists {
                        what: "turn",
                        id: turn_name(session_id, turn_id),
                    }
                } else {
                    StoreError::from(error)
                }
            })?;
        transaction.commit().await?;
        Turn::try_from(row)
    }

    /// Sets the status and the view of a turn and returns it as it is now. Leaving
    /// [`TurnStatus::Running`] stamps `ended_at_ms` (once: later updates keep the first end);
    /// going back to running clears it.
    pub async fn update_turn(
        &self,
        session_id: &str,
        turn_id: &str,
        status: TurnStatus,
        view: &Value,
    ) -> Result<Turn, StoreError> {
        check_id("session", session_id)?;
        check_id("turn", turn_id)?;
        let view = json_text("view", view, TURN_VIEW_BYTES_MAX)?;
        let query = if status == TurnStatus::Running {
            sqlx::query_as(UPDATE_RUNNING_TURN)
                .bind(session_id)
                .bind(turn_id)
                .bind(status.as_str())
                .bind(view)
        } else {
            sqlx::query_as(UPDATE_ENDED_TURN)
                .bind(session_id)
                .bind(turn_id)
                .bind(status.as_str())
                .bind(view)
                .bind(now_ms())
        };
        let row: Option<TurnRow> = query.fetch_optional(self.pool()).await?;
        let row = row.ok_or_else(|| turn_not_found(session_id, turn_id))?;
        Turn::try_from(row)
    }

    /// The turn `turn_id` of `session_id`, or [`StoreError::NotFound`].
    pub async fn get_turn(&self, session_id: &str, turn_id: &str) -> Result<Turn, StoreError> {
        check_id("session", session_id)?;
        check_id("turn", turn_id)?;
        let row: Option<TurnRow> = sqlx::query_as(GET_TURN)
            .bind(session_id)
            .bind(turn_id)
            .fetch_optional(self.pool())
            .await?;
        let row = row.ok_or_else(|| turn_not_found(session_id, turn_id))?;
        Turn::try_from(row)
    }

    /// The last `limit` turns of `session_id` (at most [`TURN_LIST_ROWS_MAX`]), oldest first.
    pub async fn list_turns(&self, session_id: &str, limit: u32) -> Result<Vec<Turn>, StoreError> {
        check_id("session", session_id)?;
        let limit = i64::from(limit.min(TURN_LIST_ROWS_MAX));
        let rows: Vec<TurnRow> = sqlx::query_as(LIST_TURNS)
            .bind(session_id)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        if rows.is_empty() && !self.session_exists(session_id).await? {
            return Err(session_not_found(session_id));
        }
        rows.into_iter().map(Turn::try_from).collect()
    }

    /// Marks every turn still [`TurnStatus::Running`] as [`TurnStatus::Interrupted`], ended now,
    /// and returns how many there were.
    ///
    /// Call it once at start-up, before this process starts any turn: a turn found running then
    /// was left so by a process that died. The store cannot tell a dead process's turn from a
    /// live one's, so a second process sharing the database must not call it.
    pub async fn mark_interrupted_turns(&self) -> Result<u64, StoreError> {
        let marked = sqlx::query(MARK_INTERRUPTED)
            .bind(TurnStatus::Interrupted.as_str())
            .bind(now_ms())
            .bind(TurnStatus::Running.as_str())
            .execute(self.pool())
            .await?;
        Ok(marked.rows_affected())
    }
}

/// A turn is named `session/turn` in errors, since its id is unique only within its session.
fn turn_name(session_id: &str, turn_id: &str) -> String {
    format!("{session_id}/{turn_id}")
}

fn turn_not_found(session_id: &str, turn_id: &str) -> StoreError {
    StoreError::NotFound {
        what: "turn",
        id: turn_name(session_id, turn_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_back_as_written() {
        for status in TurnStatus::ALL {
            assert_eq!(TurnStatus::parse(status.as_str()), Some(status));
            assert_eq!(status.to_string(), status.as_str());
        }
        for text in ["", "Running", "cancelled", "done "] {
            assert_eq!(TurnStatus::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn every_write_returns_the_whole_row() {
        const TURN_COLUMNS: &str =
            "session_id, turn_id, prompt, status, started_at_ms, ended_at_ms, view";
        for query in [INSERT_TURN, UPDATE_RUNNING_TURN, UPDATE_ENDED_TURN] {
            assert!(query.ends_with(TURN_COLUMNS), "{query}");
        }
    }
}
