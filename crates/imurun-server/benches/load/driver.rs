//! The load driver shared by the bench binary `benches/load.rs` and the CI-sized test
//! `tests/all/load_small.rs` (both include this file with `#[path]`): a real server in this
//! process on 127.0.0.1:0, many sessions prompting it over HTTP, many SSE subscribers watching.
//!
//! # What runs
//!
//! - The server is the real one (`imurun_server::serve`), with a SQLite store on disk (WAL,
//!   `synchronous=FULL`, as in production), the built-in tools, default permissions, and
//!   the scripted model: it sleeps `model_delay` per generation, calls `file_read`
//!   on the first step of a turn and answers in a few tokens on the second, so each turn
//!   publishes about ten events (`turn.start`, two `step`s, `tool.call`, `tool.result`,
//!   tokens, `turn.end`).
//! - One worker per session, on one keep-alive HTTP/1.1 connection: it creates the session,
//!   then sends `prompts_per_session` prompts, one at a time, each after the previous turn's
//!   `turn.end`.
//! - `subscribers` SSE connections to `GET /api/events`: `global_subscribers` of them without a
//!   filter, the rest with `?session=` spread over the sessions; the first subscriber of each
//!   session is also its worker's pacer (it tells the worker when a turn ended).
//!
//! # What is measured
//!
//! - Requests per second: session creates (all workers at once) and prompt POSTs. Prompt
//!   POSTs are paced by the turns, so their rate is also the turn throughput.
//! - POST round trip: from writing the prompt request to reading its 202.
//! - Turn latency: from the 202 of the prompt to the arrival of its `turn.end` at the session's
//!   pacer, on the monotonic clock.
//! - Fan-out latency: for every event every subscriber receives, the wall clock at receipt
//!   minus the event's `ts`. Both come from the same clock of the same process, so the
//!   difference is meaningful; `ts` is whole milliseconds stamped when the hub publishes, so
//!   each figure is up to 1 ms above the truth (never below).
//! - RSS: `VmRSS` and `VmHWM` of this process from `/proc/self/status`. The server runs in
//!   this process, so the figures include the clients (their sockets and buffers) too.
//!
//! # What counts as an error
//!
//! Any HTTP status other than the expected one, any I/O failure, a turn that does not end
//! `done`, a subscriber that misses a `turn.end` its filter should carry (or sees one it should
//! not), a `stream.lagged` notice, and anything not finished within `wait_max`. Errors are
//! data in the report; nothing here panics on them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use imurun_agent::AgentConfig;
use imurun_core::Model;
use imurun_exec::{Registry, ToolExecutor};
use imurun_model::ScriptedModel;
use imurun_policy::{Settings, Workspace, WorkspaceConfig};
use imurun_server::{EventHub, ModelSlot, ServerOptions, ServerParts, ServerState, serve};
use imurun_store::Store;
use imurun_tools::{BuiltinConfig, builtin_tools};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::time::Instant;

/// How many connections are opened at once. The listener's backlog is 1024; opening a thousand
/// SSE connections in one burst would overflow it and turn into SYN retries a second apart.
const CONNECTS_IN_FLIGHT_MAX: usize = 64;

/// Errors kept word for word in the report; past this only the count grows.
const ERRORS_KEPT_MAX: usize = 20;

/// The prompt every worker sends: no live-data words, so the loop never nudges.
const PROMPT: &str = "Summarise my notes, please.";

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct LoadConfig {
    pub(crate) sessions: usize,
    /// All SSE connections, pacers and global ones included.
    pub(crate) subscribers: usize,
    /// How many of `subscribers` watch every session.
    pub(crate) global_subscribers: usize,
    pub(crate) prompts_per_session: usize,
    /// How long the fake model sleeps per generation (two generations per turn).
    pub(crate) model_delay: Duration,
    /// The bound on the whole run: anything not done by then is an error.
    pub(crate) wait_max: Duration,
}

impl LoadConfig {
    /// `sessions` sessions and `subscribers` subscribers, a tenth of them global, 5 prompts per
    /// session, 2 ms per generation, at most 5 minutes.
    pub(crate) fn new(sessions: usize, subscribers: usize) -> LoadConfig {
        LoadConfig {
            sessions,
            subscribers,
            global_subscribers: subscribers / 10,
            prompts_per_session: 5,
            model_delay: Duration::from_millis(2),
            wait_max: Duration::from_secs(300),
        }
    }

