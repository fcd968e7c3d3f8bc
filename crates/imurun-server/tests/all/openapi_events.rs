//! The live events against the OpenAPI document: every event the agent layer, the server and
//! Keep put on their streams fits a shape of the schema composed for its stream
//! (`StreamEvent`, `KeepStreamEvent`), and those schemas are built from the wire types.

use std::collections::{BTreeMap, BTreeSet};

use imurun_core::{
    CallSource, CompactionMode, DenyReason, Event, EventSink, GroundingAction, PrefetchResult,
    StepKind, TurnStatus,
};
use imurun_server::{EventHub, HubConfig};
use serde_json::{Map, Value, json};

use crate::api_support::{Dirs, Reply, TestModel, TestServer};
use crate::openapi::served_document;
use crate::support::SseClient;

/// One shape a schema allows: the properties it describes and the ones it requires.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    properties: BTreeSet<String>,
    required: BTreeSet<String>,
    /// The values its `type` property allows, when it names some (an event's `type`).
    event_types: Option<BTreeSet<String>>,
}

impl Shape {
    /// Both shapes at once, as `allOf` composes them.
    fn and(&self, other: &Shape) -> Shape {
        let event_types = match (&self.event_types, &other.event_types) {
            (Some(mine), Some(theirs)) => Some(mine.intersection(theirs).cloned().collect()),
            (mine, theirs) => mine.clone().or_else(|| theirs.clone()),
        };
        Shape {
            properties: self.properties.union(&other.properties).cloned().collect(),
            required: self.required.union(&other.required).cloned().collect(),
            event_types,
        }
    }

    /// Whether `event` holds every field this shape requires and no field it does not
    /// describe.
    fn fits(&self, event: &Value) -> bool {
        let fields: BTreeSet<String> = event.as_object().expect("object").keys().cloned().collect();
        self.required.is_subset(&fields) && fields.is_subset(&self.properties)
    }
}

/// The schema `reference` (`#/components/schemas/Name`) points at.
fn resolve<'a>(document: &'a Value, reference: &str) -> &'a Value {
    let name = reference
        .strip_prefix("#/components/schemas/")
        .unwrap_or_else(|| panic!("a local schema reference: {reference}"));
    let schema = &document["components"]["schemas"][name];
    assert!(!schema.is_null(), "{reference} names no schema");
    schema
}

/// Every shape `schema` allows, `$ref`s resolved: `allOf` composes its items' shapes, `oneOf`
/// and `anyOf` give one shape per branch, and a schema's own properties join each of them.
fn shapes(document: &Value, schema: &Value) -> Vec<Shape> {
    if let Some(reference) = schema["$ref"].as_str() {
        return shapes(document, resolve(document, reference));
    }
    let own = Shape {
        properties: schema["properties"]
            .as_object()
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default(),
        required: schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        event_types: schema["properties"]["type"]["enum"]
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
    };
    let mut found = vec![own];
    if let Some(items) = schema["allOf"].as_array() {
        for item in items {
            let item_shapes = shapes(document, item);
            found = found
                .iter()
                .flat_map(|shape| item_shapes.iter().map(|other| shape.and(other)))
                .collect();
        }
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(branches) = schema[keyword].as_array() {
            found = found
                .iter()
                .flat_map(|shape| {
                    branches
                        .iter()
                        .flat_map(|branch| shapes(document, branch))
                        .map(|branch| shape.and(&branch))
                        .collect::<Vec<_>>()
                })
                .collect();
        }
    }
    found
}

/// The shapes of the stream schema `name` (`StreamEvent`, `KeepStreamEvent`), by the event
/// `type` each one is for; a shape whose `type` names no value (an omitted Keep event's, which
/// carries another event's type) under `*`, a candidate for any type.
pub(crate) fn stream_shapes(document: &Value, name: &str) -> BTreeMap<String, Vec<Shape>> {
    let stream_event = &document["components"]["schemas"][name];
    assert!(stream_event.is_object(), "no schema {name}");
    let mut by_type: BTreeMap<String, Vec<Shape>> = BTreeMap::new();
    for shape in shapes(document, stream_event) {
        let event_types = shape
            .event_types
            .clone()
            .unwrap_or_else(|| BTreeSet::from(["*".to_owned()]));
        for event_type in event_types {
            by_type.entry(event_type).or_default().push(shape.clone());
        }
    }
    by_type
}

