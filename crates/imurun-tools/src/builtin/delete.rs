//! `delete`: removes a file, a symlink (never its target) or a folder with its contents.

use std::sync::Arc;

use imurun_core::{ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{Removed, Target, Workspace};
use serde_json::{Map, Value};

use super::{WorkspaceTool, required_string};

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::delete()
}

/// Deletes through the workspace's capability handle. Its category is `delete`, which the
/// policy never lets a person remember: each delete asks on its own.
pub fn delete_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Delete, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    match required_string(args, "path") {
        Ok(path) => delete(workspace, path),
        Err(failure) => failure,
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