    /// Every session needs its own pacer besides the global subscribers.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.sessions == 0 || self.prompts_per_session == 0 {
            return Err("at least one session and one prompt per session".to_owned());
        }
        if self.subscribers < self.sessions + self.global_subscribers {
            return Err(format!(
                "{} subscribers cannot cover {} sessions (one pacer each) and {} global ones",
                self.subscribers, self.sessions, self.global_subscribers
            ));
        }
        Ok(())
    }
}

/// What a run measured, and every error it met.
#[derive(Debug, Default)]
pub(crate) struct LoadReport {
    config: Option<LoadConfig>,
    session_creates_wall: Duration,
    subscribes_wall: Duration,
    prompts_wall: Duration,
    prompts_sent: usize,
    /// Prompts whose POST landed between the previous turn's `turn.end` and the end of its
    /// task, and so joined that turn's queue (`queued: true`) and started the next turn from it.
    prompts_queued: usize,
    post_round_trip_us: Vec<u64>,
    turn_latency_us: Vec<u64>,
    fan_out_latency_us: Vec<u64>,
    events_received: u64,
    /// Audit rows the real writer committed, and lost, by the end of the run.
    audit_rows_committed: u64,
    audit_rows_lost: u64,
    rss_kb_before: Option<u64>,
    rss_kb_subscribed: Option<u64>,
    rss_kb_after_prompts: Option<u64>,
    rss_kb_peak: Option<u64>,
    errors: Vec<String>,
    error_count: usize,
}

impl LoadReport {
    /// Audit rows the real writer committed.
    #[allow(dead_code)] // The bench prints it; the CI-sized test asserts it.
    pub(crate) fn audit_rows_committed(&self) -> u64 {
        self.audit_rows_committed
    }

    /// How many errors occurred (the report keeps the first few word for word).
    pub(crate) fn error_count(&self) -> usize {
        self.error_count
    }

    fn error(&mut self, error: String) {
        self.error_count += 1;
        if self.errors.len() < ERRORS_KEPT_MAX {
            self.errors.push(error);
        }
    }

    /// The figures as a small table, then the errors kept.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        if let Some(config) = &self.config {
            let _ = writeln!(
                out,
                "{} sessions x {} prompts, {} SSE subscribers ({} global), model delay {} ms",
                config.sessions,
                config.prompts_per_session,
                config.subscribers,
                config.global_subscribers,
                config.model_delay.as_millis()
            );
        }
        let _ = writeln!(
            out,
            "{:<34} {:>12} {:>10} {:>10} {:>10}",
            "", "count", "rate/s", "p50", "p99"
        );
        let sessions = self.config.as_ref().map_or(0, |config| config.sessions);
        let subscribers = self.config.as_ref().map_or(0, |config| config.subscribers);
        row_rate(
            &mut out,
            "session creates (POST)",
            sessions,
            self.session_creates_wall,
        );
        row_rate(
            &mut out,
            "SSE subscribes",
            subscribers,
            self.subscribes_wall,
        );
        row_rate(
            &mut out,
            "prompt POSTs (paced by turns)",
            self.prompts_sent,
            self.prompts_wall,
        );
        row_latency(&mut out, "prompt POST round trip", &self.post_round_trip_us);
        row_latency(
            &mut out,
            "turn: 202 -> turn.end at pacer",
            &self.turn_latency_us,
        );
        row_latency(
            &mut out,
            "fan-out: ts -> receipt (<=+1ms)",
            &self.fan_out_latency_us,
        );
        let _ = writeln!(
            out,
            "events received by subscribers: {}",
            self.events_received
        );
        let _ = writeln!(
            out,
            "prompts that joined an ending turn's queue: {}",
            self.prompts_queued
        );
        let _ = writeln!(
            out,
            "audit rows (real writer, synchronous=FULL): committed {}, lost {}",
            self.audit_rows_committed, self.audit_rows_lost
        );
        let _ = writeln!(
            out,
            "RSS of this process (server + clients), MiB: before {}, subscribed {}, after prompts {}, peak {}",
            mib(self.rss_kb_before),
            mib(self.rss_kb_subscribed),
            mib(self.rss_kb_after_prompts),
            mib(self.rss_kb_peak)
        );
        let _ = writeln!(out, "errors: {}", self.error_count);
        for error in &self.errors {
            let _ = writeln!(out, "  - {error}");
        }
        out
    }
}

