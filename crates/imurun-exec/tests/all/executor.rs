//! The executor's order — lookup → restriction → validation → policy → approval → run — and
//! what it publishes and records on the way.

use std::sync::Arc;
use std::time::Duration;

use imurun_core::{CallSource, Decision, DenyReason, Event, StopFlag, ToolCategory};
use imurun_exec::{AUDIT_MARK, Caller, ExecError, OnAsk, Outcome};
use imurun_policy::Mode;
use imurun_testkit::{Behaviour, FakeTool, RecordingEvents, call};
use serde_json::json;

use crate::support::{Harness, fake_builtin, pending};

fn harness_with(mode: Mode, subscribed: bool, tool: &Arc<FakeTool>) -> Harness {
    Harness::with(
        mode,
        subscribed,
        vec![tool.clone()],
        Duration::from_secs(60),
    )
}

/// Each refusal comes from the first step that refuses: an unknown name never reaches
/// restriction, a restricted tool never reaches validation, bad arguments never reach the
/// policy (the path below is outside the workspace, which the policy would deny), and only
/// a call that passes every step reaches its tool (here a `file_read` that fails).
#[tokio::test]
async fn each_step_refuses_before_the_next_one_runs() {
    let file_read = fake_builtin(
        "file_read",
        Behaviour::Fail("cannot open `missing`: no such file".into()),
    );
    let h = Harness::with(
        Mode::AllowAll,
        true,
        vec![Arc::new(file_read)],
        Duration::from_secs(60),
    );
    let restricted = Caller::sub_agent(
        Some("s1".into()),
        1,
        vec!["file_read".into()],
        StopFlag::new(),
    );
    let deep = Caller::sub_agent(
        Some("s1".into()),
        2,
        vec!["run_agent".into()],
        StopFlag::new(),
    );
    let model = Caller::model(Some("s1".into()), StopFlag::new());
    let cases = [
        (
            &model,
            "no_such_tool",
            json!({"path": 5}),
            Outcome::UnknownTool,
            "there is no tool called `no_such_tool`",
        ),
        (
            &restricted,
            "shell",
            json!({"command": 5}),
            Outcome::NotAllowed,
            "`shell` is not allowed here: this sub-agent may only use file_read",
        ),
        (
            &deep,
            "run_agent",
            json!({"task": 5}),
            Outcome::NotAllowed,
            "sub-agents at depth 2 cannot start sub-agents",
        ),
        (
            &model,
            "file_write",
            json!({"path": "../outside/x", "content": 5}),
            Outcome::InvalidArguments,
            "`content` must be a string",
        ),
        (
            &model,
            "file_write",
            json!({"path": "../outside/x", "content": "x"}),
            Outcome::Denied(DenyReason::Policy),
            "denied by policy: `../outside/x` is outside",
        ),
        (
            &restricted,
            "read_file",
            json!({"path": "missing"}),
            Outcome::Failed,
            "cannot open `missing`",
        ),
    ];
    for (caller, name, args, outcome, expected) in cases {
        let execution = h.call_as(caller, name, args).await;
        assert_eq!(
            execution.outcome, outcome,
            "{name}: {}",
            execution.output.text
        );
        assert!(execution.output.text.starts_with("FAILED: "), "{name}");
        assert!(
            execution.output.text.contains(expected),
            "{name}: {}",
            execution.output.text
        );
    }
    assert_eq!(h.tools_that_ran(), ["file_read"]);
    assert_eq!(h.tool("file_read").runs(), 1);
}

/// Policy runs before approval: a denied path never shows a card, even in a mode that asks.
#[tokio::test]
async fn a_policy_denial_never_reaches_the_approval_broker() {
    let tool = Arc::new(FakeTool::new(
        "fake_write",
        ToolCategory::Write,
        Behaviour::Succeed,
    ));
    let h = harness_with(Mode::Ask, true, &tool);
    let execution = h.call("fake_write", json!({"path": "/etc/passwd"})).await;
    assert_eq!(execution.outcome, Outcome::Denied(DenyReason::Policy));
    assert_eq!(execution.decision, Decision::Deny);
    assert_eq!(tool.runs(), 0);
    assert_eq!(
        h.events.types(),
        ["tool.call", "tool.denied", "tool.result"]
    );
    assert!(h.executor.approvals().pending().is_empty());
}

