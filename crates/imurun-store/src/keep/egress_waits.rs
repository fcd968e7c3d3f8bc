//! Egress uses waiting for their person's answer, shared by every host on the database.

use sqlx::FromRow;

use super::{KEEP_LIST_ROWS_MAX, KeepTx, already_exists};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// An egress use waiting for its person, as every host sees it.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct EgressWaitRow {
    pub id: String,
    pub user_name: String,
    /// The host whose cell waits.
    pub host: String,
    /// What the person is shown and what a device decision must name, as JSON text.
    pub view: String,
    pub asked_at_ms: i64,
    /// When the cell stops waiting: listed and answered only before.
    pub expires_at_ms: i64,
    /// `waiting`, `approved` or `denied`.
    pub state: String,
    pub answered_at_ms: Option<i64>,
    /// The device-signed decision the answer came with, as JSON.
    pub decision: Option<String>,
    /// The answering host's seal over the answer.
    pub seal: Option<String>,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! egress_wait_columns {
    () => {
        "id, user_name, host, view, asked_at_ms, expires_at_ms, state, answered_at_ms, decision, \
         seal"
    };
}

impl Store {
    /// Records that a cell on `row.host` waits for its person's answer about use `row.id`.
    pub async fn keep_egress_wait_insert(&self, row: &EgressWaitRow) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT INTO keep_egress_waits (",
            egress_wait_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, 'waiting', NULL, NULL, NULL)"
        ))
        .bind(&row.id)
        .bind(&row.user_name)
        .bind(&row.host)
        .bind(&row.view)
        .bind(row.asked_at_ms)
        .bind(row.expires_at_ms)
        .execute(self.pool())
        .await
        .map_err(|error| already_exists(error, "egress wait", row.id.clone()))?;
        Ok(())
    }

    /// Forgets use `id` (its wait ended).
    pub async fn keep_egress_wait_delete(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM keep_egress_waits WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Forgets every use `host` waited on: at its start, its cells of before are gone.
    pub async fn keep_egress_waits_forget_host(&self, host: &str) -> Result<u64, StoreError> {
        Ok(sqlx::query("DELETE FROM keep_egress_waits WHERE host = $1")
            .bind(host)
            .execute(self.pool())
            .await?
            .rows_affected())
    }

    /// `user`'s uses still waiting at `now_ms`, on any host, oldest first.
    pub async fn keep_egress_waits(
        &self,
        user: &str,
        now_ms: i64,
    ) -> Result<Vec<EgressWaitRow>, StoreError> {
        Ok(sqlx::query_as(EGRESS_WAITS_OF_USER)
            .bind(user)
            .bind(KEEP_LIST_ROWS_MAX)
            .bind(now_ms)
            .fetch_all(self.pool())
            .await?)
    }

    /// Use `id`, whatever its state.
    pub async fn keep_egress_wait(&self, id: &str) -> Result<Option<EgressWaitRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            egress_wait_columns!(),
            " FROM keep_egress_waits WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }
}

impl KeepTx {
    /// `user`'s uses still waiting at `now_ms`, on any host, oldest first, read under the
    /// write lock.
    pub async fn egress_waits(
        &mut self,
        user: &str,
        now_ms: i64,
    ) -> Result<Vec<EgressWaitRow>, StoreError> {
        Ok(sqlx::query_as(EGRESS_WAITS_OF_USER)
            .bind(user)
            .bind(KEEP_LIST_ROWS_MAX)
            .bind(now_ms)
            .fetch_all(&mut *self.tx)
            .await?)
    }

    /// `user`'s use `id` if it still waits at `now_ms`, read under the write lock.
    pub async fn egress_wait(
        &mut self,
        id: &str,
        user: &str,
        now_ms: i64,
    ) -> Result<Option<EgressWaitRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            egress_wait_columns!(),
            " FROM keep_egress_waits WHERE id = $1 AND user_name = $2 AND state = 'waiting' \
             AND expires_at_ms > $3"
        ))
        .bind(id)
        .bind(user)
        .bind(now_ms)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Answers `user`'s use `id` once, with the decision it came with and the answering
    /// host's seal: whether it still waited (a second answer, on any host, finds it answered).
    pub async fn answer_egress_wait(
        &mut self,
        id: &str,
        user: &str,
        approve: bool,
        decision: Option<&str>,
        seal: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_egress_waits SET state = $3, answered_at_ms = $4, decision = $5, \
             seal = $6 WHERE id = $1 AND user_name = $2 AND state = 'waiting'",
        )
        .bind(id)
        .bind(user)
        .bind(if approve { "approved" } else { "denied" })
        .bind(now_ms())
        .bind(decision)
        .bind(seal)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

/// `user` ($1)'s uses still waiting at $3, oldest first, at most $2.
const EGRESS_WAITS_OF_USER: &str = concat!(
    "SELECT ",
    egress_wait_columns!(),
    " FROM keep_egress_waits WHERE user_name = $1 AND state = 'waiting' \
     AND expires_at_ms > $3 ORDER BY asked_at_ms, id LIMIT $2"
);
