//! The mode table, modes × categories, through `check`; and the hard denials holding in
//! every mode, allow-all included.

use imurun_core::{Decision, ToolCategory};
use imurun_policy::{CallFacts, Mode, Rule, Settings, Toggles, check};

use crate::support::TempWorkspace;

use Decision::{Allow as A, Ask as Q};

/// The expected table, written out independently of the code: rows are categories, columns
/// are ask, allow-reads, allow-edits, allow-all.
const TABLE: &[(ToolCategory, [Decision; 4])] = &[
    (ToolCategory::Read, [Q, A, A, A]),
    (ToolCategory::Write, [Q, Q, A, A]),
    (ToolCategory::Delete, [Q, Q, Q, A]),
    (ToolCategory::Shell, [Q, Q, Q, A]),
    (ToolCategory::Network, [Q, A, A, A]),
    (ToolCategory::Compute, [A, A, A, A]),
    (ToolCategory::Agent, [A, A, A, A]),
    (ToolCategory::External, [Q, Q, Q, A]),
];

fn settings(mode: Mode) -> Settings {
    Settings {
        mode,
        toggles: Toggles::default(),
    }
}

#[test]
fn modes_by_categories() {
    let t = TempWorkspace::new();
    t.write("notes.txt", "hi");
    let mut failures = Vec::new();
    for (category, decisions) in TABLE {
        for (mode, expect) in Mode::ALL.into_iter().zip(decisions) {
            let mut facts = CallFacts::new(*category);
            match category {
                ToolCategory::Read | ToolCategory::Write | ToolCategory::Delete => {
                    facts = facts.path("notes.txt")
                }
                ToolCategory::Shell => facts = facts.path(".").command("ls -la"),
                _ => {}
            }
            let verdict = check(&t.workspace, &settings(mode), &facts);
            if verdict.decision != *expect || verdict.rule != Rule::ModeTable {
                failures.push(format!(
                    "{category:?} in {mode}: expected {expect:?}, got {verdict:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(imurun_policy::mode_table(), TABLE.to_vec());
}

#[test]
fn table_reasons_name_the_category_and_mode() {
    let t = TempWorkspace::new();
    let shell = CallFacts::new(ToolCategory::Shell).command("ls");
    assert_eq!(
        check(&t.workspace, &settings(Mode::AllowReads), &shell).reason,
        "shell commands ask first in allow-reads mode"
    );
    let read = CallFacts::new(ToolCategory::Read).path("x.txt");
    assert_eq!(
        check(&t.workspace, &settings(Mode::AllowReads), &read).reason,
        "file reads are allowed in allow-reads mode"
    );
}

#[test]
fn hard_denials_hold_in_every_mode() {
    let t = TempWorkspace::new();
    t.write(".env", "TOKEN=1");
    let cases = [
        (
            CallFacts::new(ToolCategory::Read).path("/etc/passwd"),
            Rule::OutsideWorkspace,
            "`/etc/passwd` is outside the workspace",
        ),
        (
            CallFacts::new(ToolCategory::Read).path("../x"),
            Rule::OutsideWorkspace,
            "outside the workspace",
        ),
        (
            CallFacts::new(ToolCategory::Read).path(".env"),
            Rule::ProtectedPath,
            "`.env` is protected",
        ),
        (
            CallFacts::new(ToolCategory::Write).path(".git/config"),
            Rule::ProtectedPath,
            "protected",
        ),
        (
            CallFacts::new(ToolCategory::Delete).path(".git"),
            Rule::ProtectedPath,
            "protected",
        ),
        (
            CallFacts::new(ToolCategory::Shell).path("/").command("ls"),
            Rule::OutsideWorkspace,
            "outside",
        ),
        (
            CallFacts::new(ToolCategory::Shell)
                .path(".")
                .command("rm -rf ~"),
            Rule::DestructiveCommand,
            "`rm -rf ~` is on the destructive-command deny-list: recursive delete of the home folder",
        ),
        (
            CallFacts::new(ToolCategory::Read).path("a\0b"),
            Rule::InvalidPath,
            "NUL",
        ),
        (
            CallFacts {
                category: ToolCategory::Read,
                paths: vec!["a".into(); 65],
                command: None,
                tainted: false,
            },
            Rule::TooManyPaths,
            "65 paths",
        ),
    ];
    for mode in Mode::ALL {
        for (facts, rule, fragment) in &cases {
            let verdict = check(&t.workspace, &settings(mode), facts);
            assert_eq!(
                (verdict.decision, verdict.rule),
                (Decision::Deny, *rule),
                "{facts:?} in {mode}"
            );
            assert!(
                verdict.reason.contains(fragment),
                "{:?} lacks {fragment:?}",
                verdict.reason
            );
        }
    }
}

/// A tainted session: every way to send data out or change things asks below `allow-all`,
/// with the taint's reason; reads, computation and sub-agents decide as before; hard
/// denials still deny; `allow-all` is unchanged.
#[test]
fn a_tainted_session_asks_before_sending_or_changing() {
    let t = TempWorkspace::new();
    for mode in Mode::ALL {
        for category in imurun_policy::CATEGORIES {
            let clean = check(&t.workspace, &settings(mode), &CallFacts::new(category));
            let tainted = check(
                &t.workspace,
                &settings(mode),
                &CallFacts::new(category).tainted(true),
            );
            if mode != Mode::AllowAll && imurun_policy::TAINT_ASKS.contains(&category) {
                assert_eq!(
                    (tainted.decision, tainted.rule, tainted.reason.as_str()),
                    (Decision::Ask, Rule::Tainted, imurun_policy::TAINT_REASON),
                    "{category:?} in {mode}"
                );
            } else {
                assert_eq!(tainted, clean, "{category:?} in {mode}");
            }
        }
    }
    let denied = check(
        &t.workspace,
        &settings(Mode::AllowReads),
        &CallFacts::new(ToolCategory::Write)
            .path("../out.txt")
            .tainted(true),
    );
    assert_eq!(
        (denied.decision, denied.rule),
        (Decision::Deny, Rule::OutsideWorkspace)
    );
}
