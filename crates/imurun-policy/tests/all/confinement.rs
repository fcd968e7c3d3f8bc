//! Confinement: every path resolves inside the workspace or is denied — through `..`,
//! absolute paths, symlinks to files and folders, chains, dangling links and loops — and a
//! symlink swapped in between the check and the open cannot lead the open outside.

use std::fs;

use imurun_policy::{PathDenial, Target, WorkspacePath};

use crate::support::TempWorkspace;

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Allowed, resolving to this path relative to the root.
    Inside(&'static str),
    Outside,
    Invalid,
}
use Expect::{Inside, Invalid, Outside};

/// A workspace with a file, a folder, and symlinks of every kind.
fn fixture() -> TempWorkspace {
    let t = TempWorkspace::new();
    t.write("notes/a.txt", "inside");
    t.write("dir/sub/file.txt", "deep");
    t.symlink("notes/a.txt", "link_in");
    t.symlink(t.outside.join("secret.txt"), "link_out_file");
    t.symlink(&t.outside, "link_out_dir");
    t.symlink("../outside", "rel_out");
    t.symlink(t.outside.join("secret.txt"), "chain2");
    t.symlink("chain2", "chain1");
    t.symlink("notes", "c2");
    t.symlink("c2", "c1");
    t.symlink(t.outside.join("new.txt"), "dangle_out");
    t.symlink("notes/new.txt", "dangle_in");
    t.symlink("dangle_out", "dchain");
    t.symlink("loop2", "loop1");
    t.symlink("loop1", "loop2");
    t.symlink(t.root().join("notes"), "abs_in");
    t
}

fn check(t: &TempWorkspace, written: &str, target: Target, expect: Expect) -> Result<(), String> {
    let got = t.workspace.check_path(written, target);
    let ok = match (&got, expect) {
        (Ok(path), Inside(relative)) => path.relative() == std::path::Path::new(relative),
        (Err(PathDenial::Outside { .. }), Outside) => true,
        (Err(PathDenial::Invalid { .. }), Invalid) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{written:?} ({target:?}): expected {expect:?}, got {got:?}"
        ))
    }
}

