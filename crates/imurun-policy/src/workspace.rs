//! The workspace: the one folder the agent's file tools and shell work in. Every path
//! argument is resolved against it, real-pathed (so `..` and symlinks cannot escape), and
//! must still be inside it; then protected names and locations are refused.
//!
//! Checking a path and then opening it leaves a gap in which a symlink can be swapped in.
//! The file operations in `files` close it: they open through a capability handle on the
//! root (`cap-std`; `openat2` with `RESOLVE_BENEATH` on Linux), so the open itself cannot
//! leave the workspace whatever happened since the check.

use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

use crate::protected::{self, Location, LocationKind};
use crate::realpath::{self, fold_lexically};

/// The longest path argument accepted, in bytes (Linux's `PATH_MAX`).
pub const PATH_BYTES_MAX: usize = 4096;

/// The most components a path argument may have; resolution costs grow with it.
pub const PATH_COMPONENTS_MAX: usize = 256;

/// How much of a written path a reason quotes.
const SHOWN_CHARS_MAX: usize = 200;

/// Where the workspace is and what it must never be confused with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceConfig {
    /// The workspace folder (`permissions.workspaceRoot`). Created if missing. A relative
    /// path is taken from the current directory.
    pub root: PathBuf,
    /// The person's home folder. It can never be the workspace, and its key folders
    /// (`~/.ssh`, `~/.aws`, `~/.gnupg`, ...) are protected. `None` when unknown.
    pub home: Option<PathBuf>,
    /// imurun's own config file, data folder and source: protected wherever they are.
    pub guarded: Vec<PathBuf>,
}

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The folder is one that must never be a workspace.
    #[error("`{root}` cannot be the workspace: {why}")]
    Refused { root: PathBuf, why: String },
    /// The folder did not exist and could not be created.
    #[error("cannot create the workspace folder `{root}`: {source}")]
    Create {
        root: PathBuf,
        source: std::io::Error,
    },
    /// The folder exists but could not be opened or resolved.
    #[error("cannot open the workspace folder `{root}`: {source}")]
    Open {
        root: PathBuf,
        source: std::io::Error,
    },
}

/// Why a path argument may not be used. `Display` is the sentence a person reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathDenial {
    /// The path resolves outside the workspace.
    #[error("`{written}` is outside the workspace")]
    Outside { written: String },
    /// The path is inside the workspace but protected.
    #[error("`{written}` is protected: {why}")]
    Protected { written: String, why: String },
    /// The path cannot be used at all: too long, a NUL byte, a symlink loop.
    #[error("`{written}` cannot be used as a path: {why}")]
    Invalid { written: String, why: String },
}

/// How the last component of a path is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Follow a final symlink to what it points at (reading, writing, listing).
    Follow,
    /// The entry itself, not what a final symlink points at (deleting: removing a link
    /// removes the link, never its target).
    Entry,
}

/// A path argument that passed confinement and protection, ready for the file operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath {
    written: String,
    absolute: PathBuf,
    relative: PathBuf,
}

impl WorkspacePath {
    /// The path as the caller wrote it.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// The real absolute path, inside the workspace root.
    pub fn absolute(&self) -> &Path {
        &self.absolute
    }

    /// The path relative to the workspace root; empty for the root itself.
    pub fn relative(&self) -> &Path {
        &self.relative
    }
}

/// An open workspace: its real root, a capability handle on it, and the protected locations
/// that lie inside it.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    given_root: PathBuf,
    pub(crate) dir: Dir,
    protected_inside: Vec<Location>,
}

