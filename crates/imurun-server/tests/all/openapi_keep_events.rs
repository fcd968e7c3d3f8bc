//! A person's Keep events against the OpenAPI document: `GET /v1/events` documents a schema of
//! its own, `KeepStreamEvent`, built from Keep's types; one event of every kind, as a person's
//! hub stamps it, fits it, and so do the events a session really sends over the wire.

use std::collections::{BTreeMap, BTreeSet};

use imurun_keep::cells::{KeepEvents, WaitingView};
use imurun_keep::events::{EgressApproval, EgressVerdict, KeepEvent};
use imurun_keep::journal_detail::{RefusalDetail, SessionRefused};
use imurun_keep::service::{AnyProposal, ApprovalView, ToolOrigin, ToolReview};
use imurun_server::KeepHubs;
use imurun_server::keep_events::{KeepNotice, OmittedEvent};
use imurun_testkit::{Guest, Upstream, ok};
use serde_json::{Value, json};

use crate::api_support::{Dirs, TestServer};
use crate::openapi::served_document;
use crate::openapi_events::{check_stream_events, stream_shapes};
use crate::support::{Keep, SseClient, drain, say};

/// The document as a server serves it.
async fn document() -> Value {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    document
}

#[tokio::test]
async fn the_keep_stream_has_a_schema_of_its_own_built_from_keeps_types() {
    let document = document().await;
    let ok_events = &document["paths"]["/v1/events"]["get"]["responses"]["200"];
    let schema = &ok_events["content"]["text/event-stream"]["schema"];
    assert_eq!(
        schema["$ref"], "#/components/schemas/KeepEventMessage",
        "{ok_events}"
    );
    let schemas = &document["components"]["schemas"];
    assert_eq!(
        schemas["KeepEventMessage"]["properties"]["data"]["contentSchema"]["$ref"],
        "#/components/schemas/KeepStreamEvent"
    );
    let branches: Vec<String> = schemas["KeepStreamEvent"]["anyOf"]
        .as_array()
        .expect("KeepStreamEvent is an anyOf")
        .iter()
        .map(Value::to_string)
        .collect();
    for name in ["KeepEvent", "OmittedEvent", "KeepNotice"] {
        let stamped = json!({"allOf": [
            {"$ref": format!("#/components/schemas/{name}")},
            {"$ref": "#/components/schemas/EventStamp"},
        ]})
        .to_string();
        assert!(branches.contains(&stamped), "{name}: {branches:?}");
    }
    assert!(branches.contains(&json!({"$ref": "#/components/schemas/StreamNotice"}).to_string()));
    // Keep's events are not the assistant's.
    let assistant = stream_shapes(&document, "StreamEvent");
    assert!(!assistant.contains_key("proposal.created"));
    assert!(assistant.contains_key("turn.start"));
}

/// One event of each kind `KeepEvent` has. The match is exhaustive on purpose: a new kind does
/// not compile here until it has a sample; its schema comes from the type.
fn keep_samples() -> Vec<KeepEvent> {
    let mut samples = session_samples("ks-1");
    samples.extend(other_samples("ks-1"));
    for sample in &samples {
        match sample {
            KeepEvent::SessionStarted { .. }
            | KeepEvent::SessionReply { .. }
            | KeepEvent::SessionError { .. }
            | KeepEvent::SessionEnded { .. }
            | KeepEvent::SessionTainted { .. }
            | KeepEvent::EgressApprovalNeeded { .. }
            | KeepEvent::EgressDecided { .. }
            | KeepEvent::EgressNotAsked { .. }
            | KeepEvent::ProposalCreated { .. }
            | KeepEvent::ProposalRefused { .. }
            | KeepEvent::ProposalDecided { .. }
            | KeepEvent::Refusal { .. }
            | KeepEvent::JournalFailed { .. }
            | KeepEvent::ToolDeployed { .. }
            | KeepEvent::ToolTaintCleared { .. }
            | KeepEvent::ToolRevoked { .. } => {}
        }
    }
    samples
}

