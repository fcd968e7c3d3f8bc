//! The harness: testkit's scripted model and recording sinks, fake tools, and a real
//! `ToolExecutor` in a temporary workspace.

use std::sync::Arc;

use imurun_agent::{AgentConfig, AgentLoop, RunAgentTool, TurnRequest, TurnResult, noon_utc};
use imurun_core::{ToolCategory, ToolSpec};
use imurun_exec::{Registry, ToolExecutor};
use imurun_policy::{Mode, Settings, Toggles};
pub(crate) use imurun_testkit::{
    Behaviour, FakeTool, RecordingAudit, RecordingEvents, Reply, TempWorkspace, TestModel,
};
use serde_json::json;

/// A model replaying `script`.
pub(crate) fn model(script: Vec<Reply>) -> Arc<TestModel> {
    TestModel::new(script).shared()
}

/// A model replaying `script` with a context of `context_limit` tokens.
pub(crate) fn model_with_limit(script: Vec<Reply>, context_limit: usize) -> Arc<TestModel> {
    TestModel::new(script)
        .with_context_limit(context_limit)
        .shared()
}

/// A compute tool taking a required `key`; its result names the key (`<key> is 42`).
pub(crate) fn lookup_tool(name: &str, behaviour: Behaviour) -> Arc<FakeTool> {
    keyed_tool(name, ToolCategory::Compute, behaviour)
}

/// A tool of `category` taking a required `key`.
fn keyed_tool(name: &str, category: ToolCategory, behaviour: Behaviour) -> Arc<FakeTool> {
    let parameters = json!({"type": "object", "properties": {
        "key": {"type": "string", "description": "what to look up"}
    }, "required": ["key"]});
    Arc::new(FakeTool::with_parameters(
        name, category, behaviour, parameters,
    ))
}

/// The spec `lookup_tool` gives `name`.
#[allow(dead_code)]
pub(crate) fn lookup_spec(name: &str) -> ToolSpec {
    use imurun_core::Tool;
    lookup_tool(name, Behaviour::Succeed).spec().clone()
}

/// A scripted model, recording sinks and a real executor over `lookup` (values), `broken`
/// (failures) and `huge` (10 000 characters), in a temporary workspace.
pub(crate) struct Harness {
    _ws: TempWorkspace,
    pub(crate) model: Arc<TestModel>,
    pub(crate) events: Arc<RecordingEvents>,
    pub(crate) lookup: Arc<FakeTool>,
    pub(crate) agent: AgentLoop,
}

impl Harness {
    pub(crate) fn new(script: Vec<Reply>) -> Self {
        Self::build(model(script), AgentConfig::default())
    }

    /// A harness whose registry also holds the real `run_agent`.
    pub(crate) fn with_sub_agents(script: Vec<Reply>) -> Self {
        Self::build_with(model(script), AgentConfig::default(), true, &[])
    }

    pub(crate) fn build(model: Arc<TestModel>, config: AgentConfig) -> Self {
        Self::build_with(model, config, false, &[])
    }

    /// A harness whose registry also holds lookup tools named `extra` (a `fetch_url`, say).
    #[allow(dead_code)]
    pub(crate) fn build_with_tools(
        model: Arc<TestModel>,
        config: AgentConfig,
        extra: &[&str],
    ) -> Self {
        let extra: Vec<(&str, ToolCategory)> = extra
            .iter()
            .map(|name| (*name, ToolCategory::Compute))
            .collect();
        Self::build_with(model, config, false, &extra)
    }

    /// A harness whose registry also holds a write tool `save` taking a `key`, which asks a
    /// person before it runs (the mode allows reads alone).
    #[allow(dead_code)]
    pub(crate) fn with_write_tool(script: Vec<Reply>) -> Self {
        Self::build_with(
            model(script),
            AgentConfig::default(),
            false,
            &[("save", ToolCategory::Write)],
        )
    }

    fn build_with(
        model: Arc<TestModel>,
        config: AgentConfig,
        sub_agents: bool,
        extra: &[(&str, ToolCategory)],
    ) -> Self {
        let ws = TempWorkspace::new();
        let lookup = lookup_tool("lookup", Behaviour::Template("{key} is 42".into()));
        let mut registry = Registry::new();
        registry.insert(lookup.clone(), true);
        for (name, category) in extra {
            let tool = keyed_tool(name, *category, Behaviour::Template("{key}".into()));
            registry.insert(tool, true);
        }
        registry.insert(
            lookup_tool("broken", Behaviour::Fail("no network".into())),
            true,
        );
        registry.insert(
            lookup_tool("huge", Behaviour::Answer("x".repeat(10_000))),
            true,
        );
        let events = RecordingEvents::new(true);
        let clock = Arc::new(noon_utc(jiff::civil::date(2026, 11, 30)));
        let run_agent = sub_agents.then(|| {
            RunAgentTool::new(model.clone(), &config)
                .with_clock(clock.clone())
                .install(&mut registry)
        });
        let settings = Settings {
            mode: Mode::AllowReads,
            toggles: Toggles::default(),
        };
        let executor = ToolExecutor::new(
            registry,
            Arc::clone(&ws.workspace),
            settings,
            events.clone(),
            RecordingAudit::new(),
        );
        let executor = Arc::new(executor);
        if let Some(run_agent) = run_agent {
            run_agent.bind(&executor);
        }
        // The test persona, unless the test chose one.
        let config = if config.persona == imurun_agent::DEFAULT_PERSONA {
            config.with_persona("You are a test assistant.")
        } else {
            config
        };
        let agent = AgentLoop::new(model.clone(), executor, events.clone())
            .with_clock(clock)
            .with_config(config);
        Self {
            _ws: ws,
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

/// `(role, content)` pairs, for comparing with `Harness::sent`.
pub(crate) fn msgs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(role, content)| ((*role).to_owned(), (*content).to_owned()))
        .collect()
}
