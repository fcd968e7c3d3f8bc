//! `run_agent`: the spec of the sub-agent tool. Sub-agents need the agent loop, which lives
//! above this crate; until the binary registers the loop's own `run_agent` in its place, this
//! one reports itself unavailable and fails when run.

use imurun_core::{ToolCategory, ToolSpec};

use super::UnconfiguredTool;

const UNAVAILABLE: &str = "sub-agents are not wired into this runtime yet";

pub(crate) fn spec() -> ToolSpec {
    imurun_core::run_agent_spec()
}

/// The sub-agent tool's placeholder. Its category is `agent`, which the executor refuses at
/// depth 2 whoever implements it.
pub fn run_agent_tool() -> UnconfiguredTool {
    UnconfiguredTool::new(spec(), ToolCategory::Agent, UNAVAILABLE)
}
