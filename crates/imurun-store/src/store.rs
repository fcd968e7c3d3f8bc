//! Opening the database: the file and its folder, the connection settings, the pool, the migrations.

use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyConnection, AnyPool};
use sqlx::{Connection, Executor};

use crate::StoreError;
use crate::error::{DatabaseError, MigrationError};

/// The schema, compiled into the binary, once per dialect: the DDL is the one place the
/// dialects differ (an identity column, a binary column, a collation are spelled differently);
/// the queries themselves are shared. Both folders hold the same migrations, version for
/// version (a test keeps them in step).
static MIGRATOR_SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");
static MIGRATOR_POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// `FULL` rather than `NORMAL`. In WAL mode both survive a crash of the process (kill -9): a
/// committed transaction is in the WAL file, and the operating system keeps the file's pages after
/// the process dies. Only `FULL` also survives a power cut or a kernel panic, because it syncs the
/// WAL to the disk at every commit, where `NORMAL` syncs only at checkpoints and can lose the last
/// commits. Our writes are human-paced (tool calls, messages) and the audit writer commits in
/// batches, so the cost is one fsync per batch, not per row; for a security log, "committed" should
/// mean "on the disk".
const SQLITE_SYNCHRONOUS: &str = "PRAGMA synchronous = FULL";

/// How long a statement waits for another connection's write lock (SQLite) or row lock
/// (PostgreSQL) before it fails. Writes here are short transactions, so a wait this long means
/// something is stuck.
pub(crate) const LOCK_WAIT_MS: u64 = 5_000;

/// How long a PostgreSQL connection may sit in an open transaction doing nothing before the
/// server ends it. A host that hangs while holding Keep's write lock would otherwise stop every
/// other host's Keep writes; this bounds the stall.
const POSTGRES_IDLE_IN_TRANSACTION_MS: u64 = 60_000;

/// Connections in the pool. SQLite has one writer at a time, so more connections only help
/// concurrent readers (WAL lets them read while a write is in progress); four is plenty for one
/// host. A PostgreSQL server serves several hosts, each with a pool of this many.
const SQLITE_POOL_CONNECTIONS_MAX: u32 = 4;
const POSTGRES_POOL_CONNECTIONS_MAX: u32 = 8;

/// How long a caller waits for a pooled connection before giving up: with PostgreSQL down, the
/// time a write takes to be refused.
const POOL_ACQUIRE_TIMEOUT_MS: u64 = 5_000;

/// The name reported in errors about the in-memory database.
const IN_MEMORY_NAME: &str = ":memory:";

/// Which database engine a [`Store`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file (or an in-memory database): the embedded default, for one host.
    Sqlite,
    /// A PostgreSQL database, which several hosts may share.
    Postgres,
}

