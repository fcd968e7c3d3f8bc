//! The audit writer: an `AuditSink` that queues records on a bounded channel and commits them in
//! batches on a thread of its own, so that recording never waits for the disk.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use imurun_core::{AuditRecord, AuditSink};
use sqlx::AnyConnection;
use sqlx::Connection;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

use crate::audit::insert_audit_batch;
use crate::{Store, StoreError};

/// How many times the writer tries to commit one batch before it counts the batch as lost. The
/// busy timeout already covers a competing writer; these attempts ride out a connection that
/// broke or a disk that was briefly full.
const WRITE_ATTEMPTS_MAX: u32 = 5;

/// The pause after the first failed attempt; it doubles after each one (0.1 + 0.2 + 0.4 + 0.8 s).
const RETRY_PAUSE_FIRST_MS: u64 = 100;

/// Sizes and waits of an [`AuditWriter`]. Every field is a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditWriterOptions {
    /// Records (and pending flushes) the channel holds before [`AuditSink::record`] has to wait.
    /// At a few hundred bytes a record, the default holds about a megabyte.
    pub channel_records_max: usize,
    /// Most records committed in one transaction. A bigger batch shares one fsync among more rows
    /// but holds SQLite's write lock longer.
    pub batch_records_max: usize,
    /// How long [`AuditSink::record`] waits for room in a full channel before it counts the
    /// record as lost. Longer than the busy timeout, so a merely contended database never loses
    /// a row; short enough that a dead disk cannot hang the agent forever.
    pub full_wait_ms: u64,
}

impl Default for AuditWriterOptions {
    fn default() -> Self {
        AuditWriterOptions {
            channel_records_max: 4_096,
            batch_records_max: 512,
            full_wait_ms: 10_000,
        }
    }
}

/// Counters of an [`AuditWriter`] since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditStats {
    /// Records put on the channel.
    pub accepted: u64,
    /// Records committed to the database.
    pub committed: u64,
    /// Records that will never be committed: the channel stayed full past `full_wait_ms`, their
    /// batch failed every write attempt, or they were recorded after the writer stopped.
    pub lost: u64,
    /// Times [`AuditSink::record`] found the channel full and had to wait.
    pub full_waits: u64,
}

/// Writes audit records to the store off the caller's path.
///
/// `record` puts the record on a bounded channel and returns at once; a thread of the writer's
/// own, with its own small tokio runtime and its own SQLite connection, drains the channel and
/// commits what it finds (up to `batch_records_max` records) in one transaction. [`flush`] waits
/// until everything recorded before it is committed; [`shutdown`] drains the channel and stops.
/// Dropping the writer without `shutdown` lets the thread drain and stop in the background.
///
/// **When the channel is full**, the writer is at least `channel_records_max` records behind,
/// which at human-paced tool calls means the disk has stalled. Dropping the record would break
/// the audit silently, and an unbounded overflow would break the bound on memory, so `record`
/// applies back-pressure instead: it waits, first in line, for room in the channel, for at most
/// `full_wait_ms`. Waiting cannot deadlock, because the writer runs on its own thread and does
/// not need the caller's runtime to make progress. On a multi-threaded tokio runtime the wait runs
/// inside `block_in_place`, so the runtime moves the worker's other tasks elsewhere; on a
/// current-thread runtime, or a plain thread, it blocks that thread for the same bounded time. A
/// record still without room after the wait is counted in [`AuditStats::lost`], reported on
/// standard error, and reported again by the next [`flush`] as [`StoreError::AuditRowsLost`].
///
/// [`flush`]: AuditWriter::flush
/// [`shutdown`]: AuditWriter::shutdown
#[derive(Debug)]
pub struct AuditWriter {
    sender: mpsc::Sender<Command>,
    counters: Arc<Counters>,
    /// `counters.lost` when a flush last reported, so each loss is reported once.
    lost_reported: AtomicU64,
    full_wait: Duration,
}

impl AuditWriter {
    /// Starts a writer with the default options.
    pub fn spawn(store: &Store) -> Result<AuditWriter, StoreError> {
        AuditWriter::spawn_with(store, AuditWriterOptions::default())
    }