/// Approval runs before the run: a denied card never reaches the tool, and an approved one
/// reaches it only after `tool.approved` was published.
#[tokio::test]
async fn approval_comes_before_the_run() {
    let events = RecordingEvents::new(true);
    let tool = Arc::new(
        FakeTool::new("fake_write", ToolCategory::Write, Behaviour::Succeed).watching(&events),
    );
    let h = Harness::build(
        Mode::Ask,
        events,
        vec![tool.clone()],
        Duration::from_secs(60),
    );

    let executor = h.executor.clone();
    let denied = tokio::spawn(async move {
        let caller = Caller::model(Some("s1".into()), StopFlag::new());
        executor
            .execute(&call("fake_write", json!({"path": "a.txt"})), &caller)
            .await
    });
    let card = pending(&h.executor, 1).await.remove(0);
    assert_eq!(tool.runs(), 0, "the tool ran before anyone approved");
    h.executor
        .approvals()
        .decide(&card.approval_id, false, false)
        .unwrap();
    let denied = denied.await.unwrap();
    assert_eq!(denied.outcome, Outcome::Denied(DenyReason::User));
    assert_eq!(denied.output.text, "FAILED: denied: a person denied it");
    assert_eq!(tool.runs(), 0);

    let executor = h.executor.clone();
    let approved = tokio::spawn(async move {
        let caller = Caller::model(Some("s1".into()), StopFlag::new());
        executor
            .execute(&call("fake_write", json!({"path": "a.txt"})), &caller)
            .await
    });
    let card = pending(&h.executor, 1).await.remove(0);
    h.executor
        .approvals()
        .decide(&card.approval_id, true, false)
        .unwrap();
    let approved = approved.await.unwrap();
    assert_eq!(approved.outcome, Outcome::Ok);
    assert_eq!(tool.runs(), 1);
    let seen = tool.events_at_run();
    assert_eq!(
        seen[0][4..],
        ["tool.call", "tool.approval_needed", "tool.approved"],
        "the tool must run after its approval"
    );
    assert_eq!(
        h.events.types(),
        [
            "tool.call",
            "tool.approval_needed",
            "tool.denied",
            "tool.result",
            "tool.call",
            "tool.approval_needed",
            "tool.approved",
            "tool.result",
        ]
    );
}

#[tokio::test]
async fn a_panicking_tool_becomes_a_failed_result() {
    for behaviour in [Behaviour::PanicWhileRunning, Behaviour::PanicBeforeRunning] {
        let tool = Arc::new(FakeTool::new(
            "fragile",
            ToolCategory::Compute,
            behaviour.clone(),
        ));
        let h = harness_with(Mode::AllowAll, true, &tool);
        let execution = h.call("fragile", json!({})).await;
        assert_eq!(execution.outcome, Outcome::Failed, "{behaviour:?}");
        assert!(
            execution.output.text.starts_with(
                "FAILED: `fragile` crashed (a bug in the tool, not in the call): fake tool panics"
            ),
            "{behaviour:?}: {}",
            execution.output.text
        );
        assert_eq!(h.events.types(), ["tool.call", "tool.result"]);
        assert_eq!(h.audit.all()[0].outcome, "failed");
    }
}

/// The event cuts long strings; the tool itself gets the whole argument.
#[tokio::test]
async fn events_carry_arguments_cut_at_2000_characters() {
    let h = Harness::new(Mode::AllowAll);
    let body = "é".repeat(5000);
    let execution = h
        .call("write_file", json!({"path": "long.txt", "content": body}))
        .await;
    assert_eq!(execution.outcome, Outcome::Ok);
    assert_eq!(
        execution.tool, "file_write",
        "the alias resolves to the tool"
    );
    let events = h.events.all();
    let Event::ToolCall {
        name,
        args,
        source,
        depth,
        ..
    } = &events[0]
    else {
        panic!("{events:?}")
    };
    assert_eq!(
        (name.as_str(), *source, *depth),
        ("file_write", CallSource::Model, 0)
    );
    assert_eq!(args["content"].as_str().unwrap().chars().count(), 2000);
    assert_eq!(args["path"], "long.txt");
    let Event::ToolResult { ok, text, .. } = &events[1] else {
        panic!("{events:?}")
    };
    assert!(*ok);
    assert_eq!(text, "file_write ran");
    let seen = h.tool("file_write").args_seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["content"], body.as_str());
}