fn check_all(t: &TempWorkspace, target: Target, cases: &[(&str, Expect)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(written, expect)| check(t, written, target, *expect).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn paths_followed_to_their_targets() {
    let t = fixture();
    let absolute_inside = t.root().join("notes/a.txt").to_string_lossy().into_owned();
    let long = "a/".repeat(3000);
    check_all(
        &t,
        Target::Follow,
        &[
            ("notes/a.txt", Inside("notes/a.txt")),
            ("./notes/../notes/a.txt", Inside("notes/a.txt")),
            ("new/file.txt", Inside("new/file.txt")),
            ("", Inside("")),
            (".", Inside("")),
            (absolute_inside.as_str(), Inside("notes/a.txt")),
            ("../outside/secret.txt", Outside),
            ("notes/../../outside", Outside),
            ("new/../../x", Outside),
            ("/etc/passwd", Outside),
            ("/", Outside),
            ("~/x", Outside),
            ("~", Outside),
            // Symlinks: to a file, to a folder, relative, chains, dangling, loops.
            ("link_in", Inside("notes/a.txt")),
            ("link_out_file", Outside),
            ("link_out_dir/secret.txt", Outside),
            ("link_out_dir/new.txt", Outside),
            ("rel_out/secret.txt", Outside),
            ("chain1", Outside),
            ("c1/a.txt", Inside("notes/a.txt")),
            ("abs_in/a.txt", Inside("notes/a.txt")),
            ("dangle_out", Outside),
            ("dangle_in", Inside("notes/new.txt")),
            ("dchain", Outside),
            ("loop1", Invalid),
            // `..` after a link applies to where the link leads, as the kernel does.
            ("link_out_dir/../ws/notes/a.txt", Inside("notes/a.txt")),
            ("a\0b", Invalid),
            (long.as_str(), Invalid),
        ],
    );
}

#[test]
fn entries_are_judged_where_they_are_not_where_they_point() {
    let t = fixture();
    check_all(
        &t,
        Target::Entry,
        &[
            ("link_out_file", Inside("link_out_file")),
            ("dangle_out", Inside("dangle_out")),
            ("c1", Inside("c1")),
            ("c1/a.txt", Inside("notes/a.txt")),
            ("link_out_dir/secret.txt", Outside),
            ("../outside", Outside),
            ("", Invalid),
            (".", Invalid),
            ("..", Invalid),
            ("notes/..", Invalid),
            ("/", Invalid),
            ("~/x", Outside),
        ],
    );
}

/// Checks `a/file.txt`, then replaces the folder `a` with a symlink to the outside folder
/// (which has a `file.txt` of its own), and hands back the checked path.
fn check_then_swap(
    t: &TempWorkspace,
    link_target: &std::path::Path,
    target: Target,
) -> WorkspacePath {
    t.write("a/file.txt", "inside");
    fs::write(t.outside.join("file.txt"), "outside").unwrap();
    let checked = t.workspace.check_path("a/file.txt", target).unwrap();
    fs::rename(t.root().join("a"), t.root().join("a_moved")).unwrap();
    t.symlink(link_target, "a");
    checked
}

#[test]
fn a_symlink_swapped_in_after_the_check_cannot_lead_a_read_outside() {
    for link_target in ["ABSOLUTE", "../outside"] {
        let t = TempWorkspace::new();
        let link_target = if link_target == "ABSOLUTE" {
            t.outside.clone()
        } else {
            link_target.into()
        };
        let checked = check_then_swap(&t, &link_target, Target::Follow);
        // A plain open of the checked path now lands outside: this is the race.
        assert_eq!(fs::read_to_string(checked.absolute()).unwrap(), "outside");
        let read = t.workspace.read_to_string(&checked, 1024);
        assert!(
            read.is_err(),
            "read through {link_target:?} returned {read:?}"
        );
    }
}

#[test]
fn a_symlink_swapped_in_after_the_check_cannot_lead_a_write_outside() {
    let t = TempWorkspace::new();
    let checked = check_then_swap(&t, &t.outside.clone(), Target::Follow);
    assert!(t.workspace.write_atomic(&checked, b"pwned").is_err());
    assert_eq!(
        fs::read_to_string(t.outside.join("file.txt")).unwrap(),
        "outside"
    );
}

#[test]
fn a_symlink_swapped_in_after_the_check_cannot_lead_a_delete_outside() {
    let t = TempWorkspace::new();
    let checked = check_then_swap(&t, &t.outside.clone(), Target::Entry);
    assert!(t.workspace.remove(&checked).is_err());
    assert!(t.outside.join("file.txt").exists());
}

#[test]
fn a_symlink_swapped_in_after_the_check_cannot_lead_a_mkdir_or_listing_outside() {
    let t = TempWorkspace::new();
    t.mkdir("a");
    let mkdir = t.workspace.check_path("a/new", Target::Follow).unwrap();
    let listing = t.workspace.check_path("a", Target::Follow).unwrap();
    fs::remove_dir(t.root().join("a")).unwrap();
    t.symlink(&t.outside, "a");
    assert!(t.workspace.create_dir_all(&mkdir).is_err());
    assert!(!t.outside.join("new").exists());
    assert!(t.workspace.list(&listing, 100).is_err());
}

#[test]
fn a_file_swapped_for_a_symlink_after_the_check_is_not_followed_outside() {
    let t = TempWorkspace::new();
    t.write("f.txt", "inside");
    let checked = t.workspace.check_path("f.txt", Target::Follow).unwrap();
    fs::remove_file(t.root().join("f.txt")).unwrap();
    t.symlink(t.outside.join("secret.txt"), "f.txt");
    assert!(t.workspace.read_to_string(&checked, 1024).is_err());
}
