//! Privacy: argument values never reach the audit database. Tools run through the executor
//! with a canary secret in a file body, a shell command and a path, audited by the real
//! SQLite writer; every file in the database folder is then scanned byte for byte.

use std::fs;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{AuditSink, NullEvents};
use imurun_exec::{Caller, Outcome};
use imurun_policy::Mode;
use imurun_store::{AuditWriter, Store};
use imurun_testkit::{TempWorkspace, call};
use serde_json::json;

use crate::support::executor;

const CANARY: &str = "canary-5ecret-d41d8cd98f";

/// Every file under `folder`, and whether any holds `needle`.
fn files_holding(folder: &std::path::Path, needle: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut scanned = Vec::new();
    let mut holding = Vec::new();
    for entry in fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        let bytes = fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if bytes.windows(needle.len()).any(|window| window == needle) {
            holding.push(name.clone());
        }
        scanned.push(name);
    }
    scanned.sort();
    (scanned, holding)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_database_never_holds_argument_values() {
    let ws = TempWorkspace::new();
    let db_dir = tempfile::tempdir().unwrap();
    let store = Store::open(db_dir.path().join("imurun.db")).await.unwrap();
    let writer = Arc::new(AuditWriter::spawn(&store).unwrap());
    let audit: Arc<dyn AuditSink> = writer.clone();
    let executor = executor(
        &ws,
        Mode::AllowAll,
        Arc::new(NullEvents),
        audit,
        Duration::from_secs(5),
    );
    let caller = Caller::model(Some("session-1".into()), imurun_core::StopFlag::new());

    let calls = [
        (
            "file_write",
            json!({"path": format!("{CANARY}/body.txt"), "content": CANARY}),
            Outcome::Ok,
        ),
        (
            "file_read",
            json!({"path": format!("{CANARY}/body.txt")}),
            Outcome::Ok,
        ),
        ("list_dir", json!({"path": CANARY}), Outcome::Ok),
        (
            "shell",
            json!({"command": format!("echo {CANARY}")}),
            Outcome::Ok,
        ),
        (
            "shell",
            json!({"command": format!("exit 1 # {CANARY}")}),
            Outcome::Ok,
        ),
        (
            "file_read",
            json!({"path": format!("../{CANARY}")}),
            Outcome::Denied(imurun_core::DenyReason::Policy),
        ),
        (
            "shell",
            json!({"command": format!("rm -rf / {CANARY}")}),
            Outcome::Denied(imurun_core::DenyReason::Policy),
        ),
        (
            "file_read",
            json!({"path": format!("{CANARY}/missing")}),
            Outcome::Failed,
        ),
        (
            "make_dir",
            json!({"path": 5, "note": CANARY}),
            Outcome::InvalidArguments,
        ),
        (
            "delete",
            json!({"path": format!("{CANARY}/body.txt")}),
            Outcome::Ok,
        ),
    ];
    for (name, args, outcome) in &calls {
        let execution = executor.execute(&call(name, args.clone()), &caller).await;
        assert_eq!(
            execution.outcome, *outcome,
            "{name}: {}",
            execution.output.text
        );
    }
    writer.flush().await.unwrap();
    assert_eq!(store.audit_count().await.unwrap(), calls.len() as u64);
    let rows = store.recent_audit(100).await.unwrap();
    assert!(rows.iter().all(|row| row.mark == "G3-tool"));

    // The canary did reach places it belongs: the workspace and the tool results.
    assert!(ws.root().join(CANARY).is_dir());

    let (scanned, holding) = files_holding(db_dir.path(), CANARY.as_bytes());
    assert!(
        scanned.iter().any(|name| name == "imurun.db"),
        "{scanned:?}"
    );
    assert!(holding.is_empty(), "the canary is in {holding:?}");

    // And after the writer and the store are closed (WAL checkpointed into the database).
    writer.shutdown().await.unwrap();
    store.close().await;
    let (_, holding) = files_holding(db_dir.path(), CANARY.as_bytes());
    assert!(
        holding.is_empty(),
        "the canary is in {holding:?} after closing"
    );
}