/// One audit record per call, whatever happened, with the tool, source, decision and
/// outcome, and never an argument value.
#[tokio::test]
async fn the_audit_records_every_call_without_argument_values() {
    let canary = "CANARY-7f3a9c";
    let h = Harness::with(Mode::AllowReads, false, Vec::new(), Duration::from_secs(60));
    let agent = Caller::sub_agent(
        Some("s1".into()),
        1,
        vec!["file_read".into()],
        StopFlag::new(),
    );
    let user = Caller::user(None, OnAsk::Report);
    h.call(
        "file_write",
        json!({"path": format!("{canary}.txt"), "content": canary}),
    )
    .await;
    h.call_as(
        &user,
        "file_write",
        json!({"path": "x.txt", "content": canary}),
    )
    .await;
    h.call_as(
        &Caller::user(None, OnAsk::Approved),
        "file_write",
        json!({"path": format!("{canary}/x"), "content": canary}),
    )
    .await;
    h.call("file_read", json!({"path": format!("{canary}/x")}))
        .await;
    h.call("file_read", json!({"path": format!("../{canary}")}))
        .await;
    h.call_as(
        &agent,
        "shell",
        json!({"command": format!("echo {canary}")}),
    )
    .await;
    h.call(
        "shell",
        json!({"command": format!("echo {canary}"), "timeout": canary}),
    )
    .await;
    h.call(&format!("tool_{canary}"), json!({"x": canary}))
        .await;
    let records = h.audit.all();
    let got: Vec<(&str, String, Decision, &str, Option<&str>)> = records
        .iter()
        .map(|r| {
            (
                r.mark,
                r.source.to_string(),
                r.decision,
                r.outcome.as_str(),
                r.session_id.as_deref(),
            )
        })
        .collect();
    let s1 = Some("s1");
    assert_eq!(
        got,
        [
            (
                AUDIT_MARK,
                "model".to_string(),
                Decision::Ask,
                "denied: no_client",
                s1
            ),
            (
                AUDIT_MARK,
                "user".to_string(),
                Decision::Ask,
                "needs approval",
                None
            ),
            (AUDIT_MARK, "user".to_string(), Decision::Ask, "ok", None),
            (AUDIT_MARK, "model".to_string(), Decision::Allow, "ok", s1),
            (
                AUDIT_MARK,
                "model".to_string(),
                Decision::Deny,
                "denied: policy",
                s1
            ),
            (
                AUDIT_MARK,
                "agent:1".to_string(),
                Decision::Deny,
                "denied: not allowed",
                s1
            ),
            (
                AUDIT_MARK,
                "model".to_string(),
                Decision::Deny,
                "invalid arguments",
                s1
            ),
            (
                AUDIT_MARK,
                "model".to_string(),
                Decision::Deny,
                "unknown tool",
                s1
            ),
        ]
    );
    let tools: Vec<&str> = records[..7].iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "file_write",
            "file_write",
            "file_write",
            "file_read",
            "file_read",
            "shell",
            "shell"
        ]
    );
    for record in &records[..7] {
        let wire = format!("{record:?} {}", serde_json::to_string(record).unwrap());
        assert!(
            !wire.contains(canary),
            "argument value in the audit: {wire}"
        );
    }
}

#[tokio::test]
async fn check_decides_like_execute_before_approval() {
    let h = Harness::new(Mode::AllowReads);
    let caller = Caller::user(None, OnAsk::Report);
    let cases = [
        ("file_read", json!({"path": "a.txt"}), Decision::Allow),
        (
            "file_write",
            json!({"path": "a.txt", "content": ""}),
            Decision::Ask,
        ),
        ("shell", json!({"command": "ls"}), Decision::Ask),
        ("shell", json!({"command": "rm -rf /"}), Decision::Deny),
        ("delete", json!({"path": "../x"}), Decision::Deny),
        ("get_time", json!({}), Decision::Allow),
    ];
    for (name, args, decision) in cases {
        let checked = h
            .executor
            .check(&call(name, args.clone()), &caller)
            .unwrap();
        assert_eq!(
            checked.verdict.decision, decision,
            "{name} {args}: {}",
            checked.verdict.reason
        );
    }
    let unknown = h
        .executor
        .check(&call("nope", json!({})), &caller)
        .unwrap_err();
    assert_eq!(
        unknown,
        ExecError::UnknownTool {
            name: "nope".into()
        }
    );
    assert!(h.events.all().is_empty(), "check publishes nothing");
    assert!(h.audit.all().is_empty(), "check records nothing");
    assert!(h.tools_that_ran().is_empty(), "check runs nothing");
}

#[tokio::test]
async fn settings_changes_apply_to_the_next_call() {
    let h = Harness::with(Mode::AllowAll, false, Vec::new(), Duration::from_secs(60));
    let ran = h.call("shell", json!({"command": "echo hi"})).await;
    assert_eq!(ran.outcome, Outcome::Ok);
    assert_eq!(h.tool("shell").runs(), 1);
    let mut settings = h.executor.settings();
    settings.toggles.run_shell = false;
    h.executor.set_settings(settings);
    let refused = h.call("shell", json!({"command": "echo hi"})).await;
    assert_eq!(refused.outcome, Outcome::Denied(DenyReason::Policy));
    assert!(
        refused.output.text.contains("`runShell` is off"),
        "{}",
        refused.output.text
    );
    assert_eq!(h.tool("shell").runs(), 1, "the refused call did not run");
}

