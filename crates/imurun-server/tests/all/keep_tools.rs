//! Agent-proposed tools against the real router: an operator and two people over HTTP, a real
//! cell proposing a tool, the review, device-signed decisions, calls, revocation.

use imurun_keep::decision::DecisionKind;
use imurun_keep::documents::{CEILING_TYPE, Signed};
use imurun_keep::keys::KeyPair;
use imurun_testkit::{Guest, Upstream, ok};
use serde_json::{Value, json};

use crate::support::{Keep, decide, enrol, say, send_bundle};

fn answer(head: &str) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    ok(&format!("you asked for {path}"))
}

fn local(port: u16, methods: &[&str]) -> Value {
    json!({"scheme": "http", "host": "127.0.0.1", "port": port, "methods": methods, "path_prefix": "/api"})
}

#[tokio::test]
async fn two_people_and_an_operator_propose_review_decide_call_and_revoke_over_http() {
    let upstream = Upstream::start(answer).await;
    let keep = Keep::start_with_cells(vec![upstream.port]).await;
    let (session, alice_device) = alice_with_maker(&keep, &upstream).await;
    let bob_device = enrol(&keep, &keep.bob, "bob").await;
    let ceiling = json!({
        "type": CEILING_TYPE, "user": "alice", "version": 1,
        "expires_at": imurun_core::now_unix_s() + 3_600,
        "egress": [local(upstream.port, &["GET", "POST"])], "credentials": [],
        "memory": "none", "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}
    });
    let signed = Signed::sign(&ceiling, &keep.policy).expect("sign");
    let (status, body) = keep
        .call(
            &keep.operator,
            "PUT",
            "/v1/ceilings/alice",
            Some(serde_json::to_value(&signed).expect("json")),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // Alice's session's cell proposes a fetch tool wanting GET and DELETE on the upstream.
    send_bundle(&keep, &keep.alice, &session, Guest::FetchTool).await;
    let proposal = json!({"emit": {"type": "tool.propose", "name": "fetcher", "bundle": "$buffer",
        "description": "Fetches things.",
        "manifest": {"name": "fetcher", "version": 1,
                     "egress": {"mode": "allow", "rules": [local(upstream.port, &["GET", "DELETE"])]},
                     "resources": {"memory_mb": 16, "cpu_ms": 500, "timeout_ms": 5000},
                     "approval_timeout_s": 30}}});
    assert_eq!(say(&keep, &keep.alice, &session, proposal).await, "emitted");

    // The review is alice's alone; bob's answer is a random id's, byte for byte.
    let (status, listed) = keep
        .call(&keep.alice, "GET", "/v1/proposals?kind=tool", None)
        .await;
    assert_eq!(status, 200);
    let review = listed["tools"][0].clone();
    let id = review["id"].as_str().expect("id").to_owned();
    assert_eq!(review["qualified_name"], "u/alice/fetcher");
    assert_eq!(review["no_new_authority"], false);
    assert_eq!(review["authority_diff"][0]["class"], "egress");
    assert_eq!(
        review["clamped_manifest"]["egress"]["rules"],
        json!([local(upstream.port, &["GET"])])
    );
    assert_eq!(review["dropped"][0]["field"], "egress.rules[0].methods");
    let (status, one) = keep
        .call(&keep.alice, "GET", &format!("/v1/proposals/{id}"), None)
        .await;
    assert_eq!((status, &one), (200, &review));
    let (_, bobs) = keep.call(&keep.bob, "GET", "/v1/proposals", None).await;
    assert_eq!(bobs["tools"], json!([]));
    let theirs = keep
        .server
        .request_as(Some(&keep.bob), "GET", &format!("/v1/proposals/{id}"), None)
        .await;
    let random = keep
        .server
        .request_as(
            Some(&keep.bob),
            "GET",
            "/v1/proposals/kt-0123456789abcdef",
            None,
        )
        .await;
    assert_eq!((theirs.0, theirs.2.clone()), (random.0, random.2.clone()));
    assert_eq!(theirs.0, 404);
    // The operator's token is not a person's.
    let (status, _) = keep.call(&keep.operator, "GET", "/v1/tools", None).await;
    assert_eq!(status, 403);

    // Bob cannot approve it; an unsigned or flipped approval is refused.
    let bobs = decide(&bob_device, "bob", &review, DecisionKind::ApproveProposal);
    let (status, _) = keep
        .call(
            &keep.bob,
            "POST",
            &format!("/v1/proposals/{id}/decision"),
            Some(bobs),
        )
        .await;
    assert_eq!(status, 404);
    let mut flipped = decide(
        &alice_device,
        "alice",
        &review,
        DecisionKind::ApproveProposal,
    );
    flipped["decision"]["signed"]["kind"] = json!("deny_proposal");
    let (status, body) = keep
        .call(
            &keep.alice,
            "POST",
            &format!("/v1/proposals/{id}/decision"),
            Some(flipped),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("bad_signature"))
    );
    let mut unsigned = decide(
        &alice_device,
        "alice",
        &review,
        DecisionKind::ApproveProposal,
    );
    unsigned["decision"]["signature"]["sig"] = json!("00".repeat(64));
    let (status, _) = keep
        .call(
            &keep.alice,
            "POST",
            &format!("/v1/proposals/{id}/decision"),
            Some(unsigned),
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(upstream.hits(), 0);

    // Alice approves on her device: deployed with the clamped manifest, callable.
    let good = decide(
        &alice_device,
        "alice",
        &review,
        DecisionKind::ApproveProposal,
    );
    let (status, decided) = keep
        .call(
            &keep.alice,
            "POST",
            &format!("/v1/proposals/{id}/decision"),
            Some(good.clone()),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["state"], "approved");
    let (status, replayed) = keep
        .call(
            &keep.alice,
            "POST",
            &format!("/v1/proposals/{id}/decision"),
            Some(good),
        )
        .await;
    assert_eq!(status, 409, "{replayed}");
    let (_, tools) = keep.call(&keep.alice, "GET", "/v1/tools", None).await;
    assert_eq!(tools["tools"][0]["manifest"], review["clamped_manifest"]);
    assert_eq!(tools["tools"][0]["egress_mode"], "allow");
    let (_, none) = keep.call(&keep.bob, "GET", "/v1/tools", None).await;
    assert_eq!(none["tools"], json!([]));
    let url = format!("http://127.0.0.1:{}/api/x", upstream.port);
    let call = json!({"tool": {"name": "fetcher", "args": {"url": url}}});
    let said = say(&keep, &keep.alice, &session, call.clone()).await;
    assert!(
        said.as_str().expect("text").contains("\"status\":200"),
        "{said}"
    );
    let delete = json!({"tool": {"name": "fetcher", "args": {"url": url, "method": "DELETE"}}});
    let said = say(&keep, &keep.alice, &session, delete).await;
    assert!(said.as_str().expect("text").contains("refused"), "{said}");
    assert_eq!(upstream.hits(), 1);
    // Bob can neither call nor revoke it.
    let (_, bob_session) = keep
        .call(
            &keep.bob,
            "POST",
            "/v1/sessions",
            Some(json!({"agent": "maker"})),
        )
        .await;
    let bob_session = bob_session["id"].as_str().expect("id").to_owned();
    let bob_call = json!({"tool": {"name": "u/alice/fetcher", "args": {"url": url}}});
    let said = say(&keep, &keep.bob, &bob_session, bob_call).await;
    assert!(
        said.as_str()
            .expect("text")
            .starts_with("refused: no tool named"),
        "{said}"
    );
    let (status, _) = keep
        .call(&keep.bob, "POST", "/v1/tools/fetcher/revoke", None)
        .await;
    assert_eq!(status, 404);
    assert_eq!(upstream.hits(), 1);

    // Revoked: at once, journaled, the next call refused.
    let (status, revoked) = keep
        .call(&keep.alice, "POST", "/v1/tools/fetcher/revoke", None)
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["revoked_at_ms"].is_i64());
    let said = say(&keep, &keep.alice, &session, call).await;
    assert!(
        said.as_str()
            .expect("text")
            .starts_with("refused: no tool named"),
        "{said}"
    );
    assert_eq!(upstream.hits(), 1);
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    let actions: Vec<String> = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| {
            entry["detail"]["action"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for action in ["propose", "approve", "deploy", "revoke"] {
        assert!(
            actions.contains(&action.to_owned()),
            "{action} in {actions:?}"
        );
    }
    keep.server.stop().await;
}

/// The agent `maker` deployed, a device of alice's, and a session of hers with `maker`.
async fn alice_with_maker(keep: &Keep, upstream: &Upstream) -> (String, KeyPair) {
    keep.deploy(
        Guest::ScriptedFull.bytes(),
        json!({"name": "maker", "version": 1, "description": "Makes tools.",
               "egress": {"mode": "allow", "rules": [local(upstream.port, &["GET"])]},
               "memory": "read", "model_socket": true,
               "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
               "approval_timeout_s": 30}),
    )
    .await;
    let device = enrol(keep, &keep.alice, "alice").await;
    let (_, session) = keep
        .call(
            &keep.alice,
            "POST",
            "/v1/sessions",
            Some(json!({"agent": "maker"})),
        )
        .await;
    (session["id"].as_str().expect("id").to_owned(), device)
}

/// What alice's session answers when its cell proposes the pure tool as `name`.
async fn propose_pure(keep: &Keep, session: &str, name: &str) -> Value {
    send_bundle(keep, &keep.alice, session, Guest::PureTool).await;
    let proposal = json!({"emit": {"type": "tool.propose", "name": name, "bundle": "$buffer",
        "description": "Echoes.", "manifest": {"name": name, "version": 1,
            "resources": {"memory_mb": 16, "cpu_ms": 500, "timeout_ms": 5000},
            "approval_timeout_s": 30}}});
    say(keep, &keep.alice, session, proposal).await
}

/// Alice approves her pending proposal of `name` on `device`: the status and the answer.
async fn approve_pending(keep: &Keep, device: &KeyPair, name: &str) -> (u16, Value) {
    let (_, listed) = keep
        .call(&keep.alice, "GET", "/v1/proposals?kind=tool", None)
        .await;
    let review = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|review| review["name"] == name && review["state"] == "pending")
        .cloned()
        .expect("pending");
    let id = review["id"].as_str().expect("id").to_owned();
    let good = decide(device, "alice", &review, DecisionKind::ApproveProposal);
    keep.call(
        &keep.alice,
        "POST",
        &format!("/v1/proposals/{id}/decision"),
        Some(good),
    )
    .await
}

/// Alice's agent `maker` proposes the pure tool `calc` from a session and she approves it on
/// her device: the session's id.
async fn alice_deploys_calc(keep: &Keep, upstream: &Upstream) -> String {
    let (session, device) = alice_with_maker(keep, upstream).await;
    assert_eq!(propose_pure(keep, &session, "calc").await, "emitted");
    let (status, decided) = approve_pending(keep, &device, "calc").await;
    assert_eq!(status, 200, "{decided}");
    session
}

#[tokio::test]
async fn the_operator_turns_tool_proposals_off_for_the_hosts_and_pending_ones_stay() {
    let upstream = Upstream::start(answer).await;
    let keep = Keep::start_with_cells(vec![upstream.port]).await;
    let (session, device) = alice_with_maker(&keep, &upstream).await;
    let (status, on) = keep
        .call(&keep.operator, "GET", "/v1/settings/tool-propose", None)
        .await;
    assert_eq!(
        (status, &on),
        (200, &json!({"enabled": true, "version": 0}))
    );
    assert_eq!(propose_pure(&keep, &session, "before").await, "emitted");
    // A person cannot set it, nor read it.
    let off = json!({"enabled": false});
    let (status, _) = keep
        .call(
            &keep.alice,
            "PUT",
            "/v1/settings/tool-propose",
            Some(off.clone()),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = keep
        .call(&keep.alice, "GET", "/v1/settings/tool-propose", None)
        .await;
    assert_eq!(status, 403);
    let (status, set) = keep
        .call(
            &keep.operator,
            "PUT",
            "/v1/settings/tool-propose",
            Some(off),
        )
        .await;
    assert_eq!(
        (status, &set),
        (200, &json!({"enabled": false, "version": 1}))
    );
    // Off: the cell's proposal is refused, journaled for alice with its rule.
    let said = propose_pure(&keep, &session, "after").await;
    let said = said.as_str().expect("text");
    assert!(said.contains("tool.propose off"), "{said}");
    let (_, listed) = keep
        .call(&keep.alice, "GET", "/v1/proposals?kind=tool", None)
        .await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|review| review["name"].as_str())
        .collect();
    assert_eq!(names, ["before"]);
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    assert!(
        journal["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|entry| {
                // Journaled by its rule; the cell's words (its reason) by their hash.
                entry["kind"] == "refusal"
                    && entry["detail"]["action"] == "review"
                    && entry["detail"]["rule"] == "forbidden"
                    && entry["detail"]["reason"]
                        .as_str()
                        .is_some_and(|reason| reason.contains("SHA-256"))
            }),
        "{journal}"
    );
    // The one pending before stays pending, and its person may still approve it.
    let (status, decided) = approve_pending(&keep, &device, "before").await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["state"], "approved");
    // On again: proposals are read as before; the operator's journal has both switches.
    let (status, _) = keep
        .call(
            &keep.operator,
            "PUT",
            "/v1/settings/tool-propose",
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(propose_pure(&keep, &session, "again").await, "emitted");
    let (_, journal) = keep.call(&keep.operator, "GET", "/v1/journal", None).await;
    let switches = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["detail"]["action"] == "tool_propose")
        .count();
    assert_eq!(switches, 2);
    keep.server.stop().await;
}

