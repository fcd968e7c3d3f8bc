//! An append that returned survives a SIGKILL right after it: the child process appends messages
//! and reports each one on standard output once `append_message` has returned; the parent reads
//! the reports, kills the child mid-stream, reopens the file and finds every reported message.
//!
//! The child is this very test binary run again, selected by environment variables (see
//! [`child_process_entry`]), as in `durability.rs`.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use imurun_store::{Role, Store, TRANSCRIPT_READ_ROWS_MAX};

use crate::child::KillOnDrop;

const CHILD_DB: &str = "IMURUN_STORE_TEST_TRANSCRIPT_CHILD_DB";
/// The child's test, by its full name in this binary.
const CHILD_TEST: &str = "transcript_durability::child_process_entry";
const SESSION_ID: &str = "durable";

/// How long a child lives at most if nobody kills it, so a failed test leaves no process behind.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);
/// Most messages the child appends; the parent kills it long before, and can read them all back
/// in a few pages.
const CHILD_MESSAGES_MAX: i64 = 5_000;

/// The content of message `seq`, so the parent can tell each stored message is the one written.
fn content(seq: i64) -> String {
    format!(
        "message {seq}: {}",
        "x".repeat(usize::try_from(seq % 97).unwrap_or(0))
    )
}

/// Not a test of its own: the entry point of the child process. Run without its environment
/// variable (as in every normal run) it does nothing.
#[test]
fn child_process_entry() {
    let Ok(path) = std::env::var(CHILD_DB) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = Store::open(&path).await.expect("open");
        store
            .create_session(Some(SESSION_ID), None)
            .await
            .expect("create");
        let deadline = Instant::now() + CHILD_LIFETIME;
        for seq in 1..=CHILD_MESSAGES_MAX {
            let role = if seq % 2 == 1 {
                Role::User
            } else {
                Role::Assistant
            };
            let message = store
                .append_message(SESSION_ID, role, &content(seq))
                .await
                .expect("append");
            assert_eq!(message.seq, seq);
            // `println!` flushes at the newline (standard output is line-buffered), so the parent
            // sees the report as soon as the append has returned.
            println!("appended {seq}");
            if Instant::now() >= deadline {
                break;
            }
        }
        tokio::time::sleep_until(deadline.into()).await;
    });
}

/// Starts a child appending to `db`, reads its reports until it has reported `reports` appends,
/// kills it with SIGKILL at once, and returns the last number it reported.
fn append_then_kill(db: &Path, reports: i64) -> i64 {
    let exe = std::env::current_exe().expect("test binary path");
    let child = Command::new(exe)
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().expect("piped stdout");
    // libtest prints its own text around the reports, on the first line too
    // ("test transcript_durability::child_process_entry ... appended 1").
    let reported: Vec<i64> = BufReader::new(stdout)
        .lines()
        .map(|line| line.expect("read child stdout"))
        .filter_map(|line| {
            line.rsplit_once("appended ")
                .map(|(_, seq)| seq.trim().parse().expect("reported number"))
        })
        .take(usize::try_from(reports).expect("fits"))
        .collect();
    // Killed while it is still appending: no destructor, no clean close, maybe mid-commit.
    child.0.kill().expect("kill child");
    let status = child.0.wait().expect("wait child");
    assert_eq!(
        status.signal(),
        Some(9),
        "the child must die of SIGKILL, not exit: {status}"
    );
    let expected: Vec<i64> = (1..=reports).collect();
    assert_eq!(reported, expected, "the child's reports");
    reports
}

/// Reopens the file and returns its transcript's numbers, checking each message's role and
/// content against what the child wrote.
fn reopen_and_read(db: &Path) -> Vec<i64> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = Store::open(db).await.expect("reopen after kill");
        let mut seqs = Vec::new();
        loop {
            let after_seq = seqs.last().copied().unwrap_or(0);
            let page = store
                .transcript(SESSION_ID, after_seq, TRANSCRIPT_READ_ROWS_MAX)
                .await
                .expect("read");
            if page.is_empty() {
                break;
            }
            for message in page {
                let role = if message.seq % 2 == 1 {
                    Role::User
                } else {
                    Role::Assistant
                };
                assert_eq!(message.role, role, "message {}", message.seq);
                assert_eq!(message.content, content(message.seq));
                seqs.push(message.seq);
            }
        }
        store.close().await;
        seqs
    })
}

#[test]
fn every_append_that_returned_survives_a_sigkill() {
    for reports in [1, 40] {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("imurun.db");
        let last_reported = append_then_kill(&db, reports);
        let seqs = reopen_and_read(&db);
        assert!(
            seqs.len() >= usize::try_from(last_reported).expect("fits"),
            "{} messages after the kill, {last_reported} were reported",
            seqs.len()
        );
        let expected: Vec<i64> = (1..=i64::try_from(seqs.len()).expect("fits")).collect();
        assert_eq!(seqs, expected, "the transcript must be 1..=n with no gap");
    }
}
