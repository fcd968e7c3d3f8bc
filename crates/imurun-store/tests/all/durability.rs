//! A process killed with SIGKILL loses no committed audit row, and leaves no torn one.
//!
//! The tests run this very test binary again as a child (selected by environment variables, see
//! [`child_process_entry`]); the child commits rows, says so on standard output, and is killed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use imurun_core::AuditSink;
use imurun_store::{AUDIT_READ_ROWS_MAX, AuditWriter, Store};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use crate::child::KillOnDrop;
use crate::support::{check_row, nth_record};

const CHILD_DB: &str = "IMURUN_STORE_TEST_CHILD_DB";
const CHILD_ROWS: &str = "IMURUN_STORE_TEST_CHILD_ROWS";
const CHILD_MODE: &str = "IMURUN_STORE_TEST_CHILD_MODE";
/// The child's test, by its full name in this binary.
const CHILD_TEST: &str = "durability::child_process_entry";

/// How long a child lives at most if nobody kills it, so a failed test leaves no process behind.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);
/// Rows the child writes after its report, at most; with the reported rows this stays below
/// `AUDIT_READ_ROWS_MAX`, so the parent can read every row back.
const CHILD_EXTRA_ROWS_MAX: u64 = 8_000;
/// The keep-writing child flushes after this many rows, so commits follow each other closely.
const CHILD_FLUSH_EVERY_ROWS: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChildMode {
    /// Commit, report, then idle until killed.
    Wait,
    /// Commit, report, then keep committing small batches until killed.
    KeepWriting,
}

impl ChildMode {
    fn name(self) -> &'static str {
        match self {
            ChildMode::Wait => "wait",
            ChildMode::KeepWriting => "keep-writing",
        }
    }
}

/// Not a test of its own: the entry point of the child process that the kill tests start. Run
/// without its environment variables (as in every normal run) it does nothing.
#[test]
fn child_process_entry() {
    let Ok(path) = std::env::var(CHILD_DB) else {
        return;
    };
    let rows: u64 = std::env::var(CHILD_ROWS)
        .expect("rows")
        .parse()
        .expect("rows number");
    let mode = std::env::var(CHILD_MODE).expect("mode");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = Store::open(&path).await.expect("open");
        let writer = AuditWriter::spawn(&store).expect("spawn writer");
        for index in 0..rows {
            writer.record(nth_record(index));
        }
        writer.flush().await.expect("flush");
        println!("committed {rows}");
        let deadline = Instant::now() + CHILD_LIFETIME;
        if mode == ChildMode::KeepWriting.name() {
            for index in rows..rows + CHILD_EXTRA_ROWS_MAX {
                writer.record(nth_record(index));
                if index.is_multiple_of(CHILD_FLUSH_EVERY_ROWS) {
                    writer.flush().await.expect("flush");
                }
                if Instant::now() >= deadline {
                    break;
                }
            }
        }
        tokio::time::sleep_until(deadline.into()).await;
    });
}

/// Starts a child that commits `rows` rows to `db`, waits for its report, lets it run for
/// `after_report`, kills it with SIGKILL and returns the number it reported.
fn commit_then_kill(db: &Path, rows: u64, mode: ChildMode, after_report: Duration) -> u64 {
    let exe = std::env::current_exe().expect("test binary path");
    let child = Command::new(exe)
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, db)
        .env(CHILD_ROWS, rows.to_string())
        .env(CHILD_MODE, mode.name())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().expect("piped stdout");
    // libtest prints its own text around the child's report, on the same line too
    // ("test durability::child_process_entry ... committed 500").
    let reported = BufReader::new(stdout)
        .lines()
        .map(|line| line.expect("read child stdout"))
        .find_map(|line| {
            line.rsplit_once("committed ")
                .map(|(_, rows)| rows.trim().to_owned())
        })
        .expect("the child exited before reporting a commit");
    std::thread::sleep(after_report);

    // `Child::kill` sends SIGKILL on Unix: no destructor, no flush, no clean close.
    child.0.kill().expect("kill child");
    let status = child.0.wait().expect("wait child");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(9),
        "the child must die of SIGKILL, not exit: {status}"
    );
    reported.parse().expect("reported row count")
}

/// Reopens the database after the kill and checks it: `PRAGMA integrity_check` passes, and the
/// rows are exactly the first `count` records, field for field. Returns `count`.
fn reopen_and_check(db: &Path) -> u64 {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = Store::open(db).await.expect("reopen after kill");
        let count = store.audit_count().await.expect("count");
        assert!(
            count <= u64::from(AUDIT_READ_ROWS_MAX),
            "too many rows to read back: {count}"
        );
        let rows = store.recent_audit(AUDIT_READ_ROWS_MAX).await.expect("read");
        assert_eq!(u64::try_from(rows.len()).expect("fits"), count);
        for (index, row) in (0u64..).zip(&rows) {
            assert_eq!(
                row.id,
                i64::try_from(index + 1).expect("fits"),
                "ids must have no gap"
            );
            check_row(row, &nth_record(index));
        }
        store.close().await;

        let options = SqliteConnectOptions::new().filename(db);
        let mut connection = SqliteConnection::connect_with(&options)
            .await
            .expect("connect");
        let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(&mut connection)
            .await
            .expect("integrity check");
        assert_eq!(integrity, "ok");
        connection.close().await.expect("close");
        count
    })
}

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("imurun.db");
    (dir, db)
}

#[test]
fn a_killed_process_keeps_exactly_the_rows_it_committed() {
    for rows in [1, 500] {
        let (_dir, db) = temp_db();
        let reported = commit_then_kill(&db, rows, ChildMode::Wait, Duration::ZERO);
        assert_eq!(reported, rows);
        assert_eq!(reopen_and_check(&db), rows, "rows after the kill");
    }
}

/// The kill lands while the child is still committing: every reported row is there, and what
/// follows is a clean prefix of what it went on writing, with no torn or garbage row.
#[test]
fn a_kill_in_the_middle_of_writing_keeps_every_committed_row_and_tears_none() {
    for after_report_ms in [0, 20, 80] {
        let (_dir, db) = temp_db();
        let reported = commit_then_kill(
            &db,
            200,
            ChildMode::KeepWriting,
            Duration::from_millis(after_report_ms),
        );
        let count = reopen_and_check(&db);
        assert!(
            count >= reported,
            "{count} rows after the kill, {reported} were committed"
        );
    }
}
