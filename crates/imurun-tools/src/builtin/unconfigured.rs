//! Tools whose providers are not wired in yet: they report themselves unavailable, honestly,
//! and every run fails saying so, in the words that keep a model from guessing the result.

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use serde_json::{Map, Value};

/// A tool with a spec and no provider yet.
#[derive(Debug)]
pub struct UnconfiguredTool {
    spec: ToolSpec,
    category: ToolCategory,
    reason: &'static str,
}

impl UnconfiguredTool {
    /// A tool known only by its spec, such as one read from a `--tools` file for a dry run or
    /// an evaluation: offered to the model, never run. Its category is `compute` because it
    /// has no authority to exercise.
    pub fn spec_only(spec: ToolSpec) -> Self {
        Self::new(
            spec,
            ToolCategory::Compute,
            "it is described in a tools file and has no implementation",
        )
    }

    pub(crate) fn new(spec: ToolSpec, category: ToolCategory, reason: &'static str) -> Self {
        Self {
            spec,
            category,
            reason,
        }
    }
}

impl Tool for UnconfiguredTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn available(&self) -> Availability {
        Availability::Unavailable(self.reason.to_owned())
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        _args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        let failure = ToolOutput::failed(format!(
            "`{}` is unavailable: {}. Do not guess what it would have returned.",
            self.spec.name, self.reason
        ));
        Box::pin(async move { failure })
    }
}
