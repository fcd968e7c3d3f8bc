//! Protected paths: `.git` and secret names in any case, as written and as resolved, and
//! imurun's own guarded files inside the workspace.

use imurun_policy::{PathDenial, Target};

use crate::support::TempWorkspace;

fn check(t: &TempWorkspace, written: &str, target: Target, protected: bool) -> Result<(), String> {
    let got = t.workspace.check_path(written, target);
    match (&got, protected) {
        (Err(PathDenial::Protected { .. }), true) | (Ok(_), false) => Ok(()),
        _ => Err(format!(
            "{written:?} ({target:?}): expected protected={protected}, got {got:?}"
        )),
    }
}

fn check_all(t: &TempWorkspace, target: Target, cases: &[(&str, bool)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(written, protected)| check(t, written, target, *protected).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn secret_and_repository_names_in_any_case() {
    let t = TempWorkspace::new();
    check_all(
        &t,
        Target::Follow,
        &[
            (".git", true),
            (".git/config", true),
            (".GIT/config", true),
            ("sub/.Git/HEAD", true),
            (".env", true),
            (".Env", true),
            (".ENV.local", true),
            (".envrc", true),
            ("app/.env.production", true),
            (".netrc", true),
            ("_netrc", true),
            (".NPMRC", true),
            (".pypirc", true),
            (".git-credentials", true),
            (".htpasswd", true),
            (".pgpass", true),
            ("keys/.ssh/id_ed25519", true),
            (".gitignore", false),
            (".github/workflows/ci.yml", false),
            ("env.txt", false),
            ("my.env", false),
            (".venv/bin/python", false),
            ("notes.md", false),
        ],
    );
}

#[test]
fn git_is_checked_as_written_and_as_resolved() {
    let t = TempWorkspace::new();
    t.write(".git/config", "[core]");
    t.write("notes.txt", "hi");
    t.write(".env", "TOKEN=1");
    t.symlink(".git", "gitlink");
    t.symlink(".env", "innocent");
    t.symlink("notes.txt", ".env.link");
    check_all(
        &t,
        Target::Follow,
        &[
            // Resolved: an innocent name that leads into `.git` or to `.env`.
            ("gitlink/config", true),
            ("innocent", true),
            // Written: resolves to an ordinary file, but names `.git` or `.env` on the way.
            (".git/../notes.txt", true),
            (".env.link", true),
            ("notes.txt", false),
        ],
    );
    check_all(
        &t,
        Target::Entry,
        &[(".git", true), (".ENV", true), ("gitlink", false)],
    );
}

#[test]
fn imurun_own_files_inside_the_workspace_are_protected() {
    let t = TempWorkspace::with_guarded(&["imurun.toml", "imurun-src"]);
    t.write("imurun.toml", "mode = 'ask'");
    t.write("imurun-src/policy.rs", "//");
    t.symlink("imurun.toml", "cfg");
    check_all(
        &t,
        Target::Follow,
        &[
            ("imurun.toml", true),
            ("IMURUN.TOML", true),
            ("imurun-src/policy.rs", true),
            ("imurun-src", true),
            ("cfg", true),
            ("imurun.toml.bak", false),
        ],
    );
}

#[test]
fn reasons_say_what_is_protected() {
    let t = TempWorkspace::new();
    let denial = t
        .workspace
        .check_path(".git/hooks/pre-commit", Target::Follow)
        .unwrap_err();
    assert_eq!(
        denial.to_string(),
        "`.git/hooks/pre-commit` is protected: `.git` holds the repository's history, configuration and hooks"
    );
}
