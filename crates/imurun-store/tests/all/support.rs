//! Records to write and the one place rows are compared with them.

use imurun_core::{AuditRecord, CallSource, Decision};
use imurun_store::AuditRow;

/// A record that depends only on `index`, so a reader can tell whether a row is exactly the one
/// that was written in that position.
pub(crate) fn nth_record(index: u64) -> AuditRecord {
    let sources = [
        CallSource::Model,
        CallSource::Agent(1),
        CallSource::Agent(2),
        CallSource::User,
    ];
    let decisions = [Decision::Allow, Decision::Ask, Decision::Deny];
    let index_usize = usize::try_from(index).expect("index fits usize");
    AuditRecord {
        at_ms: 1_700_000_000_000 + i64::try_from(index).expect("index fits i64"),
        mark: "G3-tool",
        tool: format!("tool-{index}"),
        source: sources[index_usize % sources.len()],
        decision: decisions[index_usize % decisions.len()],
        outcome: format!("ok {index}"),
        session_id: (!index.is_multiple_of(5)).then(|| format!("session-{}", index % 7)),
    }
}

/// Asserts that `row` holds every field of `record`.
pub(crate) fn check_row(row: &AuditRow, record: &AuditRecord) {
    let got = (
        row.at_ms,
        row.mark.as_str(),
        row.tool.as_str(),
        row.source,
        row.decision,
        row.outcome.as_str(),
        row.session_id.as_deref(),
    );
    let expected = (
        record.at_ms,
        record.mark,
        record.tool.as_str(),
        record.source,
        record.decision,
        record.outcome.as_str(),
        record.session_id.as_deref(),
    );
    assert_eq!(got, expected, "row {}", row.id);
}

/// A store in a file of a fresh temporary folder, with the store's real settings. Keep the folder
/// alive as long as the store.
pub(crate) async fn file_store() -> (tempfile::TempDir, std::path::PathBuf, imurun_store::Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("imurun.db");
    let store = imurun_store::Store::open(&path).await.expect("open");
    (dir, path, store)
}

/// Runs one statement on the database file behind the store's back: to count rows the API does
/// not count, or to plant rows the API would refuse.
pub(crate) async fn raw_scalar(path: &std::path::Path, sql: &'static str) -> i64 {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    let mut connection = sqlx::sqlite::SqliteConnection::connect_with(&options)
        .await
        .expect("connect");
    let value = sqlx::query_scalar(sql)
        .fetch_optional(&mut connection)
        .await
        .expect(sql)
        .unwrap_or(0);
    connection.close().await.expect("close");
    value
}

/// Kills the child when a test fails before it does.
pub(crate) struct KillOnDrop(pub(crate) std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // The child may already be dead and reaped; either way there is nothing left to do.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
