//! File operations inside the workspace, opened through the capability handle on its root so
//! that no symlink swapped in after the policy check can lead them outside.
//!
//! They take a [`WorkspacePath`] (already confined and checked) and use its path relative
//! to the root. That path was real when it was checked, so it holds no symlinks; if one has
//! appeared since, `cap-std` refuses to follow it out of the root and the operation fails.
//! Writes go to a temporary file in the same folder that is then renamed over the target:
//! a new inode, so a hard link planted in the workspace cannot carry a write outside.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};

use crate::workspace::{Workspace, WorkspacePath};

/// The most entries a listing reads from one folder before sorting; a folder with more is
/// reported as truncated. Bounds memory and time on huge folders.
pub const LIST_SCAN_ENTRIES_MAX: usize = 100_000;

/// Why a file operation failed. `Display` is a sentence a model can act on.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The operating system refused, or a symlink tried to lead outside the workspace.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    /// The file is larger than the caller's limit.
    #[error("`{path}` is {size_bytes} bytes, more than the {bytes_max} that may be read")]
    TooLarge {
        path: String,
        size_bytes: u64,
        bytes_max: u64,
    },
    /// Not a regular file (a folder, a device, a pipe).
    #[error("`{path}` is not a regular file")]
    NotAFile { path: String },
    /// Not a folder.
    #[error("`{path}` is not a folder")]
    NotAFolder { path: String },
    /// A regular file with more than one name: one of them may be outside the workspace.
    #[error(
        "`{path}` has {links} hard links; one may lead outside the workspace, so it is not read"
    )]
    HardLinked { path: String, links: u64 },
    /// The file is not UTF-8 text.
    #[error("`{path}` is not UTF-8 text")]
    NotUtf8 { path: String },
    /// The operation would replace or remove the workspace root itself.
    #[error("the workspace root itself cannot be {action}")]
    IsRoot { action: &'static str },
}

/// What [`Workspace::remove`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// A file or a symlink.
    File,
    /// A folder and everything in it.
    Folder,
}

/// The kind of a listed entry. Symlinks are reported as links, not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Folder,
    Symlink,
    Other,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    pub name: String,
    pub kind: EntryKind,
    /// Size of a regular file; 0 for everything else.
    pub size_bytes: u64,
    /// Whether the name is protected (`.git`, `.env*`, ...): a tool may show it but will
    /// not be allowed to open it.
    pub protected: bool,
}

/// A folder's entries, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub entries: Vec<ListEntry>,
    /// More entries existed than were returned.
    pub truncated: bool,
}