/// Runs the load described by `config` on the current Tokio runtime (a multi-threaded one, or
/// the clients and the server take turns on one thread).
pub(crate) async fn run(config: &LoadConfig) -> LoadReport {
    let mut report = LoadReport {
        config: Some(config.clone()),
        ..LoadReport::default()
    };
    if let Err(error) = config.check() {
        report.error(error);
        return report;
    }
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            report.error(format!("temp dir: {error}"));
            return report;
        }
    };
    report.rss_kb_before = status_kb("VmRSS");
    let turns = config.sessions * config.prompts_per_session;
    let server = match LoadServer::start(dir.path(), config.model_delay, turns).await {
        Ok(server) => server,
        Err(error) => {
            report.error(error);
            return report;
        }
    };
    drive(config, server.addr, &mut report).await;
    match server.stop().await {
        Ok((committed, lost)) => {
            report.audit_rows_committed = committed;
            report.audit_rows_lost = lost;
            if lost > 0 {
                report.error(format!("{lost} audit rows were lost"));
            }
        }
        Err(error) => report.error(error),
    }
    report.rss_kb_peak = status_kb("VmHWM");
    report
}

/// The three phases: create sessions, connect subscribers, send prompts; then the checks.
async fn drive(config: &LoadConfig, addr: SocketAddr, report: &mut LoadReport) {
    let deadline = Instant::now() + config.wait_max;
    let connects = Arc::new(Semaphore::new(CONNECTS_IN_FLIGHT_MAX));

    let started = Instant::now();
    let created: Vec<_> = (0..config.sessions)
        .map(|_| tokio::spawn(create_session(addr, Arc::clone(&connects))))
        .collect();
    let mut sessions = Vec::new();
    for handle in created {
        match joined(handle, deadline).await {
            Ok(session) => sessions.push(session),
            Err(error) => report.error(format!("session create: {error}")),
        }
    }
    report.session_creates_wall = started.elapsed();
    if sessions.len() < config.sessions {
        return;
    }

    let started = Instant::now();
    let (subscriber_handles, pacers) = subscribe_all(config, addr, &sessions, &connects, deadline);
    let mut subscribers = Vec::new();
    for (filter, connected, handle) in subscriber_handles {
        match tokio::time::timeout_at(deadline, connected).await {
            Ok(Ok(())) => subscribers.push((filter, handle)),
            _ => {
                report.error("an SSE subscriber never connected".to_owned());
                subscribers.push((filter, handle));
            }
        }
    }
    report.subscribes_wall = started.elapsed();
    report.rss_kb_subscribed = status_kb("VmRSS");

    let (go, go_signal) = watch::channel(false);
    let workers: Vec<_> = sessions
        .into_iter()
        .zip(pacers)
        .map(|((session_id, connection), pacer)| {
            let plan = WorkerPlan {
                session_id,
                connection,
                pacer,
                prompts: config.prompts_per_session,
                go: go_signal.clone(),
                deadline,
            };
            tokio::spawn(run_worker(plan))
        })
        .collect();
    let started = Instant::now();
    go.send_replace(true);
    let mut turns_by_session: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for handle in workers {
        match joined(handle, deadline).await {
            Ok(outcome) => {
                report.prompts_sent += outcome.prompts_sent;
                report.prompts_queued += outcome.prompts_queued;
                report.post_round_trip_us.extend(outcome.post_round_trip_us);
                report.turn_latency_us.extend(outcome.turn_latency_us);
                for error in outcome.errors {
                    report.error(error);
                }
                turns_by_session.insert(outcome.session_id, outcome.turn_ids);
            }
            Err(error) => report.error(format!("worker: {error}")),
        }
    }
    report.prompts_wall = started.elapsed();
    report.rss_kb_after_prompts = status_kb("VmRSS");

    let all_turns: BTreeSet<String> = turns_by_session.values().flatten().cloned().collect();
    for (filter, handle) in subscribers {
        let outcome = match joined(handle, deadline).await {
            Ok(outcome) => outcome,
            Err(error) => {
                report.error(format!("subscriber: {error}"));
                continue;
            }
        };
        report.events_received += outcome.events;
        report.fan_out_latency_us.extend(outcome.fan_out_latency_us);
        for error in outcome.errors {
            report.error(error);
        }
        let expected = match &filter {
            Some(session_id) => turns_by_session
                .get(session_id)
                .cloned()
                .unwrap_or_default(),
            None => all_turns.clone(),
        };
        if outcome.turn_ends != expected {
            let missing = expected.difference(&outcome.turn_ends).count();
            let unexpected = outcome.turn_ends.difference(&expected).count();
            report.error(format!(
                "subscriber {}: {missing} turn.end missing, {unexpected} unexpected",
                filter.as_deref().unwrap_or("(global)")
            ));
        }
    }
}

