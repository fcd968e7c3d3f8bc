//! `web_search`: the spec of web search. No provider is wired in yet, so the tool says so,
//! honestly, in `available()` and in every result; providers arrive in a later issue.

use imurun_core::{ToolCategory, ToolSpec};
use serde_json::json;

use super::UnconfiguredTool;

const UNAVAILABLE: &str = "no search provider is configured yet";

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "web_search",
        "Search the web. Use it for anything about the present or anything you are unsure of.",
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "what to search for"},
            "max_results": {"type": "integer", "description": "how many results (default 5)"}
        }, "required": ["query"]}),
    )
}

/// Web search without a provider: reports itself unavailable, and fails when run.
pub fn web_search_tool() -> UnconfiguredTool {
    UnconfiguredTool::new(spec(), ToolCategory::Network, UNAVAILABLE)
}
