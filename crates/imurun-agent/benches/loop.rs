//! The loop's own overhead, with a model that answers at once and a tool that does nothing:
//! prompt assembly, fit, streaming through the guard, parsing, the executor (policy, events
//! and an audit record per call) and the history bookkeeping. Also `fit` on 500 messages.
//!
//! `cargo bench -p imurun-agent --bench loop`. A turn here is six steps: five tool steps and
//! the answer, so the per-step overhead is a turn's time divided by six.

// A bench binary: a failed set-up is a panic with a location, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use imurun_agent::{AgentLoop, Fit, TurnRequest, fit, noon_utc};
use imurun_core::{
    AuditRecord, AuditSink, BoxFuture, Event, EventSink, GenerateRequest, Message, Model,
    ModelError, NullEvents, Role, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec,
    estimate_tokens,
};
use imurun_exec::{Registry, ToolExecutor};
use imurun_policy::{Mode, Settings, Toggles, Workspace, WorkspaceConfig};
use serde_json::{Map, Value, json};

/// Tool steps before the answer.
const TOOL_STEPS: usize = 5;

/// Calls `noop` until the request holds `TOOL_STEPS` assistant messages, then answers.
/// Stateless, so one model serves every iteration.
struct InstantModel;

const CALLS: [&str; TOOL_STEPS] = [
    "```tool\n{\"name\": \"noop\", \"args\": {\"key\": \"0\"}}\n```",
    "```tool\n{\"name\": \"noop\", \"args\": {\"key\": \"1\"}}\n```",
    "```tool\n{\"name\": \"noop\", \"args\": {\"key\": \"2\"}}\n```",
    "```tool\n{\"name\": \"noop\", \"args\": {\"key\": \"3\"}}\n```",
    "```tool\n{\"name\": \"noop\", \"args\": {\"key\": \"4\"}}\n```",
];

impl Model for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    fn context_limit(&self) -> usize {
        8192
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        let done = request
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        let reply = CALLS.get(done).copied().unwrap_or("The answer is 42.");
        Box::pin(async move {
            for token in reply.split_inclusive(' ') {
                on_token(token);
            }
            Ok(reply.to_owned())
        })
    }
}

struct Noop(ToolSpec);

impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Compute
    }

    fn run<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::ok("ok") })
    }
}

/// Counts events, as a fan-out with no subscriber costs about that much.
#[derive(Default)]
struct CountingEvents(AtomicUsize);

impl EventSink for CountingEvents {
    fn publish(&self, _event: Event) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn has_subscriber(&self, _session_id: Option<&str>) -> bool {
        false
    }
}

/// Hands records to a writer thread through a bounded channel: the hot path only enqueues,
/// as the store's batched audit writer does.
struct ChannelAudit(Mutex<SyncSender<AuditRecord>>);

impl AuditSink for ChannelAudit {
    fn record(&self, record: AuditRecord) {
        if let Ok(sender) = self.0.lock() {
            let _dropped_when_full = sender.try_send(record);
        }
    }
}

fn agent(root: &std::path::Path) -> AgentLoop {
    let workspace = Workspace::open(&WorkspaceConfig {
        root: root.join("ws"),
        home: None,
        guarded: Vec::new(),
    })
    .unwrap();
    let spec = ToolSpec::new(
        "noop",
        "Does nothing.",
        json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
    );
    let mut registry = Registry::new();
    registry.insert(Arc::new(Noop(spec)), true);
    let (sender, receiver) = sync_channel::<AuditRecord>(4096);
    std::thread::spawn(move || {
        let mut batch = Vec::with_capacity(64);
        while let Ok(record) = receiver.recv() {
            batch.push(record);
            batch.extend(receiver.try_iter().take(63));
            black_box(&batch);
            batch.clear();
        }
    });
    let events: Arc<CountingEvents> = Arc::default();
    let settings = Settings {
        mode: Mode::AllowReads,
        toggles: Toggles::default(),
    };
    let audit = Arc::new(ChannelAudit(Mutex::new(sender)));
    let executor = ToolExecutor::new(
        registry,
        Arc::new(workspace),
        settings,
        events.clone(),
        audit,
    );
    AgentLoop::new(Arc::new(InstantModel), Arc::new(executor), events)
        .with_clock(Arc::new(noon_utc(jiff::civil::date(2026, 11, 30))))
}

fn bench_turn(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    let agent = agent(&root);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let result = runtime.block_on(agent.run(TurnRequest::new("What is the answer?")));
    assert_eq!(result.answer, "The answer is 42.");
    assert_eq!(result.steps, TOOL_STEPS + 1);
    c.bench_function("loop/turn_of_6_steps", |b| {
        b.iter(|| runtime.block_on(agent.run(TurnRequest::new(black_box("What is the answer?")))))
    });
}

fn history(count: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("s".repeat(3000))];
    for n in 0..count {
        let text = format!("message {n}: {}", "lorem ipsum dolor sit amet ".repeat(8));
        messages.push(if n % 2 == 0 {
            Message::user(text)
        } else {
            Message::assistant(text)
        });
    }
    messages.push(Message::user("the prompt"));
    messages
}

fn bench_fit(c: &mut Criterion) {
    let messages = history(500);
    let prompt_index = messages.len() - 1;
    let count = |messages: &[Message]| estimate_tokens(messages);
    for (name, limit) in [
        ("context/fit_500_fits", 1_000_000),
        ("context/fit_500_drops", 8192),
    ] {
        let options = Fit {
            limit,
            count: &count,
            summariser: None,
            events: &NullEvents,
            session_id: None,
        };
        c.bench_function(name, |b| {
            b.iter_batched(
                || messages.clone(),
                |mut messages| {
                    let fitted = now(fit(&mut messages, prompt_index, &options));
                    black_box((fitted, messages))
                },
                BatchSize::SmallInput,
            )
        });
    }
}

/// Runs a future that never waits (`fit` with no summariser).
fn now<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = std::task::Waker::noop();
    match future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(waker))
    {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => unreachable!("fit without a summariser never waits"),
    }
}

criterion_group!(benches, bench_turn, bench_fit);
criterion_main!(benches);