type SubscriberHandle = (
    Option<String>,
    oneshot::Receiver<()>,
    tokio::task::JoinHandle<Result<SubscriberOutcome, String>>,
);

/// Starts every subscriber: first each session's pacer, then the global ones, then the rest
/// spread over the sessions. Returns them with their "connected" signals, and the pacers'
/// receiving ends in session order.
fn subscribe_all(
    config: &LoadConfig,
    addr: SocketAddr,
    sessions: &[(String, HttpConnection)],
    connects: &Arc<Semaphore>,
    deadline: Instant,
) -> (Vec<SubscriberHandle>, Vec<mpsc::Receiver<PacerEvent>>) {
    let prompts = config.prompts_per_session;
    let mut handles = Vec::new();
    let mut pacers = Vec::new();
    let mut start = |filter: Option<String>, pacer: Option<mpsc::Sender<PacerEvent>>| {
        let (connected, connected_signal) = oneshot::channel();
        let expected_turn_ends = match filter {
            Some(_) => prompts,
            None => prompts * config.sessions,
        };
        let plan = SubscriberPlan {
            addr,
            filter: filter.clone(),
            expected_turn_ends,
            pacer,
            connected,
            connects: Arc::clone(connects),
            deadline,
        };
        handles.push((filter, connected_signal, tokio::spawn(run_subscriber(plan))));
    };
    for (session_id, _) in sessions {
        // Two events per turn, and the worker reads them before its next prompt.
        let (sender, receiver) = mpsc::channel(2 * prompts + 2);
        start(Some(session_id.clone()), Some(sender));
        pacers.push(receiver);
    }
    for _ in 0..config.global_subscribers {
        start(None, None);
    }
    let rest = config.subscribers - config.sessions - config.global_subscribers;
    for index in 0..rest {
        let (session_id, _) = &sessions[index % sessions.len()];
        start(Some(session_id.clone()), None);
    }
    (handles, pacers)
}

/// A task's result, or why there is none: it failed, panicked, or outlived the deadline.
async fn joined<T>(
    handle: tokio::task::JoinHandle<Result<T, String>>,
    deadline: Instant,
) -> Result<T, String>
where
    T: Send + 'static,
{
    match tokio::time::timeout_at(deadline, handle).await {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => Err(format!("the task failed: {error}")),
        Err(_) => Err("not done before the deadline".to_owned()),
    }
}

async fn create_session(
    addr: SocketAddr,
    connects: Arc<Semaphore>,
) -> Result<(String, HttpConnection), String> {
    let mut connection = {
        let _permit = connects
            .acquire()
            .await
            .map_err(|error| error.to_string())?;
        HttpConnection::connect(addr)
            .await
            .map_err(|error| format!("connect: {error}"))?
    };
    let (status, body) = connection
        .request("POST", "/api/sessions", "{}")
        .await
        .map_err(|error| format!("request: {error}"))?;
    if status != 201 {
        return Err(format!("status {status}: {body}"));
    }
    let session: Value = serde_json::from_str(&body).map_err(|error| error.to_string())?;
    let session_id = session["id"]
        .as_str()
        .ok_or("no id in the answer")?
        .to_owned();
    Ok((session_id, connection))
}

