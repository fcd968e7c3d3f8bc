//! Keep's events, one shape each: a tool's `proposal.decided` names its session like every
//! other proposal's, and a refusal past the journal's bound is an event holding what its
//! entry would have held, whether a cell or the service refused.

use imurun_keep::decision::DecisionKind;
use imurun_testkit::Guest;
use serde_json::{Value, json};

use super::sessions::{Sessions, manifest};
use super::tools::{Bench, events_of, tool};

#[tokio::test]
async fn a_tools_proposal_decided_names_its_session_as_every_proposals_does() {
    let b = Bench::start().await;
    assert_eq!(
        b.propose(Guest::PureTool, tool("echo", 1, json!({}))).await,
        "emitted"
    );
    let review = b.only_review().await;
    b.decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let decided = events_of(&b.s, "alice", "proposal.decided");
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(
        decided[0],
        json!({"type": "proposal.decided", "id": review.id, "session_id": b.session,
               "kind": "tool", "state": "approved", "name": "u/alice/echo", "version": 1})
    );
}

#[tokio::test]
async fn a_cells_refusal_past_its_bound_is_an_event_shaped_as_its_entry() {
    let s = Sessions::start(Vec::new()).await;
    s.deploy(Guest::Scripted, manifest("scripted", json!({})))
        .await;
    let session = s.keep.sessions().start(&s.alice, "scripted").await.unwrap();
    s.refused_emits(&session.id, 2, 40).await;
    let refusals: Vec<Value> = s
        .events
        .of("alice")
        .into_iter()
        .filter(|event| event["type"] == "refusal")
        .collect();
    assert!(!refusals.is_empty(), "past the bound, refusals are events");
    let entry = s
        .keep
        .journal()
        .list(&s.host.operator)
        .await
        .unwrap()
        .into_iter()
        .find(|entry| entry.kind == "refusal" && entry.detail["rule"] != "journal_bound")
        .expect("a refusal journaled");
    for event in refusals {
        let fields: Vec<&str> = event
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields.len(),
            4,
            "type, session_id, subject, detail: {event}"
        );
        assert_eq!(event["session_id"], session.id.as_str());
        assert_eq!(event["subject"], entry.subject.as_str());
        assert_eq!(event["detail"]["action"], "propose");
        assert_eq!(event["detail"]["session"], session.id.as_str());
        let keys = |value: &Value| {
            let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        assert_eq!(keys(&event["detail"]), keys(&entry.detail));
    }
}

#[tokio::test]
async fn the_services_refusal_past_its_bound_is_the_same_event_without_a_session() {
    let s = Sessions::start(Vec::new()).await;
    let door = imurun_keep::service::DoorRefusal {
        rule: "not_found".into(),
        subject: "GET /v1/sessions/x".into(),
        reason: "no such session is visible to this token".into(),
        status: 404,
        operator_only: false,
        claimed: None,
    };
    let max = imurun_keep::service::REFUSALS_JOURNALED_PER_MINUTE_MAX;
    for _ in 0..=max + 1 {
        s.keep
            .journal()
            .door_refusal(&s.alice, &door)
            .await
            .unwrap();
    }
    let refusals: Vec<Value> = s
        .events
        .of("alice")
        .into_iter()
        .filter(|event| event["type"] == "refusal")
        .collect();
    assert_eq!(
        refusals,
        [json!({"type": "refusal", "subject": "GET /v1/sessions/x",
                "detail": {"action": "request", "rule": "not_found", "status": 404,
                           "reason": "no such session is visible to this token"}})]
    );
}
