//! Opening creates what is missing and migrates; opening again changes nothing.

use imurun_core::AuditSink;
use imurun_store::{AuditWriter, Store, StoreError};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use crate::support::nth_record;

/// The migration files under `migrations/sqlite/`.
const MIGRATIONS: i64 = 8;

async fn applied_migrations(path: &std::path::Path) -> i64 {
    let options = SqliteConnectOptions::new().filename(path);
    let mut connection = SqliteConnection::connect_with(&options)
        .await
        .expect("connect");
    let count = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&mut connection)
        .await
        .expect("count migrations");
    connection.close().await.expect("close");
    count
}

#[tokio::test]
async fn opening_twice_keeps_rows_and_applies_each_migration_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("a/b/imurun.db");

    let first = Store::open(&path)
        .await
        .expect("first open creates folders and file");
    let writer = AuditWriter::spawn(&first).expect("spawn writer");
    for index in 0..5 {
        writer.record(nth_record(index));
    }
    writer.shutdown().await.expect("shutdown");

    // Open again while the first store is still open, then again after it is closed.
    let second = Store::open(&path).await.expect("open while open");
    assert_eq!(second.audit_count().await.expect("count"), 5);
    first.close().await;
    second.close().await;
    let third = Store::open(&path).await.expect("reopen");
    assert_eq!(third.audit_count().await.expect("count"), 5);
    third.close().await;

    assert_eq!(applied_migrations(&path).await, MIGRATIONS);
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("imurun.db");
    std::fs::write(&path, vec![b'x'; 8192]).expect("write garbage");
    let opened = Store::open(&path).await;
    assert!(
        matches!(
            opened,
            Err(StoreError::Open { .. } | StoreError::Migrate(_))
        ),
        "{opened:?}"
    );
}

#[tokio::test]
async fn a_folder_that_cannot_be_created_is_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"not a folder").expect("write");
    let opened = Store::open(blocker.join("imurun.db")).await;
    assert!(
        matches!(opened, Err(StoreError::CreateDir { .. })),
        "{opened:?}"
    );
}

#[tokio::test]
async fn a_new_database_and_its_new_folders_are_readable_by_their_user_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = dir.path().join("home").join("data");
    let path = folder.join("imurun.db");
    let store = Store::open(&path).await.expect("open");
    store.close().await;
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&path), 0o600, "the database file");
    assert_eq!(mode(&folder), 0o700, "its folder");
    assert_eq!(
        mode(&dir.path().join("home")),
        0o700,
        "its parent, made too"
    );
    for entry in std::fs::read_dir(&folder).expect("list") {
        let entry = entry.expect("entry").path();
        assert_eq!(
            mode(&entry) & 0o077,
            0,
            "{} is readable by others",
            entry.display()
        );
    }
}

/// A database made before the pre-fetch existed (migrations 1 and 2 only) keeps every audit
/// row and id when it is opened, and then takes rows with the source `prefetch`.
#[tokio::test]
async fn an_older_audit_table_is_rebuilt_with_its_rows_and_takes_prefetch_rows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("imurun.db");
    let older = dir.path().join("older");
    std::fs::create_dir(&older).expect("folder");
    let migrations = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    for name in ["0001_audit.sql", "0002_sessions.sql"] {
        std::fs::copy(migrations.join(name), older.join(name)).expect("copy migration");
    }
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let mut connection = SqliteConnection::connect_with(&options)
        .await
        .expect("connect");
    let migrator = sqlx::migrate::Migrator::new(older.as_path())
        .await
        .expect("older migrations");
    migrator.run(&mut connection).await.expect("older schema");
    for (id, source) in [(1, "model"), (7, "agent:1"), (9, "user")] {
        sqlx::query(
            "INSERT INTO audit (id, at_ms, mark, tool, source, decision, outcome) \
             VALUES (?, 1, 'G3-tool', 'get_time', ?, 'allow', 'ok')",
        )
        .bind(id)
        .bind(source)
        .execute(&mut connection)
        .await
        .expect("old row");
    }
    // A removed row's id is never handed out again, across the rebuild too.
    sqlx::query("DELETE FROM audit WHERE id = 9")
        .execute(&mut connection)
        .await
        .expect("remove a row");
    let refused = sqlx::query(
        "INSERT INTO audit (at_ms, mark, tool, source, decision, outcome) \
         VALUES (1, 'G3-tool', 'get_time', 'prefetch', 'allow', 'ok')",
    )
    .execute(&mut connection)
    .await;
    assert!(refused.is_err(), "the older table refuses `prefetch`");
    connection.close().await.expect("close");

    let store = Store::open(&path).await.expect("migrate");
    let writer = AuditWriter::spawn(&store).expect("spawn writer");
    writer.record(imurun_core::AuditRecord {
        source: imurun_core::CallSource::Prefetch,
        ..nth_record(0)
    });
    writer
        .shutdown()
        .await
        .expect("the prefetch row is written");
    let rows = store.recent_audit(10).await.expect("rows");
    let mut ids: Vec<(i64, String)> = rows
        .iter()
        .map(|row| (row.id, row.source.to_string()))
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            (1, "model".to_owned()),
            (7, "agent:1".to_owned()),
            (10, "prefetch".to_owned())
        ]
    );
    store.close().await;
    assert_eq!(applied_migrations(&path).await, MIGRATIONS);
}
