//! Closing and reopening the file keeps every session, message, turn and setting, field for field.

use imurun_store::{Role, Store, TurnStatus};
use serde_json::json;

use crate::support::fresh;

/// Everything the API can read back, in one value, so two snapshots compare with one `assert_eq`.
async fn snapshot(store: &Store) -> String {
    let mut text = String::new();
    for session in store.list_sessions(100).await.expect("list") {
        text += &format!("{session:?}\n");
        for message in store.transcript(&session.id, 0, 100).await.expect("read") {
            text += &format!("  {message:?}\n");
        }
        for turn in store.list_turns(&session.id, 100).await.expect("turns") {
            text += &format!("  {turn:?}\n");
        }
    }
    text += &format!("{:?}\n", store.get_all_settings().await.expect("settings"));
    text
}

#[tokio::test]
async fn reopening_keeps_sessions_transcripts_turns_and_settings() {
    let store = fresh().await;
    for (index, id) in ["a", "b", "c"].into_iter().enumerate() {
        store
            .create_session(Some(id), (index != 1).then_some("titled"))
            .await
            .expect("create");
        for turn in 0..=index {
            let turn_id = format!("t-{turn}");
            let prompt = format!("prompt {turn} of {id}");
            store
                .append_message(id, Role::User, &prompt)
                .await
                .expect("prompt");
            store
                .insert_turn(id, &turn_id, &prompt, &json!({"steps": [turn]}))
                .await
                .expect("turn");
            store
                .append_message(id, Role::Assistant, "answer ✓")
                .await
                .expect("answer");
            store
                .update_turn(
                    id,
                    &turn_id,
                    TurnStatus::Done,
                    &json!({"steps": [turn, "end"]}),
                )
                .await
                .expect("end");
        }
    }
    store
        .insert_turn("c", "t-running", "x", &json!(null))
        .await
        .expect("running");
    store.delete_session("b").await.expect("delete");
    store
        .set_setting("agent.maxSteps", &json!(12))
        .await
        .expect("set");
    store
        .set_setting("permissions.mode", &json!({"mode": "ask"}))
        .await
        .expect("set");

    let before = snapshot(&store).await;
    assert_eq!(before.matches("Message {").count(), 2 + 6, "a and c");
    store.close().await;

    let reopened = store.reopen().await;
    assert_eq!(snapshot(&reopened).await, before);
    reopened.close().await;
}
