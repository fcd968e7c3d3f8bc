//! The vault: each person's sealed entries (sealed and opened by the caller).

use sqlx::FromRow;

use super::{KEEP_LIST_ROWS_MAX, KeepTx};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A vault entry's name and time; the sealed bytes only through [`Store::keep_vault_sealed`].
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct VaultEntryRow {
    pub owner: String,
    pub name: String,
    pub updated_at_ms: i64,
}

impl Store {
    /// The names of `owner`'s vault entries.
    pub async fn keep_vault_entries(&self, owner: &str) -> Result<Vec<VaultEntryRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT owner, name, updated_at_ms FROM keep_vault WHERE owner = $1 ORDER BY name \
             LIMIT $2",
        )
        .bind(owner)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }

    /// The sealed bytes of `owner`'s entry `name`.
    pub async fn keep_vault_sealed(
        &self,
        owner: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT sealed FROM keep_vault WHERE owner = $1 AND name = $2")
                .bind(owner)
                .bind(name)
                .fetch_optional(self.pool())
                .await?,
        )
    }
}

impl KeepTx {
    /// Seals-and-stores are the caller's; this writes `owner`'s entry `name`.
    pub async fn put_vault(
        &mut self,
        owner: &str,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_vault (owner, name, sealed, updated_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (owner, name) DO UPDATE SET sealed = excluded.sealed, \
             updated_at_ms = excluded.updated_at_ms",
        )
        .bind(owner)
        .bind(name)
        .bind(sealed)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Deletes `owner`'s entry `name`; whether there was one.
    pub async fn delete_vault(&mut self, owner: &str, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM keep_vault WHERE owner = $1 AND name = $2")
            .bind(owner)
            .bind(name)
            .execute(&mut *self.tx)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// How many vault entries `owner` has, and whether one is named `name`, read under the
    /// write lock.
    pub async fn vault_count(
        &mut self,
        owner: &str,
        name: &str,
    ) -> Result<(i64, bool), StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM keep_vault WHERE owner = $1")
            .bind(owner)
            .fetch_one(&mut *self.tx)
            .await?;
        let named: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM keep_vault WHERE owner = $1 AND name = $2")
                .bind(owner)
                .bind(name)
                .fetch_one(&mut *self.tx)
                .await?;
        Ok((count, named > 0))
    }
}
