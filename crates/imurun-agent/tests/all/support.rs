//! A scripted model that records what it was sent, recording sinks, fake tools, and a
//! harness that wires them to a real `ToolExecutor` in a temporary workspace.

use std::collections::VecDeque;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use imurun_agent::{AgentConfig, AgentLoop, FixedClock, RunAgentTool, TurnRequest, TurnResult};
use imurun_core::{
    AuditRecord, AuditSink, BoxFuture, Event, EventSink, GenerateRequest, Message, Model,
    ModelError, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec,
};
use imurun_policy::{Mode, Settings, Toggles, Workspace, WorkspaceConfig};
use imurun_tools::{Registry, ToolExecutor};
use serde_json::{Map, Value, json};
use tempfile::TempDir;

/// One scripted reply.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// Streams this text in pieces of three characters, so markers split across tokens.
    Text(&'static str),
    /// Fails.
    Fail(ModelError),
    /// Sets the turn's stop flag, then streams this text (a Stop press mid-generation).
    StopDuring(&'static str),
}

/// Replays `Reply`s in order and records every request. Side generations (summaries) take
/// replies too: the script lists them where they happen.
pub(crate) struct ScriptedModel {
    script: Mutex<VecDeque<Reply>>,
    pub(crate) received: Mutex<Vec<Vec<Message>>>,
    context_limit: usize,
    /// Count one token per character instead of the estimate, as an exact back-end that
    /// disagrees with the estimate would.
    counts_characters: bool,
    /// Continue a started reply, as the embedded back-end does.
    prefills: bool,
    /// Every request's prefill, in order.
    pub(crate) prefills_received: Mutex<Vec<Option<String>>>,
}

impl ScriptedModel {
    pub(crate) fn new(script: Vec<Reply>) -> Arc<Self> {
        Self::with_limit(script, 8192)
    }

    pub(crate) fn with_limit(script: Vec<Reply>, context_limit: usize) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into()),
            received: Mutex::new(Vec::new()),
            context_limit,
            counts_characters: false,
            prefills: false,
            prefills_received: Mutex::new(Vec::new()),
        })
    }

    /// A model that continues a started reply: the script's text follows the prefill.
    pub(crate) fn prefilling(script: Vec<Reply>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into()),
            received: Mutex::new(Vec::new()),
            context_limit: 8192,
            counts_characters: false,
            prefills: true,
            prefills_received: Mutex::new(Vec::new()),
        })
    }

    /// Every request's prefill, in order.
    pub(crate) fn prefills(&self) -> Vec<Option<String>> {
        self.prefills_received.lock().unwrap().clone()
    }

    /// A model that counts one token per character.
    pub(crate) fn counting_characters(script: Vec<Reply>, context_limit: usize) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into()),
            received: Mutex::new(Vec::new()),
            context_limit,
            counts_characters: true,
            prefills: false,
            prefills_received: Mutex::new(Vec::new()),
        })
    }

    /// Every request's messages, in order.
    pub(crate) fn received(&self) -> Vec<Vec<Message>> {
        self.received.lock().unwrap().clone()
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn context_limit(&self) -> usize {
        self.context_limit
    }

    fn count_tokens(&self, messages: &[Message]) -> usize {
        if !self.counts_characters {
            return imurun_core::estimate_tokens(messages);
        }
        messages.iter().map(|m| m.content.chars().count()).sum()
    }

    fn supports_prefill(&self) -> bool {
        self.prefills
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        self.received.lock().unwrap().push(request.messages.clone());
        self.prefills_received
            .lock()
            .unwrap()
            .push(request.prefill.clone());
        let reply = self.script.lock().unwrap().pop_front();
        Box::pin(async move {
            let text = match reply {
                None => panic!("the script ran out at request {}", self.received().len()),
                Some(Reply::Fail(error)) => return Err(error),
                Some(Reply::Text(text)) => text,
                Some(Reply::StopDuring(text)) => {
                    request.stop.stop();
                    text
                }
            };
            let text = format!("{}{text}", request.prefill.as_deref().unwrap_or_default());
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(3) {
                on_token(&piece.iter().collect::<String>());
            }
            Ok(text)
        })
    }
}

/// Records every event.
#[derive(Default)]
pub(crate) struct RecordingEvents(Mutex<Vec<Event>>);

