//! Opening the database: the file and its folder, the connection settings, the pool, the migrations.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::Connection;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

use crate::StoreError;

/// The schema, compiled into the binary. The SQLite dialect sits in its own folder because the
/// DDL is the one place the dialects differ (an identity column is spelled differently); the
/// queries themselves are shared. PostgreSQL's migrations will go in `migrations/postgres/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// `FULL` rather than `NORMAL`. In WAL mode both survive a crash of the process (kill -9): a
/// committed transaction is in the WAL file, and the operating system keeps the file's pages after
/// the process dies. Only `FULL` also survives a power cut or a kernel panic, because it syncs the
/// WAL to the disk at every commit, where `NORMAL` syncs only at checkpoints and can lose the last
/// commits. Our writes are human-paced (tool calls, messages) and the audit writer commits in
/// batches, so the cost is one fsync per batch, not per row; for a security log, "committed" should
/// mean "on the disk".
const SYNCHRONOUS: SqliteSynchronous = SqliteSynchronous::Full;

/// How long a statement waits for another connection's write lock before it fails with "database
/// is locked". Writes here are short transactions, so a wait this long means something is stuck.
const BUSY_TIMEOUT_MS: u64 = 5_000;

/// Connections in the pool. SQLite has one writer at a time, so more connections only help
/// concurrent readers (WAL lets them read while a write is in progress); four is plenty for one host.
const POOL_CONNECTIONS_MAX: u32 = 4;

/// How long a caller waits for a free pooled connection before giving up.
const POOL_ACQUIRE_TIMEOUT_MS: u64 = 10_000;

/// The path reported in errors about the in-memory database.
const IN_MEMORY_NAME: &str = ":memory:";

/// The database: a pool of connections to one SQLite file (or one in-memory database), migrated to
/// the current schema. Cloning is cheap and shares the pool. Tables get their queries in their own
/// modules (`audit.rs`, `sessions.rs`, `transcripts.rs`, `turns.rs`, `settings.rs`) as
/// `impl Store` blocks.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    connect_options: SqliteConnectOptions,
    /// An in-memory database lives only while a connection to it is open. The pool may close all
    /// of its connections (idle timeout, a connection dropped on a dying runtime), so this one
    /// connection, never used, keeps the database alive for as long as any clone of the store.
    /// The mutex only makes the connection shareable between threads; nobody locks it.
    _memory_anchor: Option<Arc<Mutex<SqliteConnection>>>,
}

impl Store {
    /// Opens the database file at `path`, creating it and its parent folders if missing, and
    /// migrates it to the current schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            // Blocking file-system call in an async fn: a single mkdir at start-up, cheaper than
            // a trip to the blocking pool.
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let connect_options = with_shared_settings(
            SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                // WAL lets readers work while the audit writer commits, and turns a commit into
                // an append to one file, which is what makes a per-batch fsync cheap.
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SYNCHRONOUS),
        );
        Store::connect(connect_options, path.to_path_buf(), None).await
    }

    /// Opens a new, empty, migrated database that lives in memory, for tests. Every call gives a
    /// database of its own; it disappears when the last clone of the store is dropped.
    pub async fn open_in_memory() -> Result<Store, StoreError> {
        // sqlx turns `:memory:` into a uniquely named shared-cache database, so every connection
        // of this pool (and the audit writer's) sees the same data. WAL and `synchronous` mean
        // nothing without a file, so they are left out.
        let connect_options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|source| open_error(IN_MEMORY_NAME, source))?;
        let connect_options = with_shared_settings(connect_options);
        let anchor = SqliteConnection::connect_with(&connect_options)
            .await
            .map_err(|source| open_error(IN_MEMORY_NAME, source))?;
        let anchor = Some(Arc::new(Mutex::new(anchor)));
        Store::connect(connect_options, PathBuf::from(IN_MEMORY_NAME), anchor).await
    }

    /// Closes the pool: waits for connections in use to come back, then closes them all. Other
    /// clones of the store can no longer query. An audit writer has its own connection and must
    /// be shut down on its own.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn connect(
        connect_options: SqliteConnectOptions,
        path: PathBuf,
        memory_anchor: Option<Arc<Mutex<SqliteConnection>>>,
    ) -> Result<Store, StoreError> {
        let pool = SqlitePoolOptions::new()
            .max_connections(POOL_CONNECTIONS_MAX)
            .acquire_timeout(Duration::from_millis(POOL_ACQUIRE_TIMEOUT_MS))
            .connect_with(connect_options.clone())
            .await
            .map_err(|source| StoreError::Open { path, source })?;
        MIGRATOR.run(&pool).await?;
        Ok(Store {
            pool,
            connect_options,
            _memory_anchor: memory_anchor,
        })
    }

    /// The pool, for the queries of this crate's table modules.
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Opens one connection outside the pool, with the same settings, for a task that owns its
    /// connection (the audit writer runs on its own thread and runtime, away from the pool's).
    pub(crate) async fn connect_one(&self) -> Result<SqliteConnection, sqlx::Error> {
        SqliteConnection::connect_with(&self.connect_options).await
    }
}

/// Settings every connection gets, file or memory.
fn with_shared_settings(options: SqliteConnectOptions) -> SqliteConnectOptions {
    options
        .busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
        // SQLite leaves foreign keys off for backward compatibility; deleting a session relies on
        // them to delete its transcript and turns, and PostgreSQL always enforces them.
        .foreign_keys(true)
        .thread_name(|number| format!("imurun-sqlite-{number}"))
}

fn open_error(path: &str, source: sqlx::Error) -> StoreError {
    StoreError::Open {
        path: PathBuf::from(path),
        source,
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
}
