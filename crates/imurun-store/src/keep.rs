//! Keep mode's tables: tokens, signed documents and their high-water marks, agents, the vault,
//! devices, enrolment codes, decision nonces, the journal, and sessions with their proposals.
//!
//! The store keeps what it is given; the rules (signatures, versions, ceilings, what a journal
//! entry may hold, how its hash is made) are `imurun-keep`'s. Every write goes through a
//! [`KeepTx`], which locks the journal's head first: Keep's writes are operator- and
//! person-paced, so serialising them costs nothing, and it makes "check the version, write the
//! row, append to the journal" one atomic step that two writers can never interleave.

use sqlx::{Any, FromRow, Transaction};

use crate::clock::now_ms;
use crate::{Store, StoreError};

/// A yes-or-no column, stored as the integer 0 or 1 on both engines (SQLite has no boolean
/// type, and the `Any` driver reads SQLite's integers as integers).
#[derive(Debug, Clone, Copy, sqlx::Type)]
#[sqlx(transparent)]
struct Flag(i64);

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0 != 0
    }
}

/// Rows a journal read returns at most.
pub const KEEP_JOURNAL_READ_ROWS_MAX: i64 = 10_000;

/// Rows any other Keep list returns at most.
pub const KEEP_LIST_ROWS_MAX: i64 = 1_000;

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

/// A vault entry's name and time; the sealed bytes only through [`Store::keep_vault_sealed`].
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct VaultEntryRow {
    pub owner: String,
    pub name: String,
    pub updated_at_ms: i64,
}

/// A journal entry as stored.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct JournalRow {
    pub seq: i64,
    pub at_ms: i64,
    pub actor: String,
    pub user_name: Option<String>,
    pub kind: String,
    pub subject: String,
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// A journal entry to append: the store gives it its sequence number, time and previous hash,
/// then asks `hash` for its own.
#[derive(Debug, Clone)]
pub struct JournalDraft {
    pub actor: String,
    pub user_name: Option<String>,
    pub kind: String,
    pub subject: String,
    pub detail: String,
}

// The column lists, as macros so that every query stays a `&'static str` (sqlx refuses SQL built
// at run time, which is how injections start).
macro_rules! token_columns {
    () => {
        "id, hash, role, user_name, created_at_ms, revoked_at_ms"
    };
}
macro_rules! agent_columns {
    () => {
        "name, version, owner, bundle_sha256, bundle_size, bundle_signature, policy, manifest, \
         seal, deployed_at_ms"
    };
}
macro_rules! device_columns {
    () => {
        "key_id, user_name, public_key, label, created_at_ms, retired_at_ms"
    };
}
macro_rules! journal_columns {
    () => {
        "seq, at_ms, actor, user_name, kind, subject, detail, prev_hash, hash"
    };
}

impl Store {
    /// Starts a Keep write: a transaction holding the journal head's lock.
    pub async fn keep_begin(&self) -> Result<KeepTx, StoreError> {
        let mut tx = self.pool().begin().await?;
        if self.backend() == crate::Backend::Postgres {
            // Another host holding the lock past this is stuck: refused ("unavailable") rather
            // than waited on for ever.
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SET LOCAL lock_timeout = {}",
                crate::store::LOCK_WAIT_MS
            )))
            .execute(&mut *tx)
            .await?;
        }
        // The first statement writes, so SQLite takes its write lock now (waiting up to the busy
        // timeout) instead of failing later when a read transaction tries to upgrade.
        sqlx::query("UPDATE keep_journal_head SET seq = seq WHERE one = 1")
            .execute(&mut *tx)
            .await?;
        Ok(KeepTx {
            tx,
            backend: self.backend(),
        })
    }

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

    /// The newest journal entries, newest first: all of them, or those about `user`; at most
    /// `limit` (capped at [`KEEP_JOURNAL_READ_ROWS_MAX`]).
    pub async fn keep_journal_newest(
        &self,
        user: Option<&str>,
        limit: i64,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let limit = limit.clamp(0, KEEP_JOURNAL_READ_ROWS_MAX);
        let rows = match user {
            None => {
                sqlx::query_as(concat!(
                    "SELECT ",
                    journal_columns!(),
                    " FROM keep_journal ORDER BY seq DESC LIMIT $1"
                ))
                .bind(limit)
                .fetch_all(self.pool())
                .await?
            }
            Some(user) => {
                sqlx::query_as(concat!(
                    "SELECT ",
                    journal_columns!(),
                    " FROM keep_journal WHERE user_name = $1 ORDER BY seq DESC LIMIT $2"
                ))
                .bind(user)
                .bind(limit)
                .fetch_all(self.pool())
                .await?
            }
        };
        Ok(rows)
    }

    /// The journal entry `seq`, whoever it is about.
    pub async fn keep_journal_entry(&self, seq: i64) -> Result<Option<JournalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            journal_columns!(),
            " FROM keep_journal WHERE seq = $1"
        ))
        .bind(seq)
        .fetch_optional(self.pool())
        .await?)
    }

    /// A read of the whole journal as one snapshot (a read transaction): its head, then its
    /// entries page by page, all as they were at the first read, whatever is appended meanwhile.
    pub async fn keep_journal_snapshot(&self) -> Result<JournalSnapshot, StoreError> {
        let mut tx = self.pool().begin().await?;
        // SQLite's read transaction sees one snapshot from its first read on. PostgreSQL's
        // default (read committed) takes a new one at every statement; repeatable read keeps
        // the first.
        if self.backend() == crate::Backend::Postgres {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut *tx)
                .await?;
        }
        Ok(JournalSnapshot { tx })
    }

    /// The journal's recorded head: the last sequence number and hash (0 and `""` when empty).
    pub async fn keep_journal_head(&self) -> Result<(i64, String), StoreError> {
        Ok(
            sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
                .fetch_one(self.pool())
                .await?,
        )
    }
}

