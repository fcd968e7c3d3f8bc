//! Deployed tool versions: their bundles, taint and its clearing, and revocation.

use sqlx::FromRow;

use super::{Flag, KEEP_LIST_ROWS_MAX, KeepTx, already_exists};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A deployed tool version's row (without its bundle).
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ToolRow {
    pub user_name: String,
    pub name: String,
    pub version: i64,
    pub proposal_id: String,
    pub bundle_sha256: String,
    pub manifest: String,
    pub decision: String,
    #[sqlx(try_from = "Flag")]
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub taint_cleared: Option<String>,
    pub seal: String,
    pub deployed_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// A tool version to deploy.
#[derive(Debug, Clone)]
pub struct NewTool<'a> {
    pub user_name: &'a str,
    pub name: &'a str,
    pub version: i64,
    pub proposal_id: &'a str,
    pub bundle_sha256: &'a str,
    pub bundle: &'a [u8],
    pub manifest: &'a str,
    pub decision: &'a str,
    pub tainted: bool,
    pub taint_source: Option<&'a str>,
    pub seal: &'a str,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! tool_columns {
    () => {
        "user_name, name, version, proposal_id, bundle_sha256, manifest, decision, tainted, \
         taint_source, taint_cleared, seal, deployed_at_ms, revoked_at_ms"
    };
}

impl Store {
    /// The names a new tool of `user`'s is compared with: every agent's, and those of `user`'s
    /// own tools and pending tool proposals.
    pub async fn keep_names_in_use(
        &self,
        user: &str,
    ) -> Result<(Vec<String>, Vec<String>), StoreError> {
        let agents =
            sqlx::query_scalar("SELECT DISTINCT name FROM keep_agents ORDER BY name LIMIT $1")
                .bind(KEEP_LIST_ROWS_MAX)
                .fetch_all(self.pool())
                .await?;
        let own = sqlx::query_scalar(
            "SELECT name FROM keep_tools WHERE user_name = $1 \
             UNION SELECT name FROM keep_tool_proposals WHERE user_name = $1 AND state = 'pending' \
             ORDER BY name LIMIT $2",
        )
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?;
        Ok((agents, own))
    }

    /// `user`'s tool `name` in force: its highest version (revoked or not: a revoked one is in
    /// force for nothing).
    pub async fn keep_tool(&self, user: &str, name: &str) -> Result<Option<ToolRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            tool_columns!(),
            " FROM keep_tools WHERE user_name = $1 AND name = $2 ORDER BY version DESC LIMIT 1"
        ))
        .bind(user)
        .bind(name)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Each of `user`'s tools at its highest version, by name.
    pub async fn keep_tools(&self, user: &str) -> Result<Vec<ToolRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            tool_columns!(),
            " FROM keep_tools AS t WHERE user_name = $1 AND version = \
             (SELECT MAX(version) FROM keep_tools WHERE user_name = t.user_name AND name = t.name) \
             ORDER BY name LIMIT $2"
        ))
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }

    /// A deployed tool version's bundle.
    pub async fn keep_tool_bundle(
        &self,
        user: &str,
        name: &str,
        version: i64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT bundle FROM keep_tools WHERE user_name = $1 AND name = $2 AND version = $3",
        )
        .bind(user)
        .bind(name)
        .bind(version)
        .fetch_optional(self.pool())
        .await?)
    }
}

impl KeepTx {
    /// The bundle SHA-256 of `user`'s tool `name` at `version`, if it was deployed.
    pub async fn tool_version_sha256(
        &mut self,
        user: &str,
        name: &str,
        version: i64,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT bundle_sha256 FROM keep_tools WHERE user_name = $1 AND name = $2 \
             AND version = $3",
        )
        .bind(user)
        .bind(name)
        .bind(version)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// `user`'s tool `name` in force, read under the write lock.
    pub async fn tool(&mut self, user: &str, name: &str) -> Result<Option<ToolRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            tool_columns!(),
            " FROM keep_tools WHERE user_name = $1 AND name = $2 ORDER BY version DESC LIMIT 1"
        ))
        .bind(user)
        .bind(name)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Deploys a tool version.
    pub async fn insert_tool(&mut self, tool: &NewTool<'_>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_tools (user_name, name, version, proposal_id, bundle_sha256, bundle, \
             manifest, decision, tainted, taint_source, taint_cleared, seal, deployed_at_ms, \
             revoked_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11, $12, NULL)",
        )
        .bind(tool.user_name)
        .bind(tool.name)
        .bind(tool.version)
        .bind(tool.proposal_id)
        .bind(tool.bundle_sha256)
        .bind(tool.bundle)
        .bind(tool.manifest)
        .bind(tool.decision)
        .bind(i64::from(tool.tainted))
        .bind(tool.taint_source)
        .bind(tool.seal)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await
        .map_err(|error| {
            already_exists(
                error,
                "tool version",
                format!("{}@{}", tool.name, tool.version),
            )
        })?;
        Ok(())
    }

    /// Records the person's clear-taint decision on a tool version, with its new seal.
    pub async fn clear_tool_taint(
        &mut self,
        user: &str,
        name: &str,
        version: i64,
        decision: &str,
        seal: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_tools SET taint_cleared = $4, seal = $5 WHERE user_name = $1 \
             AND name = $2 AND version = $3 AND tainted = 1 AND taint_cleared IS NULL \
             AND revoked_at_ms IS NULL",
        )
        .bind(user)
        .bind(name)
        .bind(version)
        .bind(decision)
        .bind(seal)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Revokes every version of `user`'s tool `name`; how many were in force.
    pub async fn revoke_tool(&mut self, user: &str, name: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_tools SET revoked_at_ms = $3 WHERE user_name = $1 AND name = $2 \
             AND revoked_at_ms IS NULL",
        )
        .bind(user)
        .bind(name)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected())
    }
}
