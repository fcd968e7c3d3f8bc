//! `file_read`: reads one UTF-8 text file in the workspace, up to a size cap.

use std::sync::Arc;

use imurun_core::{ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{FileError, Target, Workspace};
use serde_json::{Map, Value, json};

use super::{WorkspaceTool, required_string};

/// The largest file `file_read` returns, in bytes. A model's context holds far less; a bigger
/// file should be read in parts with the shell (`head`, `sed -n`).
pub const FILE_READ_BYTES_MAX: u64 = 256 * 1024;

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "file_read",
        "Read a text file in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"}
        }, "required": ["path"]}),
    )
}

/// Reads a text file through the workspace's capability handle.
pub fn file_read_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Read, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    match required_string(args, "path") {
        Ok(path) => read(workspace, path),
        Err(failure) => failure,
    }
}

fn read(workspace: &Workspace, written: &str) -> ToolOutput {
    let path = match workspace.check_path(written, Target::Follow) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    let bytes = match workspace.read(&path, FILE_READ_BYTES_MAX) {
        Ok(bytes) => bytes,
        Err(FileError::TooLarge { size_bytes, .. }) => {
            return ToolOutput::failed(format!(
                "`{written}` is {size_bytes} bytes, more than the {FILE_READ_BYTES_MAX} file_read returns; \
                 read a part of it with the shell (head, tail, sed -n)"
            ));
        }
        Err(error) => return ToolOutput::failed(error),
    };
    // A NUL byte is valid UTF-8 but no text file has one: it is the surest sign of a binary.
    let text = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => text,
        _ => {
            return ToolOutput::failed(format!(
                "`{written}` is a binary file, not UTF-8 text; file_read reads text files only"
            ));
        }
    };
    if text.is_empty() {
        return ToolOutput::ok(format!("(`{written}` is empty)"));
    }
    ToolOutput::ok(text)
}
