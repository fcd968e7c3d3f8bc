//! Keep mode's tables: tokens, signed documents and their high-water marks, agents, the vault,
//! devices, enrolment codes, decision nonces, the journal, and sessions with their proposals.
//!
//! The store keeps what it is given; the rules (signatures, versions, ceilings, what a journal
//! entry may hold, how its hash is made) are `imurun-keep`'s. Every write goes through a
//! [`KeepTx`], which locks the journal's head first: Keep's writes are operator- and
//! person-paced, so serialising them costs nothing, and it makes "check the version, write the
//! row, append to the journal" one atomic step that two writers can never interleave.
//!
//! One file per table, or per tables written together: `tokens.rs`, `documents.rs` (documents and
//! their high-water marks), `agents.rs`, `vault.rs`, `devices.rs` (device keys, enrolment codes and
//! decision nonces), `journal.rs` (the journal, its head, appends and snapshot reads),
//! `sessions.rs`, `conversations.rs` (a session's messages and replies), `proposals.rs`, `tool_proposals.rs`, `tools.rs` and `egress_waits.rs`; each
//! adds its queries to [`Store`] and [`KeepTx`] in `impl` blocks of its own. Each file's column
//! lists are macros, so that every query stays a `&'static str` (sqlx refuses SQL built at run
//! time, which is how injections start).

mod agents;
mod conversations;
mod devices;
mod documents;
mod egress_waits;
mod journal;
mod proposals;
mod sessions;
mod tokens;
mod tool_proposals;
mod tools;
mod vault;

use sqlx::{Any, Transaction};

use crate::{Store, StoreError};

pub use agents::{AgentRow, NewAgent};
pub use conversations::{CONVERSATION_ENTRIES_MAX, CONVERSATIONS_KEPT_MAX, MessageRow, NewMessage};
pub use devices::DeviceRow;
pub use documents::DocumentRow;
pub use egress_waits::EgressWaitRow;
pub use journal::{JournalDraft, JournalFilter, JournalRow, JournalSnapshot};
pub use proposals::ProposalRow;
pub use sessions::SessionRow;
pub use tokens::{TokenRow, TokenUser};
pub use tool_proposals::{NewToolProposal, ToolProposalRow};
pub use tools::{NewTool, ToolRow};
pub use vault::VaultEntryRow;

/// Rows a journal read returns at most.
pub const KEEP_JOURNAL_READ_ROWS_MAX: i64 = 10_000;

/// Rows any other Keep list returns at most.
pub const KEEP_LIST_ROWS_MAX: i64 = 1_000;

/// One Keep write, atomic: commit it, or drop it to roll everything back. After a statement
/// fails, drop it: PostgreSQL refuses every further statement of a failed transaction.
#[derive(Debug)]
pub struct KeepTx {
    tx: Transaction<'static, Any>,
    backend: crate::Backend,
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
}

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

/// An insert's error: a unique violation read as `what` `id` existing already.
fn already_exists(error: sqlx::Error, what: &'static str, id: String) -> StoreError {
    if crate::bounds::is_unique_violation(&error) {
        StoreError::AlreadyExists { what, id }
    } else {
        error.into()
    }
}
