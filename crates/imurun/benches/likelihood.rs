//! The cost of deciding a first step by likelihood (`docs/agent-loop.md`, "Decisions by
//! likelihood") against the same step without it: the default model, its call grammar, and
//! BFCL questions from `testdata/bfcl` (some that need a call, some that need none), each
//! planned (`AgentLoop::plan`, the step generated and read, nothing run) both ways, in turn,
//! so both see the same noise on a shared machine. Prints the median per step of each way
//! and their ratio.
//!
//! `cargo bench --workspace --bench likelihood`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use imurun_agent::{AgentConfig, AgentLoop, TurnRequest};
use imurun_core::{
    AuditRecord, AuditSink, BoxFuture, NullEvents, Tool, ToolCategory, ToolContext, ToolIndex,
    ToolOutput, ToolSpec,
};
use imurun_eval::{Category, load_category};
use imurun_exec::{Registry, ToolExecutor};
use imurun_model::{EmbeddedConfig, EmbeddedModel, ToolCallGrammar};
use imurun_policy::{Mode, Settings, Toggles, Workspace, WorkspaceConfig};

/// Rounds over every question; the median is over all steps of each way.
const ROUNDS: usize = 3;

/// A tool that is only its spec: planning never runs it.
struct SpecOnly(ToolSpec);

impl Tool for SpecOnly {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        _args: &'a serde_json::Map<String, serde_json::Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::failed("not run in the bench") })
    }
}

/// Planning records nothing; an audit that drops what it is given.
struct NoAudit;

impl AuditSink for NoAudit {
    fn record(&self, _record: AuditRecord) {}
}

fn main() {
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("likelihood bench: pass --bench (cargo bench) to run it");
        return;
    }
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/bfcl");
    let mut cases = load_category(&data, Category::Simple, Some(6)).unwrap();
    cases.extend(load_category(&data, Category::Multiple, Some(3)).unwrap());
    cases.extend(load_category(&data, Category::Irrelevance, Some(3)).unwrap());
    let model_path = imurun_testkit::default_model_path();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = EmbeddedModel::load(
        &model_path,
        EmbeddedConfig {
            threads: Some(u32::try_from(threads).unwrap()),
            ..EmbeddedConfig::default()
        },
    )
    .unwrap();
    let workspace_dir = tempfile::tempdir().unwrap();
    let workspace = Arc::new(
        Workspace::open(&WorkspaceConfig {
            root: workspace_dir.path().to_owned(),
            home: None,
            guarded: Vec::new(),
        })
        .unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut with = Vec::new();
    let mut without = Vec::new();
    for _ in 0..ROUNDS {
        for case in &cases {
            let mut registry = Registry::new();
            for spec in &case.tools {
                registry.insert(Arc::new(SpecOnly(spec.clone())), true);
            }
            let index: ToolIndex = registry.callable_index();
            let grammar = Arc::new(ToolCallGrammar::from_index(&index).unwrap());
            let executor = Arc::new(ToolExecutor::new(
                registry,
                Arc::clone(&workspace),
                Settings {
                    mode: Mode::AllowReads,
                    toggles: Toggles::default(),
                },
                Arc::new(NullEvents),
                Arc::new(NoAudit),
            ));
            let question = case.messages.last().unwrap().1.clone();
            for (likelihood, times) in [(true, &mut with), (false, &mut without)] {
                let agent = AgentLoop::new(
                    Arc::new(model.with_tool_grammar(Some(Arc::clone(&grammar)))),
                    Arc::clone(&executor),
                    Arc::new(NullEvents),
                )
                .with_config(
                    AgentConfig::default()
                        .with_likelihood(likelihood)
                        .with_step_tokens_max(Some(256)),
                );
                let started = Instant::now();
                runtime
                    .block_on(agent.plan(TurnRequest::new(question.clone())))
                    .unwrap();
                times.push(started.elapsed());
            }
        }
    }
    let (with, without) = (median(&mut with), median(&mut without));
    println!(
        "{} BFCL questions x {ROUNDS}, {threads} threads; median per first step:",
        cases.len()
    );
    println!(
        "  without likelihood: {:.0} ms",
        without.as_secs_f64() * 1e3
    );
    println!("  with likelihood:    {:.0} ms", with.as_secs_f64() * 1e3);
    println!(
        "  ratio: {:.2}",
        with.as_secs_f64() / without.as_secs_f64().max(1e-9)
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