struct WorkerPlan {
    session_id: String,
    connection: HttpConnection,
    pacer: mpsc::Receiver<PacerEvent>,
    prompts: usize,
    go: watch::Receiver<bool>,
    deadline: Instant,
}

#[derive(Default)]
struct WorkerOutcome {
    session_id: String,
    prompts_sent: usize,
    prompts_queued: usize,
    post_round_trip_us: Vec<u64>,
    turn_latency_us: Vec<u64>,
    turn_ids: BTreeSet<String>,
    errors: Vec<String>,
}

/// Sends the session's prompts one at a time, each after the previous turn ended.
async fn run_worker(mut plan: WorkerPlan) -> Result<WorkerOutcome, String> {
    let mut outcome = WorkerOutcome {
        session_id: plan.session_id.clone(),
        ..WorkerOutcome::default()
    };
    let _ = plan.go.wait_for(|go| *go).await;
    let path = format!("/api/sessions/{}/prompts", plan.session_id);
    let body = json!({"prompt": PROMPT}).to_string();
    for _ in 0..plan.prompts {
        let sent = Instant::now();
        let answer =
            tokio::time::timeout_at(plan.deadline, plan.connection.request("POST", &path, &body))
                .await;
        let (status, body) = match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(format!("prompt POST: {error}")),
            Err(_) => return Err("prompt POST: no answer before the deadline".to_owned()),
        };
        let accepted_at = Instant::now();
        outcome.prompts_sent += 1;
        outcome.post_round_trip_us.push(micros(accepted_at - sent));
        if status != 202 {
            outcome
                .errors
                .push(format!("prompt POST: status {status}: {body}"));
            continue;
        }
        let accepted: Value = serde_json::from_str(&body).unwrap_or_default();
        // A prompt that lands after `turn.end` but before the ending turn's task is gone joins
        // that turn's queue and starts the next turn from it; the pacer's next `turn.start` is
        // then this prompt's turn, as it is for the others.
        let queued = accepted["queued"] == true;
        if queued {
            outcome.prompts_queued += 1;
        }
        match wait_for_turn(&mut plan.pacer, plan.deadline).await {
            Ok((turn_id, status, ended_at)) => {
                if !queued && accepted["turn_id"] != turn_id.as_str() {
                    outcome.errors.push(format!(
                        "prompt accepted as {} but turn {turn_id} started",
                        accepted["turn_id"]
                    ));
                }
                if status != "done" {
                    outcome
                        .errors
                        .push(format!("turn {turn_id} ended {status}"));
                }
                outcome
                    .turn_latency_us
                    .push(micros(ended_at.saturating_duration_since(accepted_at)));
                outcome.turn_ids.insert(turn_id);
            }
            Err(error) => {
                outcome
                    .errors
                    .push(format!("session {}: {error}", plan.session_id));
                break;
            }
        }
    }
    Ok(outcome)
}

/// The next turn of the session, from its `turn.start` to its `turn.end`: the turn's id, its
/// end status, and when the pacer received the end.
async fn wait_for_turn(
    pacer: &mut mpsc::Receiver<PacerEvent>,
    deadline: Instant,
) -> Result<(String, String, Instant), String> {
    let mut started: Option<String> = None;
    loop {
        let event = match tokio::time::timeout_at(deadline, pacer.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => return Err("the pacer's stream ended".to_owned()),
            Err(_) => return Err("no turn.end before the deadline".to_owned()),
        };
        match event {
            PacerEvent::Start { turn_id } => started = Some(turn_id),
            PacerEvent::End {
                turn_id,
                status,
                received_at,
            } if started.as_deref() == Some(turn_id.as_str()) => {
                return Ok((turn_id, status, received_at));
            }
            PacerEvent::End { turn_id, .. } => {
                return Err(format!("turn.end of {turn_id} without its turn.start"));
            }
        }
    }
}

/// What a pacer tells its worker.
enum PacerEvent {
    Start {
        turn_id: String,
    },
    End {
        turn_id: String,
        status: String,
        received_at: Instant,
    },
}

struct SubscriberPlan {
    addr: SocketAddr,
    filter: Option<String>,
    expected_turn_ends: usize,
    pacer: Option<mpsc::Sender<PacerEvent>>,
    connected: oneshot::Sender<()>,
    connects: Arc<Semaphore>,
    deadline: Instant,
}

