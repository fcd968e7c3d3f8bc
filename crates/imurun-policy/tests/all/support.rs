//! Shared helpers: a temporary workspace with a folder outside it and a fake home folder.

use std::fs;
use std::path::{Path, PathBuf};

use imurun_policy::{Workspace, WorkspaceConfig};
use tempfile::TempDir;

/// `base/ws` is the workspace, `base/outside` holds `secret.txt`, `base/home` is the home
/// folder the workspace is told about. Everything goes when the value is dropped.
pub(crate) struct TempWorkspace {
    _base: TempDir,
    pub(crate) workspace: Workspace,
    pub(crate) outside: PathBuf,
}

impl TempWorkspace {
    pub(crate) fn new() -> Self {
        Self::with_guarded(&[])
    }

    /// A workspace whose `guarded` list holds these paths, relative to the workspace root.
    pub(crate) fn with_guarded(guarded_inside: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let outside = base.join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.txt"), "outside secret").unwrap();
        let home = base.join("home");
        fs::create_dir_all(home.join(".ssh")).unwrap();
        let root = base.join("ws");
        let config = WorkspaceConfig {
            root: root.clone(),
            home: Some(home),
            guarded: guarded_inside.iter().map(|p| root.join(p)).collect(),
        };
        let workspace = Workspace::open(&config).unwrap();
        Self {
            _base: dir,
            workspace,
            outside,
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// Writes a file inside the workspace with plain `std::fs`, creating its folders.
    pub(crate) fn write(&self, relative: &str, contents: &str) {
        let path = self.root().join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, contents).unwrap();
    }

    pub(crate) fn mkdir(&self, relative: &str) {
        fs::create_dir_all(self.root().join(relative)).unwrap();
    }

    /// Creates a symlink at `link` (inside the workspace) pointing at `target` as given.
    pub(crate) fn symlink(&self, target: impl AsRef<Path>, link: &str) {
        let link = self.root().join(link);
        if let Some(parent) = link.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, link).unwrap();
    }
}