/// A call made after its turn was stopped does not run, even when the policy allows it.
#[tokio::test]
async fn a_stopped_turn_runs_no_more_tools() {
    let tool = Arc::new(FakeTool::new(
        "clock",
        ToolCategory::Compute,
        Behaviour::Succeed,
    ));
    let h = harness_with(Mode::AllowAll, true, &tool);
    let stop = StopFlag::new();
    stop.stop();
    let caller = Caller::model(Some("s1".into()), stop);
    let execution = h.call_as(&caller, "clock", json!({})).await;
    assert_eq!(execution.outcome, Outcome::Denied(DenyReason::Stopped));
    assert_eq!(
        execution.output.text,
        "FAILED: the turn was stopped before `clock` ran"
    );
    assert_eq!(tool.runs(), 0);
    assert_eq!(
        h.events.types(),
        ["tool.call", "tool.denied", "tool.result"]
    );
}

/// A caller with its own sink (the turn that made the call) gets every event of the call,
/// the approval card included, and the executor's own sink gets none; whether a client
/// watches is asked of the caller's sink.
#[tokio::test]
async fn a_callers_own_sink_gets_the_calls_events() {
    let h = Harness::new(Mode::AllowReads);
    let turn = RecordingEvents::new(true);
    let caller = Caller::model(Some("s1".into()), StopFlag::new()).with_events(turn.clone());
    let ran = h
        .call_as(&caller, "file_read", json!({"path": "a.txt"}))
        .await;
    assert_eq!(ran.outcome, Outcome::Ok);
    assert_eq!(turn.types(), ["tool.call", "tool.result"]);

    let executor = h.executor.clone();
    let waiting = tokio::spawn({
        let caller = caller.clone();
        async move {
            executor
                .execute(&call("shell", json!({"command": "ls"})), &caller)
                .await
        }
    });
    let card = pending(&h.executor, 1).await.remove(0);
    h.executor
        .approvals()
        .decide(&card.approval_id, false, false)
        .unwrap();
    assert_eq!(
        waiting.await.unwrap().outcome,
        Outcome::Denied(DenyReason::User)
    );
    assert_eq!(
        turn.types()[2..],
        [
            "tool.call",
            "tool.approval_needed",
            "tool.denied",
            "tool.result"
        ]
    );
    assert!(h.events.all().is_empty(), "{:?}", h.events.types());
    // The audit is the executor's, whoever watches the events.
    assert_eq!(h.audit.all().len(), 2);

    // Nobody watches the caller's sink: no card, even though the executor's sink has a
    // client.
    let unwatched = RecordingEvents::new(false);
    let caller = Caller::model(Some("s1".into()), StopFlag::new()).with_events(unwatched.clone());
    let denied = h.call_as(&caller, "shell", json!({"command": "ls"})).await;
    assert_eq!(denied.outcome, Outcome::Denied(DenyReason::NoClient));
    assert_eq!(
        unwatched.types(),
        ["tool.call", "tool.denied", "tool.result"]
    );
    assert!(h.events.all().is_empty());
    assert_eq!(h.tool("shell").runs(), 0);
}

/// Remembered grants are listed per session and forgotten one session or all at once.
#[tokio::test]
async fn grants_are_listed_and_forgotten_by_session() {
    let h = Harness::new(Mode::AllowReads);
    for (session, tool, args) in [
        ("s1", "shell", json!({"command": "ls"})),
        ("s1", "file_write", json!({"path": "a.txt", "content": "a"})),
        ("s2", "shell", json!({"command": "ls"})),
    ] {
        let executor = h.executor.clone();
        let waiting = tokio::spawn(async move {
            let caller = Caller::model(Some(session.into()), StopFlag::new());
            executor.execute(&call(tool, args), &caller).await
        });
        let card = pending(&h.executor, 1).await.remove(0);
        h.executor
            .approvals()
            .decide(&card.approval_id, true, true)
            .unwrap();
        assert_eq!(waiting.await.unwrap().outcome, Outcome::Ok);
    }
    let grants = |list: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
        list.iter()
            .map(|(session, tools)| {
                let tools = tools.iter().map(|tool| (*tool).to_owned()).collect();
                ((*session).to_owned(), tools)
            })
            .collect()
    };
    assert_eq!(
        h.executor.grants_by_session(),
        grants(&[("s1", &["file_write", "shell"]), ("s2", &["shell"])])
    );
    assert!(h.executor.forget_session("s2"));
    assert!(!h.executor.forget_session("s2"), "nothing left to forget");
    assert_eq!(
        h.executor.grants_by_session(),
        grants(&[("s1", &["file_write", "shell"])])
    );
    assert_eq!(h.executor.forget_all_sessions(), ["s1"]);
    assert!(h.executor.grants_by_session().is_empty());
    assert!(h.executor.forget_all_sessions().is_empty());
}
