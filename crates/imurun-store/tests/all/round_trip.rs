//! Records go in through the writer and come back out of the store, in order, field for field.

use imurun_core::{AuditRecord, AuditSink, CallSource, Decision};
use imurun_store::{AUDIT_READ_ROWS_MAX, AuditWriter, Store, StoreError};

use crate::support::{check_row, nth_record};

/// Writes `records` through a fresh writer, flushes, and checks that the last `read_limit` rows
/// are the last `read_limit` records, oldest first.
async fn check(store: &Store, records: &[AuditRecord], read_limit: u32) {
    let writer = AuditWriter::spawn(store).expect("spawn writer");
    for record in records {
        writer.record(record.clone());
    }
    writer.flush().await.expect("flush");
    let count = u64::try_from(records.len()).expect("fits");
    assert_eq!(store.audit_count().await.expect("count"), count);

    let rows = store.recent_audit(read_limit).await.expect("read");
    let expected_len = records
        .len()
        .min(read_limit.min(AUDIT_READ_ROWS_MAX) as usize);
    assert_eq!(rows.len(), expected_len);
    let expected = &records[records.len() - expected_len..];
    for (row, record) in rows.iter().zip(expected) {
        check_row(row, record);
    }
    assert!(
        rows.windows(2).all(|pair| pair[0].id < pair[1].id),
        "ids must increase"
    );
    writer.shutdown().await.expect("shutdown");
}

fn varied_records() -> Vec<AuditRecord> {
    let record = |tool: &str, source, decision, outcome: &str, session: Option<&str>| AuditRecord {
        at_ms: 1_733_000_000_123,
        mark: "G3-tool",
        tool: tool.to_owned(),
        source,
        decision,
        outcome: outcome.to_owned(),
        session_id: session.map(str::to_owned),
    };
    vec![
        record(
            "file_read",
            CallSource::Model,
            Decision::Allow,
            "ok",
            Some("s-1"),
        ),
        record(
            "shell",
            CallSource::Agent(1),
            Decision::Ask,
            "denied: timeout",
            Some("s-1"),
        ),
        record(
            "delete",
            CallSource::Agent(2),
            Decision::Deny,
            "denied: outside the workspace",
            None,
        ),
        record(
            "file_write",
            CallSource::User,
            Decision::Allow,
            "failed",
            None,
        ),
        record(
            "nope",
            CallSource::Model,
            Decision::Deny,
            "unknown tool",
            Some(""),
        ),
        record(
            "get_weather",
            CallSource::Prefetch,
            Decision::Allow,
            "failed",
            Some("s-3"),
        ),
        record(
            "list_dir",
            CallSource::User,
            Decision::Allow,
            "ok: 日本語 ✓ 'quotes' \"and\" ;--",
            Some("s-2"),
        ),
        AuditRecord {
            at_ms: i64::MIN,
            ..nth_record(1)
        },
        AuditRecord {
            at_ms: i64::MAX,
            ..nth_record(2)
        },
    ]
}

#[tokio::test]
async fn every_field_reads_back_in_order_from_memory() {
    let store = crate::support::fresh().await;
    check(&store, &varied_records(), 100).await;
}

#[tokio::test]
async fn every_field_reads_back_in_order_from_the_database() {
    let store = crate::support::fresh().await;
    check(&store, &varied_records(), 100).await;
}

#[tokio::test]
async fn recent_audit_returns_the_newest_rows_oldest_first() {
    let store = crate::support::fresh().await;
    let records: Vec<_> = (0..10).map(nth_record).collect();
    check(&store, &records, 3).await;
}

#[tokio::test]
async fn recent_audit_reads_at_most_the_stated_maximum() {
    let store = crate::support::fresh().await;
    let records: Vec<_> = (0..u64::from(AUDIT_READ_ROWS_MAX) + 5)
        .map(nth_record)
        .collect();
    check(&store, &records, u32::MAX).await;
}

#[tokio::test]
async fn an_empty_log_reads_as_empty() {
    let store = crate::support::fresh().await;
    assert_eq!(store.audit_count().await.expect("count"), 0);
    assert!(store.recent_audit(10).await.expect("read").is_empty());
}

/// A record that arrives after shutdown cannot be committed; it must be counted and reported,
/// never dropped in silence.
#[tokio::test]
async fn records_after_shutdown_are_counted_and_reported_as_lost() {
    let store = crate::support::fresh().await;
    let writer = AuditWriter::spawn(&store).expect("spawn writer");
    for index in 0..3 {
        writer.record(nth_record(index));
    }
    writer
        .shutdown()
        .await
        .expect("shutdown commits what was recorded");
    assert_eq!(store.audit_count().await.expect("count"), 3);

    writer.record(nth_record(3));
    let stats = writer.stats();
    assert_eq!((stats.accepted, stats.committed, stats.lost), (3, 3, 1));
    assert!(matches!(
        writer.flush().await,
        Err(StoreError::WriterStopped)
    ));
    assert!(matches!(
        writer.shutdown().await,
        Err(StoreError::AuditRowsLost { rows: 1 })
    ));
    assert!(writer.shutdown().await.is_ok(), "a loss is reported once");
    assert_eq!(store.audit_count().await.expect("count"), 3);
}

/// Dropping the writer without a shutdown still commits what it had: the thread drains the
/// channel once the last sender is gone.
#[tokio::test]
async fn dropping_the_writer_drains_it() {
    let store = crate::support::fresh().await;
    let writer = AuditWriter::spawn(&store).expect("spawn writer");
    for index in 0..50 {
        writer.record(nth_record(index));
    }
    drop(writer);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.audit_count().await.expect("count") < 50 {
        assert!(
            std::time::Instant::now() < deadline,
            "the dropped writer did not drain"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The audit keeps every row, even one whose text holds a NUL (which PostgreSQL's text cannot
/// hold): the NUL reads back as U+FFFD, the rest as written.
#[tokio::test]
async fn an_audit_row_with_a_nul_is_kept_with_a_replacement_character() {
    let store = crate::support::fresh().await;
    let record = AuditRecord {
        tool: "odd\0tool".to_owned(),
        outcome: "failed: \0".to_owned(),
        ..nth_record(1)
    };
    let writer = AuditWriter::spawn(&store).expect("spawn writer");
    writer.record(record);
    writer.flush().await.expect("flush");
    let rows = store.recent_audit(10).await.expect("read");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tool, "odd\u{FFFD}tool");
    assert_eq!(rows[0].outcome, "failed: \u{FFFD}");
    writer.shutdown().await.expect("shutdown");
}
