//! The proposals a session's cell makes (memory entries, suggestions, plans, cards) and their
//! person's decisions on them.

use sqlx::FromRow;

use super::{Flag, KEEP_LIST_ROWS_MAX, KeepTx};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A proposal's row: memory entry, suggestion, plan or card.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ProposalRow {
    pub id: String,
    pub user_name: String,
    pub session_id: String,
    pub agent: String,
    pub kind: String,
    pub payload: String,
    #[sqlx(try_from = "Flag")]
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub state: String,
    pub created_at_ms: i64,
    pub decided_at_ms: Option<i64>,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! proposal_columns {
    () => {
        "id, user_name, session_id, agent, kind, payload, tainted, taint_source, state, \
         created_at_ms, decided_at_ms"
    };
}

impl Store {
    /// The proposal with this id, whoever's it is.
    pub async fn keep_proposal(&self, id: &str) -> Result<Option<ProposalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            proposal_columns!(),
            " FROM keep_proposals WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// `user`'s proposals, newest first: all, or of one `kind`.
    pub async fn keep_proposals(
        &self,
        user: &str,
        kind: Option<&str>,
    ) -> Result<Vec<ProposalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            proposal_columns!(),
            " FROM keep_proposals WHERE user_name = $1 AND ($2 IS NULL OR kind = $2) \
             ORDER BY created_at_ms DESC, id LIMIT $3"
        ))
        .bind(user)
        .bind(kind)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }

    /// How many of `user`'s proposals of `kind` wait for them (read outside any write; the
    /// write counts again under its lock).
    pub async fn keep_pending_proposals(&self, user: &str, kind: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM keep_proposals WHERE user_name = $1 AND kind = $2 \
             AND state = 'pending'",
        )
        .bind(user)
        .bind(kind)
        .fetch_one(self.pool())
        .await?)
    }

    /// The memory entries `user` accepted from `agent`, oldest first: each payload, and whether
    /// the session that proposed it was tainted.
    pub async fn keep_memory(
        &self,
        user: &str,
        agent: &str,
    ) -> Result<Vec<(String, bool)>, StoreError> {
        let rows: Vec<(String, Flag)> = sqlx::query_as(
            "SELECT payload, tainted FROM keep_proposals WHERE user_name = $1 AND agent = $2 \
             AND kind = 'memory' AND state = 'accepted' ORDER BY decided_at_ms, id LIMIT $3",
        )
        .bind(user)
        .bind(agent)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(payload, tainted)| (payload, tainted.into()))
            .collect())
    }
}

impl KeepTx {
    /// How many of `user`'s proposals of `kind` wait for them.
    pub async fn pending_proposals(&mut self, user: &str, kind: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM keep_proposals WHERE user_name = $1 AND kind = $2 \
             AND state = 'pending'",
        )
        .bind(user)
        .bind(kind)
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Stores a pending proposal.
    pub async fn insert_proposal(&mut self, row: &ProposalRow) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT INTO keep_proposals (",
            proposal_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, NULL)"
        ))
        .bind(&row.id)
        .bind(&row.user_name)
        .bind(&row.session_id)
        .bind(&row.agent)
        .bind(&row.kind)
        .bind(&row.payload)
        .bind(i64::from(row.tainted))
        .bind(&row.taint_source)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Decides `user`'s pending proposal `id` (`accepted` or `rejected`); the row as it was,
    /// or `None` when there is no such pending proposal of theirs.
    pub async fn decide_proposal(
        &mut self,
        id: &str,
        user: &str,
        state: &str,
    ) -> Result<Option<ProposalRow>, StoreError> {
        let row: Option<ProposalRow> = sqlx::query_as(concat!(
            "SELECT ",
            proposal_columns!(),
            " FROM keep_proposals WHERE id = $1 AND user_name = $2 AND state = 'pending'"
        ))
        .bind(id)
        .bind(user)
        .fetch_optional(&mut *self.tx)
        .await?;
        if row.is_some() {
            sqlx::query("UPDATE keep_proposals SET state = $2, decided_at_ms = $3 WHERE id = $1")
                .bind(id)
                .bind(state)
                .bind(now_ms())
                .execute(&mut *self.tx)
                .await?;
        }
        Ok(row)
    }
}