    /// Starts a writer. It opens its own connection to the store's database on first use. A
    /// zero channel or batch size is taken as one.
    pub fn spawn_with(
        store: &Store,
        options: AuditWriterOptions,
    ) -> Result<AuditWriter, StoreError> {
        // A zero-sized channel or batch would make no progress (and tokio refuses a zero-sized
        // channel), so both are at least one.
        let channel_records_max = options.channel_records_max.max(1);
        let batch_records_max = options.batch_records_max.max(1);
        let (sender, receiver) = mpsc::channel(channel_records_max);
        let counters = Arc::new(Counters::default());
        let task = WriterTask {
            store: store.clone(),
            connection: None,
            receiver,
            counters: Arc::clone(&counters),
            batch_records_max,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            // Time for the retry pauses; I/O for PostgreSQL's sockets.
            .enable_time()
            .enable_io()
            .build()
            .map_err(StoreError::WriterStart)?;
        thread::Builder::new()
            .name("imurun-audit".to_owned())
            .spawn(move || runtime.block_on(task.run()))
            .map_err(StoreError::WriterStart)?;
        Ok(AuditWriter {
            sender,
            counters,
            lost_reported: AtomicU64::new(0),
            full_wait: Duration::from_millis(options.full_wait_ms),
        })
    }

    /// Returns once every record recorded before this call is committed, or reports the records
    /// lost since the previous flush.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (done, committed) = oneshot::channel();
        self.sender
            .send(Command::Flush(done))
            .await
            .map_err(|_| StoreError::WriterStopped)?;
        committed.await.map_err(|_| StoreError::WriterStopped)?;
        self.report_lost()
    }

    /// Commits everything recorded so far, closes the writer's connection and stops its thread.
    /// Records recorded afterwards are counted as lost. A second call returns at once.
    pub async fn shutdown(&self) -> Result<(), StoreError> {
        let (done, stopped) = oneshot::channel();
        if self.sender.send(Command::Shutdown(done)).await.is_ok() {
            stopped.await.map_err(|_| StoreError::WriterStopped)?;
        }
        self.report_lost()
    }

    /// The writer's counters. Reading them does not reset them.
    pub fn stats(&self) -> AuditStats {
        AuditStats {
            accepted: self.counters.accepted.load(Ordering::Relaxed),
            committed: self.counters.committed.load(Ordering::Relaxed),
            lost: self.counters.lost.load(Ordering::Relaxed),
            full_waits: self.counters.full_waits.load(Ordering::Relaxed),
        }
    }

    fn report_lost(&self) -> Result<(), StoreError> {
        let lost = self.counters.lost.load(Ordering::SeqCst);
        let reported = self.lost_reported.swap(lost, Ordering::SeqCst);
        match lost.saturating_sub(reported) {
            0 => Ok(()),
            rows => Err(StoreError::AuditRowsLost { rows }),
        }
    }

    /// The full-channel path: see the type's documentation for why this waits.
    fn record_when_full(&self, command: Command) {
        self.counters.full_waits.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.full_wait;
        // `unconstrained`: tokio's cooperative budget must not make the send look pending
        // forever, since no scheduler runs between these polls to refill it.
        let wait = || {
            block_on_until(
                tokio::task::unconstrained(self.sender.send(command)),
                deadline,
            )
        };
        let outcome = match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        match outcome {
            Some(Ok(())) => {
                self.counters.accepted.fetch_add(1, Ordering::Relaxed);
            }
            Some(Err(_)) => self.counters.note_lost(1, "the audit writer has stopped"),
            None => self
                .counters
                .note_lost(1, "the audit channel stayed full past full_wait_ms"),
        }
    }
}

impl AuditSink for AuditWriter {
    fn record(&self, record: AuditRecord) {
        match self.sender.try_send(Command::Record(record)) {
            Ok(()) => {
                self.counters.accepted.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(command)) => self.record_when_full(command),
            Err(TrySendError::Closed(_)) => {
                self.counters.note_lost(1, "the audit writer has stopped");
            }
        }
    }
}

/// What travels on the channel. Flushes ride the same channel as records, so a flush is acknowledged
/// only after every record sent before it.
#[derive(Debug)]
enum Command {
    Record(AuditRecord),
    Flush(oneshot::Sender<()>),
    Shutdown(oneshot::Sender<()>),
}

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    committed: AtomicU64,
    lost: AtomicU64,
    full_waits: AtomicU64,
}

impl Counters {
    /// Counts lost records and logs it: an audit that silently stops recording is worse than
    /// a noisy one. To keep the log readable when the disk has died, it speaks when the total
    /// reaches 1, 2, 4, 8, ... rows.
    fn note_lost(&self, rows: u64, why: &str) {
        let before = self.lost.fetch_add(rows, Ordering::SeqCst);
        let after = before.saturating_add(rows);
        if crosses_power_of_two(before, after) {
            tracing::error!(
                lost = after,
                "audit rows lost so far, the latest because {why}"
            );
        }
    }
}

/// Whether a total that went from `before` to `after` reached a new power of two.
fn crosses_power_of_two(before: u64, after: u64) -> bool {
    match (before.checked_ilog2(), after.checked_ilog2()) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(old), Some(new)) => new > old,
    }
}

