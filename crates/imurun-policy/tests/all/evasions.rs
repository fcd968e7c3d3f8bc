//! The evasion table through the real decision: every evasion is denied in `allow-all` (as
//! destructive, or because nobody can tell what it runs), every look-alike is allowed; an
//! opaque command asks in the other modes, and no remembered grant answers for it.

use imurun_core::{Decision, ToolCategory};
use imurun_policy::{
    CallFacts, CommandRisk, Grants, Mode, OPAQUE_REASON, Rule, Settings, check, command_risk,
};

use crate::evasion_table::{EVASIONS, LOOK_ALIKES};
use crate::support::TempWorkspace;

const CLASSES: &[&str] = &[
    "verb-expansion",
    "one-liner",
    "feeder",
    "hidden",
    "remote",
    "raw-disk",
    "kernel",
];

fn settings(mode: Mode) -> Settings {
    Settings {
        mode,
        ..Settings::default()
    }
}

fn shell(command: &str) -> CallFacts {
    CallFacts::new(ToolCategory::Shell).command(command)
}

#[test]
fn the_tables_are_large_and_cover_every_class() {
    assert!(EVASIONS.len() >= 150, "{} evasions", EVASIONS.len());
    assert!(
        LOOK_ALIKES.len() >= 100,
        "{} look-alikes",
        LOOK_ALIKES.len()
    );
    for class in CLASSES {
        let evasions = EVASIONS.iter().filter(|(c, _)| c == class).count();
        let benign = LOOK_ALIKES.iter().filter(|(c, _)| c == class).count();
        assert!(
            evasions >= 15 && benign >= 10,
            "{class}: {evasions} evasions, {benign} look-alikes"
        );
    }
    // `attacker`: commands an attacker run found getting through, each fixed since.
    for (class, _) in EVASIONS.iter().chain(LOOK_ALIKES) {
        assert!(
            CLASSES.contains(class) || *class == "attacker",
            "unknown class {class}"
        );
    }
}

#[test]
fn every_evasion_is_denied_in_allow_all() {
    let temp = TempWorkspace::new();
    let failures: Vec<String> = EVASIONS
        .iter()
        .filter_map(|(class, command)| {
            let verdict = check(&temp.workspace, &settings(Mode::AllowAll), &shell(command));
            let denied_by_the_list = verdict.decision == Decision::Deny
                && matches!(verdict.rule, Rule::DestructiveCommand | Rule::OpaqueCommand);
            (!denied_by_the_list).then(|| format!("[{class}] {command:?} → {verdict:?}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} evasions got through:\n{}",
        failures.len(),
        EVASIONS.len(),
        failures.join("\n")
    );
}

#[test]
fn every_look_alike_is_allowed_in_allow_all() {
    let temp = TempWorkspace::new();
    let failures: Vec<String> = LOOK_ALIKES
        .iter()
        .filter_map(|(class, command)| {
            let verdict = check(&temp.workspace, &settings(Mode::AllowAll), &shell(command));
            (verdict.decision != Decision::Allow)
                .then(|| format!("[{class}] {command:?} → {}", verdict.reason))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} look-alikes were refused:\n{}",
        failures.len(),
        LOOK_ALIKES.len(),
        failures.join("\n")
    );
}

#[test]
fn an_opaque_command_asks_below_allow_all_and_says_why() {
    let temp = TempWorkspace::new();
    let command = "CMD=rm; $CMD -rf ~";
    let Some(CommandRisk::Opaque(reason)) = command_risk(command) else {
        panic!("{command} should be opaque: {:?}", command_risk(command));
    };
    assert!(reason.starts_with(OPAQUE_REASON), "{reason}");
    assert!(
        reason.contains("in `$CMD -rf ~`, its program is computed"),
        "{reason}"
    );
    let denied = check(&temp.workspace, &settings(Mode::AllowAll), &shell(command));
    assert_eq!(
        (denied.decision, denied.rule, denied.reason.as_str()),
        (Decision::Deny, Rule::OpaqueCommand, reason.as_str())
    );
    for mode in [Mode::Ask, Mode::AllowReads, Mode::AllowEdits] {
        let verdict = check(&temp.workspace, &settings(mode), &shell(command));
        assert_eq!(
            (verdict.decision, verdict.rule),
            (Decision::Ask, Rule::OpaqueCommand),
            "{mode}"
        );
    }
    // The shell toggle off still wins: nothing runs, nothing asks.
    let off = Settings {
        mode: Mode::Ask,
        toggles: imurun_policy::Toggles {
            run_shell: false,
            ..Default::default()
        },
    };
    assert_eq!(
        check(&temp.workspace, &off, &shell(command)).rule,
        Rule::ToggleOff
    );
}

#[test]
fn a_remembered_shell_grant_does_not_answer_an_opaque_command() {
    let temp = TempWorkspace::new();
    let mut grants = Grants::default();
    grants.remember("s1", "shell", ToolCategory::Shell).unwrap();
    let plain = check(&temp.workspace, &settings(Mode::Ask), &shell("ls -la"));
    assert_eq!(
        grants
            .apply("s1", "shell", ToolCategory::Shell, plain)
            .decision,
        Decision::Allow
    );
    let opaque = check(
        &temp.workspace,
        &settings(Mode::Ask),
        &shell("$EDITOR notes.txt"),
    );
    let applied = grants.apply("s1", "shell", ToolCategory::Shell, opaque);
    assert_eq!(
        (applied.decision, applied.rule),
        (Decision::Ask, Rule::OpaqueCommand)
    );
}

#[test]
fn destructive_wins_over_opaque_wherever_it_is() {
    for command in [
        "$X; rm -rf ~",
        "rm -rf ~; $X",
        "python3 -c \"$CODE\"; mkfs.ext4 /dev/sda1",
    ] {
        assert!(
            matches!(command_risk(command), Some(CommandRisk::Destructive(_))),
            "{command}: {:?}",
            command_risk(command)
        );
    }
}

#[test]
fn powershell_assignments_are_read_as_powershell_inside_pwsh() {
    assert_eq!(
        command_risk("pwsh -Command '$files = Get-ChildItem; $files.Count'"),
        None
    );
    assert!(matches!(
        command_risk("pwsh -Command '$x = Remove-Item -Recurse -Force C:\\'"),
        Some(CommandRisk::Destructive(_))
    ));
    assert!(matches!(
        command_risk("$x = Get-ChildItem"),
        Some(CommandRisk::Opaque(_))
    ));
}