/// The shapes of `StreamEvent`, by the event `type` each one is for: every one names its type.
pub(crate) fn event_schemas(document: &Value) -> BTreeMap<String, Vec<Shape>> {
    let by_type = stream_shapes(document, "StreamEvent");
    assert!(
        !by_type.contains_key("*"),
        "a StreamEvent shape without a `type`: {:?}",
        by_type.get("*")
    );
    by_type
}

/// Checks that each event fits a shape of the stream schema `name` for its `type`: it holds
/// every field the shape requires and no field the shape does not describe. The types seen.
pub(crate) fn check_stream_events(
    document: &Value,
    name: &str,
    events: &[Value],
) -> BTreeSet<String> {
    let schemas = stream_shapes(document, name);
    let mut seen = BTreeSet::new();
    for event in events {
        let event_type = event["type"].as_str().expect("a type").to_owned();
        let candidates: Vec<&Shape> = [event_type.as_str(), "*"]
            .iter()
            .filter_map(|key| schemas.get(*key))
            .flatten()
            .collect();
        assert!(!candidates.is_empty(), "no schema for {event}");
        assert!(
            candidates.iter().any(|shape| shape.fits(event)),
            "{event_type} fits none of its shapes (each: required ⊆ fields ⊆ properties): \
             {event}\nshapes: {candidates:#?}"
        );
        seen.insert(event_type);
    }
    seen
}

/// Checks that each event fits a shape of `StreamEvent` for its `type`.
fn check_events(document: &Value, events: &[Value]) -> BTreeSet<String> {
    event_schemas(document);
    check_stream_events(document, "StreamEvent", events)
}

/// One event of each kind `imurun_core::Event` has. The match is exhaustive on purpose: a new
/// kind of event does not compile here until it has a sample; its schema comes from the type.
fn core_samples() -> Vec<Event> {
    let args = Map::from_iter([("path".to_owned(), json!("notes.txt"))]);
    let session_id = Some("s-1".to_owned());
    let samples = vec![
        Event::ToolCall {
            call_id: "c1".into(),
            session_id: session_id.clone(),
            name: "read_file".into(),
            args: args.clone(),
            source: CallSource::Model,
            depth: 0,
            tainted: false,
        },
        Event::ToolResult {
            call_id: "c1".into(),
            session_id: session_id.clone(),
            name: "read_file".into(),
            ok: true,
            text: "hello".into(),
            depth: 0,
            untrusted: false,
        },
        Event::ToolApprovalNeeded {
            approval_id: "a1".into(),
            call_id: "c2".into(),
            session_id: session_id.clone(),
            name: "shell".into(),
            args: args.clone(),
            deadline_ms: 1,
            rememberable: true,
            depth: 0,
            reason: "this session read untrusted content".into(),
            tainted: true,
        },
        Event::ToolApproved {
            approval_id: "a1".into(),
            call_id: "c2".into(),
            session_id: session_id.clone(),
            name: "shell".into(),
            remember: false,
        },
        Event::ToolDenied {
            approval_id: None,
            call_id: "c3".into(),
            session_id: session_id.clone(),
            name: "shell".into(),
            reason: DenyReason::Policy,
            message: "no".into(),
        },
        Event::Step {
            session_id: session_id.clone(),
            step: 1,
            kind: StepKind::Answer,
            text: "hi".into(),
        },
        Event::Token {
            session_id: session_id.clone(),
            step: 1,
            text: "hi".into(),
        },
        Event::CompactionStart {
            session_id: session_id.clone(),
            messages: 4,
            tokens: 900,
            budget: 800,
        },
        Event::CompactionDone {
            session_id: session_id.clone(),
            mode: CompactionMode::Dropped,
            messages: 2,
            tokens: 700,
        },
        Event::PromptDelivered {
            session_id: session_id.clone(),
            text: "and then?".into(),
        },
        Event::SkillUsed {
            session_id: session_id.clone(),
            skills: vec!["haiku".into()],
        },
        Event::AgentStart {
            session_id: session_id.clone(),
            depth: 1,
            task: "Find the notes.".into(),
            tools: vec!["file_read".into()],
        },
        Event::AgentEnd {
            session_id: session_id.clone(),
            depth: 1,
            status: TurnStatus::Done,
            steps: 2,
        },
        Event::ToolsStart {
            session_id: session_id.clone(),
            tools: vec!["get_time".into(), "web_search".into()],
        },
        Event::WebSearchStart {
            session_id: session_id.clone(),
            query: "rust release".into(),
        },
        Event::WebSearchDone {
            session_id: session_id.clone(),
            query: "rust release".into(),
            ok: false,
        },
        Event::ToolsDone {
            session_id: session_id.clone(),
            results: vec![PrefetchResult {
                tool: "get_time".into(),
                ok: true,
            }],
            elapsed_ms: 12,
        },
        Event::Grounding {
            session_id: session_id.clone(),
            step: 2,
            action: GroundingAction::Retry,
            tool: Some("get_time".into()),
            reason: "the answer left out the time that get_time returned".into(),
        },
        Event::Checking {
            session_id: session_id.clone(),
            step: 2,
            tools: vec!["file_read".into()],
        },
        Event::Step {
            session_id: session_id.clone(),
            step: 2,
            kind: StepKind::Correction,
            text: "It is noon.".into(),
        },
        Event::TurnEnd {
            session_id,
            status: TurnStatus::Done,
            tool_calls: 1,
            calls_ran: 1,
            calls_cached: 0,
            calls_refused: 0,
            skills: Vec::new(),
            steps: 2,
        },
    ];
    for sample in &samples {
        match sample {
            Event::ToolCall { .. }
            | Event::ToolResult { .. }
            | Event::ToolApprovalNeeded { .. }
            | Event::ToolApproved { .. }
            | Event::ToolDenied { .. }
            | Event::Step { .. }
            | Event::Token { .. }
            | Event::CompactionStart { .. }
            | Event::CompactionDone { .. }
            | Event::PromptDelivered { .. }
            | Event::SkillUsed { .. }
            | Event::AgentStart { .. }
            | Event::AgentEnd { .. }
            | Event::ToolsStart { .. }
            | Event::WebSearchStart { .. }
            | Event::WebSearchDone { .. }
            | Event::ToolsDone { .. }
            | Event::Grounding { .. }
            | Event::Checking { .. }
            | Event::TurnEnd { .. } => {}
        }
    }
    samples
}

