//! One shape per object: a proposal, a tool's review and a waiting egress use on a person's
//! event stream (`GET /v1/events`) are, as JSON, exactly what their routes answer.

use imurun_testkit::{Guest, SseClient, Upstream, ok};
use serde_json::{Value, json};

use crate::support::{Keep, say, send_bundle};

fn answer(head: &str) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    ok(&format!("you asked for {path}"))
}

/// The data of `client`'s next event of type `event_type`.
async fn next_of(client: &mut SseClient, event_type: &str) -> Value {
    client.until_type(event_type).await.pop().expect("an event")
}

/// What `GET path` answers alice.
async fn route(keep: &Keep, path: &str) -> Value {
    let (status, body) = keep.call(&keep.alice, "GET", path, None).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// A host whose agent `maker` asks alice before each egress use, alice's event stream, and a
/// session of hers.
async fn maker_session(upstream: &Upstream) -> (Keep, SseClient, String) {
    let keep = Keep::start_with_cells(vec![upstream.port]).await;
    let rule = json!({"scheme": "http", "host": "127.0.0.1", "port": upstream.port,
                      "methods": ["GET"], "path_prefix": "/api"});
    keep.deploy(
        Guest::ScriptedFull.bytes(),
        json!({"name": "maker", "version": 1, "description": "Makes tools.",
               "egress": {"mode": "ask", "rules": [rule]},
               "memory": "read", "model_socket": true,
               "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
               "approval_timeout_s": 30}),
    )
    .await;
    let events = SseClient::connect_with(
        keep.server.addr,
        "/v1/events",
        &format!("Authorization: Bearer {}\r\n", keep.alice),
    )
    .await;
    let (status, session) = keep
        .call(
            &keep.alice,
            "POST",
            "/v1/sessions",
            Some(json!({"agent": "maker"})),
        )
        .await;
    assert_eq!(status, 201, "{session}");
    let session = session["id"].as_str().expect("id").to_owned();
    (keep, events, session)
}

#[tokio::test]
async fn a_proposal_and_a_tools_review_on_the_event_stream_are_what_their_routes_answer() {
    let upstream = Upstream::start(answer).await;
    let (keep, mut events, session) = maker_session(&upstream).await;

    // A plan: the event's proposal is the route's, and the list's.
    let plan = json!({"emit": {"type": "plan", "title": "Tidy up", "steps": ["look", "tell"]}});
    assert_eq!(say(&keep, &keep.alice, &session, plan).await, "emitted");
    let created = next_of(&mut events, "proposal.created").await;
    let proposal = &created["proposal"];
    let id = proposal["id"].as_str().expect("an id");
    assert_eq!(
        &route(&keep, &format!("/v1/proposals/{id}")).await,
        proposal
    );
    assert_eq!(
        &route(&keep, "/v1/proposals").await["proposals"][0],
        proposal
    );

    // A tool: the event's review is the route's, and the list's.
    send_bundle(&keep, &keep.alice, &session, Guest::PureTool).await;
    let tool = json!({"emit": {"type": "tool.propose", "name": "echo", "bundle": "$buffer",
        "description": "Echoes.", "manifest": {"name": "echo", "version": 1,
            "resources": {"memory_mb": 16, "cpu_ms": 500, "timeout_ms": 5000},
            "approval_timeout_s": 30}}});
    assert_eq!(say(&keep, &keep.alice, &session, tool).await, "emitted");
    let created = next_of(&mut events, "proposal.created").await;
    let review = &created["proposal"];
    let id = review["id"].as_str().expect("an id");
    assert!(id.starts_with("kt-"), "{review}");
    assert_eq!(&route(&keep, &format!("/v1/proposals/{id}")).await, review);
    assert_eq!(&route(&keep, "/v1/proposals").await["tools"][0], review);
    keep.server.stop().await;
}

#[tokio::test]
async fn a_waiting_egress_use_on_the_event_stream_is_what_its_route_lists() {
    let upstream = Upstream::start(answer).await;
    let (keep, mut events, session) = maker_session(&upstream).await;
    let url = format!("http://127.0.0.1:{}/api/news", upstream.port);
    let fetch = say(
        &keep,
        &keep.alice,
        &session,
        json!({"fetch": {"method": "GET", "url": url}}),
    );
    let person = async {
        let needed = next_of(&mut events, "egress.approval_needed").await;
        let approval = &needed["approval"];
        let listed = route(&keep, "/v1/approvals").await;
        assert_eq!(&listed["approvals"], &json!([approval]));
        let id = approval["id"].as_str().expect("an id");
        let (status, answered) = keep
            .call(
                &keep.alice,
                "POST",
                &format!("/v1/approvals/{id}"),
                Some(json!({"approve": true})),
            )
            .await;
        assert_eq!(status, 200, "{answered}");
    };
    let (said, ()) = tokio::join!(fetch, person);
    assert!(
        said.as_str().unwrap_or_default().contains("/api/news"),
        "{said}"
    );
    keep.server.stop().await;
}