/// Events of a session's life and its egress.
fn session_samples(session_id: &str) -> Vec<KeepEvent> {
    let session_id = session_id.to_owned();
    vec![
        KeepEvent::SessionStarted {
            session_id: session_id.clone(),
            agent: "news".into(),
            agent_version: 3,
        },
        KeepEvent::reply(&session_id, &["hello".to_owned()], 64),
        KeepEvent::reply(&session_id, &["x".repeat(100)], 64),
        KeepEvent::SessionError {
            session_id: session_id.clone(),
            kind: "trap".into(),
            message: "the cell trapped".into(),
            ended: true,
        },
        KeepEvent::SessionEnded {
            session_id: session_id.clone(),
            reason: "stopped".into(),
        },
        KeepEvent::SessionTainted {
            session_id: session_id.clone(),
            source: "a file the person uploaded: notes.txt".into(),
        },
        KeepEvent::EgressApprovalNeeded {
            session_id: session_id.clone(),
            approval: approval(&session_id),
        },
        KeepEvent::EgressDecided {
            session_id: session_id.clone(),
            decision: EgressVerdict::Deny,
            method: "POST".into(),
            url: "https://api.example.com/v1/items".into(),
            rule: None,
            credentials: Vec::new(),
            approval: EgressApproval::None,
            refused_by: Some("tainted".into()),
            reason: Some("the session is tainted".into()),
        },
        KeepEvent::EgressNotAsked {
            session_id: session_id.clone(),
            method: "GET".into(),
            url: "https://api.example.com/".into(),
            reason: "eight asked already".into(),
        },
    ]
}

/// Events of proposals, refusals and tools.
fn other_samples(session_id: &str) -> Vec<KeepEvent> {
    let session_id = session_id.to_owned();
    vec![
        KeepEvent::ProposalCreated {
            session_id: session_id.clone(),
            proposal: AnyProposal::Tool(Box::new(review(&session_id))),
        },
        KeepEvent::ProposalRefused {
            session_id: session_id.clone(),
            kind: "card.propose".into(),
            rule: "invalid".into(),
            reason: "cards need `card: true`".into(),
        },
        KeepEvent::ProposalDecided {
            id: "kt-1".into(),
            session_id: session_id.clone(),
            kind: "tool".into(),
            state: "approved".into(),
            name: Some("u/alice/echo".into()),
            version: Some(1),
        },
        KeepEvent::Refusal {
            session_id: Some(session_id.clone()),
            subject: format!("session:{session_id}"),
            detail: RefusalDetail::Session(SessionRefused {
                action: "egress".into(),
                rule: "host".into(),
                reason: "GET https://elsewhere/: no rule reaches this host".into(),
                session: session_id.clone(),
            }),
        },
        KeepEvent::JournalFailed {
            session_id: session_id.clone(),
            reason: "the database cannot be reached".into(),
        },
        KeepEvent::ToolDeployed {
            name: "u/alice/echo".into(),
            version: 1,
            tainted: false,
        },
        KeepEvent::ToolTaintCleared {
            name: "u/alice/echo".into(),
            version: 1,
        },
        KeepEvent::ToolRevoked {
            name: "u/alice/echo".into(),
            version: 1,
        },
    ]
}

fn approval(session_id: &str) -> ApprovalView {
    ApprovalView {
        id: "ea-1".into(),
        waiting: WaitingView {
            session_id: session_id.to_owned(),
            agent: "news".into(),
            agent_version: 3,
            method: "POST".into(),
            url: "https://api.example.com/v1/items".into(),
            headers: vec![["content-type".into(), "application/json".into()]],
            tainted: false,
            body_bytes: 18,
            body_sha256: "00".repeat(32),
            credentials: vec!["api".into()],
            device_signature: false,
            hashes: BTreeMap::from([("body".into(), "00".repeat(32))]),
            asked_at_ms: 1_767_225_600_000,
        },
    }
}

fn review(session_id: &str) -> ToolReview {
    ToolReview {
        id: "kt-1".into(),
        kind: "tool",
        name: "echo".into(),
        qualified_name: "u/alice/echo".into(),
        version: 1,
        description: "Echoes.".into(),
        bundle_sha256: "00".repeat(32),
        bundle_size: 1_024,
        origin: ToolOrigin {
            agent: "maker".into(),
            agent_version: 1,
            signer_key_id: "00".repeat(16),
            session_id: session_id.to_owned(),
            created_at_ms: 1_767_225_600_000,
            taint_source: None,
        },
        tainted: false,
        state: "pending".into(),
        decided_at_ms: None,
        proposed_manifest: json!({"name": "echo", "version": 1}),
        authority_diff: Vec::new(),
        no_new_authority: true,
        clamped_manifest: json!({"name": "echo", "version": 1}),
        dropped: Vec::new(),
        granted_diff: Vec::new(),
        hashes: BTreeMap::from([("bundle".into(), "00".repeat(32))]),
        ceiling_version: 0,
        policy_version: 1,
        needs_confirm_tainted: false,
        refused: None,
    }
}

