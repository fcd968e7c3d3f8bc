//! People over HTTP: the operator's alone; adding answers a working token and a code once;
//! revoking a person ends her token at once and leaves everyone else's.

use serde_json::json;

use crate::support::Keep;

#[tokio::test]
async fn people_are_the_operators_and_a_revoked_person_is_shut_out_at_once() {
    let keep = Keep::start().await;
    for (method, path, body) in [
        ("GET", "/v1/people", None),
        ("POST", "/v1/people", Some(json!({"user": "carol"}))),
        ("DELETE", "/v1/people/bob", None),
    ] {
        let (status, answer) = keep.call(&keep.alice, method, path, body).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
    }
    // A code lifetime out of bounds is refused before anything is made.
    let (status, _) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "dave", "enrol_code_ttl_s": 0})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, added) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "carol", "enrol_code_ttl_s": 600})),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(added["enrol_code_expires_in_s"], 600);
    let carol = added["token"].as_str().expect("token").to_owned();
    let (status, who) = keep.call(&carol, "GET", "/v1/whoami", None).await;
    assert_eq!((status, &who["user"]), (200, &json!("carol")));
    // A name outside the rules is refused, and nothing is made.
    let (status, _) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "Bad Name"})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, unknown) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "x", "admin": true})),
        )
        .await;
    assert_eq!(status, 400, "{unknown}");

    let (_, listed) = keep.call(&keep.operator, "GET", "/v1/people", None).await;
    let names: Vec<&str> = listed["people"]
        .as_array()
        .expect("people")
        .iter()
        .filter_map(|person| person["user"].as_str())
        .collect();
    assert_eq!(names, ["alice", "bob", "carol"]);

    let (status, revoked) = keep
        .call(&keep.operator, "DELETE", "/v1/people/alice", None)
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["user"], "alice");
    assert_eq!(revoked["tokens_revoked"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        keep.call(&keep.alice, "GET", "/v1/whoami", None).await.0,
        401
    );
    assert_eq!(keep.call(&keep.bob, "GET", "/v1/whoami", None).await.0, 200);
    let (status, _) = keep
        .call(&keep.operator, "DELETE", "/v1/people/nobody", None)
        .await;
    assert_eq!(status, 404);
}

