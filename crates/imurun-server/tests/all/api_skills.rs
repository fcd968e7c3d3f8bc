//! Skills through the API: the four routes, and a prompt whose `/<id>` token injects a skill
//! while the transcript keeps what the person typed.

use std::sync::Arc;

use imurun_core::Model;
use serde_json::json;

use crate::api_support::{Dirs, Reply, TestModel, TestServer, event_types, events_until};

#[tokio::test]
async fn skills_are_created_listed_read_and_deleted() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let (status, created) = server
        .post(
            "/api/skills",
            json!({"name": "Haiku Writer", "description": "Poems", "body": "Answer in a haiku."}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created,
        json!({"id": "haiku-writer", "name": "Haiku Writer", "description": "Poems",
               "body": "Answer in a haiku."})
    );
    assert!(dirs.skills.join("haiku-writer/SKILL.md").is_file());
    let (status, again) = server
        .post("/api/skills", json!({"name": "haiku writer", "body": "x"}))
        .await;
    assert_eq!((status, &again["error"]["code"]), (409, &json!("conflict")));
    let (status, listed) = server.get("/api/skills").await;
    assert_eq!(status, 200);
    assert_eq!(
        listed,
        json!({"skills": [{"id": "haiku-writer", "name": "Haiku Writer",
                           "description": "Poems", "chars": 18}]})
    );
    let (status, read) = server.get("/api/skills/haiku-writer").await;
    assert_eq!((status, read), (200, created));
    let (status, deleted) = server.delete("/api/skills/haiku-writer").await;
    assert_eq!((status, deleted), (200, json!({"deleted": true})));
    for (method, path, expected) in [
        ("GET", "/api/skills/haiku-writer", 404),
        ("DELETE", "/api/skills/haiku-writer", 404),
        ("GET", "/api/skills/..", 400),
        ("GET", "/api/skills/.hidden", 400),
    ] {
        let (status, body) = server.request(method, path, None).await;
        assert_eq!(status, expected, "{method} {path}: {body}");
    }
    server.stop().await;
}

#[tokio::test]
async fn bad_skills_are_refused() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let cases = [
        (json!({"name": "", "body": "x"}), 400),
        (json!({"name": "!!!", "body": "x"}), 400),
        (json!({"name": "ok", "body": "  "}), 400),
        (json!({"name": "ok"}), 400),
        (json!({"name": "ok", "body": "x", "extra": 1}), 400),
        (json!({"name": "big", "body": "x".repeat(65 << 10)}), 413),
    ];
    for (body, expected) in cases {
        let (status, answer) = server.post("/api/skills", body.clone()).await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (_, listed) = server.get("/api/skills").await;
    assert_eq!(listed, json!({"skills": []}));
    server.stop().await;
}

#[tokio::test]
async fn a_skill_token_injects_the_skill_and_the_transcript_keeps_the_typed_prompt() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::text("Done.")]);
    let server = TestServer::start(&dirs, Some(model.clone() as Arc<dyn Model>)).await;
    let (status, created) = server
        .post(
            "/api/skills",
            json!({"name": "haiku", "body": "Answer in a haiku."}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let typed = "/haiku write about /usr/bin";
    let (status, accepted) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": typed}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let turn_id = accepted["turn_id"].as_str().unwrap().to_owned();
    let seen = events_until(&mut events, "turn.end").await;
    assert_eq!(
        event_types(&seen),
        ["turn.start", "skill.used", "step", "turn.end"]
    );
    assert_eq!(seen[0]["prompt"], typed);
    assert_eq!(seen[1]["skills"], json!(["haiku"]));
    assert_eq!(seen[1]["turn_id"], turn_id.as_str());
    assert_eq!(seen[3]["skills"], json!(["haiku"]));

    let requests = model.requests();
    let messages = &requests[0];
    assert!(
        messages[0]
            .content
            .ends_with("## Skill: haiku\nAnswer in a haiku."),
        "{}",
        messages[0].content
    );
    assert_eq!(
        messages.last().unwrap().content,
        "write about /usr/bin",
        "the model sees the prompt without the token"
    );

    let view = server.finished_turn(&session, &turn_id).await;
    assert_eq!(view["skills"], json!(["haiku"]));
    assert_eq!(view["prompt"], typed);
    let (_, detail) = server.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["transcript"][0]["content"], typed);
    server.stop().await;
}
