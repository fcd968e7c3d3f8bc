//! Device keys, the enrolment codes that register them, and the nonces of the decisions they
//! sign.

use sqlx::FromRow;

use super::{KEEP_LIST_ROWS_MAX, KeepTx, already_exists};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A device key's row.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct DeviceRow {
    pub key_id: String,
    pub user_name: String,
    pub public_key: String,
    pub label: String,
    pub created_at_ms: i64,
    pub retired_at_ms: Option<i64>,
}

// The column list, as a macro so that every query stays a `&'static str` (see `mod.rs`).
macro_rules! device_columns {
    () => {
        "key_id, user_name, public_key, label, created_at_ms, retired_at_ms"
    };
}

impl Store {
    /// `user`'s device keys, oldest first, retired ones included.
    pub async fn keep_devices(&self, user: &str) -> Result<Vec<DeviceRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            device_columns!(),
            " FROM keep_devices WHERE user_name = $1 ORDER BY created_at_ms, key_id LIMIT $2"
        );
        Ok(sqlx::query_as(query)
            .bind(user)
            .bind(KEEP_LIST_ROWS_MAX)
            .fetch_all(self.pool())
            .await?)
    }

    /// The device key with this id, whoever's it is.
    pub async fn keep_device(&self, key_id: &str) -> Result<Option<DeviceRow>, StoreError> {
        let query = concat!(
            "SELECT ",
            device_columns!(),
            " FROM keep_devices WHERE key_id = $1"
        );
        Ok(sqlx::query_as(query)
            .bind(key_id)
            .fetch_optional(self.pool())
            .await?)
    }
}

impl KeepTx {
    /// The number of `user`'s live (not retired) device keys.
    pub async fn live_device_count(&mut self, user: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM keep_devices WHERE user_name = $1 AND retired_at_ms IS NULL",
        )
        .bind(user)
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// The device key with this id, read under the write lock.
    pub async fn device(&mut self, key_id: &str) -> Result<Option<DeviceRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            device_columns!(),
            " FROM keep_devices WHERE key_id = $1"
        ))
        .bind(key_id)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Registers a device key; an existing key id is refused.
    pub async fn insert_device(
        &mut self,
        key_id: &str,
        user: &str,
        public_key: &str,
        label: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT INTO keep_devices (",
            device_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, NULL)"
        ))
        .bind(key_id)
        .bind(user)
        .bind(public_key)
        .bind(label)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await
        .map_err(|error| already_exists(error, "device key", key_id.to_owned()))?;
        Ok(())
    }

    /// Retires `user`'s live device key `key_id`; whether there was one.
    pub async fn retire_device(&mut self, key_id: &str, user: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_devices SET retired_at_ms = $3 WHERE key_id = $1 AND user_name = $2 \
             AND retired_at_ms IS NULL",
        )
        .bind(key_id)
        .bind(user)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Voids `user`'s enrolment codes not used yet (as used at `now_ms`); how many.
    pub async fn void_enrol_codes(&mut self, user: &str, now_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_enrol_codes SET used_at_ms = $2 WHERE user_name = $1 \
             AND used_at_ms IS NULL",
        )
        .bind(user)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected())
    }

    /// Stores an enrolment code's hash for `user`.
    pub async fn insert_enrol_code(
        &mut self,
        hash: &str,
        user: &str,
        expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_enrol_codes (hash, user_name, expires_at_ms, used_at_ms) \
             VALUES ($1, $2, $3, NULL)",
        )
        .bind(hash)
        .bind(user)
        .bind(expires_at_ms)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Uses `user`'s unused, unexpired code with this hash; whether there was one.
    /// `now_ms` is the caller's clock, the one the code's expiry was computed with.
    pub async fn use_enrol_code(
        &mut self,
        hash: &str,
        user: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let now = now_ms;
        let done = sqlx::query(
            "UPDATE keep_enrol_codes SET used_at_ms = $3 WHERE hash = $1 AND user_name = $2 \
             AND used_at_ms IS NULL AND expires_at_ms > $3",
        )
        .bind(hash)
        .bind(user)
        .bind(now)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Uses `user`'s decision nonce: `true` the first time, `false` ever after. Nonces whose
    /// decisions have expired (`expires_at` in seconds, before `now_s`) are forgotten first: an
    /// expired decision is refused before its nonce is looked at.
    pub async fn use_nonce(
        &mut self,
        user: &str,
        nonce: &str,
        expires_at: i64,
        now_s: i64,
    ) -> Result<bool, StoreError> {
        sqlx::query("DELETE FROM keep_nonces WHERE expires_at < $1")
            .bind(now_s)
            .execute(&mut *self.tx)
            .await?;
        let done = sqlx::query(
            "INSERT INTO keep_nonces (user_name, nonce, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (user_name, nonce) DO NOTHING",
        )
        .bind(user)
        .bind(nonce)
        .bind(expires_at)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