#[tokio::test]
async fn the_operator_revokes_a_persons_tool_and_the_person_sees_it() {
    let upstream = Upstream::start(answer).await;
    let keep = Keep::start_with_cells(vec![upstream.port]).await;
    let session = alice_deploys_calc(&keep, &upstream).await;
    let call = json!({"tool": {"name": "calc", "args": {"n": 1}}});
    assert_eq!(
        say(&keep, &keep.alice, &session, call.clone()).await,
        r#"{"echo":{"n":1}}"#
    );
    // The operator sees her tool, without what tainted it (her conversation's).
    let (status, person) = keep
        .call(&keep.operator, "GET", "/v1/people/alice", None)
        .await;
    assert_eq!(status, 200, "{person}");
    assert_eq!(
        person["tools"][0]["qualified_name"], "u/alice/calc",
        "{person}"
    );
    assert!(person["tools"][0]["taint_source"].is_null(), "{person}");
    assert!(person["tools"][0]["clear_taint"].is_null(), "{person}");
    // The operator names a person's tool in full; a bare name is no one's.
    let (status, body) = keep
        .call(&keep.operator, "POST", "/v1/tools/calc/revoke", None)
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/tools/u%2Fbob%2Fcalc/revoke",
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, revoked) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/tools/u%2Falice%2Fcalc/revoke",
            None,
        )
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["qualified_name"], "u/alice/calc");
    assert!(revoked["revoked_at_ms"].is_i64(), "{revoked}");
    // Alice sees it: the tool revoked, the entry in her journal with the operator as actor,
    // and her next call refused.
    let (_, tools) = keep.call(&keep.alice, "GET", "/v1/tools", None).await;
    assert!(tools["tools"][0]["revoked_at_ms"].is_i64(), "{tools}");
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    let entry = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|entry| entry["detail"]["action"] == "revoke")
        .cloned()
        .expect("the revoke is in alice's journal");
    assert_eq!(entry["actor"], "operator", "{entry}");
    assert_eq!(entry["subject"], "tool:u/alice/calc", "{entry}");
    let said = say(&keep, &keep.alice, &session, call).await;
    assert!(
        said.as_str()
            .expect("text")
            .starts_with("refused: no tool named"),
        "{said}"
    );
    // A person still names only their own.
    let (status, _) = keep
        .call(&keep.bob, "POST", "/v1/tools/u%2Falice%2Fcalc/revoke", None)
        .await;
    assert_eq!(status, 404);
    keep.server.stop().await;
}
