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

/// A fresh, empty, migrated store on the engine this test binary runs on (`crate::BACKEND`):
/// a SQLite file in a temporary folder, or a PostgreSQL database of its own on the test
/// server. It reads as the store itself; it also reopens the same database and reaches it
/// behind the store's back.
pub(crate) struct TestStore {
    store: imurun_store::Store,
    url: String,
    _place: Place,
}

/// What holds the database while the test runs.
enum Place {
    Folder(#[expect(dead_code, reason = "held for its Drop")] tempfile::TempDir),
    Database(#[expect(dead_code, reason = "held for its Drop")] imurun_testkit::TestDatabase),
}

impl std::ops::Deref for TestStore {
    type Target = imurun_store::Store;

    fn deref(&self) -> &imurun_store::Store {
        &self.store
    }
}

pub(crate) async fn fresh() -> TestStore {
    let (url, place) = match crate::BACKEND {
        imurun_store::Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = TestStore::sqlite_url(&dir.path().join("imurun.db"));
            (url, Place::Folder(dir))
        }
        imurun_store::Backend::Postgres => {
            let database = imurun_testkit::TestDatabase::create();
            (database.url().to_owned(), Place::Database(database))
        }
    };
    let store = imurun_store::Store::open_url(&url).await.expect("open");
    assert_eq!(store.backend(), crate::BACKEND);
    TestStore {
        store,
        url,
        _place: place,
    }
}

impl TestStore {
    /// The URL of the SQLite file at `path`.
    pub(crate) fn sqlite_url(path: &std::path::Path) -> String {
        format!("sqlite://{}", path.display())
    }

    /// The database's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The same database opened again, as a restarted host would.
    pub(crate) async fn reopen(&self) -> imurun_store::Store {
        imurun_store::Store::open_url(self.url())
            .await
            .expect("reopen")
    }

    /// A connection of its own to the database, behind the store's back: to count rows the
    /// API does not count, or to plant rows the API would refuse.
    pub(crate) async fn raw(&self) -> sqlx::AnyConnection {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        sqlx::AnyConnection::connect(&self.url)
            .await
            .expect("connect behind the store's back")
    }

    /// Runs one statement that returns one integer (or none: 0) behind the store's back.
    pub(crate) async fn raw_scalar(&self, sql: &'static str) -> i64 {
        use sqlx::Connection;
        let mut connection = self.raw().await;
        let value = sqlx::query_scalar(sql)
            .fetch_optional(&mut connection)
            .await
            .expect(sql)
            .unwrap_or(0);
        connection.close().await.expect("close");
        value
    }

    /// Runs statements behind the store's back.
    pub(crate) async fn raw_execute(&self, statements: &[&'static str]) {
        use sqlx::Connection;
        let mut connection = self.raw().await;
        for sql in statements {
            sqlx::query(*sql).execute(&mut connection).await.expect(sql);
        }
        connection.close().await.expect("close");
    }
}
