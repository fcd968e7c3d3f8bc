//! `make_dir`: creates a folder and its missing parents in the workspace.

use std::sync::Arc;

use imurun_core::{ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{Target, Workspace};
use serde_json::{Map, Value};

use super::{WorkspaceTool, required_string};

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::make_dir()
}

/// Creates folders through the workspace's capability handle.
pub fn make_dir_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Write, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    match required_string(args, "path") {
        Ok(path) => make(workspace, path),
        Err(failure) => failure,
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