impl Backend {
    /// `sqlite` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The database: a pool of connections to one SQLite file (or in-memory database) or one
/// PostgreSQL database, migrated to the current schema. The queries are the same on both (`$n`
/// placeholders, portable types, `RETURNING` and `ON CONFLICT`); they go through `sqlx`'s `Any`
/// driver. Cloning is cheap and shares the pool. Tables get their queries in their own modules
/// (`audit.rs`, `sessions.rs`, `transcripts.rs`, `turns.rs`, `settings.rs`, `keep.rs`) as
/// `impl Store` blocks.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// The database as errors and logs name it: the file, `:memory:`, or the URL without its
    /// password.
    name: String,
    /// The URL connections are made from (it may hold a password: never shown).
    url: String,
    /// An in-memory database lives only while a connection to it is open. The pool may close all
    /// of its connections (idle timeout, a connection dropped on a dying runtime), so this one
    /// connection, never used, keeps the database alive for as long as any clone of the store.
    /// The mutex only makes the connection shareable between threads; nobody locks it.
    _memory_anchor: Option<Arc<Mutex<AnyConnection>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Store")
            .field("backend", &self.backend)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the SQLite database file at `path`, creating it and its parent folders if missing,
    /// and migrates it to the current schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            // Blocking file-system calls in an async fn: a mkdir and an open at start-up,
            // cheaper than a trip to the blocking pool.
            create_private_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        create_private_file(path).map_err(|source| StoreError::CreateFile {
            path: path.to_path_buf(),
            source,
        })?;
        let url = sqlite_file_url(path);
        Store::connect(
            Backend::Sqlite,
            url,
            path.display().to_string(),
            SqliteKind::File,
        )
        .await
    }

    /// Opens a new, empty, migrated SQLite database that lives in memory, for tests. Every call
    /// gives a database of its own; it disappears when the last clone of the store is dropped.
    pub async fn open_in_memory() -> Result<Store, StoreError> {
        // A uniquely named shared-cache database, so every connection of this pool (and the
        // audit writer's) sees the same data.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        let url = format!(
            "sqlite:file:imurun-memory-{}-{number}?mode=memory&cache=shared",
            std::process::id()
        );
        Store::connect(
            Backend::Sqlite,
            url,
            IN_MEMORY_NAME.to_owned(),
            SqliteKind::Memory,
        )
        .await
    }

    /// Opens the database a URL names, and migrates it: `postgres://user:password@host/db`
    /// (also `postgresql://`) for PostgreSQL, `sqlite://path` for a SQLite file. Anything else
    /// is refused with [`StoreError::UnsupportedUrl`].
    pub async fn open_url(url: &str) -> Result<Store, StoreError> {
        let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or("");
        match scheme {
            "postgres" | "postgresql" => {
                Store::connect(
                    Backend::Postgres,
                    url.to_owned(),
                    redact_url(url),
                    SqliteKind::None,
                )
                .await
            }
            "sqlite" => {
                let options = SqliteConnectOptions::from_str(url)
                    .map_err(|source| open_error(&redact_url(url), source))?;
                let path = options.get_filename().to_path_buf();
                Store::open(path).await
            }
            // Only the scheme is shown: the rest of something that is not a URL of ours may be a
            // password in a form this does not know.
            _ => Err(StoreError::UnsupportedUrl {
                url: if scheme.is_empty() {
                    "(not a URL)".to_owned()
                } else {
                    format!("{scheme}:...")
                },
            }),
        }
    }

    /// The engine this store runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The database as errors and logs name it: the file, `:memory:`, or the PostgreSQL URL
    /// without its password.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes the pool: waits for connections in use to come back, then closes them all. Other
    /// clones of the store can no longer query. An audit writer has its own connection and must
    /// be shut down on its own.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn connect(
        backend: Backend,
        url: String,
        name: String,
        sqlite: SqliteKind,
    ) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let options =
            AnyConnectOptions::from_str(&url).map_err(|source| open_error(&name, source))?;
        let memory_anchor = if sqlite == SqliteKind::Memory {
            let mut anchor = AnyConnection::connect_with(&options)
                .await
                .map_err(|source| open_error(&name, source))?;
            prepare_connection(&mut anchor, backend, sqlite)
                .await
                .map_err(|source| open_error(&name, source))?;
            Some(Arc::new(Mutex::new(anchor)))
        } else {
            None
        };
        let connections_max = match backend {
            Backend::Sqlite => SQLITE_POOL_CONNECTIONS_MAX,
            Backend::Postgres => POSTGRES_POOL_CONNECTIONS_MAX,
        };
        let pool = AnyPoolOptions::new()
            .max_connections(connections_max)
            .acquire_timeout(Duration::from_millis(POOL_ACQUIRE_TIMEOUT_MS))
            .after_connect(move |connection, _| {
                Box::pin(async move { prepare_connection(connection, backend, sqlite).await })
            })
            .connect_with(options)
            .await
            .map_err(|source| open_error(&name, source))?;
        let migrator = match backend {
            Backend::Sqlite => &MIGRATOR_SQLITE,
            Backend::Postgres => &MIGRATOR_POSTGRES,
        };
        migrator
            .run(&pool)
            .await
            .map_err(|error| StoreError::Migrate(MigrationError(error)))?;
        Ok(Store {
            pool,
            backend,
            name,
            url,
            _memory_anchor: memory_anchor,
        })
    }

    /// The URL connections are made from (it may hold a password: never shown).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The pool, for the queries of this crate's table modules.
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Opens one connection outside the pool, with the same settings, for a task that owns its
    /// connection (the audit writer runs on its own thread and runtime, away from the pool's).
    pub(crate) async fn connect_one(&self) -> Result<AnyConnection, sqlx::Error> {
        let mut connection = AnyConnection::connect(&self.url).await?;
        let sqlite = match (self.backend, self._memory_anchor.is_some()) {
            (Backend::Postgres, _) => SqliteKind::None,
            (Backend::Sqlite, true) => SqliteKind::Memory,
            (Backend::Sqlite, false) => SqliteKind::File,
        };
        prepare_connection(&mut connection, self.backend, sqlite).await?;
        Ok(connection)
    }
}

/// What kind of SQLite database a connection opens, for its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SqliteKind {
    /// Not SQLite.
    None,
    File,
    Memory,
}

