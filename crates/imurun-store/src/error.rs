//! The one error type of the store, and the opaque wrappers that carry the database driver's
//! errors inside it.
//!
//! No public variant names a `sqlx` type: the driver's errors travel in [`DatabaseError`] and
//! [`MigrationError`], which show its message and chain its sources but cannot be matched on, so
//! other crates classify a failure with [`StoreError`]'s own methods and never depend on `sqlx`.

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
    /// The database file could not be created (readable by its user alone).
    #[error("cannot create the database file {path}: {source}")]
    CreateFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The database could not be opened or created, or refused the connection settings.
    /// `database` is the file, `:memory:`, or the URL without its password.
    #[error("cannot open the database {database}: {source}")]
    Open {
        database: String,
        #[source]
        source: DatabaseError,
    },
    /// A database URL of a kind the store does not run on (only `postgres://`, `postgresql://`
    /// and `sqlite://`). `url` is shown without its password.
    #[error(
        "the database URL {url:?} is not supported: use postgres://user:password@host/database \
         or sqlite://path"
    )]
    UnsupportedUrl { url: String },
    /// A schema migration failed; the database stays at the last migration that succeeded.
    #[error("cannot migrate the database: {0}")]
    Migrate(#[source] MigrationError),
    /// A query failed (I/O, a busy database past the busy timeout, a constraint).
    #[error("database query failed: {0}")]
    Query(#[source] DatabaseError),
    /// A stored value this version cannot read: written by a newer version, or edited by hand.
    #[error("column {column} holds {value:?}, which this version cannot read")]
    Decode { column: &'static str, value: String },
    /// A JSON column holds text that does not parse as JSON (edited by hand), or a value could not
    /// be written as JSON text.
    #[error("column {column} cannot hold this value as JSON: {source}")]
    Json {
        column: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// No row has this id: a session, a turn (`id` is then `session/turn`).
    #[error("{what} {id:?} not found")]
    NotFound { what: &'static str, id: String },
    /// A row with this id exists already, so it cannot be created again.
    #[error("{what} {id:?} already exists")]
    AlreadyExists { what: &'static str, id: String },
    /// An id or key the store refuses: empty, too long, or with characters outside its alphabet.
    /// `id` is cut to its first 64 characters, so that a huge input does not make a huge message.
    #[error("{what} {id:?} is refused: {reason}")]
    InvalidId {
        what: &'static str,
        id: String,
        reason: &'static str,
    },
    /// An input larger than its stated bound (a title, a message, a view, a batch of settings).
    #[error("{what} is {size} {unit} long; at most {size_max} are allowed")]
    TooLarge {
        what: &'static str,
        size: usize,
        size_max: usize,
        /// `characters`, `bytes` or `entries`.
        unit: &'static str,
    },
    /// A text holds the NUL character, which PostgreSQL's text cannot hold: refused on every
    /// engine, so that a database never holds a row another engine could not.
    #[error("{what} holds a NUL character (U+0000), which the database cannot store")]
    NulCharacter { what: &'static str },
    /// Another host sharing the database runs under this host's name (`keep.host_id`).
    #[error(
        "another Keep host on this database already runs as {host_id:?}: give each host its own \
         keep.host_id (IMURUN_KEEP_HOST_ID)"
    )]
    HostTaken { host_id: String },
    /// A table already holds the most rows it may, in one session or in all.
    #[error("{what} reached the most rows allowed ({rows_max})")]
    RowsMaxReached { what: &'static str, rows_max: u64 },
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

/// The database driver's error, opaque: its message (`Display`) and its causes
/// (`Error::source`) are the driver's; what it means for a caller is asked of [`StoreError`]
/// (`is_unavailable`, `is_unstorable_text`).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DatabaseError(pub(crate) sqlx::Error);

/// A schema migration's error, opaque like [`DatabaseError`].
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct MigrationError(pub(crate) sqlx::migrate::MigrateError);

/// Every query's error becomes [`StoreError::Query`], so that `?` works on this crate's queries.
/// Other crates have no use for it: they never hold a `sqlx` error.
impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        StoreError::Query(DatabaseError(error))
    }
}

impl StoreError {
    /// Whether the database refused a text it cannot hold (PostgreSQL's 22021: a NUL character
    /// in an id or a name that reached a query): the request's fault, not the database's.
    pub fn is_unstorable_text(&self) -> bool {
        matches!(self, StoreError::NulCharacter { .. })
            || matches!(
                self,
                StoreError::Query(DatabaseError(sqlx::Error::Database(error))) if error.code().as_deref() == Some("22021")
            )
    }

    /// Whether the error says the database could not be reached (down, unreachable, every
    /// connection busy past the wait, SQLite's file held by another writer past the busy
    /// timeout), rather than that the request itself was refused. Callers
    /// answer these "try again later".
    pub fn is_unavailable(&self) -> bool {
        let source = match self {
            StoreError::Open {
                source: DatabaseError(source),
                ..
            }
            | StoreError::Query(DatabaseError(source)) => source,
            StoreError::Migrate(MigrationError(sqlx::migrate::MigrateError::Execute(source))) => {
                source
            }
            _ => return false,
        };
        match source {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            // PostgreSQL's class 08 (connection exception), 57P (operator intervention: the
            // server shutting down, crashed, or not yet accepting connections) and 55P03 (a
            // lock not granted within `lock_timeout`: another host holds Keep's write lock).
            // SQLite's BUSY and LOCKED (and their extended codes): another writer held the
            // file past the busy timeout.
            sqlx::Error::Database(error)
                if error
                    .try_downcast_ref::<sqlx::sqlite::SqliteError>()
                    .is_some() =>
            {
                error
                    .code()
                    .and_then(|code| code.parse::<i64>().ok())
                    .is_some_and(|code| matches!(code & 0xff, 5 | 6))
            }
            sqlx::Error::Database(error) => error.code().is_some_and(|code| {
                code.starts_with("08") || code.starts_with("57P") || code == "55P03"
            }),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::{DatabaseError, MigrationError, StoreError};

    /// What a caller learns of an error: whether to try again later, whether the request's text
    /// was refused.
    #[derive(Debug, PartialEq, Eq)]
    struct Classes {
        unavailable: bool,
        unstorable_text: bool,
    }

    fn check(case: &str, error: StoreError, expected: Classes) {
        let got = Classes {
            unavailable: error.is_unavailable(),
            unstorable_text: error.is_unstorable_text(),
        };
        assert_eq!(got, expected, "{case}: {error:?}");
    }

    /// The driver's errors are classified through the wrappers as they were when the variants
    /// held them bare (the database's own codes are checked against live engines in the
    /// integration tests).
    #[test]
    fn the_wrapped_driver_errors_keep_their_classes() {
        let io = || std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let open = |source| StoreError::Open {
            database: "imurun.db".to_owned(),
            source: DatabaseError(source),
        };
        let migrate = |error| StoreError::Migrate(MigrationError(error));
        let yes = || Classes {
            unavailable: true,
            unstorable_text: false,
        };
        let no = || Classes {
            unavailable: false,
            unstorable_text: false,
        };
        let cases = [
            (
                "query, pool timed out",
                sqlx::Error::PoolTimedOut.into(),
                yes(),
            ),
            ("query, pool closed", sqlx::Error::PoolClosed.into(), yes()),
            (
                "query, worker crashed",
                sqlx::Error::WorkerCrashed.into(),
                yes(),
            ),
            ("query, I/O", sqlx::Error::Io(io()).into(), yes()),
            ("query, no row", sqlx::Error::RowNotFound.into(), no()),
            ("open, I/O", open(sqlx::Error::Io(io())), yes()),
            (
                "open, bad URL",
                open(sqlx::Error::Configuration("x".into())),
                no(),
            ),
            (
                "migration, its query's pool timed out",
                migrate(sqlx::migrate::MigrateError::Execute(
                    sqlx::Error::PoolTimedOut,
                )),
                yes(),
            ),
            (
                "migration, a version this build lacks",
                migrate(sqlx::migrate::MigrateError::VersionMissing(7)),
                no(),
            ),
            (
                "a NUL character",
                StoreError::NulCharacter { what: "title" },
                Classes {
                    unavailable: false,
                    unstorable_text: true,
                },
            ),
        ];
        for (case, error, expected) in cases {
            check(case, error, expected);
        }
    }

    /// The wrapper shows the driver's message and passes on its causes, so a logged error reads
    /// as it did when the variant held the driver's error.
    #[test]
    fn a_wrapped_error_reads_as_the_drivers() {
        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let driver_message = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        ))
        .to_string();
        let error = StoreError::from(sqlx::Error::Io(inner));
        assert_eq!(
            error.to_string(),
            format!("database query failed: {driver_message}")
        );
        let wrapper = error.source().expect("the wrapper");
        assert_eq!(wrapper.to_string(), driver_message);
        let cause = wrapper.source().expect("the I/O error");
        assert_eq!(cause.to_string(), "reset by peer");
    }
}
