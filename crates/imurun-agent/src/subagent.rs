//! `run_agent`: a sub-agent is a nested [`AgentLoop`] on the same raw model, with no history,
//! no persona (a short helper directive instead), its own step budget and only the tools it
//! asked for, intersected with its parent's.
//!
//! [`RunAgentTool`] is an ordinary [`Tool`] registered in place of the executor's placeholder,
//! so the call itself takes the executor's one path (lookup → sub-agent restriction → schema
//! → policy → approval → run → event + audit), and so do the child's own calls: the child's
//! loop calls the same executor as `Caller::sub_agent(depth, tools, stop)`. The executor owns
//! the registry that holds this tool, so the tool reaches the executor through a weak handle
//! bound once the executor exists ([`RunAgentTool::bind`]).

use std::sync::{Arc, OnceLock, Weak};

use imurun_core::{
    BoxFuture, Clock, EVENT_STRING_CHARS_MAX, Event, EventSink, Model, SystemClock, Tool,
    ToolCategory, ToolContext, ToolOutput, ToolSpec, TurnStatus,
};
use imurun_exec::{AGENT_DEPTH_MAX, Registry, ToolExecutor};
use serde_json::{Map, Value};

use crate::agent::{AgentConfig, AgentLoop, TurnRequest};

/// The helper's step budget when the call names none.
pub const SUB_AGENT_STEPS_DEFAULT: usize = 4;

/// The most steps a helper may have, whatever the call asks.
pub const SUB_AGENT_STEPS_MAX: usize = 8;

/// What a helper is told instead of a persona.
pub const HELPER_DIRECTIVE: &str =
    "You are a helper agent. Do the task and reply with a short summary of the result.";

/// Where a helper's model comes from when it starts: the server's model arrives after its
/// tools are registered (it loads in the background), so the tool asks at each run.
pub type ModelSource = Arc<dyn Fn() -> Option<Arc<dyn Model>> + Send + Sync>;

/// The real `run_agent`: starts a nested loop and returns only its final answer.
pub struct RunAgentTool {
    spec: ToolSpec,
    model: ModelSource,
    clock: Arc<dyn Clock>,
    config: AgentConfig,
    executor: OnceLock<Weak<ToolExecutor>>,
}

impl RunAgentTool {
    /// A sub-agent tool over `model`. `agent.start` / `agent.end` and the helper's calls'
    /// events go where the `run_agent` call's own events go (the turn that made it). Helpers
    /// inherit `config`'s generation settings; persona, budget and history summarising are
    /// their own. Unbound until [`RunAgentTool::bind`].
    pub fn new(model: Arc<dyn Model>, config: &AgentConfig) -> Self {
        Self::with_model_source(Arc::new(move || Some(Arc::clone(&model))), config)
    }

    /// A sub-agent tool whose model is read from `model` each time a helper starts; while it
    /// gives none, `run_agent` fails saying the model is not loaded.
    pub fn with_model_source(model: ModelSource, config: &AgentConfig) -> Self {
        Self {
            spec: imurun_core::run_agent_spec(),
            model,
            clock: Arc::new(SystemClock),
            config: config
                .clone()
                .with_persona(HELPER_DIRECTIVE)
                .with_summarise_history(false)
                .with_prefetch(false),
            executor: OnceLock::new(),
        }
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Registers the tool in `registry` (replacing the placeholder) and returns it, to be
    /// bound once the executor over `registry` exists.
    pub fn install(self, registry: &mut Registry) -> Arc<Self> {
        let tool = Arc::new(self);
        registry.insert(Arc::clone(&tool) as Arc<dyn Tool>, true);
        tool
    }

    /// Gives the tool the executor its helpers call through. Only the first binding counts.
    pub fn bind(&self, executor: &Arc<ToolExecutor>) {
        let _first = self.executor.set(Arc::downgrade(executor));
    }

    async fn run_helper(&self, context: &ToolContext, args: &Map<String, Value>) -> ToolOutput {
        let Some(executor) = self.executor.get().and_then(Weak::upgrade) else {
            return ToolOutput::failed("`run_agent` is not connected to a tool executor");
        };
        let Some(model) = (self.model)() else {
            return ToolOutput::failed("the model is not loaded yet, so no helper can start");
        };
        let task = match args.get("task") {
            Some(Value::String(task)) if !task.trim().is_empty() => task.trim().to_owned(),
            _ => return ToolOutput::failed("`task` must be a non-empty string"),
        };
        let depth = context.depth.saturating_add(1);
        if depth > AGENT_DEPTH_MAX {
            return ToolOutput::failed(format!(
                "sub-agents at depth {AGENT_DEPTH_MAX} cannot start sub-agents"
            ));
        }
        let tools = helper_tools(executor.registry(), context, args.get("tools"), depth);
        let max_steps = helper_steps(args.get("max_steps"));
        context.events.publish(Event::AgentStart {
            session_id: context.session_id.clone(),
            depth,
            task: task.chars().take(EVENT_STRING_CHARS_MAX).collect(),
            tools: tools.clone(),
        });
        let helper = AgentLoop::new(model, executor, Arc::new(Silent))
            .with_tool_events(Arc::clone(&context.events))
            .with_clock(Arc::clone(&self.clock))
            .with_config(self.config.clone().with_max_steps(max_steps))
            .scoped(depth, tools);
        let result = helper
            .run(TurnRequest {
                session_id: context.session_id.clone(),
                // The parent's flag itself: its Stop stops the helper at its next check.
                stop: context.stop.clone(),
                ..TurnRequest::new(task)
            })
            .await;
        context.events.publish(Event::AgentEnd {
            session_id: context.session_id.clone(),
            depth,
            status: result.status,
            steps: result.steps,
        });
        match result.status {
            TurnStatus::Done | TurnStatus::MaxSteps if !result.answer.trim().is_empty() => {
                ToolOutput::ok(result.answer)
            }
            TurnStatus::Stopped => ToolOutput::failed("the helper agent was stopped"),
            TurnStatus::Error => ToolOutput::failed(format!(
                "the helper agent failed: {}",
                result
                    .error
                    .map_or_else(|| "unknown error".to_owned(), |error| error.to_string())
            )),
            _ => ToolOutput::failed("the helper agent gave no answer"),
        }
    }
}

impl Tool for RunAgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Agent
    }

    fn run<'a>(
        &'a self,
        context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run_helper(context, args))
    }
}

