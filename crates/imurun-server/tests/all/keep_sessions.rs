//! Keep sessions over HTTP: two people, real cells, each person's events their own.

use imurun_testkit::{Guest, SseClient, Upstream, ok};
use serde_json::{Value, json};

use crate::support::Keep;

fn manifest(name: &str, extra: Value) -> Value {
    let mut manifest = json!({
        "name": name, "version": 1, "description": "A test agent.",
        "resources": {"memory_mb": 32, "cpu_ms": 200, "timeout_ms": 3000},
        "approval_timeout_s": 30
    });
    if let (Some(target), Some(source)) = (manifest.as_object_mut(), extra.as_object()) {
        target.extend(source.clone());
    }
    manifest
}

async fn events_of(keep: &Keep, token: &str) -> SseClient {
    SseClient::connect_with(
        keep.server.addr,
        "/v1/events",
        &format!("Authorization: Bearer {token}\r\n"),
    )
    .await
}

/// Starts a session of `agent` for the holder of `token`; the session as answered.
async fn start(keep: &Keep, token: &str, agent: &str) -> Value {
    let (status, session) = keep
        .call(token, "POST", "/v1/sessions", Some(json!({"agent": agent})))
        .await;
    assert_eq!(status, 201, "{session}");
    session
}

/// Sends `message` to the session: a JSON string as its text, anything else as JSON.
async fn say(keep: &Keep, token: &str, session: &str, message: Value) -> (u16, Value) {
    let text = match message {
        Value::String(text) => text,
        other => other.to_string(),
    };
    keep.call(
        token,
        "POST",
        &format!("/v1/sessions/{session}/messages"),
        Some(json!({ "text": text })),
    )
    .await
}

fn answer(head: &str) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    ok(&format!("you asked for {path}"))
}

#[tokio::test]
async fn a_persons_session_events_and_proposals_are_theirs_alone() {
    let upstream = Upstream::start(answer).await;
    let keep = Keep::start_with_cells(vec![upstream.port]).await;
    let rule = json!({"scheme": "http", "host": "127.0.0.1", "port": upstream.port,
                      "methods": ["GET"], "path_prefix": "/api"});
    keep.deploy(
        Guest::ScriptedHttp.bytes(),
        manifest(
            "scripted",
            json!({"egress": {"mode": "allow", "rules": [rule]}}),
        ),
    )
    .await;
    let mut alice_events = events_of(&keep, &keep.alice).await;
    let mut bob_events = events_of(&keep, &keep.bob).await;

    let session = start(&keep, &keep.alice, "scripted").await;
    let id = session["id"].as_str().expect("id").to_owned();
    assert_eq!(session["live"], true);
    assert_eq!(session["tainted"], false);

    // Nobody else reaches it: another person reads it as missing, the operator is refused.
    let path = format!("/v1/sessions/{id}");
    assert_eq!(keep.call(&keep.bob, "GET", &path, None).await.0, 404);
    assert_eq!(keep.call(&keep.operator, "GET", &path, None).await.0, 403);
    let (status, _) = say(&keep, &keep.bob, &id, json!({"reply": "hi"})).await;
    assert_eq!(status, 404);

    let (status, replies) = say(&keep, &keep.alice, &id, json!({"reply": "hello"})).await;
    assert_eq!((status, &replies["replies"]), (200, &json!(["hello"])));
    let plan = json!({"emit": {"type": "plan", "title": "Tidy up", "steps": ["look", "tell"]}});
    let (_, replies) = say(&keep, &keep.alice, &id, plan.clone()).await;
    assert_eq!(replies["replies"], json!(["emitted"]));
    let card = json!({"emit": {"type": "card.propose", "title": "Weather", "body": "Sunny"}});
    let (_, replies) = say(&keep, &keep.alice, &id, card).await;
    let refused = replies["replies"][0].as_str().unwrap_or_default();
    assert!(
        refused.starts_with("refused:") && refused.contains("card"),
        "{replies}"
    );

    // The egress answer taints the session; the next plan carries the mark.
    let url = format!("http://127.0.0.1:{}/api/news", upstream.port);
    let (_, replies) = say(&keep, &keep.alice, &id, json!({"fetch": {"url": url}})).await;
    assert!(
        replies["replies"][0]
            .as_str()
            .unwrap_or_default()
            .contains("/api/news"),
        "{replies}"
    );
    let (_, tainted) = keep.call(&keep.alice, "GET", &path, None).await;
    assert_eq!(tainted["tainted"], true, "{tainted}");
    let (_, _) = say(&keep, &keep.alice, &id, plan).await;

    let seen = alice_events.until_type("session.tainted").await;
    let types: Vec<&str> = seen.iter().filter_map(|e| e["type"].as_str()).collect();
    for expected in [
        "session.started",
        "session.reply",
        "proposal.created",
        "proposal.refused",
        "egress.decided",
    ] {
        assert!(
            types.contains(&expected),
            "{expected} missing from {types:?}"
        );
    }
    assert!(
        seen.iter().all(|event| event["session_id"] == id.as_str()),
        "{seen:?}"
    );

    // Proposals: listed for alice only; a tainted one needs the confirm.
    let (_, listed) = keep
        .call(&keep.alice, "GET", "/v1/proposals?kind=plan", None)
        .await;
    let plans = listed["proposals"].as_array().expect("proposals").clone();
    assert_eq!(plans.len(), 2, "{listed}");
    let (_, bobs) = keep.call(&keep.bob, "GET", "/v1/proposals", None).await;
    assert_eq!(bobs["proposals"], json!([]));
    assert_eq!(bobs["tools"], json!([]));
    let (status, tools) = keep
        .call(&keep.alice, "GET", "/v1/proposals?kind=tool", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(tools, json!({"proposals": [], "tools": []}));
    let (status, _) = keep
        .call(&keep.alice, "GET", "/v1/proposals?kind=tools", None)
        .await;
    assert_eq!(status, 400);
    let newest = &plans[0];
    assert_eq!(newest["tainted"], true, "{newest}");
    let accept = format!(
        "/v1/proposals/{}/accept",
        newest["id"].as_str().expect("id")
    );
    let (status, body) = keep.call(&keep.bob, "POST", &accept, Some(json!({}))).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = keep
        .call(&keep.alice, "POST", &accept, Some(json!({})))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("confirm_tainted"))
    );
    let (status, body) = keep
        .call(
            &keep.alice,
            "POST",
            &accept,
            Some(json!({"confirm_tainted": true})),
        )
        .await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("accepted")),
        "{body}"
    );

    // Bob's stream has carried nothing of alice's: the first event he sees is his own.
    let his = start(&keep, &keep.bob, "scripted").await;
    let first = bob_events.next_event().await.expect("an event").data();
    assert_eq!(first["type"], "session.started");
    assert_eq!(first["session_id"], his["id"]);

    // Stopping ends the cell; a message after it is a conflict.
    let (status, stopped) = keep
        .call(
            &keep.alice,
            "POST",
            &format!("/v1/sessions/{id}/stop"),
            None,
        )
        .await;
    assert_eq!(
        (status, stopped["end_reason"].as_str()),
        (200, Some("stopped")),
        "{stopped}"
    );
    let (status, _) = say(&keep, &keep.alice, &id, json!({"reply": "hi"})).await;
    assert_eq!(status, 409);
    // The operator's token has no event stream of its own.
    let (status, _) = keep.call(&keep.operator, "GET", "/v1/events", None).await;
    assert_eq!(status, 403);
    keep.server.stop().await;
}