#[derive(Default)]
struct SubscriberOutcome {
    events: u64,
    fan_out_latency_us: Vec<u64>,
    turn_ends: BTreeSet<String>,
    errors: Vec<String>,
}

/// One SSE client: connects, signals it, and reads until it has seen the `turn.end`s it
/// expects (or the deadline passes, or the stream ends).
async fn run_subscriber(plan: SubscriberPlan) -> Result<SubscriberOutcome, String> {
    let path = match &plan.filter {
        Some(session_id) => format!("/api/events?session={session_id}"),
        None => "/api/events".to_owned(),
    };
    let mut stream = {
        let _permit = plan
            .connects
            .acquire()
            .await
            .map_err(|error| error.to_string())?;
        tokio::time::timeout_at(plan.deadline, SseStream::connect(plan.addr, &path))
            .await
            .map_err(|_| "SSE connect: not before the deadline".to_owned())?
            .map_err(|error| format!("SSE connect: {error}"))?
    };
    let _ = plan.connected.send(());
    let mut outcome = SubscriberOutcome::default();
    while outcome.turn_ends.len() < plan.expected_turn_ends {
        let data = match tokio::time::timeout_at(plan.deadline, stream.next_data()).await {
            Ok(Ok(Some(data))) => data,
            Ok(Ok(None)) => {
                outcome.errors.push("an SSE stream ended early".to_owned());
                break;
            }
            Ok(Err(error)) => {
                outcome.errors.push(format!("SSE read: {error}"));
                break;
            }
            Err(_) => {
                outcome.errors.push(format!(
                    "SSE {path}: {} of {} turn.end before the deadline",
                    outcome.turn_ends.len(),
                    plan.expected_turn_ends
                ));
                break;
            }
        };
        let received_us = unix_micros();
        outcome.events += 1;
        let event: Value = match serde_json::from_str(&data) {
            Ok(event) => event,
            Err(error) => {
                outcome
                    .errors
                    .push(format!("SSE data is not JSON: {error}"));
                continue;
            }
        };
        if let Some(ts_ms) = event["ts"].as_u64() {
            outcome
                .fan_out_latency_us
                .push(received_us.saturating_sub(ts_ms * 1000));
        }
        let received_at = Instant::now();
        let turn_id = event["turn_id"].as_str().unwrap_or_default().to_owned();
        match event["type"].as_str().unwrap_or_default() {
            "stream.lagged" => {
                outcome.errors.push(format!("SSE {path} lagged: {event}"));
                break;
            }
            "turn.start" => {
                if let Some(pacer) = &plan.pacer {
                    let _ = pacer.send(PacerEvent::Start { turn_id }).await;
                }
            }
            "turn.end" => {
                let status = event["status"].as_str().unwrap_or_default().to_owned();
                if status != "done" {
                    outcome
                        .errors
                        .push(format!("turn {turn_id} ended {status}"));
                }
                outcome.turn_ends.insert(turn_id.clone());
                if let Some(pacer) = &plan.pacer {
                    let end = PacerEvent::End {
                        turn_id,
                        status,
                        received_at,
                    };
                    let _ = pacer.send(end).await;
                }
            }
            _ => {}
        }
    }
    Ok(outcome)
}