/// Polls `future` on this thread until it is ready or `deadline` passes; `None` means it timed out
/// (the future, and whatever it owned, is dropped). The waker unparks this thread, so the wait costs
/// no CPU and wakes as soon as the channel has room.
fn block_on_until<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    let waker = Waker::from(Arc::new(UnparkThread(thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return Some(output);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        // A spurious wake-up only costs one more poll.
        thread::park_timeout(deadline - now);
    }
}

struct UnparkThread(Thread);

impl Wake for UnparkThread {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// The writer's side: runs on the writer's thread and owns its connection.
struct WriterTask {
    store: Store,
    connection: Option<AnyConnection>,
    receiver: mpsc::Receiver<Command>,
    counters: Arc<Counters>,
    batch_records_max: usize,
}

/// What one round took off the channel.
#[derive(Default)]
struct Round {
    batch: Vec<AuditRecord>,
    flushed: Vec<oneshot::Sender<()>>,
    stopped: Vec<oneshot::Sender<()>>,
}

impl WriterTask {
    async fn run(mut self) {
        let mut round = Round {
            batch: Vec::with_capacity(self.batch_records_max),
            ..Round::default()
        };
        // Ends when the channel is closed (by a shutdown, or by the last sender going away) and
        // drained.
        while let Some(command) = self.receiver.recv().await {
            self.take(command, &mut round);
            // Take whatever else is already waiting, without waiting for more: a lone record is
            // committed at once, and a burst shares one transaction.
            while round.batch.len() < self.batch_records_max {
                match self.receiver.try_recv() {
                    Ok(command) => self.take(command, &mut round),
                    Err(_) => break,
                }
            }
            if !round.batch.is_empty() {
                self.commit(&round.batch).await;
                round.batch.clear();
            }
            for done in round.flushed.drain(..) {
                // The flusher may have stopped waiting (its future was dropped); nothing to tell.
                let _ = done.send(());
            }
        }
        self.close_connection().await;
        for done in round.stopped.drain(..) {
            // As above: a shutdown caller that stopped waiting needs no answer.
            let _ = done.send(());
        }
    }

    fn take(&mut self, command: Command, round: &mut Round) {
        match command {
            Command::Record(record) => round.batch.push(record),
            Command::Flush(done) => round.flushed.push(done),
            Command::Shutdown(done) => {
                // Refuse new commands but keep the buffered ones: they are drained and committed
                // before the loop ends.
                self.receiver.close();
                round.stopped.push(done);
            }
        }
    }

    /// Commits `batch`, retrying on a fresh connection; counts it as lost if every attempt fails.
    async fn commit(&mut self, batch: &[AuditRecord]) {
        let mut pause = Duration::from_millis(RETRY_PAUSE_FIRST_MS);
        let mut last_error = String::new();
        for attempt in 1..=WRITE_ATTEMPTS_MAX {
            match self.try_commit(batch).await {
                Ok(()) => {
                    let rows = u64::try_from(batch.len()).unwrap_or(u64::MAX);
                    self.counters.committed.fetch_add(rows, Ordering::Relaxed);
                    return;
                }
                Err(error) => {
                    last_error = error.to_string();
                    // The connection may be what broke; the next attempt starts on a new one.
                    self.close_connection().await;
                    if attempt < WRITE_ATTEMPTS_MAX {
                        tokio::time::sleep(pause).await;
                        pause *= 2;
                    }
                }
            }
        }
        let rows = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        let why = format!("a batch failed {WRITE_ATTEMPTS_MAX} write attempts: {last_error}");
        self.counters.note_lost(rows, &why);
    }

    async fn try_commit(&mut self, batch: &[AuditRecord]) -> Result<(), sqlx::Error> {
        let connection = match &mut self.connection {
            Some(connection) => connection,
            None => self.connection.insert(self.store.connect_one().await?),
        };
        insert_audit_batch(connection, batch).await
    }

    async fn close_connection(&mut self) {
        if let Some(connection) = self.connection.take() {
            // The connection is discarded either way; a failure to close it cleanly (it may be
            // the broken one) changes nothing for the rows, which were committed or not before.
            let _ = connection.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_reported_at_each_power_of_two() {
        let cases = [
            (0, 0, false),
            (0, 1, true),
            (1, 2, true),
            (2, 3, false),
            (3, 4, true),
            (4, 7, false),
            (5, 600, true),
            (512, 1023, false),
            (1023, 1024, true),
        ];
        for (before, after, expected) in cases {
            assert_eq!(
                crosses_power_of_two(before, after),
                expected,
                "{before} -> {after}"
            );
        }
    }

    #[test]
    fn block_on_until_returns_ready_output_and_times_out_pending() {
        let ready = block_on_until(std::future::ready(7), Instant::now());
        assert_eq!(ready, Some(7));
        let deadline = Instant::now() + Duration::from_millis(20);
        let pending = block_on_until(std::future::pending::<()>(), deadline);
        assert_eq!(pending, None);
        assert!(Instant::now() >= deadline, "returned before the deadline");
    }
}