#[tokio::test]
async fn the_door_agent_through_the_api_is_refused_everywhere_and_the_host_stays_up() {
    let keep = Keep::start_with_cells(Vec::new()).await;
    keep.deploy(
        Guest::Doors.bytes(),
        manifest("doors", json!({"egress": {"mode": "allow", "rules": [
            {"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}
        ]}})),
    )
    .await;
    let session = start(&keep, &keep.alice, "doors").await;
    let id = session["id"].as_str().expect("id").to_owned();
    let base = format!("http://{}", keep.server.addr);
    let doors = json!({"deploy_url": format!("{base}/v1/agents"), "manifest_url": format!("{base}/v1/agents/doors")});
    let (status, replies) = say(&keep, &keep.alice, &id, doors).await;
    assert_eq!(status, 200, "{replies}");
    let lines = replies["replies"].as_array().expect("lines");
    assert_eq!(lines.len(), 11, "{replies}");
    for line in lines {
        let line = line.as_str().unwrap_or_default();
        assert!(line.contains(": refused: "), "a door opened: {line}");
    }
    for (text, code) in [
        ("spin", "cpu_limit"),
        ("bomb", "memory_limit"),
        ("sleep", "timeout"),
    ] {
        let session = start(&keep, &keep.alice, "doors").await;
        let id = session["id"].as_str().expect("id");
        let (status, body) = say(&keep, &keep.alice, id, json!(text)).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some(code)),
            "{body}"
        );
    }
    let (status, _) = keep.call(&keep.alice, "GET", "/v1/sessions", None).await;
    assert_eq!(status, 200);
    keep.server.stop().await;
}

#[tokio::test]
async fn a_conversation_is_read_and_deleted_over_http_by_its_person_alone() {
    let keep = Keep::start_with_cells(Vec::new()).await;
    keep.deploy(Guest::Scripted.bytes(), manifest("talker", json!({})))
        .await;
    let id = start(&keep, &keep.alice, "talker").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, _) = say(&keep, &keep.alice, &id, json!("good morning")).await;
    assert_eq!(status, 200);

    let path = format!("/v1/sessions/{id}/messages");
    let (status, conversation) = keep.call(&keep.alice, "GET", &path, None).await;
    assert_eq!(status, 200, "{conversation}");
    assert_eq!(conversation["session"]["title"], "talker: good morning");
    let entries: Vec<(&str, &str)> = conversation["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| {
            (
                entry["role"].as_str().unwrap_or_default(),
                entry["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("person", "good morning"),
            ("agent", "scripted: good morning")
        ]
    );
    // Another person reads it as missing, exactly as an id that never existed; the operator
    // has no route to it; neither can delete it.
    let (status, bobs) = keep.call(&keep.bob, "GET", &path, None).await;
    let (_, never) = keep
        .call(&keep.bob, "GET", "/v1/sessions/ks-never/messages", None)
        .await;
    assert_eq!((status, &bobs), (404, &never));
    assert_eq!(keep.call(&keep.operator, "GET", &path, None).await.0, 403);
    let session = format!("/v1/sessions/{id}");
    assert_eq!(keep.call(&keep.bob, "DELETE", &session, None).await.0, 404);
    assert_eq!(
        keep.call(&keep.operator, "DELETE", &session, None).await.0,
        403
    );

    assert_eq!(
        keep.call(&keep.alice, "DELETE", &session, None).await.0,
        204
    );
    for (method, route) in [("GET", &path), ("GET", &session), ("DELETE", &session)] {
        assert_eq!(
            keep.call(&keep.alice, method, route, None).await.0,
            404,
            "{method} {route}"
        );
    }
    let (_, listed) = keep.call(&keep.alice, "GET", "/v1/sessions", None).await;
    assert_eq!(listed["sessions"], json!([]));
}
