//! The one shape every workspace file tool shares: a spec, a category, and a blocking
//! operation on the workspace that reads its own arguments. Each file tool is this type with
//! its own spec and operation, so the scaffolding (the `Tool` impl, the blocking pool) is
//! written once.

use std::sync::Arc;

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_policy::Workspace;
use serde_json::{Map, Value};

use super::blocking;

/// A file operation: reads its arguments (never trusting them) and works through the
/// workspace's capability handle. It runs on the blocking pool.
pub(crate) type FileOperation = fn(&Workspace, &Map<String, Value>) -> ToolOutput;

/// A built-in tool that works on one path in the workspace (`path`, which the executor hands
/// the policy as the call's path argument).
#[derive(Debug)]
pub struct WorkspaceTool {
    spec: ToolSpec,
    category: ToolCategory,
    workspace: Arc<Workspace>,
    operation: FileOperation,
}

impl WorkspaceTool {
    pub(crate) fn new(
        spec: ToolSpec,
        category: ToolCategory,
        workspace: Arc<Workspace>,
        operation: FileOperation,
    ) -> Self {
        Self {
            spec,
            category,
            workspace,
            operation,
        }
    }
}

impl Tool for WorkspaceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn path_arguments(&self) -> &[&str] {
        &["path"]
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        let (workspace, args, operation) =
            (Arc::clone(&self.workspace), args.clone(), self.operation);
        Box::pin(
            async move { blocking(&self.spec.name, move || operation(&workspace, &args)).await },
        )
    }
}
