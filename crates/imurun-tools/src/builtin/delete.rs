//! `delete`: removes a file, a symlink (never its target) or a folder with its contents.

use std::sync::Arc;

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_policy::{Removed, Target, Workspace};
use serde_json::{Map, Value, json};

use super::{blocking, required_string};

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "delete",
        "Delete a file or folder in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"}
        }, "required": ["path"]}),
    )
}

/// Deletes through the workspace's capability handle. Its category is `delete`, which the
/// policy never lets a person remember: each delete asks on its own.
#[derive(Debug)]
pub struct Delete {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

impl Delete {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self {
            spec: spec(),
            workspace,
        }
    }
}

impl Tool for Delete {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Delete
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
            blocking("delete", move || delete(&workspace, &path)).await
        })
    }
}

fn delete(workspace: &Workspace, written: &str) -> ToolOutput {
    // `Entry`: deleting a symlink removes the link where it is, never what it points at.
    let path = match workspace.check_path(written, Target::Entry) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    match workspace.remove(&path) {
        Ok(Removed::File) => ToolOutput::ok(format!("deleted `{written}`")),
        Ok(Removed::Folder) => ToolOutput::ok(format!(
            "deleted the folder `{written}` and everything in it"
        )),
        Err(error) => ToolOutput::failed(error),
    }
}
