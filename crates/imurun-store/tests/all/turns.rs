//! Turn views: a turn runs, ends once, lists in order; a crash's running turns become interrupted.

use imurun_store::{StoreError, Turn, TurnStatus};
use serde_json::{Value, json};

fn view(steps: usize) -> Value {
    json!({
        "steps": (0..steps).map(|step| json!({
            "text": format!("step {step} ✓"),
            "toolCalls": [{"tool": "file_read", "args": {"path": "README.md"}, "ok": true}],
        })).collect::<Vec<_>>(),
        "skills": ["rust", null, 1.5, {"nested": {"deeper": [true, false]}}],
    })
}

/// Asserts the parts of `turn` that a test decides.
fn check(turn: &Turn, turn_id: &str, status: TurnStatus, ended: bool, expected_view: &Value) {
    assert_eq!(turn.turn_id, turn_id);
    assert_eq!(turn.status, status, "{turn_id}");
    assert_eq!(turn.ended_at_ms.is_some(), ended, "{turn_id}: {turn:?}");
    assert_eq!(&turn.view, expected_view, "{turn_id}");
}

#[tokio::test]
async fn a_turn_runs_then_ends_once() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");

    let started = store
        .insert_turn("s", "t-1", "Read README.md", &view(0))
        .await
        .expect("insert");
    check(&started, "t-1", TurnStatus::Running, false, &view(0));
    assert_eq!(
        (started.session_id.as_str(), started.prompt.as_str()),
        ("s", "Read README.md")
    );

    let progressed = store
        .update_turn("s", "t-1", TurnStatus::Running, &view(1))
        .await
        .expect("progress");
    check(&progressed, "t-1", TurnStatus::Running, false, &view(1));

    let done = store
        .update_turn("s", "t-1", TurnStatus::Done, &view(2))
        .await
        .expect("done");
    check(&done, "t-1", TurnStatus::Done, true, &view(2));
    let ended_at_ms = done.ended_at_ms.expect("ended");
    assert!(ended_at_ms > done.started_at_ms);

    // A later change of the view keeps the first end time.
    let amended = store
        .update_turn("s", "t-1", TurnStatus::Done, &view(3))
        .await
        .expect("amend");
    assert_eq!(amended.ended_at_ms, Some(ended_at_ms));
    assert_eq!(store.get_turn("s", "t-1").await.expect("get"), amended);
}

#[tokio::test]
async fn turns_list_oldest_first_and_the_last_n() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    // Ids that sort the other way from their order, so the order must come from the times.
    let ids = ["t-9", "t-8", "t-7", "t-10", "t-1"];
    for id in ids {
        store
            .insert_turn("s", id, id, &json!(null))
            .await
            .expect("insert");
    }
    let cases: [(u32, &[&str]); 4] = [(10, &ids), (3, &ids[2..]), (1, &ids[4..]), (0, &[])];
    for (limit, expected) in cases {
        let turns = store.list_turns("s", limit).await.expect("list");
        let got: Vec<&str> = turns.iter().map(|turn| turn.turn_id.as_str()).collect();
        assert_eq!(got, expected, "limit {limit}");
    }
}

#[tokio::test]
async fn a_turn_id_is_unique_within_its_session_only() {
    let store = crate::support::fresh().await;
    for id in ["a", "b"] {
        store.create_session(Some(id), None).await.expect("create");
        store
            .insert_turn(id, "t-1", "x", &json!({}))
            .await
            .expect("insert");
    }
    let again = store.insert_turn("a", "t-1", "y", &json!({})).await;
    assert!(
        matches!(&again, Err(StoreError::AlreadyExists { what: "turn", id }) if id == "a/t-1"),
        "{again:?}"
    );
    assert_eq!(store.get_turn("a", "t-1").await.expect("get").prompt, "x");
}

#[tokio::test]
async fn a_missing_turn_is_not_found() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    let results = [
        ("get", store.get_turn("s", "t-0").await),
        (
            "update",
            store
                .update_turn("s", "t-0", TurnStatus::Done, &json!({}))
                .await,
        ),
        (
            "get in a missing session",
            store.get_turn("gone", "t-0").await,
        ),
    ];
    for (call, result) in results {
        assert!(
            matches!(&result, Err(StoreError::NotFound { what: "turn", .. })),
            "{call}: {result:?}"
        );
    }
}

#[tokio::test]
async fn mark_interrupted_turns_ends_only_the_running_ones() {
    let store = crate::support::fresh().await;
    for id in ["a", "b"] {
        store.create_session(Some(id), None).await.expect("create");
    }
    let plan = [
        ("a", "t-1", TurnStatus::Running),
        ("a", "t-2", TurnStatus::Done),
        ("b", "t-1", TurnStatus::Running),
        ("b", "t-2", TurnStatus::Stopped),
        ("b", "t-3", TurnStatus::Error),
    ];
    for (session, turn, status) in plan {
        store
            .insert_turn(session, turn, "x", &view(1))
            .await
            .expect("insert");
        if status != TurnStatus::Running {
            store
                .update_turn(session, turn, status, &view(1))
                .await
                .expect("update");
        }
    }
    let before = store.get_turn("a", "t-2").await.expect("get");

    assert_eq!(store.mark_interrupted_turns().await.expect("mark"), 2);
    for (session, turn, status) in plan {
        let expected = match status {
            TurnStatus::Running => TurnStatus::Interrupted,
            other => other,
        };
        let stored = store.get_turn(session, turn).await.expect("get");
        check(&stored, turn, expected, true, &view(1));
    }
    assert_eq!(
        store.get_turn("a", "t-2").await.expect("get"),
        before,
        "a done turn is untouched"
    );
    assert_eq!(store.mark_interrupted_turns().await.expect("mark again"), 0);
}

/// What a crash leaves: the process dies with a turn running, the next one opens the database
/// and marks it.
#[tokio::test]
async fn a_turn_left_running_in_a_file_is_marked_after_reopening() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    store
        .insert_turn("s", "t-1", "x", &view(1))
        .await
        .expect("insert");
    store.close().await;

    let reopened = store.reopen().await;
    assert_eq!(reopened.mark_interrupted_turns().await.expect("mark"), 1);
    let turn = reopened.get_turn("s", "t-1").await.expect("get");
    check(&turn, "t-1", TurnStatus::Interrupted, true, &view(1));
}

/// Rows a newer version (or a hand edit) wrote are reported, not panicked on.
#[tokio::test]
async fn a_stored_status_or_view_this_version_cannot_read_is_an_error() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    for id in ["bad-status", "bad-view"] {
        store
            .insert_turn("s", id, "x", &json!({}))
            .await
            .expect("insert");
    }
    store
        .raw_execute(&[
            "UPDATE turns SET status = 'paused' WHERE turn_id = 'bad-status'",
            "UPDATE turns SET view = '{not json' WHERE turn_id = 'bad-view'",
        ])
        .await;

    let status = store.get_turn("s", "bad-status").await;
    assert!(
        matches!(&status, Err(StoreError::Decode { column: "status", value }) if value == "paused"),
        "{status:?}"
    );
    let view = store.get_turn("s", "bad-view").await;
    assert!(
        matches!(&view, Err(StoreError::Json { column: "view", .. })),
        "{view:?}"
    );
    assert!(store.list_turns("s", 10).await.is_err());
}
