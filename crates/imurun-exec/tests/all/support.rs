//! An executor over fake tools — one per built-in spec, with the built-in's category — wired
//! to recording sinks in a temporary workspace.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{StopFlag, ToolCategory, ToolSpec};
use imurun_exec::{Caller, Execution, PendingApproval, Registry, ToolExecutor};
use imurun_policy::{Mode, Settings, Toggles};
use imurun_testkit::{Behaviour, FakeTool, RecordingAudit, RecordingEvents, TempWorkspace, call};
use serde_json::Value;

/// The category of each built-in tool, as `imurun-tools` declares it.
fn builtin_category(name: &str) -> ToolCategory {
    match name {
        "web_search" | "get_weather" | "fetch_url" => ToolCategory::Network,
        "file_read" | "list_dir" => ToolCategory::Read,
        "file_write" | "make_dir" => ToolCategory::Write,
        "delete" => ToolCategory::Delete,
        "shell" => ToolCategory::Shell,
        "get_time" | "calculate" => ToolCategory::Compute,
        "run_agent" => ToolCategory::Agent,
        other => panic!("no built-in tool called {other}"),
    }
}

fn builtin_spec(name: &str) -> ToolSpec {
    imurun_core::builtin::specs()
        .into_iter()
        .find(|spec| spec.name == name)
        .unwrap_or_else(|| panic!("no built-in spec called {name}"))
}

/// A fake with the built-in `name`'s spec and category (the shell's `command` declared as
/// its command, every `path` as a path), doing `behaviour` when run.
pub(crate) fn fake_builtin(name: &str, behaviour: Behaviour) -> FakeTool {
    let tool = FakeTool::with_spec(builtin_spec(name), builtin_category(name), behaviour);
    if name == "shell" {
        tool.command_argument("command")
    } else {
        tool
    }
}

/// A workspace, recording sinks, and an executor over a fake of every built-in plus `extra`
/// fakes (an extra fake replaces the built-in fake of its name).
pub(crate) struct Harness {
    /// Keeps the workspace's folder alive while the executor works in it.
    _ws: TempWorkspace,
    pub(crate) events: Arc<RecordingEvents>,
    pub(crate) audit: Arc<RecordingAudit>,
    pub(crate) executor: Arc<ToolExecutor>,
    tools: HashMap<String, Arc<FakeTool>>,
}

impl Harness {
    pub(crate) fn new(mode: Mode) -> Self {
        Self::with(mode, true, Vec::new(), Duration::from_secs(60))
    }

    pub(crate) fn with(
        mode: Mode,
        subscribed: bool,
        extra: Vec<Arc<FakeTool>>,
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
        extra: Vec<Arc<FakeTool>>,
        approval_timeout: Duration,
    ) -> Self {
        let ws = TempWorkspace::new();
        let audit = RecordingAudit::new();
        let mut tools: Vec<Arc<FakeTool>> = imurun_core::builtin::specs()
            .iter()
            .map(|spec| Arc::new(fake_builtin(&spec.name, Behaviour::Succeed)))
            .collect();
        tools.extend(extra);
        let mut registry = Registry::new();
        let mut by_name = HashMap::new();
        for tool in tools {
            let name = imurun_core::Tool::spec(tool.as_ref()).name.clone();
            registry.insert(tool.clone(), true);
            by_name.insert(name, tool);
        }
        let settings = Settings {
            mode,
            toggles: Toggles::default(),
        };
        let executor = ToolExecutor::new(
            registry,
            Arc::clone(&ws.workspace),
            settings,
            events.clone(),
            audit.clone(),
        )
        .with_approval_timeout(approval_timeout);
        Self {
            _ws: ws,
            events,
            audit,
            executor: Arc::new(executor),
            tools: by_name,
        }
    }

    /// The fake registered as `name`.
    pub(crate) fn tool(&self, name: &str) -> &Arc<FakeTool> {
        self.tools
            .get(name)
            .unwrap_or_else(|| panic!("no fake tool {name}"))
    }

    /// The names of the fakes that ran at least once, sorted.
    pub(crate) fn tools_that_ran(&self) -> Vec<&str> {
        let mut ran: Vec<&str> = self
            .tools
            .iter()
            .filter(|(_, tool)| tool.runs() > 0)
            .map(|(name, _)| name.as_str())
            .collect();
        ran.sort_unstable();
        ran
    }

    /// Runs `name(args)` as the model of session `s1`.
    pub(crate) async fn call(&self, name: &str, args: Value) -> Execution {
        self.call_as(
            &Caller::model(Some("s1".into()), StopFlag::new()),
            name,
            args,
        )
        .await
    }

    pub(crate) async fn call_as(&self, caller: &Caller, name: &str, args: Value) -> Execution {
        self.executor.execute(&call(name, args), caller).await
    }
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
