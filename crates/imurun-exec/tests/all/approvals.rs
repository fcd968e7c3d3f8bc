//! Approvals: the card, its answers (approve, deny, remember), and the ways it ends without
//! one (timeout, stop, no client), with other sessions working meanwhile.

use std::sync::Arc;
use std::time::Duration;

use imurun_core::{DenyReason, Event, StopFlag, ToolCategory};
use imurun_exec::{
    Caller, ExecError, Execution, NO_CLIENT_MESSAGE, OnAsk, Outcome, PENDING_APPROVALS_MAX,
};
use imurun_policy::Mode;
use imurun_testkit::{Behaviour, FakeTool, call};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::{Harness, fake_builtin, pending};

/// Starts `name(args)` for the model of `session` in the background.
fn spawn_call(
    h: &Harness,
    session: &str,
    stop: StopFlag,
    name: &str,
    args: Value,
) -> JoinHandle<Execution> {
    let executor = h.executor.clone();
    let caller = Caller::model(Some(session.to_string()), stop);
    let call = call(name, args);
    tokio::spawn(async move { executor.execute(&call, &caller).await })
}

fn denied_reasons(h: &Harness) -> Vec<(DenyReason, String)> {
    h.events
        .all()
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolDenied {
                reason, message, ..
            } => Some((reason, message)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn no_client_is_denied_at_once() {
    let h = Harness::with(
        Mode::AllowReads,
        false,
        Vec::new(),
        Duration::from_secs(600),
    );
    let execution = h.call("shell", json!({"command": "touch ran"})).await;
    assert_eq!(execution.outcome, Outcome::Denied(DenyReason::NoClient));
    assert_eq!(
        execution.output.text,
        format!("FAILED: denied: {NO_CLIENT_MESSAGE}")
    );
    assert_eq!(
        h.events.types(),
        ["tool.call", "tool.denied", "tool.result"]
    );
    assert_eq!(
        denied_reasons(&h),
        [(DenyReason::NoClient, NO_CLIENT_MESSAGE.to_string())]
    );
    assert_eq!(h.tool("shell").runs(), 0);
}

#[tokio::test]
async fn the_approval_timeout_counts_as_denied() {
    let h = Harness::with(
        Mode::AllowReads,
        true,
        Vec::new(),
        Duration::from_millis(200),
    );
    let execution = h.call("shell", json!({"command": "touch ran"})).await;
    assert_eq!(execution.outcome, Outcome::Denied(DenyReason::Timeout));
    assert_eq!(
        execution.output.text,
        "FAILED: denied: nobody approved it within 200 ms"
    );
    assert_eq!(
        h.events.types(),
        [
            "tool.call",
            "tool.approval_needed",
            "tool.denied",
            "tool.result"
        ]
    );
    assert_eq!(h.tool("shell").runs(), 0);
    assert!(
        h.executor.approvals().pending().is_empty(),
        "a timed-out card is withdrawn"
    );
    let Event::ToolApprovalNeeded {
        deadline_ms,
        rememberable,
        args,
        ..
    } = &h.events.all()[1]
    else {
        panic!("no card")
    };
    assert!(*deadline_ms > 0);
    assert!(*rememberable);
    assert_eq!(args["command"], "touch ran");
}

/// `permissions.approvalTimeout` changes on a running executor: the next card waits the new
/// time, a card already waiting keeps its own.
#[tokio::test]
async fn the_approval_timeout_changes_for_the_next_card() {
    let h = Harness::with(Mode::AllowReads, true, Vec::new(), Duration::from_secs(600));
    let stop = StopFlag::new();
    let long = spawn_call(&h, "s1", stop.clone(), "shell", json!({"command": "ls"}));
    pending(&h.executor, 1).await;
    h.executor
        .approvals()
        .set_approval_timeout(Duration::from_millis(200));
    assert_eq!(
        h.executor.approvals().approval_timeout(),
        Duration::from_millis(200)
    );
    let short = h.call("shell", json!({"command": "ls"})).await;
    assert_eq!(short.outcome, Outcome::Denied(DenyReason::Timeout));
    assert_eq!(
        short.output.text,
        "FAILED: denied: nobody approved it within 200 ms"
    );
    assert!(!long.is_finished(), "the first card keeps its 600 s");
    stop.stop();
    assert_eq!(
        long.await.unwrap().outcome,
        Outcome::Denied(DenyReason::Stopped)
    );
    assert_eq!(h.tool("shell").runs(), 0);
}

#[tokio::test]
async fn stopping_the_turn_denies_a_waiting_approval() {
    let h = Harness::with(Mode::AllowReads, true, Vec::new(), Duration::from_secs(600));
    let stop = StopFlag::new();
    let waiting = spawn_call(
        &h,
        "s1",
        stop.clone(),
        "shell",
        json!({"command": "touch ran"}),
    );
    pending(&h.executor, 1).await;
    stop.stop();
    let execution = waiting.await.unwrap();
    assert_eq!(execution.outcome, Outcome::Denied(DenyReason::Stopped));
    assert_eq!(
        execution.output.text,
        "FAILED: denied: the turn was stopped"
    );
    assert_eq!(h.tool("shell").runs(), 0);
}

#[tokio::test]
async fn remember_lets_the_tool_run_for_the_rest_of_the_session_only() {
    let h = Harness::new(Mode::AllowReads);
    let first = spawn_call(
        &h,
        "s1",
        StopFlag::new(),
        "file_write",
        json!({"path": "a.txt", "content": "1"}),
    );
    let card = pending(&h.executor, 1).await.remove(0);
    assert!(card.rememberable);
    assert_eq!(
        (card.tool.as_str(), card.session_id.as_deref()),
        ("file_write", Some("s1"))
    );
    h.executor
        .approvals()
        .decide(&card.approval_id, true, true)
        .unwrap();
    assert_eq!(first.await.unwrap().outcome, Outcome::Ok);
    assert!(
        h.events
            .all()
            .iter()
            .any(|e| matches!(e, Event::ToolApproved { remember: true, .. }))
    );

    // The same session: no card.
    let again = h
        .call("file_write", json!({"path": "b.txt", "content": "2"}))
        .await;
    assert_eq!(again.outcome, Outcome::Ok);
    assert_eq!(
        h.events
            .types()
            .iter()
            .filter(|t| *t == "tool.approval_needed")
            .count(),
        1
    );

    // Another session still asks; and a forgotten session asks again.
    let other = spawn_call(
        &h,
        "s2",
        StopFlag::new(),
        "file_write",
        json!({"path": "c.txt", "content": "3"}),
    );
    let card = pending(&h.executor, 1).await.remove(0);
    assert_eq!(card.session_id.as_deref(), Some("s2"));
    h.executor
        .approvals()
        .decide(&card.approval_id, false, false)
        .unwrap();
    assert_eq!(
        other.await.unwrap().outcome,
        Outcome::Denied(DenyReason::User)
    );
    h.executor.forget_session("s1");
    let forgotten = spawn_call(
        &h,
        "s1",
        StopFlag::new(),
        "file_write",
        json!({"path": "d.txt", "content": "4"}),
    );
    let card = pending(&h.executor, 1).await.remove(0);
    h.executor
        .approvals()
        .decide(&card.approval_id, true, false)
        .unwrap();
    assert_eq!(forgotten.await.unwrap().outcome, Outcome::Ok);
}

#[tokio::test]
async fn deletes_are_never_remembered_even_when_asked() {
    let h = Harness::new(Mode::AllowEdits);
    for name in ["a.txt", "b.txt"] {
        let deleting = spawn_call(&h, "s1", StopFlag::new(), "delete", json!({"path": name}));
        let card = pending(&h.executor, 1).await.remove(0);
        assert!(!card.rememberable, "a delete card must not offer remember");
        h.executor
            .approvals()
            .decide(&card.approval_id, true, true)
            .unwrap();
        assert_eq!(deleting.await.unwrap().outcome, Outcome::Ok);
    }
    let cards = h
        .events
        .types()
        .iter()
        .filter(|t| *t == "tool.approval_needed")
        .count();
    assert_eq!(cards, 2, "the second delete asked again");
    assert_eq!(h.tool("delete").runs(), 2);
    let remembered: Vec<bool> = h
        .events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolApproved { remember, .. } => Some(remember),
            _ => None,
        })
        .collect();
    assert_eq!(remembered, [false, false]);
}

