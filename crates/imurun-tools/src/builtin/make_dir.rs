//! `make_dir`: creates a folder and its missing parents in the workspace.

use std::sync::Arc;

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_policy::{Target, Workspace};
use serde_json::{Map, Value, json};

use super::{blocking, required_string};

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "make_dir",
        "Create a folder (and its parents) in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "folder relative to the workspace"}
        }, "required": ["path"]}),
    )
}

/// Creates folders through the workspace's capability handle.
#[derive(Debug)]
pub struct MakeDir {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

impl MakeDir {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self {
            spec: spec(),
            workspace,
        }
    }
}

impl Tool for MakeDir {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn path_arguments(&self) -> &[&str] {
        &["path"]
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match required_string(args, "path") {
                Ok(path) => path.to_owned(),
                Err(failure) => return failure,
            };
            let workspace = Arc::clone(&self.workspace);
            blocking("make_dir", move || make(&workspace, &path)).await
        })
    }
}

fn make(workspace: &Workspace, written: &str) -> ToolOutput {
    let path = match workspace.check_path(written, Target::Follow) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    // Only to word the answer; the creation below goes through the capability handle.
    let existed = path.absolute().is_dir();
    match workspace.create_dir_all(&path) {
        Ok(()) if existed => ToolOutput::ok(format!("the folder `{written}` already exists")),
        Ok(()) => ToolOutput::ok(format!("created the folder `{written}`")),
        Err(error) => ToolOutput::failed(error),
    }
}