/// The server under load and how to stop it.
struct LoadServer {
    addr: SocketAddr,
    store: Store,
    audit: Arc<imurun_store::AuditWriter>,
    shutdown: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl LoadServer {
    async fn start(dir: &Path, model_delay: Duration, turns: usize) -> Result<LoadServer, String> {
        let root = dir.join("workspace");
        std::fs::create_dir_all(&root).map_err(|error| format!("workspace: {error}"))?;
        std::fs::write(root.join("notes.txt"), "Buy milk. Call the plumber.")
            .map_err(|error| format!("notes.txt: {error}"))?;
        let workspace = Workspace::open(&WorkspaceConfig {
            root,
            home: None,
            guarded: Vec::new(),
        })
        .map_err(|error| format!("workspace: {error}"))?;
        let workspace = Arc::new(workspace);
        let hub = EventHub::default();
        let mut registry = Registry::new();
        for tool in builtin_tools(&workspace, BuiltinConfig::default()) {
            registry.insert(tool, true);
        }
        let store = Store::open(dir.join("data/imurun.db"))
            .await
            .map_err(|error| format!("store: {error}"))?;
        // The real audit writer, as `imurun serve` wires it: every call of every turn is a
        // row committed to the same database the sessions and transcripts use.
        let audit = Arc::new(
            imurun_store::AuditWriter::spawn(&store).map_err(|error| format!("audit: {error}"))?,
        );
        let executor = ToolExecutor::new(
            registry,
            workspace,
            Settings::default(),
            Arc::new(hub.clone()),
            audit.clone(),
        );
        let model: Arc<dyn Model> = Arc::new(load_model(model_delay, turns)?);
        let state = ServerState::new(ServerParts {
            mcp: std::sync::Arc::default(),
            store: store.clone(),
            executor: Arc::new(executor),
            hub,
            model: ModelSlot::ready(model),
            skills: imurun_agent::SkillStore::open(dir.join("data/skills"))
                .map_err(|error| format!("skills: {error}"))?,
            agent_config: AgentConfig::default(),
            options: ServerOptions::default(),
        });
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| format!("bind: {error}"))?;
        let addr = listener
            .local_addr()
            .map_err(|error| format!("addr: {error}"))?;
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, state, async move {
            let _ = stop.await;
        }));
        let server = LoadServer {
            addr,
            store,
            audit,
            shutdown,
            task,
        };
        server.wait_until_healthy().await?;
        Ok(server)
    }

    /// `serve` runs start-up before it accepts requests.
    async fn wait_until_healthy(&self) -> Result<(), String> {
        for _ in 0..1000 {
            if let Ok(mut connection) = HttpConnection::connect(self.addr).await
                && let Ok((200, _)) = connection.request("GET", "/api/health", "").await
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err("the server never answered /api/health".to_owned())
    }

    /// Stops the server and flushes the audit; returns the audit rows committed and lost.
    async fn stop(self) -> Result<(u64, u64), String> {
        let _ = self.shutdown.send(());
        let stopped = tokio::time::timeout(Duration::from_secs(30), self.task).await;
        let flushed = self.audit.shutdown().await;
        let stats = self.audit.stats();
        self.store.close().await;
        if let Err(error) = flushed {
            return Err(format!("audit: {error}"));
        }
        match stopped {
            Ok(Ok(Ok(()))) => Ok((stats.committed, stats.lost)),
            Ok(Ok(Err(error))) => Err(format!("serve: {error}")),
            Ok(Err(error)) => Err(format!("the server task failed: {error}")),
            Err(_) => Err("the server did not shut down within 30 s".to_owned()),
        }
    }
}

/// The scripted model (`imurun_model::ScriptedModel`, the one `imurun serve --model
/// scripted:FILE` runs) with a script for `turns` turns: each turn's first step calls
/// `file_read`, and the step after its result answers, streamed a word at a time; every reply
/// waits `delay` first. The answers come first in the script with a condition on the tool
/// result, so a fresh prompt skips them and takes the next unused call.
fn load_model(delay: Duration, turns: usize) -> Result<ScriptedModel, String> {
    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    let call = json!({"name": "file_read", "args": {"path": "notes.txt"}});
    let answer = json!({
        // It quotes the file, as a grounded answer does: no correction, no second answer.
        "tokens": ["Your ", "notes ", "say: ", "Buy ", "milk. ", "Call ", "the ", "plumber."],
        "delay_ms": delay_ms,
        "when_last_user_contains": "[tool result: file_read]",
    });
    let call = json!({"text": format!("```tool\n{call}\n```"), "delay_ms": delay_ms});
    let replies: Vec<&Value> = std::iter::repeat_n(&answer, turns)
        .chain(std::iter::repeat_n(&call, turns))
        .collect();
    ScriptedModel::from_json(&json!({"replies": replies}).to_string())
        .map_err(|error| format!("the load script: {error}"))
}

/// One keep-alive HTTP/1.1 connection, one request at a time.
struct HttpConnection {
    reader: BufReader<TcpStream>,
    host: String,
}