/// A card blocks only its own call: another session's calls run to completion meanwhile.
#[tokio::test]
async fn other_sessions_keep_running_while_one_waits() {
    let h = Harness::with(
        Mode::AllowReads,
        true,
        vec![
            Arc::new(fake_builtin(
                "file_read",
                Behaviour::Answer("still readable".into()),
            )),
            Arc::new(fake_builtin("shell", Behaviour::Answer("approved".into()))),
        ],
        Duration::from_secs(60),
    );
    let waiting = spawn_call(
        &h,
        "s1",
        StopFlag::new(),
        "shell",
        json!({"command": "echo approved"}),
    );
    let card = pending(&h.executor, 1).await.remove(0);
    for _ in 0..3 {
        let other = Caller::model(Some("s2".into()), StopFlag::new());
        let read = h
            .call_as(&other, "file_read", json!({"path": "notes.txt"}))
            .await;
        assert_eq!(read.output.text, "still readable");
    }
    assert!(!waiting.is_finished());
    assert_eq!(h.tool("shell").runs(), 0);
    assert_eq!(h.tool("file_read").runs(), 3);
    h.executor
        .approvals()
        .decide(&card.approval_id, true, false)
        .unwrap();
    let done = waiting.await.unwrap();
    assert_eq!(done.output.text, "approved");
    assert_eq!(h.tool("shell").runs(), 1);
}

