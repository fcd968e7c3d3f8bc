//! `get_weather`: the spec of the weather tool. No provider is wired in yet, so the tool says
//! so, honestly, in `available()` and in every result; providers arrive in a later issue.

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use serde_json::{Map, Value, json};

use super::unavailable;

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
#[derive(Debug)]
pub struct GetWeather {
    spec: ToolSpec,
}

impl GetWeather {
    pub fn new() -> Self {
        Self { spec: spec() }
    }
}

impl Default for GetWeather {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for GetWeather {
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
        Box::pin(async move { unavailable("get_weather", UNAVAILABLE) })
    }
}
