//! Which folders may be the workspace: never a filesystem root, the home folder or a folder
//! holding it, the system's own folders, key folders, or imurun's own guarded locations.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use imurun_policy::{Workspace, WorkspaceConfig, WorkspaceError};

fn open(
    root: impl Into<PathBuf>,
    home: &Path,
    guarded: &[PathBuf],
) -> Result<Workspace, WorkspaceError> {
    Workspace::open(&WorkspaceConfig {
        root: root.into(),
        home: Some(home.to_path_buf()),
        guarded: guarded.to_vec(),
    })
}

/// `Some(fragment)`: refused with a reason containing it. `None`: opened.
fn check(
    root: impl Into<PathBuf>,
    home: &Path,
    guarded: &[PathBuf],
    expect: Option<&str>,
) -> Result<(), String> {
    let root = root.into();
    let got = open(root.clone(), home, guarded);
    match (&got, expect) {
        (Ok(_), None) => Ok(()),
        (Err(WorkspaceError::Refused { why, .. }), Some(fragment)) if why.contains(fragment) => {
            Ok(())
        }
        _ => Err(format!("{root:?}: expected {expect:?}, got {got:?}")),
    }
}

#[test]
fn refused_and_accepted_roots() {
    let base_dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(base_dir.path()).unwrap();
    let home = base.join("home");
    fs::create_dir_all(home.join(".ssh")).unwrap();
    let data = home.join(".imurun");
    let link_to_root = base.join("to-root");
    std::os::unix::fs::symlink("/", &link_to_root).unwrap();
    let link_to_etc = base.join("to-etc");
    std::os::unix::fs::symlink("/etc", &link_to_etc).unwrap();
    let link_to_etc_child = base.join("etc-link/imurun-never-created");
    std::os::unix::fs::symlink("/etc", base.join("etc-link")).unwrap();
    let guarded = [data.clone()];
    let cases: Vec<(PathBuf, Option<&str>)> = vec![
        ("/".into(), Some("a whole filesystem")),
        ("/.".into(), Some("a whole filesystem")),
        ("/tmp/..".into(), Some("a whole filesystem")),
        (link_to_root, Some("a whole filesystem")),
        (home.clone(), Some("the home folder itself")),
        (base.clone(), Some("contains the home folder")),
        (home.join(".ssh/ws"), Some("`~/.ssh`")),
        ("/etc".into(), Some("the system location `/etc`")),
        (
            "/etc/imurun-never-created".into(),
            Some("inside the system location `/etc`"),
        ),
        ("/usr/local/imurun-never-created".into(), Some("`/usr`")),
        (link_to_etc, Some("`/etc`")),
        (link_to_etc_child, Some("`/etc`")),
        ("/var".into(), Some("`/var`")),
        ("/home".into(), Some("`/home`")),
        ("/root".into(), Some("`/root`")),
        (data.clone(), Some("imurun's own")),
        // The default shape: a workspace inside imurun's data folder, in the home folder.
        (data.join("workspace"), None),
        (home.join("projects/site"), None),
        (base.join("ws"), None),
    ];
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(root, expect)| check(root, &home, &guarded, expect).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(!Path::new("/etc/imurun-never-created").exists());
}

#[test]
fn a_missing_root_is_created_private() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("a/b/ws");
    let workspace = Workspace::open(&WorkspaceConfig {
        root: root.clone(),
        ..WorkspaceConfig::default()
    })
    .unwrap();
    assert_eq!(workspace.root(), fs::canonicalize(&root).unwrap());
    let mode = fs::metadata(&root).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}
