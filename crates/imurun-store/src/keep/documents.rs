//! Signed documents in force, and the high-water mark of every kind and subject's versions.

use sqlx::FromRow;

use super::KeepTx;
use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A signed document in force.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct DocumentRow {
    pub kind: String,
    pub subject: String,
    pub version: i64,
    pub envelope: String,
    pub seal: String,
    pub updated_at_ms: i64,
}

impl Store {
    /// The highest version accepted for `kind` and `subject` (0 when none was).
    pub async fn keep_high_water(&self, kind: &str, subject: &str) -> Result<i64, StoreError> {
        let version: Option<i64> = sqlx::query_scalar(
            "SELECT version FROM keep_versions WHERE kind = $1 AND subject = $2",
        )
        .bind(kind)
        .bind(subject)
        .fetch_optional(self.pool())
        .await?;
        Ok(version.unwrap_or(0))
    }

    /// The signed document in force for `kind` and `subject`.
    pub async fn keep_document(
        &self,
        kind: &str,
        subject: &str,
    ) -> Result<Option<DocumentRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT kind, subject, version, envelope, seal, updated_at_ms FROM keep_documents \
             WHERE kind = $1 AND subject = $2",
        )
        .bind(kind)
        .bind(subject)
        .fetch_optional(self.pool())
        .await?)
    }
}

impl KeepTx {
    /// The highest version accepted for `kind` and `subject` (0 when none was), read under the
    /// write lock.
    pub async fn high_water(&mut self, kind: &str, subject: &str) -> Result<i64, StoreError> {
        let version: Option<i64> = sqlx::query_scalar(
            "SELECT version FROM keep_versions WHERE kind = $1 AND subject = $2",
        )
        .bind(kind)
        .bind(subject)
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(version.unwrap_or(0))
    }

    /// Raises the high-water mark of `kind` and `subject` to `version` (never lowers it).
    pub async fn raise_high_water(
        &mut self,
        kind: &str,
        subject: &str,
        version: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_versions (kind, subject, version) VALUES ($1, $2, $3) \
             ON CONFLICT (kind, subject) DO UPDATE SET version = \
             CASE WHEN excluded.version > keep_versions.version THEN excluded.version \
             ELSE keep_versions.version END",
        )
        .bind(kind)
        .bind(subject)
        .bind(version)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Puts a signed document in force for `kind` and `subject`.
    pub async fn put_document(
        &mut self,
        kind: &str,
        subject: &str,
        version: i64,
        envelope: &str,
        seal: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_documents (kind, subject, version, envelope, seal, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kind, subject) DO UPDATE SET \
             version = excluded.version, envelope = excluded.envelope, seal = excluded.seal, \
             updated_at_ms = excluded.updated_at_ms",
        )
        .bind(kind)
        .bind(subject)
        .bind(version)
        .bind(envelope)
        .bind(seal)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The signed document in force for `kind` and `subject`, read under the write lock.
    pub async fn document(
        &mut self,
        kind: &str,
        subject: &str,
    ) -> Result<Option<DocumentRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT kind, subject, version, envelope, seal, updated_at_ms FROM keep_documents \
             WHERE kind = $1 AND subject = $2",
        )
        .bind(kind)
        .bind(subject)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// The version of the signed document in force for `kind` and `subject` (0 when none),
    /// read under the write lock.
    pub async fn document_version(&mut self, kind: &str, subject: &str) -> Result<i64, StoreError> {
        let version: Option<i64> = sqlx::query_scalar(
            "SELECT version FROM keep_documents WHERE kind = $1 AND subject = $2",
        )
        .bind(kind)
        .bind(subject)
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(version.unwrap_or(0))
    }
}