/// A read of the journal as one snapshot; see [`Store::keep_journal_snapshot`].
#[derive(Debug)]
pub struct JournalSnapshot {
    tx: Transaction<'static, Any>,
}

impl JournalSnapshot {
    /// The recorded head: the last sequence number and hash (0 and `""` when empty). Read it
    /// first: the snapshot starts at the first read.
    pub async fn head(&mut self) -> Result<(i64, String), StoreError> {
        Ok(
            sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
                .fetch_one(&mut *self.tx)
                .await?,
        )
    }

    /// Up to `limit` entries after `after_seq` (by sequence number), oldest first; at most
    /// [`KEEP_JOURNAL_READ_ROWS_MAX`]. Start from `i64::MIN`, so that a row with a sequence
    /// number below 1 (written behind the store's back) is read too.
    pub async fn page(
        &mut self,
        after_seq: i64,
        limit: i64,
    ) -> Result<Vec<JournalRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            journal_columns!(),
            " FROM keep_journal WHERE seq > $1 ORDER BY seq LIMIT $2"
        ))
        .bind(after_seq)
        .bind(limit.clamp(1, KEEP_JOURNAL_READ_ROWS_MAX))
        .fetch_all(&mut *self.tx)
        .await?)
    }
}

/// One Keep write, atomic: commit it, or drop it to roll everything back. After a statement
/// fails, drop it: PostgreSQL refuses every further statement of a failed transaction.
#[derive(Debug)]
pub struct KeepTx {
    tx: Transaction<'static, Any>,
    backend: crate::Backend,
}

impl KeepTx {
    /// The engine the transaction runs on.
    pub(crate) fn backend(&self) -> crate::Backend {
        self.backend
    }

    /// The transaction's connection, for this crate's other modules.
    pub(crate) fn connection(&mut self) -> &mut sqlx::AnyConnection {
        &mut self.tx
    }

    /// Whether token `id` is live (not revoked), read under the write lock.
    pub async fn token_active(&mut self, id: &str) -> Result<bool, StoreError> {
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM keep_tokens WHERE id = $1 AND revoked_at_ms IS NULL")
                .bind(id)
                .fetch_optional(&mut *self.tx)
                .await?;
        Ok(found.is_some())
    }

    /// Whether the host named `host_id` is gone: no live host holds its name's claim (see
    /// [`Store::claim_host`]). Always `false` on SQLite (the one host is this one).
    pub async fn host_gone(&mut self, host_id: &str) -> Result<bool, StoreError> {
        if self.backend != crate::Backend::Postgres {
            return Ok(false);
        }
        // Read from PostgreSQL's lock table, never by taking the lock: a probe that held it
        // even for a moment could meet the host taking its claim again and make it think
        // another host took its name. A 64-bit advisory key is listed as its high and low
        // halves.
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT NOT EXISTS (SELECT 1 FROM pg_locks, (SELECT {} AS key) AS claim \
             WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND classid::bigint = ((claim.key >> 32) & 4294967295) \
             AND objid::bigint = (claim.key & 4294967295))",
            crate::notify::HOST_CLAIM_KEY
        )))
        .bind(host_id)
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Commits everything written.
    pub async fn commit(self) -> Result<(), StoreError> {
        Ok(self.tx.commit().await?)
    }

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

    /// Appends `draft` to the journal: gives it the next sequence number, the time and the
    /// previous entry's hash, asks `hash` for its own hash, and moves the head.
    pub async fn append_journal<E>(
        &mut self,
        draft: JournalDraft,
        hash: impl FnOnce(&JournalRow) -> Result<String, E>,
    ) -> Result<Result<JournalRow, E>, StoreError> {
        let (head_seq, head_hash): (i64, String) =
            sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
                .fetch_one(&mut *self.tx)
                .await?;
        let mut row = JournalRow {
            seq: head_seq + 1,
            at_ms: now_ms(),
            actor: draft.actor,
            user_name: draft.user_name,
            kind: draft.kind,
            subject: draft.subject,
            detail: draft.detail,
            prev_hash: if head_seq == 0 {
                "0".repeat(64)
            } else {
                head_hash
            },
            hash: String::new(),
        };
        row.hash = match hash(&row) {
            Ok(hash) => hash,
            Err(error) => return Ok(Err(error)),
        };
        sqlx::query(concat!(
            "INSERT INTO keep_journal (",
            journal_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .bind(row.seq)
        .bind(row.at_ms)
        .bind(&row.actor)
        .bind(&row.user_name)
        .bind(&row.kind)
        .bind(&row.subject)
        .bind(&row.detail)
        .bind(&row.prev_hash)
        .bind(&row.hash)
        .execute(&mut *self.tx)
        .await?;
        sqlx::query("UPDATE keep_journal_head SET seq = $1, hash = $2 WHERE one = 1")
            .bind(row.seq)
            .bind(&row.hash)
            .execute(&mut *self.tx)
            .await?;
        Ok(Ok(row))
    }
}

/// A Keep session's row.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct SessionRow {
    pub id: String,
    pub user_name: String,
    pub agent: String,
    pub agent_version: i64,
    pub created_at_ms: i64,
    pub tainted_at_ms: Option<i64>,
    pub taint_source: Option<String>,
    pub ended_at_ms: Option<i64>,
    pub end_reason: Option<String>,
}

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

