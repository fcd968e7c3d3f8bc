//! `run_agent`: the spec of the sub-agent tool. Sub-agents need the agent loop, which lives
//! above this crate; until the binary registers the loop's own `run_agent` in its place, this
//! one reports itself unavailable and fails when run.

use imurun_core::{ToolCategory, ToolSpec};
use serde_json::json;

use super::UnconfiguredTool;

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
pub fn run_agent_tool() -> UnconfiguredTool {
    UnconfiguredTool::new(spec(), ToolCategory::Agent, UNAVAILABLE)
}