impl RecordingEvents {
    pub(crate) fn all(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    /// Each event as wire JSON, `call_id`s blanked (they are random).
    pub(crate) fn wire(&self) -> Vec<Value> {
        self.all()
            .iter()
            .map(|event| {
                let mut wire = serde_json::to_value(event).unwrap();
                if let Some(id) = wire.get_mut("call_id") {
                    *id = json!("call-*");
                }
                wire
            })
            .collect()
    }

    /// Each event's type, with consecutive `token` events merged into one.
    pub(crate) fn types(&self) -> Vec<String> {
        let mut types: Vec<String> = Vec::new();
        for wire in self.wire() {
            let kind = wire["type"].as_str().unwrap().to_owned();
            let kind = match wire.get("kind").and_then(Value::as_str) {
                Some(step) if kind == "step" => format!("step:{step}"),
                _ => kind,
            };
            if kind == "token" && types.last().is_some_and(|last| last == "token") {
                continue;
            }
            types.push(kind);
        }
        types
    }

    /// The streamed answer text, all `token` events joined.
    pub(crate) fn streamed(&self) -> String {
        self.all()
            .iter()
            .filter_map(|event| match event {
                Event::Token { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl EventSink for RecordingEvents {
    fn publish(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }

    fn has_subscriber(&self, _session_id: Option<&str>) -> bool {
        true
    }
}

/// Keeps audit records in memory, as a batched writer's queue would.
#[derive(Default)]
pub(crate) struct MemoryAudit(Mutex<Vec<AuditRecord>>);

impl MemoryAudit {
    pub(crate) fn records(&self) -> Vec<AuditRecord> {
        self.0.lock().unwrap().clone()
    }
}

impl AuditSink for MemoryAudit {
    fn record(&self, record: AuditRecord) {
        self.0.lock().unwrap().push(record);
    }
}

/// What a fake tool returns.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Returns {
    /// `<key> is 42`.
    Value,
    /// `FAILED: no network`.
    Failure,
    /// This many characters of `x`.
    Long(usize),
}

/// A compute tool taking a required `key`, counting its runs.
pub(crate) struct FakeTool {
    spec: ToolSpec,
    returns: Returns,
    runs: AtomicUsize,
}

impl FakeTool {
    pub(crate) fn new(name: &str, returns: Returns) -> Arc<Self> {
        let parameters = json!({"type": "object", "properties": {
            "key": {"type": "string", "description": "what to look up"}
        }, "required": ["key"]});
        Arc::new(Self {
            spec: ToolSpec::new(name, format!("Looks things up ({name})."), parameters),
            returns,
            runs: AtomicUsize::new(0),
        })
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

impl Tool for FakeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Compute
    }

    fn run<'a>(
        &'a self,
        _: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let key = args
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let output = match self.returns {
            Returns::Value => ToolOutput::ok(format!("{key} is 42")),
            Returns::Failure => ToolOutput::failed("no network"),
            Returns::Long(chars) => ToolOutput::ok("x".repeat(chars)),
        };
        Box::pin(async move { output })
    }
}

/// A scripted model, recording sinks and a real executor over `lookup` (values), `broken`
/// (failures) and `huge` (10 000 characters), in a temporary workspace.
pub(crate) struct Harness {
    _dir: TempDir,
    pub(crate) model: Arc<ScriptedModel>,
    pub(crate) events: Arc<RecordingEvents>,
    pub(crate) lookup: Arc<FakeTool>,
    pub(crate) agent: AgentLoop,
}

impl Harness {
    pub(crate) fn new(script: Vec<Reply>) -> Self {
        Self::build(ScriptedModel::new(script), AgentConfig::default())
    }

    /// A harness whose registry also holds the real `run_agent`.
    pub(crate) fn with_sub_agents(script: Vec<Reply>) -> Self {
        Self::build_with(ScriptedModel::new(script), AgentConfig::default(), true)
    }

    pub(crate) fn build(model: Arc<ScriptedModel>, config: AgentConfig) -> Self {
        Self::build_with(model, config, false)
    }

    fn build_with(model: Arc<ScriptedModel>, config: AgentConfig, sub_agents: bool) -> Self {
        let (dir, workspace) = temp_workspace();
        let lookup = FakeTool::new("lookup", Returns::Value);
        let mut registry = Registry::new();
        registry.insert(lookup.clone(), true);
        registry.insert(FakeTool::new("broken", Returns::Failure), true);
        registry.insert(FakeTool::new("huge", Returns::Long(10_000)), true);
        let events = Arc::new(RecordingEvents::default());
        let clock = Arc::new(FixedClock(jiff::civil::date(2026, 11, 30)));
        let run_agent = sub_agents.then(|| {
            RunAgentTool::new(model.clone(), events.clone(), &config)
                .with_clock(clock.clone())
                .install(&mut registry)
        });
        let settings = Settings {
            mode: Mode::AllowReads,
            toggles: Toggles::default(),
        };
        let executor = ToolExecutor::new(
            registry,
            workspace,
            settings,
            events.clone(),
            Arc::new(MemoryAudit::default()),
        );
        let executor = Arc::new(executor);
        if let Some(run_agent) = run_agent {
            run_agent.bind(&executor);
        }
        let agent = AgentLoop::new(model.clone(), executor, events.clone())
            .with_clock(clock)
            .with_config(config.with_persona("You are a test assistant."));
        Self {
            _dir: dir,
            model,
            events,
            lookup,
            agent,
        }
    }

    pub(crate) async fn run(&self, prompt: &str) -> TurnResult {
        self.run_request(TurnRequest {
            session_id: Some("s1".into()),
            ..TurnRequest::new(prompt)
        })
        .await
    }

    pub(crate) async fn run_request(&self, request: TurnRequest) -> TurnResult {
        self.agent.run(request).await
    }

    /// The messages of request `n` after the system message, as `(role, content)`.
    pub(crate) fn sent(&self, n: usize) -> Vec<(String, String)> {
        self.model.received()[n][1..]
            .iter()
            .map(|message| (message.role.as_str().to_owned(), message.content.clone()))
            .collect()
    }
}

/// A workspace in a new temporary folder (kept while the `TempDir` lives).
pub(crate) fn temp_workspace() -> (TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap().join("ws");
    let workspace = Workspace::open(&WorkspaceConfig {
        root,
        home: None,
        guarded: Vec::new(),
    })
    .unwrap();
    (dir, Arc::new(workspace))
}

/// `(role, content)` pairs, for comparing with `Harness::sent`.
pub(crate) fn msgs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(role, content)| ((*role).to_owned(), (*content).to_owned()))
        .collect()
}
