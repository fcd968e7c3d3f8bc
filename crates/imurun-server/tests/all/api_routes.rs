//! The routes that need no turn: health, model, errors, sessions, tools, permissions, agent
//! settings.

use serde_json::{Value, json};

use crate::api_support::{Dirs, TestServer, events_until, write_file};

#[tokio::test]
async fn health_and_model_answer_without_a_model() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let (status, health) = server.get("/api/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["status"], "ok");
    assert!(health["version"].is_string());
    let (status, model) = server.get("/api/model").await;
    assert_eq!(status, 200);
    assert_eq!(
        model,
        json!({"status": "none", "name": null, "context_limit": null})
    );
    server
        .state
        .model()
        .set_failed("the file is not a GGUF model");
    let (_, model) = server.get("/api/model").await;
    assert_eq!(model["status"], "failed");
    assert_eq!(model["message"], "the file is not a GGUF model");
    server.stop().await;
}

#[tokio::test]
async fn a_prompt_without_a_model_is_503() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let session = server.new_session().await;
    let (status, body) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": "hi"}),
        )
        .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "model_not_loaded");
    assert_eq!(body["status"], "none");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no model")
    );
    server.state.model().set_loading();
    let (status, body) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": "hi"}),
        )
        .await;
    assert_eq!((status, body["status"].clone()), (503, json!("loading")));
    server.stop().await;
}