/// Makes temporary names unique within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// Reads a whole regular file of at most `bytes_max` bytes.
    pub fn read(&self, path: &WorkspacePath, bytes_max: u64) -> Result<Vec<u8>, FileError> {
        let shown = path.written().to_string();
        let io = |action| {
            move |source| FileError::Io {
                action,
                path: path.written().to_string(),
                source,
            }
        };
        let mut options = OpenOptions::new();
        options.read(true);
        // Non-blocking, so that opening a FIFO planted in the workspace cannot hang the
        // tool; it is refused below as not a regular file. No effect on regular files.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = self
            .dir
            .open_with(relative_or_dot(path.relative()), &options)
            .map_err(io("open"))?;
        let metadata = file.metadata().map_err(io("inspect"))?;
        if !metadata.is_file() {
            return Err(FileError::NotAFile { path: shown });
        }
        if metadata.nlink() > 1 {
            return Err(FileError::HardLinked {
                path: shown,
                links: metadata.nlink(),
            });
        }
        if metadata.len() > bytes_max {
            return Err(FileError::TooLarge {
                path: shown,
                size_bytes: metadata.len(),
                bytes_max,
            });
        }
        let mut bytes = Vec::new();
        // Read one byte past the limit: a file that grew since `metadata` is still caught.
        file.into_std()
            .take(bytes_max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io("read"))?;
        if bytes.len() as u64 > bytes_max {
            return Err(FileError::TooLarge {
                path: shown,
                size_bytes: bytes.len() as u64,
                bytes_max,
            });
        }
        Ok(bytes)
    }

    /// Reads a whole regular file of at most `bytes_max` bytes as UTF-8 text.
    pub fn read_to_string(
        &self,
        path: &WorkspacePath,
        bytes_max: u64,
    ) -> Result<String, FileError> {
        let bytes = self.read(path, bytes_max)?;
        String::from_utf8(bytes).map_err(|_| FileError::NotUtf8 {
            path: path.written().to_string(),
        })
    }

    /// Replaces (or creates) a file with `bytes` atomically: readers see the old or the new
    /// contents, never a mix. An existing file keeps its permissions. The parent folder must
    /// exist.
    pub fn write_atomic(&self, path: &WorkspacePath, bytes: &[u8]) -> Result<(), FileError> {
        let io = |action| {
            move |source| FileError::Io {
                action,
                path: path.written().to_string(),
                source,
            }
        };
        let (parent, name) =
            split_parent(path.relative()).ok_or(FileError::IsRoot { action: "written" })?;
        let folder = self.open_folder(parent).map_err(io("open the folder of"))?;
        let permissions = match folder.symlink_metadata(name) {
            Ok(existing) if existing.is_dir() => {
                return Err(FileError::NotAFile {
                    path: path.written().to_string(),
                });
            }
            Ok(existing) if existing.is_file() => Some(existing.permissions()),
            _ => None,
        };
        let temp_name = temp_name(name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let result = (|| {
            let mut file = folder.open_with(&temp_name, &options)?;
            file.write_all(bytes)?;
            if let Some(permissions) = permissions {
                file.set_permissions(permissions)?;
            }
            file.sync_all()?;
            drop(file);
            folder.rename(&temp_name, &folder, name)
        })();
        if result.is_err() {
            // The temporary file is ours; leaving it would litter the workspace.
            let _ = folder.remove_file(&temp_name);
        }
        result.map_err(io("write"))
    }

    /// Creates a folder and its missing parents.
    pub fn create_dir_all(&self, path: &WorkspacePath) -> Result<(), FileError> {
        if path.relative().as_os_str().is_empty() {
            return Ok(());
        }
        self.dir
            .create_dir_all(path.relative())
            .map_err(|source| FileError::Io {
                action: "create",
                path: path.written().to_string(),
                source,
            })
    }

    /// Removes a file, a symlink (not its target), or a folder with everything in it.
    /// Check the path with [`crate::Target::Entry`] so a final symlink is the link itself.
    pub fn remove(&self, path: &WorkspacePath) -> Result<Removed, FileError> {
        let io = |action| {
            move |source| FileError::Io {
                action,
                path: path.written().to_string(),
                source,
            }
        };
        let relative = path.relative();
        if relative.as_os_str().is_empty() {
            return Err(FileError::IsRoot { action: "removed" });
        }
        let metadata = self.dir.symlink_metadata(relative).map_err(io("inspect"))?;
        if metadata.is_dir() {
            self.dir.remove_dir_all(relative).map_err(io("remove"))?;
            Ok(Removed::Folder)
        } else {
            self.dir.remove_file(relative).map_err(io("remove"))?;
            Ok(Removed::File)
        }
    }

    /// Lists a folder's entries sorted by name, at most `entries_max` of them.
    pub fn list(&self, path: &WorkspacePath, entries_max: usize) -> Result<Listing, FileError> {
        let io = |action| {
            move |source| FileError::Io {
                action,
                path: path.written().to_string(),
                source,
            }
        };
        let folder = self.open_folder(path.relative()).map_err(|source| {
            if source.raw_os_error() == Some(libc::ENOTDIR) {
                FileError::NotAFolder {
                    path: path.written().to_string(),
                }
            } else {
                io("open")(source)
            }
        })?;
        let mut names = Vec::new();
        let mut scanned_all = true;
        for entry in folder.entries().map_err(io("list"))? {
            if names.len() >= LIST_SCAN_ENTRIES_MAX {
                scanned_all = false;
                break;
            }
            let entry = entry.map_err(io("list"))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        let truncated = !scanned_all || names.len() > entries_max;
        names.truncate(entries_max);
        let entries = names
            .into_iter()
            .map(|name| {
                let metadata = folder.symlink_metadata(&name).ok();
                let kind = match &metadata {
                    Some(m) if m.is_symlink() => EntryKind::Symlink,
                    Some(m) if m.is_dir() => EntryKind::Folder,
                    Some(m) if m.is_file() => EntryKind::File,
                    _ => EntryKind::Other,
                };
                let size_bytes = match (&metadata, kind) {
                    (Some(m), EntryKind::File) => m.len(),
                    _ => 0,
                };
                let protected = crate::protected::name_reason(&name).is_some();
                ListEntry {
                    name,
                    kind,
                    size_bytes,
                    protected,
                }
            })
            .collect();
        Ok(Listing { entries, truncated })
    }

    fn open_folder(&self, relative: &Path) -> std::io::Result<Dir> {
        if relative.as_os_str().is_empty() {
            self.dir.try_clone()
        } else {
            self.dir.open_dir(relative)
        }
    }
}

fn relative_or_dot(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    }
}

fn split_parent(relative: &Path) -> Option<(&Path, &Path)> {
    let name = relative.file_name()?;
    Some((relative.parent().unwrap_or(Path::new("")), Path::new(name)))
}

/// A hidden, unique name beside the target. The target's name is cut so the temporary name
/// stays under the 255-byte limit of common filesystems.
fn temp_name(name: &Path) -> String {
    let lossy = name.to_string_lossy();
    let mut cut = String::new();
    for c in lossy.chars() {
        if cut.len() + c.len_utf8() > 100 {
            break;
        }
        cut.push(c);
    }
    let counter = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{cut}.imurun-{}-{counter}.tmp", std::process::id())
}