/// What the operator's console reads: one person with her tokens' ids (never a token), every
/// stored agent with how it is signed, the journal filtered by person, kind and page, and the
/// host's settings; none of it for a person.
#[tokio::test]
async fn the_console_reads_a_person_the_agents_the_journal_by_filter_and_the_host() {
    let keep = Keep::start().await;
    for path in ["/v1/people/alice", "/v1/settings"] {
        let (status, answer) = keep.call(&keep.alice, "GET", path, None).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{path}"
        );
    }

    let (status, alice) = keep
        .call(&keep.operator, "GET", "/v1/people/alice", None)
        .await;
    assert_eq!(status, 200, "{alice}");
    assert_eq!(alice["person"]["user"], "alice");
    assert_eq!(alice["person"]["tokens"], 1);
    let tokens = alice["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 1);
    assert!(tokens[0]["id"].is_string() && tokens[0]["revoked_at_ms"].is_null());
    assert!(
        !alice.to_string().contains(&keep.alice),
        "the token itself is never shown"
    );
    assert_eq!(alice["tools"], serde_json::json!([]));
    assert_eq!(alice["devices"], serde_json::json!([]));
    let (status, _) = keep
        .call(&keep.operator, "GET", "/v1/people/nobody", None)
        .await;
    assert_eq!(status, 404);

    // The operator's list of agents holds how each is signed; a person's does not.
    let body = keep.deploy_body("helper", 1);
    let (status, _) = keep
        .call(&keep.operator, "POST", "/v1/agents", Some(body))
        .await;
    assert_eq!(status, 201);
    let (_, listed) = keep.call(&keep.operator, "GET", "/v1/agents", None).await;
    assert_eq!(listed["deployed"][0]["name"], "helper", "{listed}");
    assert!(
        listed["deployed"][0]["signer_key_id"].is_string(),
        "{listed}"
    );
    assert!(listed["deployed"][0]["refused"].is_null(), "{listed}");
    let (_, listed) = keep.call(&keep.alice, "GET", "/v1/agents", None).await;
    assert_eq!(listed["agents"][0]["name"], "helper", "{listed}");
    assert!(listed.get("deployed").is_none(), "{listed}");

    // The journal, filtered.
    let entries =
        |answer: &serde_json::Value| answer["entries"].as_array().expect("entries").clone();
    let (_, all) = keep.call(&keep.operator, "GET", "/v1/journal", None).await;
    let all = entries(&all);
    assert!(all.iter().any(|entry| entry["kind"] == "deploy"));
    let (_, tokens) = keep
        .call(&keep.operator, "GET", "/v1/journal?kind=token", None)
        .await;
    let tokens = entries(&tokens);
    assert!(!tokens.is_empty());
    assert!(tokens.iter().all(|entry| entry["kind"] == "token"));
    let (_, about_bob) = keep
        .call(
            &keep.operator,
            "GET",
            "/v1/journal?user=bob&kind=token",
            None,
        )
        .await;
    let about_bob = entries(&about_bob);
    assert!(!about_bob.is_empty());
    assert!(
        about_bob
            .iter()
            .all(|entry| entry["user"] == "bob" && entry["kind"] == "token")
    );
    let newest = all[0]["seq"].as_i64().expect("seq");
    let (_, page) = keep
        .call(
            &keep.operator,
            "GET",
            &format!("/v1/journal?before={newest}"),
            None,
        )
        .await;
    let page = entries(&page);
    assert_eq!(page.len(), all.len() - 1);
    assert!(
        page.iter()
            .all(|entry| entry["seq"].as_i64() < Some(newest))
    );
    let (status, refused) = keep
        .call(&keep.operator, "GET", "/v1/journal?kind=tools", None)
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (400, Some("invalid"))
    );
    let (status, _) = keep
        .call(&keep.operator, "GET", "/v1/journal?before=soon", None)
        .await;
    assert_eq!(status, 400);
    // A person naming another gets nothing; her own filter keeps only hers.
    let (_, bobs) = keep
        .call(&keep.alice, "GET", "/v1/journal?user=bob", None)
        .await;
    assert_eq!(entries(&bobs).len(), 0);
    let (_, hers) = keep
        .call(&keep.alice, "GET", "/v1/journal?kind=token", None)
        .await;
    let hers = entries(&hers);
    assert!(!hers.is_empty());
    assert!(hers.iter().all(|entry| entry["user"] == "alice"));

    // A person's body that does not read is refused with words that quote it: the journal
    // the operator reads keeps their hash.
    let (status, _) = keep
        .call(
            &keep.alice,
            "POST",
            "/v1/sessions",
            Some(serde_json::json!({"agent": "helper", "quokkasecret": "private words"})),
        )
        .await;
    assert_eq!(status, 400);
    let (_, journal) = keep
        .call(
            &keep.operator,
            "GET",
            "/v1/journal?kind=refusal&user=alice",
            None,
        )
        .await;
    let refusals = entries(&journal);
    assert!(!refusals.is_empty(), "{journal}");
    let text = serde_json::Value::Array(refusals).to_string();
    assert!(
        !text.contains("quokkasecret") && !text.contains("private words"),
        "{text}"
    );
    assert!(text.contains("SHA-256"), "{text}");

    let (status, host) = keep.call(&keep.operator, "GET", "/v1/settings", None).await;
    assert_eq!(status, 200, "{host}");
    assert_eq!(host["database"], "sqlite");
    assert_eq!(host["cells"], false);
    assert_eq!(host["egress_loopback_ports"], serde_json::json!([]));
    assert_eq!(host["tool_propose"]["enabled"], true);
    assert!(host["host_id"].is_string());
    keep.server.stop().await;
}
