//! The capability-handle file operations: reads with limits, atomic writes that never write
//! through a hard link, listings, folder creation and removal.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use imurun_policy::{EntryKind, FileError, Removed, Target};

use crate::support::TempWorkspace;

#[test]
fn write_then_read_round_trips_and_overwrites() {
    let t = TempWorkspace::new();
    t.mkdir("docs");
    let path = t
        .workspace
        .check_path("docs/a.txt", Target::Follow)
        .unwrap();
    t.workspace.write_atomic(&path, b"first").unwrap();
    t.workspace
        .write_atomic(&path, "second ✓".as_bytes())
        .unwrap();
    assert_eq!(t.workspace.read_to_string(&path, 1024).unwrap(), "second ✓");
    let names: Vec<_> = fs::read_dir(t.root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a.txt"], "no temporary file is left behind");
}

#[test]
fn an_overwrite_keeps_the_file_permissions() {
    let t = TempWorkspace::new();
    t.write("run.sh", "#!/bin/sh");
    fs::set_permissions(t.root().join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    let path = t.workspace.check_path("run.sh", Target::Follow).unwrap();
    t.workspace
        .write_atomic(&path, b"#!/bin/sh\necho hi")
        .unwrap();
    let mode = fs::metadata(t.root().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
}

#[test]
fn a_write_through_a_planted_hard_link_replaces_the_link_not_the_outside_file() {
    let t = TempWorkspace::new();
    let outside_file = t.outside.join("target.txt");
    fs::write(&outside_file, "outside original").unwrap();
    fs::hard_link(&outside_file, t.root().join("h.txt")).unwrap();
    let path = t.workspace.check_path("h.txt", Target::Follow).unwrap();
    t.workspace.write_atomic(&path, b"new").unwrap();
    assert_eq!(
        fs::read_to_string(&outside_file).unwrap(),
        "outside original"
    );
    assert_eq!(fs::read_to_string(t.root().join("h.txt")).unwrap(), "new");
}

#[test]
fn a_hard_linked_file_is_not_read() {
    let t = TempWorkspace::new();
    fs::hard_link(t.outside.join("secret.txt"), t.root().join("h.txt")).unwrap();
    let path = t.workspace.check_path("h.txt", Target::Follow).unwrap();
    let err = t.workspace.read(&path, 1024).unwrap_err();
    assert!(
        matches!(err, FileError::HardLinked { links: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn reads_refuse_what_is_not_a_small_regular_text_file() {
    let t = TempWorkspace::new();
    t.write("big.txt", &"x".repeat(100));
    t.mkdir("folder");
    fs::write(t.root().join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(t.root().join("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    let read = |written: &str, bytes_max: u64| {
        let path = t.workspace.check_path(written, Target::Follow).unwrap();
        t.workspace.read_to_string(&path, bytes_max)
    };
    assert!(matches!(
        read("big.txt", 99),
        Err(FileError::TooLarge {
            size_bytes: 100,
            bytes_max: 99,
            ..
        })
    ));
    assert_eq!(read("big.txt", 100).unwrap().len(), 100);
    assert!(matches!(
        read("folder", 10),
        Err(FileError::NotAFile { .. })
    ));
    assert!(matches!(
        read("bin.dat", 10),
        Err(FileError::NotUtf8 { .. })
    ));
    // A FIFO would block a plain open forever; it is refused at once instead.
    assert!(matches!(read("fifo", 10), Err(FileError::NotAFile { .. })));
    assert!(matches!(
        read("missing.txt", 10),
        Err(FileError::Io { action: "open", .. })
    ));
}

#[test]
fn writes_refuse_the_root_folders_and_missing_parents() {
    let t = TempWorkspace::new();
    t.mkdir("folder");
    let write = |written: &str| {
        let path = t.workspace.check_path(written, Target::Follow).unwrap();
        t.workspace.write_atomic(&path, b"x")
    };
    assert!(matches!(write(""), Err(FileError::IsRoot { .. })));
    assert!(matches!(write("folder"), Err(FileError::NotAFile { .. })));
    assert!(matches!(write("missing/x.txt"), Err(FileError::Io { .. })));
}

#[test]
fn folders_are_created_listed_and_removed() {
    let t = TempWorkspace::new();
    let nested = t.workspace.check_path("a/b/c", Target::Follow).unwrap();
    t.workspace.create_dir_all(&nested).unwrap();
    t.write("a/file.txt", "12345");
    t.write("a/.env", "SECRET=1");
    t.symlink("file.txt", "a/link");
    let folder = t.workspace.check_path("a", Target::Follow).unwrap();
    let listing = t.workspace.list(&folder, 10).unwrap();
    let shown: Vec<_> = listing
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.kind, e.size_bytes, e.protected))
        .collect();
    assert_eq!(
        shown,
        [
            (".env", EntryKind::File, 8, true),
            ("b", EntryKind::Folder, 0, false),
            ("file.txt", EntryKind::File, 5, false),
            ("link", EntryKind::Symlink, 0, false),
        ]
    );
    assert!(!listing.truncated);
    let short = t.workspace.list(&folder, 2).unwrap();
    assert_eq!(short.entries.len(), 2);
    assert!(short.truncated);
    let file = t
        .workspace
        .check_path("a/file.txt", Target::Follow)
        .unwrap();
    assert!(matches!(
        t.workspace.list(&file, 10),
        Err(FileError::NotAFolder { .. })
    ));

    let link = t.workspace.check_path("a/link", Target::Entry).unwrap();
    assert_eq!(t.workspace.remove(&link).unwrap(), Removed::File);
    assert!(
        t.root().join("a/file.txt").exists(),
        "removing a link keeps its target"
    );
    assert_eq!(t.workspace.remove(&folder).unwrap(), Removed::Folder);
    assert!(!t.root().join("a").exists());
}

#[test]
fn removing_a_link_to_an_outside_folder_removes_only_the_link() {
    let t = TempWorkspace::new();
    t.symlink(&t.outside, "out");
    let link = t.workspace.check_path("out", Target::Entry).unwrap();
    assert_eq!(t.workspace.remove(&link).unwrap(), Removed::File);
    assert!(t.outside.join("secret.txt").exists());
}

#[test]
fn the_root_itself_cannot_be_removed() {
    let t = TempWorkspace::new();
    let root = t.workspace.check_path("", Target::Follow).unwrap();
    assert!(matches!(
        t.workspace.remove(&root),
        Err(FileError::IsRoot { .. })
    ));
    assert!(t.root().exists());
}
