//! `list_dir`: lists one folder of the workspace, sorted, with a bound on the entries shown.

use std::fmt::Write as _;
use std::sync::Arc;

use imurun_core::{ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{EntryKind, Target, Workspace};
use serde_json::{Map, Value, json};

use super::{WorkspaceTool, optional_string};

/// The most entries one listing shows. Enough to see a project's shape; a folder with more is
/// reported as cut, and the model can list its subfolders or use the shell to filter.
pub const LIST_ENTRIES_MAX: usize = 500;

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "list_dir",
        "List a folder in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "folder relative to the workspace (default: its root)"}
        }}),
    )
}

/// Lists a folder through the workspace's capability handle. Symlinks are shown as links,
/// never followed.
pub fn list_dir_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Read, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    match optional_string(args, "path") {
        Ok(path) => list(workspace, path.unwrap_or("")),
        Err(failure) => failure,
    }
}

fn list(workspace: &Workspace, written: &str) -> ToolOutput {
    let path = match workspace.check_path(written, Target::Follow) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    let listing = match workspace.list(&path, LIST_ENTRIES_MAX) {
        Ok(listing) => listing,
        Err(error) => return ToolOutput::failed(error),
    };
    let shown = if path.relative().as_os_str().is_empty() {
        "the workspace root".to_string()
    } else {
        format!("`{written}`")
    };
    if listing.entries.is_empty() {
        return ToolOutput::ok(format!("{shown} is empty"));
    }
    let mut text = format!("{shown}:\n");
    for entry in &listing.entries {
        // Writing to a String cannot fail.
        let _ = match entry.kind {
            EntryKind::Folder => write!(text, "{}/", entry.name),
            EntryKind::File => write!(text, "{}  ({} bytes)", entry.name, entry.size_bytes),
            EntryKind::Symlink => write!(text, "{}  (symlink)", entry.name),
            EntryKind::Other => write!(text, "{}  (special file)", entry.name),
        };
        if entry.protected {
            text.push_str("  (protected: tools may not open it)");
        }
        text.push('\n');
    }
    if listing.truncated {
        let _ = writeln!(
            text,
            "… more entries not shown (at most {LIST_ENTRIES_MAX} are listed); list a subfolder or filter with the shell"
        );
    }
    ToolOutput::ok(text.trim_end().to_string())
}
