//! `file_write`: writes a whole text file in the workspace, atomically, creating its folder.

use std::path::Path;
use std::sync::Arc;

use imurun_core::{ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{Target, Workspace};
use serde_json::{Map, Value};

use super::{WorkspaceTool, required_string};

/// The largest body `file_write` writes, in bytes: far more than a model writes in one call,
/// small enough that a runaway call cannot fill the disk.
pub const FILE_WRITE_BYTES_MAX: usize = 4 * 1024 * 1024;

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::file_write()
}

/// Writes a file by atomic rename through the workspace's capability handle, so readers see
/// the old or the new body and a planted hard link cannot carry the write outside.
pub fn file_write_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Write, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    let (path, content) = match (
        required_string(args, "path"),
        required_string(args, "content"),
    ) {
        (Ok(path), Ok(content)) => (path, content),
        (Err(failure), _) | (_, Err(failure)) => return failure,
    };
    if content.len() > FILE_WRITE_BYTES_MAX {
        return ToolOutput::failed(format!(
            "the content is {} bytes, more than the {FILE_WRITE_BYTES_MAX} file_write writes at once",
            content.len()
        ));
    }
    write(workspace, path, content)
}

fn write(workspace: &Workspace, written: &str, content: &str) -> ToolOutput {
    let path = match workspace.check_path(written, Target::Follow) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    // Models write `notes/today.md` without making `notes` first; make it for them. The
    // parent is checked like any path, so this cannot create a folder outside.
    let parent = Path::new(written)
        .parent()
        .and_then(Path::to_str)
        .unwrap_or("");
    if !parent.is_empty() {
        let folder = match workspace.check_path(parent, Target::Follow) {
            Ok(folder) => folder,
            Err(denial) => return ToolOutput::failed(denial),
        };
        if let Err(error) = workspace.create_dir_all(&folder) {
            return ToolOutput::failed(error);
        }
    }
    match workspace.write_atomic(&path, content.as_bytes()) {
        Ok(()) => ToolOutput::ok(format!("wrote {} bytes to `{written}`", content.len())),
        Err(error) => ToolOutput::failed(error),
    }
}
