//! Shared helpers: a temporary workspace, recording event and audit sinks, fake tools, and an
//! executor wired to them.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use imurun_core::{
    AuditRecord, AuditSink, BoxFuture, CallSource, Event, EventSink, StopFlag, Tool, ToolCall,
    ToolCategory, ToolContext, ToolOutput, ToolSpec,
};
use imurun_policy::{Mode, Settings, Toggles, Workspace, WorkspaceConfig};
use imurun_tools::{Caller, PendingApproval, Registry, ShellConfig, ToolExecutor, builtin_tools};
use serde_json::{Map, Value, json};
use tempfile::TempDir;

/// `base/ws` is the workspace; `base/outside` holds `secret.txt`; `base/home` is the home.
pub(crate) struct TempWorkspace {
    _dir: TempDir,
    pub(crate) base: PathBuf,
    pub(crate) workspace: Arc<Workspace>,
}

impl TempWorkspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::write(base.join("outside/secret.txt"), "outside secret").unwrap();
        fs::create_dir_all(base.join("home")).unwrap();
        let config = WorkspaceConfig {
            root: base.join("ws"),
            home: Some(base.join("home")),
            guarded: Vec::new(),
        };
        let workspace = Arc::new(Workspace::open(&config).unwrap());
        Self {
            _dir: dir,
            base,
            workspace,
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// Writes a file inside the workspace with plain `std::fs`, creating its folders.
    pub(crate) fn write(&self, relative: &str, contents: impl AsRef<[u8]>) {
        let path = self.root().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    pub(crate) fn context(&self, stop: StopFlag) -> ToolContext {
        ToolContext {
            workspace_root: self.root().to_path_buf(),
            source: CallSource::User,
            depth: 0,
            stop,
            session_id: None,
            allowed_tools: None,
        }
    }
}

/// The environment the test shells start from: a usable `PATH`, one credential and one
/// look-alike that must survive.
pub(crate) fn shell_config() -> ShellConfig {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    ShellConfig {
        environment: vec![
            ("PATH".into(), path),
            ("FOO_TOKEN".into(), "tok-123".into()),
            ("KEYBOARD".into(), "us".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "aws-123".into()),
        ],
    }
}

/// Records every event; `subscribed` says whether a client is watching (every session).
#[derive(Default)]
pub(crate) struct RecordingEvents {
    events: Mutex<Vec<Event>>,
    subscribed: AtomicBool,
}

impl RecordingEvents {
    pub(crate) fn new(subscribed: bool) -> Arc<Self> {
        let events = Self::default();
        events.subscribed.store(subscribed, Ordering::SeqCst);
        Arc::new(events)
    }

    pub(crate) fn all(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// Each event's `type`, in order.
    pub(crate) fn types(&self) -> Vec<String> {
        self.all().iter().map(event_type).collect()
    }
}

pub(crate) fn event_type(event: &Event) -> String {
    serde_json::to_value(event).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_string()
}

impl EventSink for RecordingEvents {
    fn publish(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }

    fn has_subscriber(&self, _session_id: Option<&str>) -> bool {
        self.subscribed.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
pub(crate) struct RecordingAudit {
    records: Mutex<Vec<AuditRecord>>,
}

impl RecordingAudit {
    pub(crate) fn all(&self) -> Vec<AuditRecord> {
        self.records.lock().unwrap().clone()
    }
}

impl AuditSink for RecordingAudit {
    fn record(&self, record: AuditRecord) {
        self.records.lock().unwrap().push(record);
    }
}

/// What a fake tool does when run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    Succeed,
    /// Panics inside the future it returns.
    PanicWhileRunning,
    /// Panics before it returns a future at all.
    PanicBeforeRunning,
}

/// A tool that records its runs and, at each run, the event types published so far.
pub(crate) struct FakeTool {
    spec: ToolSpec,
    category: ToolCategory,
    behaviour: Behaviour,
    pub(crate) runs: AtomicUsize,
    events: Option<Arc<RecordingEvents>>,
    pub(crate) events_at_run: Mutex<Vec<Vec<String>>>,
}

impl FakeTool {
    /// A tool taking an optional `path` (declared as a path) and an optional integer `n`.
    pub(crate) fn new(name: &str, category: ToolCategory, behaviour: Behaviour) -> Self {
        let parameters = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "n": {"type": "integer"}
        }});
        Self {
            spec: ToolSpec::new(name, "a fake tool", parameters),
            category,
            behaviour,
            runs: AtomicUsize::new(0),
            events: None,
            events_at_run: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn watching(mut self, events: &Arc<RecordingEvents>) -> Self {
        self.events = Some(Arc::clone(events));
        self
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
        self.category
    }

    fn path_arguments(&self) -> &[&str] {
        &["path"]
    }

    fn run<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        assert!(
            self.behaviour != Behaviour::PanicBeforeRunning,
            "fake tool panics before running"
        );
        self.runs.fetch_add(1, Ordering::SeqCst);
        if let Some(events) = &self.events {
            self.events_at_run.lock().unwrap().push(events.types());
        }
        Box::pin(async move {
            assert!(
                self.behaviour != Behaviour::PanicWhileRunning,
                "fake tool panics while running"
            );
            ToolOutput::ok(format!("{} ran", self.spec.name))
        })
    }
}

/// A workspace, recording sinks, and an executor over the built-ins plus `extra` tools.
pub(crate) struct Harness {
    pub(crate) ws: TempWorkspace,
    pub(crate) events: Arc<RecordingEvents>,
    pub(crate) audit: Arc<RecordingAudit>,
    pub(crate) executor: Arc<ToolExecutor>,
}

impl Harness {
    pub(crate) fn new(mode: Mode) -> Self {
        Self::with(mode, true, Vec::new(), Duration::from_secs(60))
    }

    pub(crate) fn with(
        mode: Mode,
        subscribed: bool,
        extra: Vec<Arc<dyn Tool>>,
        approval_timeout: Duration,
    ) -> Self {
        Self::build(
            mode,
            RecordingEvents::new(subscribed),
            extra,
            approval_timeout,
        )
    }

    /// As [`Harness::with`], publishing to `events` (which fake tools may watch).
    pub(crate) fn build(
        mode: Mode,
        events: Arc<RecordingEvents>,
        extra: Vec<Arc<dyn Tool>>,
        approval_timeout: Duration,
    ) -> Self {
        let ws = TempWorkspace::new();
        let audit = Arc::new(RecordingAudit::default());
        let executor = executor(
            &ws,
            mode,
            extra,
            events.clone(),
            audit.clone(),
            approval_timeout,
        );
        Self {
            ws,
            events,
            audit,
            executor: Arc::new(executor),
        }
    }

    /// Runs `name(args)` as the model of session `s1`.
    pub(crate) async fn call(&self, name: &str, args: Value) -> imurun_tools::Execution {
        self.call_as(
            &Caller::model(Some("s1".into()), StopFlag::new()),
            name,
            args,
        )
        .await
    }

    pub(crate) async fn call_as(
        &self,
        caller: &Caller,
        name: &str,
        args: Value,
    ) -> imurun_tools::Execution {
        self.executor.execute(&call(name, args), caller).await
    }
}

pub(crate) fn executor(
    ws: &TempWorkspace,
    mode: Mode,
    extra: Vec<Arc<dyn Tool>>,
    events: Arc<dyn EventSink>,
    audit: Arc<dyn AuditSink>,
    approval_timeout: Duration,
) -> ToolExecutor {
    let mut registry = Registry::new();
    for tool in builtin_tools(&ws.workspace, shell_config()) {
        registry.insert(tool, true);
    }
    for tool in extra {
        registry.insert(tool, true);
    }
    let settings = Settings {
        mode,
        toggles: Toggles::default(),
    };
    ToolExecutor::new(registry, Arc::clone(&ws.workspace), settings, events, audit)
        .with_approval_timeout(approval_timeout)
}

pub(crate) fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, args.as_object().cloned().unwrap_or_default())
}

pub(crate) fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Waits until `count` approvals are pending (at most ten seconds) and returns them.
pub(crate) async fn pending(executor: &ToolExecutor, count: usize) -> Vec<PendingApproval> {
    for _ in 0..2000 {
        let pending = executor.approvals().pending();
        if pending.len() >= count {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{count} approvals never became pending");
}

/// Whether the process is gone: no `/proc` entry, or only a zombie nobody has reaped yet
/// (in a container the reaper may be missing; a zombie runs nothing).
pub(crate) fn is_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap_or("");
            matches!(state, "Z" | "X")
        }
    }
}
