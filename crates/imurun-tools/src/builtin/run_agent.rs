//! `run_agent`: the spec of the sub-agent tool. Sub-agents need the agent loop, which lives
//! above this crate; until the binary registers the loop's own `run_agent` in its place, this
//! one reports itself unavailable and fails when run.

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use serde_json::{Map, Value, json};

use super::unavailable;

const UNAVAILABLE: &str = "sub-agents are not wired into this runtime yet";

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "run_agent",
        "Hand a self-contained task to a helper agent and get its summary back.",
        json!({"type": "object", "properties": {
            "task": {"type": "string", "description": "what the helper should do"},
            "tools": {"type": "array", "items": {"type": "string"}, "description": "tool names it may use"},
            "max_steps": {"type": "integer", "description": "its step budget (default 4, max 8)"}
        }, "required": ["task"]}),
    )
}

/// The sub-agent tool's placeholder. Its category is `agent`, which the executor refuses at
/// depth 2 whoever implements it.
#[derive(Debug)]
pub struct RunAgent {
    spec: ToolSpec,
}

impl RunAgent {
    pub fn new() -> Self {
        Self { spec: spec() }
    }
}

impl Default for RunAgent {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for RunAgent {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Agent
    }

    fn available(&self) -> Availability {
        Availability::Unavailable(UNAVAILABLE.to_string())
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        _args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { unavailable("run_agent", UNAVAILABLE) })
    }
}