/// The events the agent layer publishes, as the hub stamps them, against their schemas: every
/// event as a turn publishes it (with the `turn_id` the server's turn sink adds, as its
/// `TurnEvent` serializes it), and the tool and sub-agent events also as a call run by hand
/// publishes them, straight to the hub with no `turn_id`.
#[tokio::test]
async fn every_core_event_matches_its_schema() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(None, None);
    let mut published = 0;
    for sample in core_samples() {
        let Ok(Value::Object(mut fields)) = serde_json::to_value(&sample) else {
            panic!("an event is an object");
        };
        fields.insert("turn_id".to_owned(), json!("turn-1"));
        hub.publish_value(Some("s-1"), Value::Object(fields))
            .expect("an event");
        published += 1;
        let by_hand = matches!(
            sample,
            Event::AgentStart { .. }
                | Event::AgentEnd { .. }
                | Event::ToolCall { .. }
                | Event::ToolResult { .. }
                | Event::ToolApprovalNeeded { .. }
                | Event::ToolApproved { .. }
                | Event::ToolDenied { .. }
        );
        if by_hand {
            hub.publish(sample);
            published += 1;
        }
    }
    let events: Vec<Value> = std::iter::from_fn(|| subscription.try_recv())
        .map(|record| record.value())
        .collect();
    assert_eq!(events.len(), published);
    let seen = check_events(&document, &events);
    // Types, not samples: `step` has two samples (an answer's and a rejected answer's).
    let sampled: BTreeSet<String> = core_samples()
        .iter()
        .map(|sample| {
            serde_json::to_value(sample).expect("an event")["type"]
                .as_str()
                .expect("a type")
                .to_owned()
        })
        .collect();
    assert_eq!(seen, sampled);
}

