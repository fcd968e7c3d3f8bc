//! Protected names and locations: paths that stay off limits even inside the workspace, and
//! the folders that can never be a workspace at all.
//!
//! Names are compared case-insensitively, because `.GIT` and `.Env` are the same files as
//! `.git` and `.env` on macOS's default filesystem. Locations are compared
//! case-insensitively too: on Linux that protects a little more than needed, never less.

use std::path::{Path, PathBuf};

/// Files named exactly so hold credentials.
const SECRET_FILES: &[&str] = &[
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".htpasswd",
    ".pgpass",
];

/// Folders named so hold keys, wherever they appear.
const SECRET_FOLDERS: &[&str] = &[".ssh", ".gnupg", ".aws"];

/// The operating system's own trees: never a workspace, nor inside one.
pub(crate) const OS_LOCATIONS: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/dev",
    "/proc",
    "/sys",
    "/System",
    "/Library",
    "/private/etc",
];

/// System folders that hold other folders a workspace may legitimately live in (a service's
/// `/var/lib/imurun`, root's `/root/...`, macOS's temporary folders under `/private/var`).
/// They can never be the workspace themselves.
pub(crate) const HOLDING_LOCATIONS: &[&str] =
    &["/var", "/private/var", "/root", "/home", "/Users", "/tmp"];

/// Folders in the home folder that hold keys and cloud credentials.
pub(crate) const HOME_SECRET_FOLDERS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
    ".config/gcloud",
    ".password-store",
];

/// Why a path component is protected by its name alone, or `None`.
pub(crate) fn name_reason(component: &str) -> Option<String> {
    let lower = component.to_lowercase();
    if lower == ".git" {
        return Some("`.git` holds the repository's history, configuration and hooks".to_string());
    }
    if lower.starts_with(".env") {
        return Some("names beginning with `.env` hold secrets".to_string());
    }
    if SECRET_FILES.contains(&lower.as_str()) {
        return Some(format!("`{lower}` holds credentials"));
    }
    if SECRET_FOLDERS.contains(&lower.as_str()) {
        return Some(format!("`{lower}` holds keys"));
    }
    None
}

/// What kind of place a protected location is, which decides whether a workspace may live
/// inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LocationKind {
    /// The operating system's own tree: no workspace inside it.
    System,
    /// A system folder that holds other folders: a workspace may live deeper inside.
    Holding,
    /// A key folder in the home folder: no workspace inside it.
    HomeSecret,
    /// imurun's own files, passed in by the caller: a workspace may live inside a guarded
    /// folder (the default `~/.imurun/workspace` does), never be one.
    Guarded,
}

/// A protected location in lowercase, what kind it is, and why it is protected.
#[derive(Debug, Clone)]
pub(crate) struct Location {
    pub(crate) lowered: PathBuf,
    pub(crate) kind: LocationKind,
    pub(crate) why: String,
}

/// Every protected location, in the raw and the resolved form (`/etc` is `/private/etc` on
/// macOS), given the home folder and imurun's own files (`guarded`).
pub(crate) fn all_locations(home: Option<&Path>, guarded: &[PathBuf]) -> Vec<Location> {
    let mut out = Vec::new();
    let mut add = |path: PathBuf, kind: LocationKind, why: String| {
        let resolved = super::realpath::real_path(&path).ok();
        for form in std::iter::once(path).chain(resolved) {
            out.push(Location {
                lowered: lowered(&form),
                kind,
                why: why.clone(),
            });
        }
    };
    for location in OS_LOCATIONS {
        add(
            PathBuf::from(location),
            LocationKind::System,
            format!("the system location `{location}`"),
        );
    }
    for location in HOLDING_LOCATIONS {
        add(
            PathBuf::from(location),
            LocationKind::Holding,
            format!("the system location `{location}`"),
        );
    }
    if let Some(home) = home {
        for folder in HOME_SECRET_FOLDERS {
            add(
                home.join(folder),
                LocationKind::HomeSecret,
                format!("`~/{folder}`, which holds keys"),
            );
        }
    }
    for path in guarded {
        let why = format!(
            "imurun's own configuration, data or source (`{}`)",
            path.display()
        );
        add(path.clone(), LocationKind::Guarded, why);
    }
    out
}

/// A path in lowercase, for comparisons that ignore case.
pub(crate) fn lowered(path: &Path) -> PathBuf {
    PathBuf::from(path.to_string_lossy().to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let cases = [
            (".git", true),
            (".GIT", true),
            (".Git", true),
            (".env", true),
            (".Env", true),
            (".envrc", true),
            (".env.local", true),
            (".netrc", true),
            ("_netrc", true),
            (".NPMRC", true),
            (".pypirc", true),
            (".git-credentials", true),
            (".htpasswd", true),
            (".ssh", true),
            (".gitignore", false),
            (".github", false),
            ("env", false),
            ("my.env", false),
            ("environment.txt", false),
            (".venv", false),
        ];
        for (name, expect) in cases {
            assert_eq!(name_reason(name).is_some(), expect, "{name}");
        }
    }
}
