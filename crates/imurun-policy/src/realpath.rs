//! Real paths for paths that may not exist yet: the deepest existing ancestor is resolved by
//! the operating system, the rest is appended with `.` and `..` folded. A dangling symlink is
//! followed to where it points, so a link to a file that does not exist yet cannot carry a
//! later write outside the workspace.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// How many symlinks one resolution follows by hand (dangling links), as Linux's `MAXSYMLINKS`.
pub(crate) const SYMLINK_HOPS_MAX: usize = 40;

/// Why a path has no real path.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RealPathError {
    /// More than `SYMLINK_HOPS_MAX` dangling links in a row, or a loop of them.
    #[error("it goes through more than {SYMLINK_HOPS_MAX} symbolic links")]
    TooManyLinks,
    /// Even the filesystem root could not be resolved, or a link could not be read.
    #[error("it cannot be resolved: {0}")]
    Io(#[from] io::Error),
}

/// The real, absolute path `path` names, following every symlink, whether or not the path
/// exists. `path` must be absolute.
pub(crate) fn real_path(path: &Path) -> Result<PathBuf, RealPathError> {
    let mut pending = path.to_path_buf();
    for _ in 0..=SYMLINK_HOPS_MAX {
        match resolve_once(&pending)? {
            Step::Done(real) => return Ok(real),
            Step::Follow(next) => pending = next,
        }
    }
    Err(RealPathError::TooManyLinks)
}

enum Step {
    Done(PathBuf),
    /// A dangling symlink was met: resolve this path instead.
    Follow(PathBuf),
}

fn resolve_once(path: &Path) -> Result<Step, RealPathError> {
    let components: Vec<Component<'_>> = path.components().collect();
    // Longest prefix first: the common case (the path exists) costs one call.
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        match fs::canonicalize(&prefix) {
            Ok(real) => return Ok(Step::Done(append_folded(real, &components[split..]))),
            Err(_) => {
                let is_link =
                    fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
                if is_link {
                    let target = fs::read_link(&prefix)?;
                    let mut next = prefix.parent().map(Path::to_path_buf).unwrap_or_default();
                    // `join` replaces the base when the target is absolute, as the kernel does.
                    next = next.join(target);
                    next.extend(&components[split..]);
                    return Ok(Step::Follow(next));
                }
            }
        }
    }
    Err(RealPathError::Io(io::Error::new(
        io::ErrorKind::NotFound,
        "no part of the path exists",
    )))
}

/// Appends components that do not exist to a real path: `.` is skipped, `..` removes the
/// last component (the real path has no symlinks, so this is what the kernel would do).
fn append_folded(mut real: PathBuf, tail: &[Component<'_>]) -> PathBuf {
    for component in tail {
        match component {
            Component::ParentDir => {
                real.pop();
            }
            Component::Normal(name) => real.push(name),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    real
}

/// Folds `.` and `..` without touching the filesystem, for paths judged before they exist.
pub(crate) fn fold_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tail_is_folded_onto_the_real_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let real_dir = fs::canonicalize(dir.path()).unwrap();
        let cases = [
            ("a/b/c", real_dir.join("a/b/c")),
            ("a/./b/../c", real_dir.join("a/c")),
            ("new/../..", real_dir.parent().unwrap().to_path_buf()),
        ];
        for (tail, expect) in cases {
            assert_eq!(real_path(&dir.path().join(tail)).unwrap(), expect, "{tail}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn dangling_links_are_followed_and_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let real_dir = fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("/nonexistent-imurun/x", dir.path().join("out")).unwrap();
        assert_eq!(
            real_path(&dir.path().join("out")).unwrap(),
            PathBuf::from("/nonexistent-imurun/x")
        );
        std::os::unix::fs::symlink("loop2", dir.path().join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", dir.path().join("loop2")).unwrap();
        assert!(matches!(
            real_path(&dir.path().join("loop1/x")),
            Err(RealPathError::TooManyLinks)
        ));
        std::os::unix::fs::symlink("sub/file", dir.path().join("inside")).unwrap();
        assert_eq!(
            real_path(&dir.path().join("inside")).unwrap(),
            real_dir.join("sub/file")
        );
    }
}
