//! The built-in tools in an executor: the shell's test environment, and an executor over the
//! real built-ins wired to recording sinks (or to the sinks a test brings).

use std::sync::Arc;
use std::time::Duration;

use imurun_core::{AuditSink, EventSink, StopFlag};
use imurun_exec::{Caller, Execution, Registry, ToolExecutor};
use imurun_policy::{Mode, Settings, Toggles};
use imurun_testkit::{RecordingAudit, RecordingEvents, TempWorkspace, call};
use imurun_tools::{BuiltinConfig, ShellConfig, builtin_tools};
use serde_json::Value;

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
        temp_parent: std::env::temp_dir(),
    }
}

/// A workspace, recording sinks, and an executor over the built-in tools.
pub(crate) struct Harness {
    pub(crate) ws: TempWorkspace,
    pub(crate) executor: Arc<ToolExecutor>,
}

impl Harness {
    pub(crate) fn new(mode: Mode) -> Self {
        let ws = TempWorkspace::new();
        let executor = executor(
            &ws,
            mode,
            RecordingEvents::new(true),
            RecordingAudit::new(),
            Duration::from_secs(60),
        );
        Self {
            ws,
            executor: Arc::new(executor),
        }
    }

    /// Runs `name(args)` as the model of session `s1`.
    pub(crate) async fn call(&self, name: &str, args: Value) -> Execution {
        let caller = Caller::model(Some("s1".into()), StopFlag::new());
        self.executor.execute(&call(name, args), &caller).await
    }

    /// Runs `name(args)` in `ask` mode with a person approving its card, then puts the
    /// settings back as they were.
    pub(crate) async fn call_approved(&self, name: &str, args: Value) -> Execution {
        let before = self.executor.settings();
        self.executor.set_settings(Settings {
            mode: Mode::Ask,
            ..before
        });
        let executor = Arc::clone(&self.executor);
        let name = name.to_string();
        let running = tokio::spawn(async move {
            let caller = Caller::model(Some("s1".into()), StopFlag::new());
            executor.execute(&call(&name, args), &caller).await
        });
        let card = loop {
            if let Some(card) = self.executor.approvals().pending().pop() {
                break card;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        self.executor
            .approvals()
            .decide(&card.approval_id, true, false)
            .unwrap();
        let execution = running.await.unwrap();
        self.executor.set_settings(before);
        execution
    }
}

/// An executor over the built-in tools in `ws` (the shell with [`shell_config`]), deciding in
/// `mode`, publishing to `events` and recording to `audit`.
pub(crate) fn executor(
    ws: &TempWorkspace,
    mode: Mode,
    events: Arc<dyn EventSink>,
    audit: Arc<dyn AuditSink>,
    approval_timeout: Duration,
) -> ToolExecutor {
    let config = BuiltinConfig {
        shell: shell_config(),
        ..BuiltinConfig::default()
    };
    let mut registry = Registry::new();
    for tool in builtin_tools(&ws.workspace, config) {
        registry.insert(tool, true);
    }
    let settings = Settings {
        mode,
        toggles: Toggles::default(),
    };
    ToolExecutor::new(registry, Arc::clone(&ws.workspace), settings, events, audit)
        .with_approval_timeout(approval_timeout)
}