macro_rules! session_columns {
    () => {
        "id, user_name, agent, agent_version, created_at_ms, tainted_at_ms, taint_source, \
         ended_at_ms, end_reason"
    };
}
macro_rules! proposal_columns {
    () => {
        "id, user_name, session_id, agent, kind, payload, tainted, taint_source, state, \
         created_at_ms, decided_at_ms"
    };
}

impl Store {
    /// The session with this id, whoever's it is.
    pub async fn keep_session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            session_columns!(),
            " FROM keep_sessions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// `user`'s sessions, newest first.
    pub async fn keep_sessions(&self, user: &str) -> Result<Vec<SessionRow>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            session_columns!(),
            " FROM keep_sessions WHERE user_name = $1 ORDER BY created_at_ms DESC, id LIMIT $2"
        ))
        .bind(user)
        .bind(KEEP_LIST_ROWS_MAX)
        .fetch_all(self.pool())
        .await?)
    }

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
    /// Records a new session.
    pub async fn insert_session(
        &mut self,
        id: &str,
        user: &str,
        agent: &str,
        agent_version: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO keep_sessions (id, user_name, agent, agent_version, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(user)
        .bind(agent)
        .bind(agent_version)
        .bind(now_ms())
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Marks session `id` tainted by `source`, unless it already is; whether it was not.
    pub async fn taint_session(&mut self, id: &str, source: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_sessions SET tainted_at_ms = $2, taint_source = $3 \
             WHERE id = $1 AND tainted_at_ms IS NULL",
        )
        .bind(id)
        .bind(now_ms())
        .bind(source)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends session `id` with `reason`, unless it has ended; whether it had not.
    pub async fn end_session(&mut self, id: &str, reason: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE keep_sessions SET ended_at_ms = $2, end_reason = $3 \
             WHERE id = $1 AND ended_at_ms IS NULL",
        )
        .bind(id)
        .bind(now_ms())
        .bind(reason)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

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

macro_rules! tool_proposal_columns {
    () => {
        "id, user_name, session_id, agent, agent_version, signer_key_id, name, version, \
         description, manifest, bundle_sha256, bundle_size, tainted, taint_source, state, \
         created_at_ms, decided_at_ms, seal"
    };
}
macro_rules! tool_columns {
    () => {
        "user_name, name, version, proposal_id, bundle_sha256, manifest, decision, tainted, \
         taint_source, taint_cleared, seal, deployed_at_ms, revoked_at_ms"
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

/// A new tool proposal, with its bundle.
#[derive(Debug, Clone)]
pub struct NewToolProposal<'a> {
    pub row: &'a ToolProposalRow,
    pub bundle: &'a [u8],
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

/// An insert's error: a unique violation read as `what` `id` existing already.
fn already_exists(error: sqlx::Error, what: &'static str, id: String) -> StoreError {
    if crate::bounds::is_unique_violation(&error) {
        StoreError::AlreadyExists { what, id }
    } else {
        error.into()
    }
}

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

/// `user` ($1)'s uses still waiting at $3, oldest first, at most $2.
const EGRESS_WAITS_OF_USER: &str = concat!(
    "SELECT ",
    egress_wait_columns!(),
    " FROM keep_egress_waits WHERE user_name = $1 AND state = 'waiting' \
     AND expires_at_ms > $3 ORDER BY asked_at_ms, id LIMIT $2"
);

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
