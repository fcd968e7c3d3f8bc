//! `get_weather`: the spec of the weather tool. No provider is wired in yet, so the tool says
//! so, honestly, in `available()` and in every result; providers arrive in a later issue.

use imurun_core::{ToolCategory, ToolSpec};
use serde_json::json;

use super::UnconfiguredTool;

const UNAVAILABLE: &str = "no weather provider is configured yet";

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "The current weather and forecast for a place.",
        json!({"type": "object", "properties": {
            "location": {"type": "string", "description": "a city or place name"}
        }, "required": ["location"]}),
    )
}

/// Weather without a provider: reports itself unavailable, and fails when run.
pub fn get_weather_tool() -> UnconfiguredTool {
    UnconfiguredTool::new(spec(), ToolCategory::Network, UNAVAILABLE)
}
