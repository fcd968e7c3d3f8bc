//! Remembered grants: per session, never for deletes, never lifting a denial.

use imurun_core::{Decision, ToolCategory};
use imurun_policy::{
    GRANTS_PER_SESSION_MAX, GrantError, Grants, Mode, Rule, is_rememberable, table_verdict,
};

#[test]
fn a_grant_turns_ask_into_allow_for_its_session_only() {
    let mut grants = Grants::new();
    grants.remember("s1", "shell", ToolCategory::Shell).unwrap();
    let ask = table_verdict(Mode::AllowReads, ToolCategory::Shell);
    assert_eq!(ask.decision, Decision::Ask);
    let granted = grants.apply("s1", "shell", ToolCategory::Shell, ask.clone());
    assert_eq!(
        (granted.decision, granted.rule),
        (Decision::Allow, Rule::SessionGrant)
    );
    assert_eq!(
        grants
            .apply("s2", "shell", ToolCategory::Shell, ask.clone())
            .decision,
        Decision::Ask
    );
    assert_eq!(
        grants
            .apply("s1", "file_write", ToolCategory::Write, ask.clone())
            .decision,
        Decision::Ask
    );
    grants.forget_session("s1");
    assert_eq!(
        grants
            .apply("s1", "shell", ToolCategory::Shell, ask)
            .decision,
        Decision::Ask
    );
}

#[test]
fn deletes_are_never_remembered() {
    let mut grants = Grants::new();
    assert!(!is_rememberable(ToolCategory::Delete));
    assert_eq!(
        grants.remember("s1", "delete", ToolCategory::Delete),
        Err(GrantError::DeleteNeverRemembered {
            tool: "delete".into()
        })
    );
    // Even a grant stored under a delete tool's name by mistake is not applied to a delete.
    grants
        .remember("s1", "delete", ToolCategory::Write)
        .unwrap();
    let ask = table_verdict(Mode::AllowEdits, ToolCategory::Delete);
    assert_eq!(
        grants
            .apply("s1", "delete", ToolCategory::Delete, ask)
            .decision,
        Decision::Ask
    );
}

#[test]
fn a_grant_never_lifts_a_denial() {
    let mut grants = Grants::new();
    grants.remember("s1", "shell", ToolCategory::Shell).unwrap();
    let deny = imurun_policy::Verdict {
        decision: Decision::Deny,
        rule: Rule::DestructiveCommand,
        reason: "no".into(),
    };
    assert_eq!(
        grants.apply("s1", "shell", ToolCategory::Shell, deny.clone()),
        deny
    );
}

#[test]
fn grants_are_bounded() {
    let mut grants = Grants::new();
    for i in 0..GRANTS_PER_SESSION_MAX {
        grants
            .remember("s1", &format!("tool{i}"), ToolCategory::Read)
            .unwrap();
    }
    assert_eq!(
        grants.remember("s1", "one_more", ToolCategory::Read),
        Err(GrantError::SessionFull)
    );
    grants.remember("s1", "tool0", ToolCategory::Read).unwrap();
}

/// A grant does not answer a tainted session's ask: the person decides each time.
#[test]
fn a_grant_does_not_answer_a_tainted_ask() {
    let mut grants = Grants::new();
    grants
        .remember("s1", "fetch_url", ToolCategory::Network)
        .unwrap();
    let tainted = imurun_policy::Verdict {
        decision: Decision::Ask,
        rule: Rule::Tainted,
        reason: imurun_policy::TAINT_REASON.to_string(),
    };
    let applied = grants.apply("s1", "fetch_url", ToolCategory::Network, tainted.clone());
    assert_eq!(applied, tainted);
    let plain = table_verdict(Mode::Ask, ToolCategory::Network);
    assert_eq!(
        grants
            .apply("s1", "fetch_url", ToolCategory::Network, plain)
            .rule,
        Rule::SessionGrant
    );
}