#[tokio::test]
async fn decisions_on_unknown_approvals_are_errors() {
    let h = Harness::new(Mode::AllowReads);
    let error = h
        .executor
        .approvals()
        .decide("approval-nope", true, false)
        .unwrap_err();
    assert_eq!(
        error,
        ExecError::UnknownApproval {
            approval_id: "approval-nope".into()
        }
    );
    // A card can be decided once.
    let waiting = spawn_call(
        &h,
        "s1",
        StopFlag::new(),
        "shell",
        json!({"command": "true"}),
    );
    let card = pending(&h.executor, 1).await.remove(0);
    h.executor
        .approvals()
        .decide(&card.approval_id, true, false)
        .unwrap();
    assert!(
        h.executor
            .approvals()
            .decide(&card.approval_id, true, false)
            .is_err()
    );
    waiting.await.unwrap();
}

#[tokio::test]
async fn manual_runs_report_the_ask_or_run_when_approved() {
    let h = Harness::new(Mode::AllowReads);
    let report = h
        .call_as(
            &Caller::user(None, OnAsk::Report),
            "shell",
            json!({"command": "touch ran"}),
        )
        .await;
    assert_eq!(report.outcome, Outcome::NeedsApproval);
    assert_eq!(
        report.output.text,
        "FAILED: `shell` needs a person's approval first: shell commands ask first in allow-reads mode"
    );
    assert_eq!(h.tool("shell").runs(), 0);
    let approved = h
        .call_as(
            &Caller::user(None, OnAsk::Approved),
            "shell",
            json!({"command": "touch ran"}),
        )
        .await;
    assert_eq!(approved.outcome, Outcome::Ok);
    assert_eq!(h.tool("shell").runs(), 1);
    let declined = h
        .call_as(
            &Caller::user(None, OnAsk::Declined),
            "shell",
            json!({"command": "touch declined"}),
        )
        .await;
    assert_eq!(declined.outcome, Outcome::Denied(DenyReason::User));
    assert_eq!(declined.output.text, "FAILED: denied: a person denied it");
    assert_eq!(h.tool("shell").runs(), 1, "the declined call did not run");
    // An approval never lifts a denial.
    let denied = h
        .call_as(
            &Caller::user(None, OnAsk::Approved),
            "shell",
            json!({"command": "rm -rf /"}),
        )
        .await;
    assert_eq!(denied.outcome, Outcome::Denied(DenyReason::Policy));
    assert_eq!(h.tool("shell").runs(), 1, "the denied call did not run");
    assert!(h.events.types().iter().all(|t| t != "tool.approval_needed"));
}

/// Past `PENDING_APPROVALS_MAX` waiting cards, a new ask is denied at once.
#[tokio::test]
async fn pending_approvals_are_bounded() {
    let tool = Arc::new(FakeTool::new(
        "asker",
        ToolCategory::Shell,
        Behaviour::Succeed,
    ));
    let h = Harness::with(
        Mode::AllowReads,
        true,
        vec![tool.clone()],
        Duration::from_secs(600),
    );
    let stop = StopFlag::new();
    let waiting: Vec<_> = (0..PENDING_APPROVALS_MAX)
        .map(|i| spawn_call(&h, &format!("s{i}"), stop.clone(), "asker", json!({})))
        .collect();
    pending(&h.executor, PENDING_APPROVALS_MAX).await;
    let over = h.call("asker", json!({})).await;
    assert_eq!(over.outcome, Outcome::Denied(DenyReason::Timeout));
    assert!(
        over.output
            .text
            .contains("256 approvals are already waiting"),
        "{}",
        over.output.text
    );
    stop.stop();
    for handle in waiting {
        assert_eq!(
            handle.await.unwrap().outcome,
            Outcome::Denied(DenyReason::Stopped)
        );
    }
    assert_eq!(tool.runs(), 0);
    assert!(h.executor.approvals().pending().is_empty());
}
