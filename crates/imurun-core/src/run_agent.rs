//! The sub-agent tool's spec. The tool itself is the agent loop's; its spec is vocabulary
//! because the built-in tool set (what the parser and the prompt know) lists it too.

use serde_json::json;

use crate::ToolSpec;

/// The sub-agent tool's name.
pub const RUN_AGENT: &str = "run_agent";

/// `run_agent(task, tools?, max_steps?)`.
pub fn run_agent_spec() -> ToolSpec {
    ToolSpec::new(
        RUN_AGENT,
        "Hand a self-contained task to a helper agent and get its summary back.",
        json!({"type": "object", "properties": {
            "task": {"type": "string", "description": "what the helper should do"},
            "tools": {"type": "array", "items": {"type": "string"}, "description": "tool names it may use"},
            "max_steps": {"type": "integer", "description": "its step budget (default 4, max 8)"}
        }, "required": ["task"]}),
    )
}
