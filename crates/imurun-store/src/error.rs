//! The one error type of the store.

use std::path::PathBuf;

/// Everything that can go wrong while opening, migrating, reading or writing the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The folder that should hold the database file could not be created.
    #[error("cannot create the folder {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The database could not be opened or created, or refused the connection settings.
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    /// A schema migration failed; the database stays at the last migration that succeeded.
    #[error("cannot migrate the database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A query failed (I/O, a busy database past the busy timeout, a constraint).
    #[error("database query failed: {0}")]
    Query(#[from] sqlx::Error),
    /// A stored value this version cannot read: written by a newer version, or edited by hand.
    #[error("column {column} holds {value:?}, which this version cannot read")]
    Decode { column: &'static str, value: String },
    /// The audit writer's thread or its runtime could not be started.
    #[error("cannot start the audit writer: {0}")]
    WriterStart(#[source] std::io::Error),
    /// The audit writer has stopped (shut down, or its thread ended), so it cannot flush.
    #[error("the audit writer has stopped")]
    WriterStopped,
    /// Audit rows recorded since the previous flush were not committed: the channel stayed full
    /// past the caller's wait, a batch failed every write attempt, or the writer had stopped.
    #[error("{rows} audit rows were lost since the previous flush")]
    AuditRowsLost { rows: u64 },
}