/// `StreamEvent` is composed from the types that go on the wire, not a copy of them: a
/// regression test for the hand-written mirror it replaced, which had to be kept in step with
/// `imurun_core::Event` and the server's events by hand.
#[tokio::test]
async fn the_stream_event_schema_is_built_from_the_wire_types() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let schemas = &document["components"]["schemas"];
    let branches: Vec<String> = schemas["StreamEvent"]["anyOf"]
        .as_array()
        .expect("StreamEvent is an anyOf")
        .iter()
        .map(|branch| branch.to_string())
        .collect();
    for name in ["TurnEvent", "Event", "ServerEvent"] {
        let stamped = json!({"allOf": [
            {"$ref": format!("#/components/schemas/{name}")},
            {"$ref": "#/components/schemas/EventStamp"},
        ]})
        .to_string();
        assert!(
            branches.contains(&stamped),
            "{name} is not a branch: {branches:?}"
        );
    }
    assert!(branches.contains(&json!({"$ref": "#/components/schemas/StreamNotice"}).to_string()));
    // The field documentation lives on the real types.
    let tool_call = schemas["Event"]["oneOf"]
        .as_array()
        .expect("Event is a oneOf")
        .iter()
        .find(|variant| variant["properties"]["type"]["enum"][0] == "tool.call")
        .expect("tool.call");
    assert!(
        tool_call["properties"]["args"]["description"]
            .as_str()
            .is_some_and(|text| text.contains("2000")),
        "{tool_call}"
    );
    // `CallSource` goes on the wire as its text (`agent:1`), not in the enum's shape.
    assert_eq!(schemas["CallSource"]["type"], "string");
    assert_eq!(
        schemas["CallSource"]["pattern"],
        "^(model|user|prefetch|agent:[0-9]{1,3})$"
    );
}

/// The hub's own notices against their schemas.
#[tokio::test]
async fn the_stream_notices_match_their_schemas() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let hub = EventHub::new(HubConfig {
        buffer_events_max: 1,
        queue_events_max: 1,
    });
    for _ in 0..3 {
        hub.publish_value(None, json!({"type": "x"}))
            .expect("an event");
    }
    let mut notices = Vec::new();
    let mut gap = hub.subscribe(None, Some(1));
    notices.extend(gap.try_recv().map(|record| record.value()));
    let mut reset = hub.subscribe(None, Some(99));
    notices.extend(reset.try_recv().map(|record| record.value()));
    let mut lagged = hub.subscribe(None, None);
    for _ in 0..3 {
        hub.publish_value(None, json!({"type": "x"}))
            .expect("an event");
    }
    notices.extend(
        std::iter::from_fn(|| lagged.try_recv())
            .map(|record| record.value())
            .filter(|value| value["type"] == "stream.lagged"),
    );
    let seen = check_events(&document, &notices);
    assert_eq!(
        seen,
        BTreeSet::from(["stream.gap", "stream.lagged", "stream.reset"].map(str::to_owned))
    );
}

/// The server's own events, as a client receives them over SSE during a session's life,
/// against their schemas.
#[tokio::test]
async fn the_server_events_on_the_wire_match_their_schemas() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![
        Reply::text("```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"notes.txt\"}}\n```"),
        Reply::text("Hello there."),
    ]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let document = served_document(&server).await;
    let mut client = server.events(None).await;
    let session = server.new_session().await;
    server
        .patch(&format!("/api/sessions/{session}"), json!({"title": "t"}))
        .await;
    server
        .post("/api/permissions", json!({"mode": "ask"}))
        .await;
    let (status, _) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": "hi"}),
        )
        .await;
    assert_eq!(status, 202);
    // The read asks in `ask` mode; approved with "always for this session", it is remembered,
    // so that revoking publishes `grants.revoked`.
    let mut events = collect_until(&mut client, "tool.approval_needed").await;
    let approval_id = events
        .last()
        .and_then(|event| event["approval_id"].as_str())
        .unwrap()
        .to_owned();
    let (status, _) = server
        .post(
            &format!("/api/tools/approvals/{approval_id}"),
            json!({"approved": true, "remember": true}),
        )
        .await;
    assert_eq!(status, 200);
    events.extend(collect_until(&mut client, "turn.end").await);
    server.delete("/api/grants").await;
    server.post("/api/stop", json!({})).await;
    server.delete(&format!("/api/sessions/{session}")).await;
    events.extend(collect_until(&mut client, "session.deleted").await);
    let seen = check_events(&document, &events);
    for event_type in [
        "session.created",
        "session.updated",
        "permissions",
        "turn.start",
        "step",
        "tool.call",
        "tool.approval_needed",
        "tool.approved",
        "tool.result",
        "turn.end",
        "grants.revoked",
        "stop.all",
        "session.deleted",
    ] {
        assert!(seen.contains(event_type), "{event_type} not seen: {seen:?}");
    }
    drop(client);
    server.stop().await;
}

async fn collect_until(client: &mut SseClient, until: &str) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = client
            .next_event()
            .await
            .expect("the stream goes on")
            .data();
        let done = event["type"] == until;
        events.push(event);
        if done {
            return events;
        }
    }
}
