//! `web_search`: the spec of web search. No provider is wired in yet, so the tool says so,
//! honestly, in `available()` and in every result; providers arrive in a later issue.

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use serde_json::{Map, Value, json};

use super::unavailable;

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
#[derive(Debug)]
pub struct WebSearch {
    spec: ToolSpec,
}

impl WebSearch {
    pub fn new() -> Self {
        Self { spec: spec() }
    }
}

impl Default for WebSearch {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for WebSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn available(&self) -> Availability {
        Availability::Unavailable(UNAVAILABLE.to_string())
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        _args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { unavailable("web_search", UNAVAILABLE) })
    }
}