impl Workspace {
    /// Opens the workspace, creating its folder (mode 0700) on first use. Refuses a
    /// filesystem root, the home folder or any folder containing it, the system's own
    /// folders, key folders, and imurun's own guarded locations.
    pub fn open(config: &WorkspaceConfig) -> Result<Self, WorkspaceError> {
        let given_root =
            std::path::absolute(&config.root).map_err(|source| WorkspaceError::Open {
                root: config.root.clone(),
                source,
            })?;
        let home = config
            .home
            .as_deref()
            .map(|home| realpath::real_path(home).unwrap_or_else(|_| fold_lexically(home)));
        let locations = protected::all_locations(home.as_deref(), &config.guarded);
        // Judge the folder before creating anything, so `/etc/x` is never created: as
        // written, and as it will resolve (a link in the path may lead to `/etc`).
        let folded = fold_lexically(&given_root);
        let resolved = realpath::real_path(&folded).unwrap_or_else(|_| folded.clone());
        for candidate in [&folded, &resolved] {
            if let Some(why) = refusal(candidate, home.as_deref(), &locations) {
                let root = candidate.clone();
                return Err(WorkspaceError::Refused { root, why });
            }
        }
        create_private_dir(&resolved).map_err(|source| WorkspaceError::Create {
            root: given_root.clone(),
            source,
        })?;
        let root = std::fs::canonicalize(&resolved).map_err(|source| WorkspaceError::Open {
            root: given_root.clone(),
            source,
        })?;
        // And once more now that it exists: nothing may have been swapped in meanwhile.
        if let Some(why) = refusal(&root, home.as_deref(), &locations) {
            return Err(WorkspaceError::Refused { root, why });
        }
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority()).map_err(|source| {
            WorkspaceError::Open {
                root: root.clone(),
                source,
            }
        })?;
        let lowered_root = protected::lowered(&root);
        let protected_inside = locations
            .into_iter()
            .filter(|l| l.lowered.starts_with(&lowered_root) && l.lowered != lowered_root)
            .collect();
        Ok(Self {
            root,
            given_root: folded,
            dir,
            protected_inside,
        })
    }

    /// The workspace root, as a real absolute path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path argument as the seed's `Workspace.resolve`: relative to the root,
    /// real-pathed, and required to stay inside. Protection is not checked here; use
    /// [`Workspace::check_path`] for that.
    pub fn resolve(&self, written: &str) -> Result<PathBuf, PathDenial> {
        validate(written)?;
        let path = Path::new(if written.is_empty() { "." } else { written });
        let joined = self.root.join(path);
        if joined.components().count() > PATH_COMPONENTS_MAX {
            return Err(invalid(
                written,
                format!("it has more than {PATH_COMPONENTS_MAX} parts"),
            ));
        }
        let real = realpath::real_path(&joined).map_err(|e| invalid(written, e.to_string()))?;
        if !real.starts_with(&self.root) {
            return Err(PathDenial::Outside {
                written: shown(written),
            });
        }
        Ok(real)
    }

    /// Resolves a path argument and refuses it when it is outside the workspace or
    /// protected: `.git` and secret names in the path as written or as resolved, and
    /// protected locations (imurun's own files, system and key folders) inside the root.
    pub fn check_path(&self, written: &str, target: Target) -> Result<WorkspacePath, PathDenial> {
        let absolute = match target {
            Target::Follow => self.resolve(written)?,
            Target::Entry => self.resolve_entry(written)?,
        };
        let relative = absolute
            .strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if let Some(why) = self.protected_reason(written, &relative, &absolute) {
            return Err(PathDenial::Protected {
                written: shown(written),
                why,
            });
        }
        Ok(WorkspacePath {
            written: written.to_string(),
            absolute,
            relative,
        })
    }

    fn resolve_entry(&self, written: &str) -> Result<PathBuf, PathDenial> {
        validate(written)?;
        let path = Path::new(written);
        let Some(Component::Normal(name)) = path.components().next_back() else {
            return Err(invalid(
                written,
                "it names no file or folder (it is empty, `.`, `..` or a root)",
            ));
        };
        let parent = path.parent().and_then(Path::to_str).unwrap_or("");
        let real_parent = self.resolve(parent).map_err(|denial| match denial {
            PathDenial::Outside { .. } => PathDenial::Outside {
                written: shown(written),
            },
            other => other,
        })?;
        Ok(real_parent.join(name))
    }

    fn protected_reason(&self, written: &str, relative: &Path, absolute: &Path) -> Option<String> {
        let written_path = Path::new(written);
        let written_inside = written_path
            .strip_prefix(&self.given_root)
            .or_else(|_| written_path.strip_prefix(&self.root))
            .unwrap_or(written_path);
        let names = written_inside.components().chain(relative.components());
        for component in names {
            if let Component::Normal(name) = component
                && let Some(why) = protected::name_reason(&name.to_string_lossy())
            {
                return Some(why);
            }
        }
        let lowered = protected::lowered(absolute);
        self.protected_inside
            .iter()
            .find(|location| lowered.starts_with(&location.lowered))
            .map(|location| format!("it is inside {}", location.why))
    }
}

/// Why `root` can never be a workspace, or `None`.
fn refusal(root: &Path, home: Option<&Path>, locations: &[Location]) -> Option<String> {
    if root.parent().is_none() {
        return Some("a whole filesystem cannot be the workspace".to_string());
    }
    let lowered = protected::lowered(root);
    if let Some(home) = home.map(protected::lowered) {
        if lowered == home {
            return Some(
                "the home folder itself cannot be the workspace: it holds keys, shell start-up files and everything else"
                    .to_string(),
            );
        }
        if home.starts_with(&lowered) {
            return Some("it contains the home folder".to_string());
        }
    }
    for location in locations {
        if lowered == location.lowered {
            return Some(format!("it is {}", location.why));
        }
        let inside = lowered.starts_with(&location.lowered);
        let contains = location.lowered.starts_with(&lowered);
        match location.kind {
            LocationKind::System | LocationKind::HomeSecret if inside => {
                return Some(format!("it is inside {}", location.why));
            }
            LocationKind::System | LocationKind::Holding | LocationKind::HomeSecret if contains => {
                return Some(format!("it contains {}", location.why));
            }
            _ => {}
        }
    }
    None
}

/// Refusals that need no filesystem: length, NUL bytes, and `~`.
fn validate(written: &str) -> Result<(), PathDenial> {
    if written.len() > PATH_BYTES_MAX {
        return Err(invalid(
            written,
            format!("it is longer than {PATH_BYTES_MAX} bytes"),
        ));
    }
    if written.contains('\0') {
        return Err(invalid(written, "it contains a NUL byte"));
    }
    if written.starts_with('~') {
        // `~` means the home folder to a shell and to a model; never a folder named `~` here.
        return Err(PathDenial::Outside {
            written: shown(written),
        });
    }
    Ok(())
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

fn shown(written: &str) -> String {
    if written.chars().count() > SHOWN_CHARS_MAX {
        written
            .chars()
            .take(SHOWN_CHARS_MAX)
            .chain("…".chars())
            .collect()
    } else {
        written.to_string()
    }
}

fn invalid(written: &str, why: impl Into<String>) -> PathDenial {
    PathDenial::Invalid {
        written: shown(written),
        why: why.into(),
    }
}
