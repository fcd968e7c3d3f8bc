//! Sessions: create, list newest updated first, get, rename, delete with everything in them.

use imurun_store::{Role, Session, StoreError};
use serde_json::json;

/// Asserts that `sessions` are the sessions `ids`, in that order.
fn check_order(sessions: &[Session], ids: &[&str]) {
    let got: Vec<&str> = sessions.iter().map(|session| session.id.as_str()).collect();
    assert_eq!(got, ids);
}

#[tokio::test]
async fn a_session_reads_back_as_created_and_renamed() {
    let store = crate::support::fresh().await;
    let created = store
        .create_session(Some("s-1"), Some("First chat ✓"))
        .await
        .expect("create");
    assert_eq!(created.id, "s-1");
    assert_eq!(created.title.as_deref(), Some("First chat ✓"));
    assert_eq!(created.created_at_ms, created.updated_at_ms);
    assert_eq!(store.get_session("s-1").await.expect("get"), created);

    let renamed = store
        .rename_session("s-1", Some("Renamed"))
        .await
        .expect("rename");
    assert_eq!(renamed.title.as_deref(), Some("Renamed"));
    assert_eq!(renamed.created_at_ms, created.created_at_ms);
    assert!(renamed.updated_at_ms > created.updated_at_ms);
    assert_eq!(store.get_session("s-1").await.expect("get"), renamed);

    let cleared = store.rename_session("s-1", None).await.expect("clear");
    assert_eq!(cleared.title, None);
}

#[tokio::test]
async fn a_session_without_an_id_gets_a_random_one() {
    let store = crate::support::fresh().await;
    let first = store.create_session(None, None).await.expect("create");
    let second = store.create_session(None, None).await.expect("create");
    assert_eq!(first.id.len(), 32, "{}", first.id);
    assert_ne!(first.id, second.id);
    assert_eq!(first.title, None);
    assert_eq!(store.get_session(&first.id).await.expect("get"), first);
}

#[tokio::test]
async fn a_taken_id_is_refused_and_the_first_session_kept() {
    let store = crate::support::fresh().await;
    store
        .create_session(Some("s-1"), Some("kept"))
        .await
        .expect("create");
    let again = store.create_session(Some("s-1"), Some("lost")).await;
    assert!(
        matches!(&again, Err(StoreError::AlreadyExists { what: "session", id }) if id == "s-1"),
        "{again:?}"
    );
    let kept = store.get_session("s-1").await.expect("get");
    assert_eq!(kept.title.as_deref(), Some("kept"));
}

#[tokio::test]
async fn sessions_list_newest_updated_first() {
    let store = crate::support::fresh().await;
    for id in ["a", "b", "c"] {
        store.create_session(Some(id), None).await.expect("create");
    }
    check_order(
        &store.list_sessions(10).await.expect("list"),
        &["c", "b", "a"],
    );

    // Each kind of update moves a session to the top: a rename, a message, a turn.
    store.rename_session("a", Some("A")).await.expect("rename");
    check_order(
        &store.list_sessions(10).await.expect("list"),
        &["a", "c", "b"],
    );
    store
        .append_message("b", Role::User, "hello")
        .await
        .expect("append");
    check_order(
        &store.list_sessions(10).await.expect("list"),
        &["b", "a", "c"],
    );
    store
        .insert_turn("c", "t-1", "hello", &json!({}))
        .await
        .expect("turn");
    check_order(
        &store.list_sessions(10).await.expect("list"),
        &["c", "b", "a"],
    );

    check_order(&store.list_sessions(2).await.expect("list"), &["c", "b"]);
    assert!(store.list_sessions(0).await.expect("list").is_empty());
}

#[tokio::test]
async fn every_call_on_a_missing_session_reports_not_found() {
    let store = crate::support::fresh().await;
    store
        .create_session(Some("other"), None)
        .await
        .expect("create");
    let results: Vec<(&str, Result<(), StoreError>)> = vec![
        ("get", store.get_session("gone").await.map(drop)),
        ("rename", store.rename_session("gone", None).await.map(drop)),
        ("delete", store.delete_session("gone").await),
        (
            "append",
            store
                .append_message("gone", Role::User, "x")
                .await
                .map(drop),
        ),
        (
            "transcript",
            store.transcript("gone", 0, 10).await.map(drop),
        ),
        (
            "insert turn",
            store
                .insert_turn("gone", "t", "x", &json!({}))
                .await
                .map(drop),
        ),
        ("list turns", store.list_turns("gone", 10).await.map(drop)),
    ];
    for (call, result) in results {
        assert!(
            matches!(&result, Err(StoreError::NotFound { what: "session", id }) if id == "gone"),
            "{call}: {result:?}"
        );
    }
}

/// Deleting a session deletes its messages and turns (the foreign keys cascade) and nothing of
/// any other session. Counted in the file itself, not through the API.
#[tokio::test]
async fn deleting_a_session_deletes_its_messages_and_turns_only() {
    let store = crate::support::fresh().await;
    for id in ["doomed", "kept"] {
        store.create_session(Some(id), None).await.expect("create");
        for index in 0..3 {
            store
                .append_message(id, Role::User, &format!("prompt {index}"))
                .await
                .expect("append");
            store
                .insert_turn(id, &format!("t-{index}"), "prompt", &json!({"steps": []}))
                .await
                .expect("turn");
        }
    }
    store.delete_session("doomed").await.expect("delete");

    let counts = [
        "SELECT COUNT(*) FROM messages WHERE session_id = 'doomed'",
        "SELECT COUNT(*) FROM turns WHERE session_id = 'doomed'",
        "SELECT COUNT(*) FROM sessions WHERE id = 'doomed'",
    ];
    for sql in counts {
        assert_eq!(store.raw_scalar(sql).await, 0, "{sql}");
    }
    assert_eq!(
        store.transcript("kept", 0, 10).await.expect("kept").len(),
        3
    );
    assert_eq!(store.list_turns("kept", 10).await.expect("kept").len(), 3);

    // The id is free again, and the new session starts empty and numbers from 1.
    store
        .create_session(Some("doomed"), None)
        .await
        .expect("create again");
    assert!(
        store
            .transcript("doomed", 0, 10)
            .await
            .expect("read")
            .is_empty()
    );
    assert!(
        store
            .list_turns("doomed", 10)
            .await
            .expect("list")
            .is_empty()
    );
    let first = store
        .append_message("doomed", Role::User, "again")
        .await
        .expect("append");
    assert_eq!(first.seq, 1);
}
