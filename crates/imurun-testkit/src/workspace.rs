//! A temporary workspace laid out for confinement tests.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use imurun_core::{CallSource, NullEvents, StopFlag, ToolContext};
use imurun_policy::{Workspace, WorkspaceConfig};
use tempfile::TempDir;

/// `base/ws` is the workspace; `base/outside` holds `secret.txt`; `base/home` is the home.
#[derive(Debug)]
pub struct TempWorkspace {
    _dir: TempDir,
    pub base: PathBuf,
    pub workspace: Arc<Workspace>,
}

impl TempWorkspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let base = fs::canonicalize(dir.path()).expect("the temporary folder's real path");
        fs::create_dir_all(base.join("outside")).expect("outside/");
        fs::write(base.join("outside/secret.txt"), "outside secret").expect("secret.txt");
        fs::create_dir_all(base.join("home")).expect("home/");
        let config = WorkspaceConfig {
            root: base.join("ws"),
            home: Some(base.join("home")),
            guarded: Vec::new(),
        };
        let workspace = Arc::new(Workspace::open(&config).expect("the workspace opens"));
        Self {
            _dir: dir,
            base,
            workspace,
        }
    }

    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// Writes a file inside the workspace with plain `std::fs`, creating its folders.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) {
        let path = self.root().join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("the file's folders");
        }
        fs::write(path, contents).expect("the file");
    }

    /// A context for running a tool directly, as a person would.
    pub fn context(&self, stop: StopFlag) -> ToolContext {
        ToolContext {
            workspace_root: self.root().to_path_buf(),
            source: CallSource::User,
            depth: 0,
            stop,
            session_id: None,
            allowed_tools: None,
            events: Arc::new(NullEvents),
            network: true,
        }
    }
}

impl Default for TempWorkspace {
    fn default() -> Self {
        Self::new()
    }
}
