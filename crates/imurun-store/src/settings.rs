//! The settings table: user settings as key and JSON value ("agent.maxSteps" = 12).
//!
//! The store checks only the key's alphabet and the sizes; what a key means, and which values it
//! accepts, is the caller's business.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::FromRow;

use crate::bounds::{check_id, json_text, parse_json};
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// Largest setting value, in bytes of JSON text. Settings are small; a large value is a bug or an
/// attempt to use the table as storage.
pub const SETTING_VALUE_BYTES_MAX: usize = 64 << 10;

/// Most settings the table holds. Keeps [`Store::get_all_settings`] bounded.
pub const SETTINGS_MAX: u64 = 1_024;

/// Most entries one [`Store::set_settings`] call writes.
pub const SETTINGS_WRITE_ENTRIES_MAX: usize = 256;

#[derive(FromRow)]
struct SettingRow {
    key: String,
    value: String,
}

const GET_SETTING: &str = "SELECT key, value FROM settings WHERE key = $1";

/// `LIMIT` guards memory even if rows were added behind the store's back.
const GET_ALL_SETTINGS: &str = "SELECT key, value FROM settings ORDER BY key LIMIT $1";

const UPSERT_SETTING: &str = "INSERT INTO settings (key, value, updated_at_ms) VALUES ($1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms";

const COUNT_SETTINGS: &str = "SELECT COUNT(*) FROM settings";

const DELETE_SETTING: &str = "DELETE FROM settings WHERE key = $1";

impl Store {
    /// The value of setting `key`, or `None` if it was never set (or was deleted).
    pub async fn get_setting(&self, key: &str) -> Result<Option<Value>, StoreError> {
        check_id("setting key", key)?;
        let row: Option<SettingRow> = sqlx::query_as(GET_SETTING)
            .bind(key)
            .fetch_optional(self.pool())
            .await?;
        row.map(|row| parse_json("value", &row.value)).transpose()
    }

    /// Every setting, by key.
    pub async fn get_all_settings(&self) -> Result<BTreeMap<String, Value>, StoreError> {
        let rows: Vec<SettingRow> = sqlx::query_as(GET_ALL_SETTINGS)
            .bind(i64::try_from(SETTINGS_MAX).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await?;
        rows.into_iter()
            .map(|row| Ok((row.key, parse_json("value", &row.value)?)))
            .collect()
    }

    /// Sets `key` to `value`, creating or replacing it.
    pub async fn set_setting(&self, key: &str, value: &Value) -> Result<(), StoreError> {
        self.set_settings([(key, value)]).await
    }

    /// Sets every entry in one transaction: all of them are written, or none. A key given twice
    /// takes its last value.
    ///
    /// Fails with [`StoreError::InvalidId`] for a bad key, [`StoreError::TooLarge`] for a value
    /// past [`SETTING_VALUE_BYTES_MAX`] or more than [`SETTINGS_WRITE_ENTRIES_MAX`] entries, and
    /// [`StoreError::RowsMaxReached`] if the table would hold more than [`SETTINGS_MAX`].
    pub async fn set_settings<'a, K: AsRef<str>>(
        &self,
        entries: impl IntoIterator<Item = (K, &'a Value)>,
    ) -> Result<(), StoreError> {
        let entries = checked_entries(entries)?;
        let now_ms = now_ms();
        let mut transaction = self.pool().begin().await?;
        for (key, value) in &entries {
            sqlx::query(UPSERT_SETTING)
                .bind(key.as_ref())
                .bind(value.as_str())
                .bind(now_ms)
                .execute(&mut *transaction)
                .await?;
        }
        let count: i64 = sqlx::query_scalar(COUNT_SETTINGS)
            .fetch_one(&mut *transaction)
            .await?;
        if u64::try_from(count).unwrap_or(u64::MAX) > SETTINGS_MAX {
            // Dropping the transaction rolls it back.
            return Err(StoreError::RowsMaxReached {
                what: "settings",
                rows_max: SETTINGS_MAX,
            });
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Deletes setting `key`; returns whether it was set.
    pub async fn delete_setting(&self, key: &str) -> Result<bool, StoreError> {
        check_id("setting key", key)?;
        let deleted = sqlx::query(DELETE_SETTING)
            .bind(key)
            .execute(self.pool())
            .await?;
        Ok(deleted.rows_affected() > 0)
    }
}

/// The entries with their values as JSON text, every key and size checked before anything is
/// written. Stops reading at one entry past the bound, so a huge iterator costs nothing.
fn checked_entries<'a, K: AsRef<str>>(
    entries: impl IntoIterator<Item = (K, &'a Value)>,
) -> Result<Vec<(K, String)>, StoreError> {
    let mut checked = Vec::new();
    for (key, value) in entries.into_iter().take(SETTINGS_WRITE_ENTRIES_MAX + 1) {
        if checked.len() == SETTINGS_WRITE_ENTRIES_MAX {
            return Err(StoreError::TooLarge {
                what: "a settings write",
                size: SETTINGS_WRITE_ENTRIES_MAX + 1,
                size_max: SETTINGS_WRITE_ENTRIES_MAX,
                unit: "entries",
            });
        }
        check_id("setting key", key.as_ref())?;
        let value = json_text("setting value", value, SETTING_VALUE_BYTES_MAX)?;
        checked.push((key, value));
    }
    Ok(checked)
}
