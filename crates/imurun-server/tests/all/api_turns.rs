//! Turns through the API: events, transcript, turn views, approvals, stop, the queue, the kill
//! switch and a restart.

use std::sync::Arc;

use imurun_core::Model;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::api_support::{
    Dirs, Reply, TestModel, TestServer, event_types, events_until, tool_reply, write_file,
};

/// A model that reads `notes.txt`, then answers.
fn reading_model() -> Arc<dyn Model> {
    TestModel::new(vec![
        Reply::text(&tool_reply("file_read", json!({"path": "notes.txt"}))),
        Reply::text("The notes say: buy milk."),
    ])
}

async fn post_prompt(server: &TestServer, session: &str, prompt: &str) -> Value {
    let (status, accepted) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": prompt}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    accepted
}

async fn set_mode(server: &TestServer, mode: &str) {
    let (status, body) = server.post("/api/permissions", json!({"mode": mode})).await;
    assert_eq!(status, 200, "{body}");
}

/// The transcript of `session` as `(role, content)` pairs.
async fn transcript(server: &TestServer, session: &str) -> Vec<(String, String)> {
    let (status, detail) = server.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(status, 200, "{detail}");
    detail["transcript"]
        .as_array()
        .expect("a transcript")
        .iter()
        .map(|message| {
            (
                message["role"].as_str().expect("a role").to_owned(),
                message["content"].as_str().expect("content").to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(role, content)| ((*role).to_owned(), (*content).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_tool_using_turn_streams_its_events_and_keeps_prompt_and_answer() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    let server = TestServer::start(&dirs, Some(reading_model())).await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let accepted = post_prompt(&server, &session, "What do my notes say?").await;
    assert_eq!(accepted["queued"], false);
    let turn_id = accepted["turn_id"].as_str().unwrap().to_owned();
    let seen = events_until(&mut events, "turn.end").await;
    assert_eq!(
        event_types(&seen),
        [
            "turn.start",
            "tool.call",
            "tool.result",
            "step",
            "answer.checking",
            "step",
            "turn.end"
        ]
    );
    assert_eq!(seen[0]["turn_id"], turn_id.as_str());
    assert_eq!(seen[0]["prompt"], "What do my notes say?");
    assert_eq!(seen[1]["name"], "file_read");
    assert_eq!(seen[2]["ok"], true);
    assert_eq!(seen[3]["kind"], "tool");
    assert_eq!(seen[3]["turn_id"], turn_id.as_str());
    assert_eq!(
        seen[3]["text"],
        "Using `file_read` {\"path\": \"notes.txt\"}"
    );
    assert_eq!(seen[4]["tools"], json!(["file_read"]));
    assert_eq!(seen[5]["kind"], "answer");
    assert_eq!(seen[6]["status"], "done");
    assert_eq!(seen[6]["turn_id"], turn_id.as_str());
    assert_eq!(
        (
            &seen[6]["calls_ran"],
            &seen[6]["calls_cached"],
            &seen[6]["calls_refused"]
        ),
        (&json!(1), &json!(0), &json!(0))
    );

    let view = server.finished_turn(&session, &turn_id).await;
    assert_eq!(view["status"], "done");
    assert_eq!(view["answer"], "The notes say: buy milk.");
    assert_eq!(view["prompt"], "What do my notes say?");
    assert!(view["ended_at_ms"].is_i64());
    let kinds: Vec<&str> = view["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tool", "answer"]);
    assert_eq!(view["tool_calls"][0]["name"], "file_read");
    assert_eq!(view["tool_calls"][0]["args"], json!({"path": "notes.txt"}));
    assert_eq!(view["tool_calls"][0]["ok"], true);
    assert_eq!(view["skills"], json!([]));
    assert_eq!(
        transcript(&server, &session).await,
        pairs(&[
            ("user", "What do my notes say?"),
            ("assistant", "The notes say: buy milk.")
        ])
    );
    let (_, list) = server.get(&format!("/api/sessions/{session}/turns")).await;
    assert_eq!(list["turns"].as_array().unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn an_approval_answered_over_http_lets_the_turn_go_on_and_can_be_remembered() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    let server = TestServer::start(&dirs, Some(reading_model())).await;
    set_mode(&server, "ask").await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    post_prompt(&server, &session, "What do my notes say?").await;
    let needed = events_until(&mut events, "tool.approval_needed")
        .await
        .pop()
        .unwrap();
    let approval_id = needed["approval_id"].as_str().unwrap().to_owned();
    let (status, pending) = server.get("/api/tools/approvals").await;
    assert_eq!(status, 200);
    let card = &pending["pending"][0];
    assert_eq!(card["id"], approval_id.as_str());
    assert_eq!(card["tool"], "file_read");
    assert_eq!(card["session_id"], session.as_str());
    assert!(card["deadline"].as_i64().unwrap() > 0);
    assert!(
        card["reason"]
            .as_str()
            .is_some_and(|reason| !reason.is_empty())
    );
    let (status, decided) = server
        .post(
            &format!("/api/tools/approvals/{approval_id}"),
            json!({"approved": true, "remember": true}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    let rest = events_until(&mut events, "turn.end").await;
    assert_eq!(
        event_types(&rest),
        [
            "tool.approved",
            "tool.result",
            "step",
            "answer.checking",
            "step",
            "turn.end"
        ]
    );
    assert_eq!(rest[1]["ok"], true);
    assert_eq!(rest[5]["status"], "done");
    // Answered approvals are gone.
    let (status, _) = server
        .post(
            &format!("/api/tools/approvals/{approval_id}"),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(status, 404);
    // "remember" is listed as a grant until revoked.
    let (_, grants) = server.get("/api/grants").await;
    assert_eq!(
        grants["grants"],
        json!([{"session_id": session, "tools": ["file_read"]}])
    );
    let (status, revoked) = server.delete(&format!("/api/grants/{session}")).await;
    assert_eq!((status, revoked["sessions"].clone()), (200, json!(1)));
    let (_, grants) = server.get("/api/grants").await;
    assert_eq!(grants["grants"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn an_approval_with_no_subscriber_is_denied_at_once() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    // Nobody there to ask ends the turn at the call: the model is not asked again.
    let model = TestModel::new(vec![Reply::text(&tool_reply(
        "file_read",
        json!({"path": "notes.txt"}),
    ))]);
    let server = TestServer::start(&dirs, Some(model)).await;
    set_mode(&server, "ask").await;
    let session = server.new_session().await;
    // A stream of another session is no one who could approve this one's card.
    let _other = server.events(Some("another-session")).await;
    let accepted = post_prompt(&server, &session, "What do my notes say?").await;
    let view = server
        .finished_turn(&session, accepted["turn_id"].as_str().unwrap())
        .await;
    assert_eq!(view["status"], "done");
    assert_eq!(view["tool_calls"][0]["ok"], false);
    assert_eq!(
        view["answer"],
        "Nothing was done: `file_read` was declined, so it did not run."
    );
    let (_, pending) = server.get("/api/tools/approvals").await;
    assert_eq!(pending["pending"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn stop_during_an_approval_ends_the_turn() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    let server = TestServer::start(&dirs, Some(reading_model())).await;
    set_mode(&server, "ask").await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let accepted = post_prompt(&server, &session, "What do my notes say?").await;
    events_until(&mut events, "tool.approval_needed").await;
    let (status, stopped) = server
        .post(&format!("/api/sessions/{session}/stop"), json!({}))
        .await;
    assert_eq!((status, stopped), (200, json!({"stopped": true})));
    let rest = events_until(&mut events, "turn.end").await;
    let denied = rest
        .iter()
        .find(|event| event["type"] == "tool.denied")
        .unwrap();
    assert_eq!(denied["reason"], "stopped");
    assert_eq!(rest.last().unwrap()["status"], "stopped");
    let view = server
        .finished_turn(&session, accepted["turn_id"].as_str().unwrap())
        .await;
    assert_eq!(view["status"], "stopped");
    // Nothing runs any more, so a second stop stops nothing.
    let (_, again) = server
        .post(&format!("/api/sessions/{session}/stop"), json!({}))
        .await;
    assert_eq!(again, json!({"stopped": false}));
    assert_eq!(
        transcript(&server, &session).await,
        pairs(&[("user", "What do my notes say?")])
    );
    server.stop().await;
}

#[tokio::test]
async fn a_prompt_queued_during_a_turn_is_delivered_in_that_turn() {
    let dirs = Dirs::new();
    let gate = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![
        Reply::gated("First answer.", &gate),
        Reply::text("Second answer."),
    ]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let first = post_prompt(&server, &session, "first").await;
    let second = post_prompt(&server, &session, "second").await;
    assert_eq!(second["queued"], true);
    assert_eq!(second["turn_id"], first["turn_id"]);
    let (_, detail) = server.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["running_turn_id"], first["turn_id"]);
    gate.add_permits(1);
    let seen = events_until(&mut events, "turn.end").await;
    assert_eq!(
        event_types(&seen),
        ["turn.start", "step", "prompt.delivered", "step", "turn.end"]
    );
    assert_eq!(seen[2]["text"], "second");
    let view = server
        .finished_turn(&session, first["turn_id"].as_str().unwrap())
        .await;
    assert_eq!(view["answer"], "Second answer.");
    assert_eq!(view["delivered_prompts"], json!(["second"]));
    assert_eq!(
        transcript(&server, &session).await,
        pairs(&[
            ("user", "first"),
            ("assistant", "First answer."),
            ("user", "second"),
            ("assistant", "Second answer."),
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn the_kill_switch_stops_every_turn_and_denies_every_approval() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    let server = TestServer::start(&dirs, Some(reading_model())).await;
    set_mode(&server, "ask").await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let accepted = post_prompt(&server, &session, "What do my notes say?").await;
    events_until(&mut events, "tool.approval_needed").await;
    let (status, killed) = server.post("/api/stop", json!({})).await;
    assert_eq!(status, 200, "{killed}");
    assert_eq!(killed["stopped"], 1);
    // The stop flag and the denial race to end the wait; either way it ends denied.
    assert!(killed["approvals_denied"].as_u64().unwrap() <= 1);
    let rest = events_until(&mut events, "turn.end").await;
    assert!(rest.iter().any(|event| event["type"] == "tool.denied"));
    assert_eq!(rest.last().unwrap()["status"], "stopped");
    let view = server
        .finished_turn(&session, accepted["turn_id"].as_str().unwrap())
        .await;
    assert_eq!(view["status"], "stopped");
    let (_, pending) = server.get("/api/tools/approvals").await;
    assert_eq!(pending["pending"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_restart_keeps_sessions_transcripts_and_turns() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::text("Hello there.")]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let session = server.new_session().await;
    let accepted = post_prompt(&server, &session, "hello").await;
    let turn_id = accepted["turn_id"].as_str().unwrap().to_owned();
    server.finished_turn(&session, &turn_id).await;
    server.stop().await;

    let server = TestServer::start(&dirs, None).await;
    let (_, list) = server.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["id"], session.as_str());
    assert_eq!(
        transcript(&server, &session).await,
        pairs(&[("user", "hello"), ("assistant", "Hello there.")])
    );
    let (status, view) = server
        .get(&format!("/api/sessions/{session}/turns/{turn_id}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(view["status"], "done");
    assert_eq!(view["answer"], "Hello there.");
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_session_stops_its_turn_first() {
    let dirs = Dirs::new();
    let gate = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![Reply::gated("Never said.", &gate)]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let session = server.new_session().await;
    post_prompt(&server, &session, "wait for it").await;
    let (status, deleted) = server.delete(&format!("/api/sessions/{session}")).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted, json!({"deleted": true, "stopped_turn": true}));
    assert_eq!(server.state.running_turn_id(&session), None);
    let (status, _) = server.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_model_error_ends_the_turn_with_status_error_and_a_message() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::error("connection refused")]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let session = server.new_session().await;
    let accepted = post_prompt(&server, &session, "hello").await;
    let view = server
        .finished_turn(&session, accepted["turn_id"].as_str().expect("a turn id"))
        .await;
    assert_eq!(view["status"], "error");
    assert!(
        view["error"]
            .as_str()
            .is_some_and(|error| error.contains("connection refused")),
        "{view}"
    );
    assert_eq!(
        transcript(&server, &session).await,
        pairs(&[("user", "hello")])
    );
    server.stop().await;
}

/// A panic in a turn (here the model's) must end that turn as an error, publish `turn.end`, and
/// leave the server serving the next prompt.
#[tokio::test]
async fn a_panic_in_a_turn_ends_it_as_an_error_and_the_server_goes_on() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::panic(), Reply::text("Still here.")]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let accepted = post_prompt(&server, &session, "crash").await;
    let end = events_until(&mut events, "turn.end")
        .await
        .pop()
        .expect("turn.end");
    assert_eq!(end["status"], "error");
    let view = server
        .finished_turn(&session, accepted["turn_id"].as_str().expect("a turn id"))
        .await;
    assert_eq!(view["status"], "error");
    assert!(view["error"].is_string(), "{view}");
    let next = post_prompt(&server, &session, "are you there?").await;
    let view = server
        .finished_turn(&session, next["turn_id"].as_str().expect("a turn id"))
        .await;
    assert_eq!(view["answer"], "Still here.");
    server.stop().await;
}
