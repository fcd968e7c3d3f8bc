//! The OpenAPI document against the code: the routes the router serves, the prose reference in
//! `docs/api.md`, and the events that really go out on the stream.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use imurun_core::{
    CallSource, CompactionMode, DenyReason, Event, EventSink, PrefetchResult, StepKind, TurnStatus,
};
use imurun_server::{EventHub, HubConfig, page_operations, served_operations};
use serde_json::{Map, Value, json};

use crate::api_support::{Dirs, Reply, TestModel, TestServer};
use crate::support::SseClient;

/// The methods an OpenAPI path item can hold, as they are spelt there.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `(METHOD, path)` of every operation in `document`, sorted.
fn documented_operations(document: &Value) -> Vec<(String, String)> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                operations.push((method.to_ascii_uppercase(), path.clone()));
            }
        }
    }
    operations.sort();
    operations
}

/// The document as the server serves it.
async fn served_document(server: &TestServer) -> Value {
    let (status, document) = server.get("/api/openapi.json").await;
    assert_eq!(status, 200, "{document}");
    document
}

#[tokio::test]
async fn every_route_is_documented_and_every_documented_route_is_served() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    assert_eq!(document["openapi"], "3.1.0");
    let mut served = served_operations();
    let count = served.len();
    served.sort();
    served.dedup();
    assert_eq!(
        served.len(),
        count,
        "an operation is in the route table twice"
    );
    // A failure here means a handler is in the route table but missing from `ApiDoc`'s
    // `paths(...)` in src/openapi.rs, or the other way round.
    assert_eq!(documented_operations(&document), served);
    // The web page's routes are served by the same router but are not API operations: the
    // document describes what a program calls, not the static files of one client. Only these
    // two may stay out of it.
    let page = vec![
        ("GET".to_owned(), "/".to_owned()),
        ("GET".to_owned(), "/assets/{file}".to_owned()),
    ];
    assert_eq!(page_operations(), page);
    server.stop().await;
}

/// Probing the running server: every documented operation reaches a handler, never the
/// router's fallbacks (404 `no route has this path`, 405 `method_not_allowed`).
#[tokio::test]
async fn every_documented_operation_reaches_its_handler() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    for (method, path) in documented_operations(&document) {
        let concrete = concrete_path(&path);
        let operation = &document["paths"][&path][method.to_ascii_lowercase()];
        let streams = operation["responses"]["200"]["content"]
            .get("text/event-stream")
            .is_some();
        if method == "GET" && streams {
            // Connecting asserts the 200 and the stream's head; the stream never ends.
            let client = SseClient::connect(server.addr, &concrete, None).await;
            assert!(client.headers.contains("text/event-stream"));
            continue;
        }
        let body = (method != "GET" && method != "DELETE").then(|| "{}".to_owned());
        let (status, answer) = server.request(&method, &concrete, body).await;
        assert_ne!(status, 405, "{method} {path}: {answer}");
        let fallback = answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("no route has this path"));
        assert!(
            !(status == 404 && fallback),
            "{method} {path} is documented but not served"
        );
        if let Some(responses) = operation["responses"].as_object() {
            assert!(
                responses.contains_key(&status.to_string()),
                "{method} {path} answered {status}, which its documentation does not list: \
                 {answer}"
            );
        }
    }
    server.stop().await;
}

/// `{name}` segments replaced by an id that exists nowhere.
fn concrete_path(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "no-such-id"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The router is built in one place, from the table: a route added anywhere else would be
/// served without being documented. A regression test for the router this replaced, where a
/// route was one `Router::route` call that no test read.
#[test]
fn routes_are_added_only_through_the_route_table() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    for file in rust_files(&source) {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let code = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for pattern in [
            ".route(",
            ".route_service(",
            ".nest(",
            ".nest_service(",
            ".merge(",
            "Router::new(",
        ] {
            let count = code.matches(pattern).count();
            if count > 0 {
                let name = file.strip_prefix(&source).expect("under src");
                found.insert(format!("{} {pattern}", name.display()), count);
            }
        }
    }
    let expected = BTreeMap::from([
        ("routes/mod.rs .route(".to_owned(), 1),
        ("routes/mod.rs Router::new(".to_owned(), 1),
    ]);
    assert_eq!(
        found, expected,
        "routes must be added through the table in src/routes/mod.rs"
    );
}

fn rust_files(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).expect("read src") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    files
}

