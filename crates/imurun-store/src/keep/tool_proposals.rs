//! Tool proposals: the tools a session's cell proposes, with their bundles, until their person
//! approves or denies them.

use sqlx::FromRow;

use super::{Flag, KEEP_LIST_ROWS_MAX, KeepTx};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A tool proposal's row.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ToolProposalRow {
    pub id: String,
    pub user_name: String,
    pub session_id: String,
    pub agent: String,
    pub agent_version: i64,
    pub signer_key_id: String,
    pub name: String,
    pub version: i64,
    pub description: String,
    pub manifest: String,
    pub bundle_sha256: String,
    pub bundle_size: i64,
    #[sqlx(try_from = "Flag")]
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub state: String,
    pub created_at_ms: i64,
    pub decided_at_ms: Option<i64>,
    pub seal: String,
}

/// A new tool proposal, with its bundle.
#[derive(Debug, Clone)]
pub struct NewToolProposal<'a> {
    pub row: &'a ToolProposalRow,
    pub bundle: &'a [u8],
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! tool_proposal_columns {
    () => {
        "id, user_name, session_id, agent, agent_version, signer_key_id, name, version, \
         description, manifest, bundle_sha256, bundle_size, tainted, taint_source, state, \
         created_at_ms, decided_at_ms, seal"
    };
}

impl Store {
    /// The tool proposal with this id, whoever's it is.
    pub async fn keep_tool_proposal(
        &self,
        id: &str,
    ) -> Result<Option<ToolProposalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            tool_proposal_columns!(),
            " FROM keep_tool_proposals WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// `user`'s tool proposals, newest first.
    pub async fn keep_tool_proposals(
        &self,
        user: &str,
    ) -> Result<Vec<ToolProposalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            tool_proposal_columns!(),
            " FROM keep_tool_proposals WHERE user_name = $1 \
             ORDER BY created_at_ms DESC, id LIMIT $2"
        ))
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }

    /// How many of `user`'s tool proposals wait for them (read outside any write; the write
    /// counts again under its lock).
    pub async fn keep_pending_tool_proposals(&self, user: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM keep_tool_proposals WHERE user_name = $1 AND state = 'pending'",
        )
        .bind(user)
        .fetch_one(self.pool())
        .await?)
    }

    /// The bundle a tool proposal carries.
    pub async fn keep_tool_proposal_bundle(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT bundle FROM keep_tool_proposals WHERE id = $1")
                .bind(id)
                .fetch_optional(self.pool())
                .await?,
        )
    }
}

impl KeepTx {
    /// How many of `user`'s tool proposals wait for them.
    pub async fn pending_tool_proposals(&mut self, user: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM keep_tool_proposals WHERE user_name = $1 AND state = 'pending'",
        )
        .bind(user)
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Stores a pending tool proposal.
    pub async fn insert_tool_proposal(
        &mut self,
        new: &NewToolProposal<'_>,
    ) -> Result<(), StoreError> {
        let row = new.row;
        sqlx::query(
            "INSERT INTO keep_tool_proposals (id, user_name, session_id, agent, agent_version, \
             signer_key_id, name, version, description, manifest, bundle_sha256, bundle_size, \
             bundle, tainted, taint_source, state, created_at_ms, decided_at_ms, seal) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 'pending', \
             $16, NULL, $17)",
        )
        .bind(&row.id)
        .bind(&row.user_name)
        .bind(&row.session_id)
        .bind(&row.agent)
        .bind(row.agent_version)
        .bind(&row.signer_key_id)
        .bind(&row.name)
        .bind(row.version)
        .bind(&row.description)
        .bind(&row.manifest)
        .bind(&row.bundle_sha256)
        .bind(row.bundle_size)
        .bind(new.bundle)
        .bind(i64::from(row.tainted))
        .bind(&row.taint_source)
        .bind(row.created_at_ms)
        .bind(&row.seal)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// `user`'s pending tool proposal `id`, read under the write lock.
    pub async fn pending_tool_proposal(
        &mut self,
        id: &str,
        user: &str,
    ) -> Result<Option<ToolProposalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            tool_proposal_columns!(),
            " FROM keep_tool_proposals WHERE id = $1 AND user_name = $2 AND state = 'pending'"
        ))
        .bind(id)
        .bind(user)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Closes every proposal still pending for `user`, tools (`denied`) and others
    /// (`rejected`): a person revoked, or whose last device was retired, leaves nothing a
    /// device enrolled later could decide. How many of each.
    pub async fn close_pending_proposals(&mut self, user: &str) -> Result<(u64, u64), StoreError> {
        let now = now_ms();
        let mut closed = [0; 2];
        let tables = [
            "UPDATE keep_tool_proposals SET state = 'denied', decided_at_ms = $2 \
             WHERE user_name = $1 AND state = 'pending'",
            "UPDATE keep_proposals SET state = 'rejected', decided_at_ms = $2 \
             WHERE user_name = $1 AND state = 'pending'",
        ];
        for (count, update) in closed.iter_mut().zip(tables) {
            *count = sqlx::query(update)
                .bind(user)
                .bind(now)
                .execute(&mut *self.tx)
                .await?
                .rows_affected();
        }
        Ok((closed[0], closed[1]))
    }

    /// Marks pending tool proposal `id` `approved` or `denied`; whether it was pending.
    pub async fn decide_tool_proposal(
        &mut self,
        id: &str,
        state: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_tool_proposals SET state = $2, decided_at_ms = $3 \
             WHERE id = $1 AND state = 'pending'",
        )
        .bind(id)
        .bind(state)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
