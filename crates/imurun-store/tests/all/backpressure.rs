//! A channel far smaller than the burst loses nothing, whatever thread or runtime records.

use std::sync::Arc;
use std::time::Duration;

use imurun_core::AuditSink;
use imurun_store::{AuditWriter, AuditWriterOptions};

use crate::support::{check_row, nth_record};

const PRODUCERS: u64 = 4;
const RECORDS_PER_PRODUCER: u64 = 1_000;

/// Where the producers run.
#[derive(Debug, Clone, Copy)]
enum Caller {
    /// Tasks on a multi-threaded tokio runtime: the wait goes through `block_in_place`.
    MultiThreadRuntime,
    /// Tasks on a current-thread tokio runtime: the wait blocks the runtime's only thread.
    CurrentThreadRuntime,
    /// Plain threads with no runtime at all.
    PlainThreads,
}

fn tiny_channel() -> AuditWriterOptions {
    AuditWriterOptions {
        channel_records_max: 4,
        batch_records_max: 2,
        full_wait_ms: 30_000,
    }
}

fn produce(writer: &Arc<AuditWriter>, producer: u64) {
    for index in 0..RECORDS_PER_PRODUCER {
        writer.record(nth_record(producer * RECORDS_PER_PRODUCER + index));
    }
}

fn run_producers(caller: Caller, writer: &Arc<AuditWriter>) {
    match caller {
        Caller::MultiThreadRuntime | Caller::CurrentThreadRuntime => {
            let mut builder = match caller {
                Caller::MultiThreadRuntime => tokio::runtime::Builder::new_multi_thread(),
                _ => tokio::runtime::Builder::new_current_thread(),
            };
            let runtime = builder
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let tasks: Vec<_> = (0..PRODUCERS)
                    .map(|producer| {
                        let writer = Arc::clone(writer);
                        tokio::spawn(async move { produce(&writer, producer) })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("producer task");
                }
            });
        }
        Caller::PlainThreads => {
            std::thread::scope(|scope| {
                for producer in 0..PRODUCERS {
                    scope.spawn(move || produce(writer, producer));
                }
            });
        }
    }
}

#[test]
fn a_burst_far_past_the_channel_capacity_loses_no_record() {
    for caller in [
        Caller::MultiThreadRuntime,
        Caller::CurrentThreadRuntime,
        Caller::PlainThreads,
    ] {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let store = runtime.block_on(crate::support::fresh());
        let writer = Arc::new(AuditWriter::spawn_with(&store, tiny_channel()).expect("spawn"));

        run_producers(caller, &writer);
        runtime
            .block_on(writer.flush())
            .expect("flush reports no loss");

        let total = PRODUCERS * RECORDS_PER_PRODUCER;
        let stats = writer.stats();
        assert_eq!(
            (stats.accepted, stats.committed, stats.lost),
            (total, total, 0),
            "{caller:?}"
        );
        assert!(
            stats.full_waits > 0,
            "{caller:?}: the burst never filled the channel"
        );
        assert_eq!(
            runtime.block_on(store.audit_count()).expect("count"),
            total,
            "{caller:?}"
        );

        // Producers interleave, so check membership rather than order: every row is one of the
        // records, field for field, and no record appears twice.
        let rows = runtime
            .block_on(store.recent_audit(u32::MAX))
            .expect("read");
        let mut seen = vec![false; usize::try_from(total).expect("fits")];
        for row in &rows {
            let index: u64 = row
                .tool
                .trim_start_matches("tool-")
                .parse()
                .expect("tool index");
            check_row(row, &nth_record(index));
            let slot = &mut seen[usize::try_from(index).expect("fits")];
            assert!(!*slot, "{caller:?}: record {index} committed twice");
            *slot = true;
        }
        runtime.block_on(writer.shutdown()).expect("shutdown");
        runtime.shutdown_timeout(Duration::from_secs(5));
    }
}