#[tokio::test]
async fn every_keep_event_as_a_persons_hub_stamps_it_matches_its_schema() {
    let document = document().await;
    let hubs = KeepHubs::default();
    let mut stream = hubs.subscribe("alice", None);
    let samples = keep_samples();
    let sampled: BTreeSet<String> = samples
        .iter()
        .map(|event| event.event_type().to_owned())
        .collect();
    for event in samples {
        hubs.publish("alice", event);
    }
    // An event too large to keep, the same event as another host could not send it, and the
    // notice that events from another host may have been missed.
    let large = KeepEvent::SessionTainted {
        session_id: "ks-1".into(),
        source: "x".repeat(200 << 10),
    };
    hubs.publish("alice", large.clone());
    hubs.hub("alice")
        .publish_event(None, &OmittedEvent::of(&large, 9_000, Some("host-b")));
    hubs.publish_all(&KeepNotice::missed());
    let events = drain(&mut stream);
    let omitted: Vec<&Value> = events
        .iter()
        .filter(|event| event.get("omitted_bytes").is_some())
        .collect();
    assert_eq!(omitted.len(), 2, "{events:?}");
    let seen = check_stream_events(&document, "KeepStreamEvent", &events);
    let mut expected = sampled;
    expected.insert("stream.missed".to_owned());
    assert_eq!(seen, expected);
}

fn answer(head: &str) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    ok(&format!("you asked for {path}"))
}

/// A session's life as a person's stream carries it, against `KeepStreamEvent`.
#[tokio::test]
async fn the_keep_events_on_the_wire_match_their_schema() {
    let upstream = Upstream::start(answer).await;
    let keep = Keep::start_with_cells(vec![upstream.port]).await;
    let rule = json!({"scheme": "http", "host": "127.0.0.1", "port": upstream.port,
                      "methods": ["GET"], "path_prefix": "/api"});
    keep.deploy(
        Guest::ScriptedHttp.bytes(),
        json!({"name": "scripted", "version": 1, "description": "A test agent.",
               "egress": {"mode": "allow", "rules": [rule]},
               "resources": {"memory_mb": 32, "cpu_ms": 200, "timeout_ms": 3000},
               "approval_timeout_s": 30}),
    )
    .await;
    let document = document().await;
    let mut stream = SseClient::connect_with(
        keep.server.addr,
        "/v1/events",
        &format!("Authorization: Bearer {}\r\n", keep.alice),
    )
    .await;
    let (_, session) = keep
        .call(
            &keep.alice,
            "POST",
            "/v1/sessions",
            Some(json!({"agent": "scripted"})),
        )
        .await;
    let id = session["id"].as_str().expect("id").to_owned();
    let plan = json!({"emit": {"type": "plan", "title": "Tidy up", "steps": ["look"]}});
    say(&keep, &keep.alice, &id, plan).await;
    let card = json!({"emit": {"type": "card.propose", "title": "Weather"}});
    say(&keep, &keep.alice, &id, card).await;
    let url = format!("http://127.0.0.1:{}/api/news", upstream.port);
    say(&keep, &keep.alice, &id, json!({"fetch": {"url": url}})).await;
    let (_, listed) = keep.call(&keep.alice, "GET", "/v1/proposals", None).await;
    let plan_id = listed["proposals"][0]["id"].as_str().expect("a plan");
    let reject = format!("/v1/proposals/{plan_id}/reject");
    keep.call(&keep.alice, "POST", &reject, None).await;
    keep.call(
        &keep.alice,
        "POST",
        &format!("/v1/sessions/{id}/stop"),
        None,
    )
    .await;
    let events = stream.until_type("session.ended").await;
    let seen = check_stream_events(&document, "KeepStreamEvent", &events);
    for event_type in [
        "session.started",
        "session.reply",
        "proposal.created",
        "proposal.refused",
        "egress.decided",
        "session.tainted",
        "proposal.decided",
        "session.ended",
    ] {
        assert!(seen.contains(event_type), "{event_type} not seen: {seen:?}");
    }
    keep.server.stop().await;
}
