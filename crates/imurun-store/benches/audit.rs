//! What recording an audit row costs the caller, and how fast rows reach the disk.
//!
//! The database is a file in a temporary folder with the store's real settings (WAL,
//! `synchronous = FULL`), so "committed" includes the fsync.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use imurun_core::{AuditRecord, AuditSink, CallSource, Decision};
use imurun_store::{AuditWriter, AuditWriterOptions, Store};
use tokio::runtime::Runtime;

/// Records timed between two untimed flushes: half the channel, so `record` never meets a full
/// channel and the figure is the caller's cost alone.
const RECORD_CHUNK: u64 = 2_048;

/// Rows per iteration of the sustained benchmark.
const SUSTAINED_ROWS: u64 = 1_000;

fn record(index: u64) -> AuditRecord {
    AuditRecord {
        at_ms: 1_733_000_000_000,
        mark: "G3-tool",
        tool: "file_read".to_owned(),
        source: CallSource::Model,
        decision: if index.is_multiple_of(3) {
            Decision::Ask
        } else {
            Decision::Allow
        },
        outcome: "ok".to_owned(),
        session_id: Some("01JBENCHSESSION".to_owned()),
    }
}

struct Fixture {
    runtime: Runtime,
    writer: AuditWriter,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let runtime = Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = runtime
        .block_on(Store::open(dir.path().join("bench.db")))
        .expect("open");
    let options = AuditWriterOptions {
        channel_records_max: 2 * usize::try_from(RECORD_CHUNK).expect("fits"),
        ..AuditWriterOptions::default()
    };
    let writer = AuditWriter::spawn_with(&store, options).expect("writer");
    Fixture {
        runtime,
        writer,
        _dir: dir,
    }
}

fn record_cost(c: &mut Criterion) {
    let fixture = fixture();
    c.bench_function("audit/record (caller side)", |b| {
        b.iter_custom(|iters| {
            let mut measured = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let chunk = left.min(RECORD_CHUNK);
                let records: Vec<_> = (0..chunk).map(record).collect();
                let start = Instant::now();
                for audit_record in records {
                    fixture.writer.record(black_box(audit_record));
                }
                measured += start.elapsed();
                fixture
                    .runtime
                    .block_on(fixture.writer.flush())
                    .expect("flush");
                left -= chunk;
            }
            measured
        });
    });
}

fn committed_rows(c: &mut Criterion) {
    let fixture = fixture();
    let mut group = c.benchmark_group("audit/committed");
    for rows in [1, SUSTAINED_ROWS] {
        group.throughput(Throughput::Elements(rows));
        group.bench_function(format!("{rows} rows recorded then flushed"), |b| {
            b.iter_batched(
                || (0..rows).map(record).collect::<Vec<_>>(),
                |records| {
                    for audit_record in records {
                        fixture.writer.record(audit_record);
                    }
                    fixture
                        .runtime
                        .block_on(fixture.writer.flush())
                        .expect("flush");
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5));
    targets = record_cost, committed_rows
}
criterion_main!(benches);
