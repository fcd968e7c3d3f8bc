//! Opening creates what is missing and migrates; opening again changes nothing.

use imurun_core::AuditSink;
use imurun_store::{AuditWriter, Store, StoreError};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use crate::support::nth_record;

/// The migration files under `migrations/sqlite/`.
const MIGRATIONS: i64 = 2;

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