/// Each case: method, path, raw body, expected status and error code.
#[tokio::test]
async fn errors_have_one_shape() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let session = server.new_session().await;
    let prompts = format!("/api/sessions/{session}/prompts");
    let too_long = json!({"prompt": "x".repeat(32_001)}).to_string();
    let too_big = json!({"prompt": "x".repeat(300_000)}).to_string();
    let cases: Vec<(&str, &str, Option<String>, u16, &str)> = vec![
        ("GET", "/api/nothing-here", None, 404, "not_found"),
        ("PUT", "/api/health", None, 405, "method_not_allowed"),
        (
            "POST",
            &prompts,
            Some("{not json".into()),
            400,
            "bad_request",
        ),
        ("POST", &prompts, Some("{}".into()), 400, "bad_request"),
        (
            "POST",
            &prompts,
            Some(r#"{"prompt": "  "}"#.into()),
            400,
            "bad_request",
        ),
        ("POST", &prompts, Some(too_long), 413, "too_large"),
        ("POST", &prompts, Some(too_big), 413, "too_large"),
        (
            "GET",
            "/api/sessions/no-such-session",
            None,
            404,
            "not_found",
        ),
        ("GET", "/api/sessions/bad%20id", None, 400, "bad_request"),
        (
            "POST",
            "/api/tools/approvals/nope",
            Some(r#"{"approved": true}"#.into()),
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/agent",
            Some(r#"{"maxSteps": 21}"#.into()),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/api/agent",
            Some(r#"{"max_steps": 2}"#.into()),
            400,
            "bad_request",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let (seen_status, seen) = server.request(method, path, body).await;
        assert_eq!(seen_status, status, "{method} {path}: {seen}");
        assert_eq!(seen["error"]["code"], code, "{method} {path}: {seen}");
        assert!(
            seen["error"]["message"]
                .as_str()
                .is_some_and(|message| !message.is_empty()),
            "{method} {path}: {seen}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn sessions_are_created_listed_renamed_and_deleted_with_events() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let mut events = server.events(None).await;
    let (status, created) = server
        .request("POST", "/api/sessions", Some(String::new()))
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, titled) = server
        .post("/api/sessions", json!({"title": "Plans"}))
        .await;
    assert_eq!((status, titled["title"].clone()), (201, json!("Plans")));
    let (_, list) = server.get("/api/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    let (status, renamed) = server
        .patch(&format!("/api/sessions/{id}"), json!({"title": "Renamed"}))
        .await;
    assert_eq!((status, renamed["title"].clone()), (200, json!("Renamed")));
    let (status, detail) = server.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(detail["transcript"], json!([]));
    assert_eq!(detail["running_turn_id"], Value::Null);
    let (status, deleted) = server.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!((status, deleted["deleted"].clone()), (200, json!(true)));
    let (status, _) = server.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(status, 404);
    let seen = events_until(&mut events, "session.deleted").await;
    let types: Vec<&str> = seen
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert_eq!(
        types,
        [
            "session.created",
            "session.created",
            "session.updated",
            "session.deleted"
        ]
    );
    assert_eq!(seen[2]["session"]["title"], "Renamed");
    server.stop().await;
}

#[tokio::test]
async fn tools_are_listed_with_their_category_and_offer() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let (status, body) = server.get("/api/tools").await;
    assert_eq!(status, 200);
    let tools = body["tools"].as_array().unwrap();
    let file_read = tools
        .iter()
        .find(|tool| tool["name"] == "file_read")
        .unwrap();
    assert_eq!(file_read["category"], "read");
    assert_eq!(file_read["available"], true);
    assert_eq!(file_read["offered"], true);
    assert_eq!(file_read["parameters"]["required"], json!(["path"]));
    assert!(file_read.get("unavailable_reason").is_none(), "{file_read}");

    // A toggle that is off makes its tools unavailable, saying which toggle.
    let (status, _) = server
        .post("/api/permissions", json!({"toggles": {"readFiles": false}}))
        .await;
    assert_eq!(status, 200);
    let (_, body) = server.get("/api/tools").await;
    let tools = body["tools"].as_array().unwrap();
    let find = |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap();
    assert_eq!(find("file_read")["available"], false);
    assert_eq!(
        find("file_read")["unavailable_reason"],
        "the `readFiles` toggle is off"
    );
    assert_eq!(find("file_write")["available"], true);
    server.stop().await;
}

#[tokio::test]
async fn a_manual_run_that_asks_runs_once_approved() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let run = json!({"name": "file_write", "args": {"path": "a.txt", "content": "hello"}});
    let (status, asked) = server.post("/api/tools/run", run.clone()).await;
    assert_eq!(status, 403, "{asked}");
    assert_eq!(asked["decision"], "ask");
    assert!(
        asked["reason"]
            .as_str()
            .is_some_and(|reason| !reason.is_empty())
    );
    assert!(!dirs.workspace.join("a.txt").exists());
    let mut approved = run;
    approved["approved"] = json!(true);
    let (status, ran) = server.post("/api/tools/run", approved).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["ok"], true);
    assert_eq!(
        std::fs::read_to_string(dirs.workspace.join("a.txt")).unwrap(),
        "hello"
    );
    // Reads are allowed in the default mode and run at once.
    write_file(&dirs, "b.txt", "bee");
    let (status, read) = server
        .post(
            "/api/tools/run",
            json!({"name": "file_read", "args": {"path": "b.txt"}}),
        )
        .await;
    assert_eq!((status, read["ok"].clone()), (200, json!(true)), "{read}");
    assert!(read["text"].as_str().unwrap().contains("bee"));
    // The policy's denials hold even when approved.
    let (status, denied) = server
        .post(
            "/api/tools/run",
            json!({"name": "file_read", "args": {"path": "../outside.txt"}, "approved": true}),
        )
        .await;
    assert_eq!(
        (status, denied["decision"].clone()),
        (403, json!("deny")),
        "{denied}"
    );
    let (status, unknown) = server
        .post(
            "/api/tools/run",
            json!({"name": "no_such_tool", "args": {}}),
        )
        .await;
    assert_eq!(
        (status, unknown["error"]["code"].clone()),
        (404, json!("not_found"))
    );
    server.stop().await;
}

#[tokio::test]
async fn permissions_round_trip_persist_and_publish() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let mut events = server.events(None).await;
    let (status, before) = server.get("/api/permissions").await;
    assert_eq!(status, 200);
    assert_eq!(before["mode"], "allow-reads");
    assert_eq!(before["approvalTimeoutInForce"], 60);
    let update =
        json!({"mode": "allow-edits", "toggles": {"runShell": false}, "approvalTimeout": 30});
    let (status, after) = server.post("/api/permissions", update).await;
    assert_eq!(status, 200, "{after}");
    let (_, read_back) = server.get("/api/permissions").await;
    assert_eq!(after, read_back);
    assert_eq!(read_back["mode"], "allow-edits");
    assert_eq!(
        read_back["toggles"],
        json!({"readFiles": true, "writeFiles": true, "runShell": false, "network": true})
    );
    assert_eq!(read_back["approvalTimeout"], 30);
    // In force at once: the next card waits 30 s.
    assert_eq!(read_back["approvalTimeoutInForce"], 30);
    let event = events_until(&mut events, "permissions")
        .await
        .pop()
        .unwrap();
    assert_eq!(event["mode"], "allow-edits");
    assert_eq!(event["toggles"]["runShell"], false);
    assert_eq!(
        server.store.get_setting("permissions.mode").await.unwrap(),
        Some(json!("allow-edits"))
    );
    // The executor decides with the new mode at once: writes no longer ask.
    let (status, _) = server
        .post(
            "/api/tools/run",
            json!({"name": "file_write", "args": {"path": "w.txt", "content": "x"}}),
        )
        .await;
    assert_eq!(status, 200);
    for refused in [
        json!({"mode": "yolo"}),
        json!({"approvalTimeout": 0}),
        json!({"workspaceRoot": "/tmp"}),
    ] {
        let (status, body) = server.post("/api/permissions", refused.clone()).await;
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (400, json!("bad_request")),
            "{refused}"
        );
    }
    let (_, unchanged) = server.get("/api/permissions").await;
    assert_eq!(unchanged["mode"], "allow-edits");
    // The approval timeout is in force at once, for the next card.
    assert_eq!(unchanged["approvalTimeout"], 30);
    assert_eq!(unchanged["approvalTimeoutInForce"], 30);
    assert_eq!(
        server.state.executor().approvals().approval_timeout(),
        std::time::Duration::from_secs(30)
    );
    server.stop().await;
    // The saved mode, toggles and approval timeout are applied at the next start.
    let server = TestServer::start(&dirs, None).await;
    let (_, restarted) = server.get("/api/permissions").await;
    assert_eq!(restarted["mode"], "allow-edits");
    assert_eq!(restarted["toggles"]["runShell"], false);
    assert_eq!(restarted["approvalTimeoutInForce"], 30, "{restarted}");
    assert_eq!(
        server.state.executor().approvals().approval_timeout(),
        std::time::Duration::from_secs(30)
    );
    server.stop().await;
}

#[tokio::test]
async fn agent_settings_round_trip_and_survive_a_restart() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let (status, before) = server.get("/api/agent").await;
    assert_eq!((status, before["maxSteps"].clone()), (200, json!(6)));
    let update = json!({"maxSteps": 3, "persona": "You are terse.", "summariseHistory": false});
    let (status, after) = server.post("/api/agent", update.clone()).await;
    assert_eq!((status, after.clone()), (200, update.clone()));
    server.stop().await;
    let server = TestServer::start(&dirs, None).await;
    let (_, restarted) = server.get("/api/agent").await;
    assert_eq!(restarted, update);
    server.stop().await;
}