/// The settings every new connection gets before it is used.
async fn prepare_connection(
    connection: &mut AnyConnection,
    backend: Backend,
    sqlite: SqliteKind,
) -> Result<(), sqlx::Error> {
    match backend {
        Backend::Sqlite => {
            // SQLite leaves foreign keys off for backward compatibility; deleting a session
            // relies on them to delete its transcript and turns, and PostgreSQL always enforces
            // them.
            connection.execute("PRAGMA foreign_keys = ON").await?;
            connection
                .execute(sqlx::AssertSqlSafe(format!(
                    "PRAGMA busy_timeout = {LOCK_WAIT_MS}"
                )))
                .await?;
            if sqlite == SqliteKind::File {
                // WAL lets readers work while the audit writer commits, and turns a commit into
                // an append to one file, which is what makes a per-batch fsync cheap. WAL and
                // `synchronous` mean nothing without a file.
                connection.execute("PRAGMA journal_mode = WAL").await?;
                connection.execute(SQLITE_SYNCHRONOUS).await?;
            }
        }
        Backend::Postgres => {
            // Not `lock_timeout` here: the migrator waits on an advisory lock while another
            // host migrates, as long as that takes. Keep's writes set it for themselves.
            connection
                .execute(sqlx::AssertSqlSafe(format!(
                    "SET idle_in_transaction_session_timeout = {POSTGRES_IDLE_IN_TRANSACTION_MS}"
                )))
                .await?;
        }
    }
    Ok(())
}

/// The URL of the SQLite file at `path`, created if missing: every byte of the path but
/// ASCII letters, digits and `/._-~` percent-encoded, so that no path (`%`, `?`, `#`, `:`,
/// `[`) reads as anything but itself.
fn sqlite_file_url(path: &Path) -> String {
    let mut url = String::from("sqlite://");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/._-~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url.push_str("?mode=rwc");
    url
}

/// `url` with its passwords (the userinfo's, `?password=`) replaced by `***`, for messages.
pub fn redact_url(url: &str) -> String {
    imurun_core::url_without_passwords(url)
}

fn open_error(name: &str, source: sqlx::Error) -> StoreError {
    StoreError::Open {
        database: name.to_owned(),
        source: DatabaseError(source),
    }
}

/// Creates `dir` and its missing parents readable by this user alone (`0700`): the database
/// holds conversations, the audit log and Keep's state. Folders that exist are left as they are.
pub fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates the database file readable by this user alone (`0600`) when it does not exist yet;
/// SQLite gives its journal and WAL files the database's mode. A file that exists is left as it
/// is.
fn create_private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn pragma(store: &Store, query: &'static str) -> String {
        use sqlx::Row;
        let row = sqlx::query(query)
            .fetch_one(store.pool())
            .await
            .expect("pragma query");
        match row.try_get::<String, _>(0) {
            Ok(text) => text,
            Err(_) => row.try_get::<i64, _>(0).expect("pragma value").to_string(),
        }
    }

    /// The settings the durability promise rests on, as SQLite reports them on a pooled connection.
    #[tokio::test]
    async fn file_store_has_the_settings_durability_relies_on() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().join("nested/folder/imurun.db"))
            .await
            .expect("open");
        let expected = [
            ("PRAGMA journal_mode", "wal"),
            // 2 is FULL: see SYNCHRONOUS for why.
            ("PRAGMA synchronous", "2"),
            ("PRAGMA foreign_keys", "1"),
            ("PRAGMA busy_timeout", "5000"),
        ];
        for (query, value) in expected {
            assert_eq!(pragma(&store, query).await, value, "{query}");
        }
    }

    #[tokio::test]
    async fn in_memory_stores_are_separate_and_enforce_foreign_keys() {
        let first = Store::open_in_memory().await.expect("first");
        let second = Store::open_in_memory().await.expect("second");
        sqlx::query("CREATE TABLE only_in_first (x INTEGER)")
            .execute(first.pool())
            .await
            .expect("create");
        let seen_in_second = sqlx::query("SELECT x FROM only_in_first")
            .execute(second.pool())
            .await;
        assert!(
            seen_in_second.is_err(),
            "in-memory stores must not share tables"
        );
        assert_eq!(pragma(&first, "PRAGMA foreign_keys").await, "1");
    }

    /// Paths with characters a URL gives meaning to open the file they name, and only it.
    #[tokio::test]
    async fn a_path_with_url_characters_opens_that_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["100%41.db", "a?b#c.db", "x:y[1].db", "sp ace.db"] {
            let path = dir.path().join(name);
            let store = Store::open(&path).await.expect(name);
            store.create_session(Some("s"), None).await.expect("write");
            store.close().await;
            assert!(path.is_file(), "{name} was not created as itself");
        }
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .into_string()
                    .expect("utf-8")
            })
            .filter(|name| name.ends_with(".db"))
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
    }
}
