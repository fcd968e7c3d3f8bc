//! Deployed agent versions and their bundles.

use sqlx::FromRow;

use super::{KEEP_LIST_ROWS_MAX, KeepTx, already_exists};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A deployed agent version, without its bundle's bytes.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct AgentRow {
    pub name: String,
    pub version: i64,
    pub owner: String,
    pub bundle_sha256: String,
    pub bundle_size: i64,
    pub bundle_signature: String,
    pub policy: String,
    pub manifest: String,
    pub seal: String,
    pub deployed_at_ms: i64,
}

/// A new agent version to store.
#[derive(Debug, Clone)]
pub struct NewAgent<'a> {
    pub name: &'a str,
    pub version: i64,
    pub owner: &'a str,
    pub bundle_sha256: &'a str,
    pub bundle: &'a [u8],
    pub bundle_signature: &'a str,
    pub policy: &'a str,
    pub manifest: &'a str,
    pub seal: &'a str,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! agent_columns {
    () => {
        "name, version, owner, bundle_sha256, bundle_size, bundle_signature, policy, manifest, \
         seal, deployed_at_ms"
    };
}

impl Store {
    /// The highest version of each agent, by name.
    pub async fn keep_agents(&self) -> Result<Vec<AgentRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            agent_columns!(),
            " FROM keep_agents a WHERE version = \
             (SELECT MAX(version) FROM keep_agents b WHERE b.name = a.name) ORDER BY name LIMIT $1"
        );
        Ok(sqlx::query_as(query)
            .bind(KEEP_LIST_ROWS_MAX)
            .fetch_all(self.pool())
            .await?)
    }

    /// The highest version of agent `name`.
    pub async fn keep_agent(&self, name: &str) -> Result<Option<AgentRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            agent_columns!(),
            " FROM keep_agents WHERE name = $1 ORDER BY version DESC LIMIT 1"
        );
        Ok(sqlx::query_as(query)
            .bind(name)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The bundle of agent `name` at `version`: the component's bytes.
    pub async fn keep_agent_bundle(
        &self,
        name: &str,
        version: i64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT bundle FROM keep_agents WHERE name = $1 AND version = $2")
                .bind(name)
                .bind(version)
                .fetch_optional(self.pool())
                .await?,
        )
    }
}

impl KeepTx {
    /// Stores a new agent version; an existing name and version is refused.
    pub async fn insert_agent(&mut self, agent: &NewAgent<'_>) -> Result<(), StoreError> {
        let size = i64::try_from(agent.bundle.len()).unwrap_or(i64::MAX);
        sqlx::query(concat!(
            "INSERT INTO keep_agents (",
            agent_columns!(),
            ", bundle) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ))
        .bind(agent.name)
        .bind(agent.version)
        .bind(agent.owner)
        .bind(agent.bundle_sha256)
        .bind(size)
        .bind(agent.bundle_signature)
        .bind(agent.policy)
        .bind(agent.manifest)
        .bind(agent.seal)
        .bind(now_ms())
        .bind(agent.bundle)
        .execute(&mut *self.tx)
        .await
        .map_err(|error| {
            already_exists(
                error,
                "agent version",
                format!("{}@{}", agent.name, agent.version),
            )
        })?;
        Ok(())
    }
}
