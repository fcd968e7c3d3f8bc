//! Category toggles: one that is off denies its categories in every mode, allow-all
//! included; `writeFiles` also covers deletes, `network` external tools (connectors, MCP),
//! which go over the network too; compute and agent calls have no toggle.

use imurun_core::{Decision, ToolCategory};
use imurun_policy::{CATEGORIES, CallFacts, Mode, Rule, Settings, Toggles, check};

use crate::support::TempWorkspace;

#[test]
fn a_toggle_off_denies_exactly_its_categories_in_every_mode() {
    let t = TempWorkspace::new();
    let off = |f: fn(&mut Toggles)| {
        let mut toggles = Toggles::default();
        f(&mut toggles);
        toggles
    };
    let cases: [(&str, Toggles, &[ToolCategory]); 4] = [
        (
            "readFiles",
            off(|t| t.read_files = false),
            &[ToolCategory::Read],
        ),
        (
            "writeFiles",
            off(|t| t.write_files = false),
            &[ToolCategory::Write, ToolCategory::Delete],
        ),
        (
            "runShell",
            off(|t| t.run_shell = false),
            &[ToolCategory::Shell],
        ),
        (
            "network",
            off(|t| t.network = false),
            &[ToolCategory::Network, ToolCategory::External],
        ),
    ];
    for (name, toggles, denied) in cases {
        for mode in Mode::ALL {
            for category in CATEGORIES {
                let verdict = check(
                    &t.workspace,
                    &Settings { mode, toggles },
                    &CallFacts::new(category),
                );
                if denied.contains(&category) {
                    assert_eq!(
                        (verdict.decision, verdict.rule),
                        (Decision::Deny, Rule::ToggleOff)
                    );
                    assert!(
                        verdict.reason.contains(&format!("`{name}` is off")),
                        "{}",
                        verdict.reason
                    );
                } else {
                    assert_eq!(
                        verdict.rule,
                        Rule::ModeTable,
                        "{name} off, {category:?} in {mode}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_toggle_is_checked_before_paths() {
    let t = TempWorkspace::new();
    let settings = Settings {
        mode: Mode::AllowAll,
        toggles: Toggles {
            read_files: false,
            ..Toggles::default()
        },
    };
    let verdict = check(
        &t.workspace,
        &settings,
        &CallFacts::new(ToolCategory::Read).path("/etc/passwd"),
    );
    assert_eq!(
        verdict.reason,
        "file reads are turned off (`readFiles` is off)"
    );
}