/// `docs/api.md` names every path, every event type and every error code of the document.
#[tokio::test]
async fn the_prose_reference_names_everything_the_document_has() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/api.md");
    let prose = std::fs::read_to_string(&docs).expect("docs/api.md exists");
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let mut missing = Vec::new();
    for path in document["paths"].as_object().expect("paths").keys() {
        if !prose.contains(&format!("`{path}")) && !prose.contains(&format!(" {path}")) {
            missing.push(path.clone());
        }
    }
    for event_type in event_schemas(&document).keys() {
        if !prose.contains(&format!("`{event_type}`")) {
            missing.push(event_type.clone());
        }
    }
    let codes =
        document["components"]["schemas"]["ErrorDetail"]["properties"]["code"]["description"]
            .as_str()
            .expect("the codes are listed");
    for code in codes.split('`').skip(1).step_by(2) {
        if !prose.contains(&format!("`{code}`")) {
            missing.push(code.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/api.md does not mention {missing:?}"
    );
}

/// The properties of each `StreamEvent` variant, by its `type`.
fn event_schemas(document: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let variants = document["components"]["schemas"]["StreamEvent"]["oneOf"]
        .as_array()
        .expect("StreamEvent is a oneOf");
    variants
        .iter()
        .map(|variant| {
            let properties = variant["properties"].as_object().expect("properties");
            let event_type = properties["type"]["enum"][0]
                .as_str()
                .expect("a type")
                .to_owned();
            (event_type, properties.keys().cloned().collect())
        })
        .collect()
}

/// Checks that each event has a schema with exactly its fields.
fn check_events(document: &Value, events: &[Value]) -> BTreeSet<String> {
    let schemas = event_schemas(document);
    let mut seen = BTreeSet::new();
    for event in events {
        let event_type = event["type"].as_str().expect("a type").to_owned();
        let schema = schemas
            .get(&event_type)
            .unwrap_or_else(|| panic!("no schema for {event}"));
        let mut fields: BTreeSet<String> =
            event.as_object().expect("object").keys().cloned().collect();
        // `turn.end` carries `error` only after a panic in the turn's task.
        if event_type == "turn.end" {
            fields.insert("error".to_owned());
        }
        assert_eq!(
            &fields, schema,
            "{event_type}: the event against its schema"
        );
        seen.insert(event_type);
    }
    seen
}

/// One event of each kind `imurun_core::Event` has. The match is exhaustive on purpose: a new
/// kind of event does not compile here until it has a sample, and then fails until it has a
/// schema in `StreamEvent`.
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
        },
        Event::ToolResult {
            call_id: "c1".into(),
            session_id: session_id.clone(),
            name: "read_file".into(),
            ok: true,
            text: "hello".into(),
            depth: 0,
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
        Event::TurnEnd {
            session_id,
            status: TurnStatus::Done,
            tool_calls: 1,
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
            | Event::TurnEnd { .. } => {}
        }
    }
    samples
}

/// The events the agent layer publishes, as the hub stamps them (and, for the loop's events,
/// with the `turn_id` the server's turn sink adds), against their schemas.
#[tokio::test]
async fn every_core_event_matches_its_schema() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(None, None);
    for sample in core_samples() {
        // Tool events come from the executor and sub-agent events from the `run_agent` tool,
        // straight to the hub: no `turn_id`.
        let from_loop = !matches!(
            sample,
            Event::AgentStart { .. }
                | Event::AgentEnd { .. }
                | Event::ToolCall { .. }
                | Event::ToolResult { .. }
                | Event::ToolApprovalNeeded { .. }
                | Event::ToolApproved { .. }
                | Event::ToolDenied { .. }
        );
        if from_loop {
            let Ok(Value::Object(mut fields)) = serde_json::to_value(&sample) else {
                panic!("an event is an object");
            };
            fields.insert("turn_id".to_owned(), json!("turn-1"));
            hub.publish_value(Some("s-1"), Value::Object(fields))
                .expect("an event");
        } else {
            hub.publish(sample);
        }
    }
    let events: Vec<Value> = std::iter::from_fn(|| subscription.try_recv())
        .map(|record| record.value())
        .collect();
    assert_eq!(events.len(), core_samples().len());
    check_events(&document, &events);
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
    let model = TestModel::new(vec![Reply::text("Hello there.")]);
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
    let mut events = collect_until(&mut client, "turn.end").await;
    // A remembered approval, so that revoking publishes `grants.revoked`.
    server.state.hub().publish(Event::ToolApproved {
        approval_id: "a1".into(),
        call_id: "c1".into(),
        session_id: Some(session.clone()),
        name: "shell".into(),
        remember: true,
    });
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
