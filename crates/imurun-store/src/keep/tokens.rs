//! Bearer tokens: their hashes (never the tokens), roles and revocations.

use sqlx::FromRow;

use super::{KEEP_LIST_ROWS_MAX, KeepTx};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A bearer token's row (its hash, never the token).
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct TokenRow {
    pub id: String,
    pub hash: String,
    pub role: String,
    pub user_name: Option<String>,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// A person's tokens, counted ([`Store::keep_token_users`]).
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct TokenUser {
    pub user_name: String,
    /// Tokens that work.
    pub live: i64,
    pub revoked: i64,
    /// When the first was made.
    pub since_ms: i64,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! token_columns {
    () => {
        "id, hash, role, user_name, created_at_ms, revoked_at_ms"
    };
}

impl Store {
    /// The live (not revoked) token with this hash.
    pub async fn keep_token_by_hash(&self, hash: &str) -> Result<Option<TokenRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            token_columns!(),
            " FROM keep_tokens WHERE hash = $1 AND revoked_at_ms IS NULL"
        );
        Ok(sqlx::query_as(query)
            .bind(hash)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Whether the token `id` exists and is not revoked.
    pub async fn keep_token_active(&self, id: &str) -> Result<bool, StoreError> {
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM keep_tokens WHERE id = $1 AND revoked_at_ms IS NULL")
                .bind(id)
                .fetch_optional(self.pool())
                .await?;
        Ok(found.is_some())
    }

    /// Every token's row, newest first.
    pub async fn keep_tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            token_columns!(),
            " FROM keep_tokens ORDER BY created_at_ms DESC, id LIMIT $1"
        );
        Ok(sqlx::query_as(query)
            .bind(KEEP_LIST_ROWS_MAX)
            .fetch_all(self.pool())
            .await?)
    }

    /// Everyone tokens were made for, by name (at most [`KEEP_LIST_ROWS_MAX`]): their tokens
    /// that work, their tokens revoked, and when their first token was made.
    pub async fn keep_token_users(&self) -> Result<Vec<TokenUser>, StoreError> {
        self.token_users(None).await
    }

    /// `user`'s tokens counted, as [`Store::keep_token_users`] counts them; `None` when no
    /// token was ever made for `user`.
    pub async fn keep_token_user(&self, user: &str) -> Result<Option<TokenUser>, StoreError> {
        Ok(self.token_users(Some(user)).await?.pop())
    }

    async fn token_users(&self, user: Option<&str>) -> Result<Vec<TokenUser>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT user_name, \
             SUM(CASE WHEN revoked_at_ms IS NULL THEN 1 ELSE 0 END) AS live, \
             SUM(CASE WHEN revoked_at_ms IS NULL THEN 0 ELSE 1 END) AS revoked, \
             MIN(created_at_ms) AS since_ms \
             FROM keep_tokens WHERE user_name IS NOT NULL AND ($1 IS NULL OR user_name = $1) \
             GROUP BY user_name ORDER BY user_name LIMIT $2",
        )
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }

    /// The ids of `user`'s working tokens, oldest first, at most [`KEEP_LIST_ROWS_MAX`]: a
    /// caller revoking all of them reads again until none is left.
    pub async fn keep_live_token_ids_of(&self, user: &str) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM keep_tokens WHERE user_name = $1 AND revoked_at_ms IS NULL \
             ORDER BY created_at_ms, id LIMIT $2",
        )
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// `user`'s tokens, revoked ones too, newest first (at most [`KEEP_LIST_ROWS_MAX`]).
    pub async fn keep_tokens_of(&self, user: &str) -> Result<Vec<TokenRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            token_columns!(),
            " FROM keep_tokens WHERE user_name = $1 ORDER BY created_at_ms DESC, id LIMIT $2"
        );
        Ok(sqlx::query_as(query)
            .bind(user)
            .bind(KEEP_LIST_ROWS_MAX)
            .fetch_all(self.pool())
            .await?)
    }
}

impl KeepTx {
    /// Whether token `id` is live (not revoked), read under the write lock.
    pub async fn token_active(&mut self, id: &str) -> Result<bool, StoreError> {
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM keep_tokens WHERE id = $1 AND revoked_at_ms IS NULL")
                .bind(id)
                .fetch_optional(&mut *self.tx)
                .await?;
        Ok(found.is_some())
    }

    /// Stores a token's hash.
    pub async fn insert_token(
        &mut self,
        id: &str,
        hash: &str,
        role: &str,
        user_name: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT INTO keep_tokens (",
            token_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, NULL)"
        ))
        .bind(id)
        .bind(hash)
        .bind(role)
        .bind(user_name)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Revokes the live token `id`; returns its row, or `None` when no live token has that id.
    pub async fn revoke_token(&mut self, id: &str) -> Result<Option<TokenRow>, StoreError> {
        let query = concat!(
            "UPDATE keep_tokens SET revoked_at_ms = $2 WHERE id = $1 AND revoked_at_ms IS NULL \
             RETURNING ",
            token_columns!()
        );
        Ok(sqlx::query_as(query)
            .bind(id)
            .bind(now_ms())
            .fetch_optional(&mut *self.tx)
            .await?)
    }
}