impl HttpConnection {
    async fn connect(addr: SocketAddr) -> std::io::Result<HttpConnection> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(HttpConnection {
            reader: BufReader::new(stream),
            host: addr.to_string(),
        })
    }

    /// Sends a request with a JSON body and reads the whole answer: its status and body.
    async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &str,
    ) -> std::io::Result<(u16, String)> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let head = read_head(&mut self.reader).await?;
        let status = status_of(&head)?;
        let body = if head.contains("transfer-encoding: chunked") {
            let mut body = String::new();
            while let Some(chunk) = read_chunk(&mut self.reader).await? {
                body.push_str(&chunk);
            }
            body
        } else {
            let length = header_value(&head, "content-length")
                .and_then(|length| length.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            self.reader.read_exact(&mut body).await?;
            String::from_utf8_lossy(&body).into_owned()
        };
        Ok((status, body))
    }
}

/// An SSE response being read: chunked body, messages split on blank lines.
struct SseStream {
    reader: BufReader<TcpStream>,
    pending: String,
}

impl SseStream {
    async fn connect(addr: SocketAddr, path: &str) -> std::io::Result<SseStream> {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut reader = BufReader::new(stream);
        let head = read_head(&mut reader).await?;
        let status = status_of(&head)?;
        if status != 200 || !head.contains("transfer-encoding: chunked") {
            return Err(std::io::Error::other(format!("unexpected answer: {head}")));
        }
        Ok(SseStream {
            reader,
            pending: String::new(),
        })
    }

    /// The `data:` of the next message that has one (heartbeats skipped); `None` at the end.
    async fn next_data(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let data = self.pending[..end]
                    .lines()
                    .find_map(|line| line.strip_prefix("data: "))
                    .map(str::to_owned);
                self.pending.drain(..end + 2);
                match data {
                    Some(data) => return Ok(Some(data)),
                    None => continue,
                }
            }
            match read_chunk(&mut self.reader).await? {
                Some(chunk) => self.pending.push_str(&chunk),
                None => return Ok(None),
            }
        }
    }
}

/// The response head up to the blank line, lower-cased.
async fn read_head(reader: &mut BufReader<TcpStream>) -> std::io::Result<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == "\r\n" {
            return Ok(head);
        }
        head.push_str(&line.to_ascii_lowercase());
    }
}

fn status_of(head: &str) -> std::io::Result<u16> {
    head.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))
}

fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then_some(value.trim())
    })
}

/// One chunk of a chunked body; `None` after the last (empty) one.
async fn read_chunk(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<String>> {
    let mut size_line = String::new();
    if reader.read_line(&mut size_line).await? == 0 {
        return Ok(None);
    }
    let size = usize::from_str_radix(size_line.trim(), 16)
        .map_err(|_| std::io::Error::other(format!("bad chunk size {size_line:?}")))?;
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).await?;
    if size == 0 {
        return Ok(None);
    }
    chunk.truncate(size);
    String::from_utf8(chunk)
        .map(Some)
        .map_err(|_| std::io::Error::other("a chunk is not UTF-8"))
}

/// A field of `/proc/self/status` in kB (`VmRSS`, `VmHWM`); `None` where there is no procfs.
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, micros)
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn mib(kb: Option<u64>) -> String {
    kb.map_or_else(
        || "n/a".to_owned(),
        |kb| format!("{:.1}", kb as f64 / 1024.0),
    )
}

fn row_rate(out: &mut String, name: &str, count: usize, wall: Duration) {
    let rate = count as f64 / wall.as_secs_f64().max(f64::EPSILON);
    let _ = writeln!(
        out,
        "{name:<34} {count:>12} {rate:>10.0} {:>10} {:>10}",
        "", ""
    );
}

fn row_latency(out: &mut String, name: &str, samples_us: &[u64]) {
    let mut sorted = samples_us.to_vec();
    sorted.sort_unstable();
    let _ = writeln!(
        out,
        "{name:<34} {:>12} {:>10} {:>10} {:>10}",
        sorted.len(),
        "",
        millis(percentile(&sorted, 50)),
        millis(percentile(&sorted, 99))
    );
}

/// The nearest-rank percentile of sorted samples.
fn percentile(sorted: &[u64], percent: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

fn millis(micros: Option<u64>) -> String {
    micros.map_or_else(
        || "n/a".to_owned(),
        |micros| format!("{:.2} ms", micros as f64 / 1000.0),
    )
}