impl std::fmt::Debug for RunAgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunAgentTool")
            .field(
                "model",
                &(self.model)().map(|model| model.name().to_owned()),
            )
            .field("bound", &self.executor.get().is_some())
            .finish_non_exhaustive()
    }
}

/// The helper's step budget: the call's `max_steps` clamped to 1..=`SUB_AGENT_STEPS_MAX`,
/// or `SUB_AGENT_STEPS_DEFAULT`.
fn helper_steps(requested: Option<&Value>) -> usize {
    match requested.and_then(Value::as_i64) {
        Some(steps) => usize::try_from(steps.max(1))
            .unwrap_or(SUB_AGENT_STEPS_MAX)
            .min(SUB_AGENT_STEPS_MAX),
        None => SUB_AGENT_STEPS_DEFAULT,
    }
}

/// The helper's tools (canonical names, registry order): those requested that the parent
/// may use, or all of the parent's when none are requested (absent, `null` or `[]`).
/// Unknown names are dropped; at `AGENT_DEPTH_MAX`, `run_agent`-like tools are too.
fn helper_tools(
    registry: &Registry,
    context: &ToolContext,
    requested: Option<&Value>,
    depth: u8,
) -> Vec<String> {
    let parent_may = |name: &str| {
        context
            .allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|allowed| allowed == name))
    };
    // Any name asked for counts, known or not: a request for tools the parent lacks gets
    // none rather than all of them.
    let (asked, requested): (bool, Vec<String>) = match requested {
        Some(Value::Array(names)) => (
            names.iter().any(Value::is_string),
            names
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|name| registry.resolve(name))
                .map(|tool| tool.spec().name.clone())
                .collect(),
        ),
        _ => (false, Vec::new()),
    };
    registry
        .tools()
        .filter(|tool| depth < AGENT_DEPTH_MAX || tool.category() != ToolCategory::Agent)
        .map(|tool| tool.spec().name.clone())
        .filter(|name| parent_may(name))
        .filter(|name| !asked || requested.contains(name))
        .collect()
}

/// The helper's own loop events (tokens, steps, `turn.end`) stay out of the parent's stream:
/// its answer is the call's result, and its calls' events go to the parent's sink.
struct Silent;

impl EventSink for Silent {
    fn publish(&self, _event: Event) {}

    fn has_subscriber(&self, _session_id: Option<&str>) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_budget_defaults_to_four_and_is_clamped_to_one_through_eight() {
        assert_eq!(helper_steps(None), SUB_AGENT_STEPS_DEFAULT);
        assert_eq!(helper_steps(Some(&Value::Null)), SUB_AGENT_STEPS_DEFAULT);
        assert_eq!(helper_steps(Some(&json!(0))), 1);
        assert_eq!(helper_steps(Some(&json!(-3))), 1);
        assert_eq!(helper_steps(Some(&json!(5))), 5);
        assert_eq!(helper_steps(Some(&json!(99))), SUB_AGENT_STEPS_MAX);
    }
}
