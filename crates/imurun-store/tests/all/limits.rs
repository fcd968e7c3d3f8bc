//! Every bounded input is refused one past its bound with a clear error, and accepted at it.

use std::fmt::Debug;

use imurun_store::{
    ID_CHARS_MAX, MESSAGE_CONTENT_BYTES_MAX, Role, SESSION_LIST_ROWS_MAX, SESSION_TITLE_CHARS_MAX,
    SETTING_VALUE_BYTES_MAX, SETTINGS_WRITE_ENTRIES_MAX, StoreError, TRANSCRIPT_MESSAGES_MAX,
    TURN_LIST_ROWS_MAX, TURN_PROMPT_BYTES_MAX, TURN_VIEW_BYTES_MAX,
};
use serde_json::{Value, json};

/// What a call should give.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Accepted,
    /// `TooLarge` for this `what`.
    TooLarge(&'static str),
    /// `InvalidId` for this `what`.
    InvalidId(&'static str),
}

fn check<T: Debug>(case: &str, result: Result<T, StoreError>, expected: Expect) {
    let matched = match (expected, &result) {
        (Expect::Accepted, Ok(_)) => true,
        (Expect::TooLarge(what), Err(StoreError::TooLarge { what: got, .. })) => what == *got,
        (Expect::InvalidId(what), Err(StoreError::InvalidId { what: got, .. })) => what == *got,
        _ => false,
    };
    // Print the error, never a multi-megabyte Ok value.
    assert!(
        matched,
        "{case}: expected {expected:?}, got {:?}",
        result.err()
    );
}

/// A JSON string value whose text is exactly `bytes` long (the two quotes included).
fn json_of_bytes(bytes: usize) -> Value {
    Value::String("x".repeat(bytes - 2))
}

#[tokio::test]
async fn sizes_are_accepted_at_their_bound_and_refused_past_it() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    let title_max = "é".repeat(SESSION_TITLE_CHARS_MAX);
    let title_over = "é".repeat(SESSION_TITLE_CHARS_MAX + 1);
    let message_max = "m".repeat(MESSAGE_CONTENT_BYTES_MAX);
    let message_over = "m".repeat(MESSAGE_CONTENT_BYTES_MAX + 1);
    let prompt_over = "p".repeat(TURN_PROMPT_BYTES_MAX + 1);
    let view_max = json_of_bytes(TURN_VIEW_BYTES_MAX);
    let view_over = json_of_bytes(TURN_VIEW_BYTES_MAX + 1);
    let setting_max = json_of_bytes(SETTING_VALUE_BYTES_MAX);
    let setting_over = json_of_bytes(SETTING_VALUE_BYTES_MAX + 1);
    let empty = json!({});
    let many_keys: Vec<String> = (0..=SETTINGS_WRITE_ENTRIES_MAX)
        .map(|i| format!("k.{i}"))
        .collect();

    use Expect::{Accepted, TooLarge};
    check(
        "title at max",
        store.create_session(Some("t1"), Some(&title_max)).await,
        Accepted,
    );
    check(
        "title over",
        store.create_session(Some("t2"), Some(&title_over)).await,
        TooLarge("session title"),
    );
    check(
        "rename over",
        store.rename_session("s", Some(&title_over)).await,
        TooLarge("session title"),
    );
    check(
        "message at max",
        store
            .append_message("s", Role::User, &message_max)
            .await
            .map(drop),
        Accepted,
    );
    check(
        "message over",
        store
            .append_message("s", Role::User, &message_over)
            .await
            .map(drop),
        TooLarge("message content"),
    );
    check(
        "prompt over",
        store
            .insert_turn("s", "t-1", &prompt_over, &empty)
            .await
            .map(drop),
        TooLarge("turn prompt"),
    );
    check(
        "view at max",
        store
            .insert_turn("s", "t-2", "x", &view_max)
            .await
            .map(drop),
        Accepted,
    );
    check(
        "view over on insert",
        store
            .insert_turn("s", "t-3", "x", &view_over)
            .await
            .map(drop),
        TooLarge("view"),
    );
    check(
        "view over on update",
        store
            .update_turn("s", "t-2", imurun_store::TurnStatus::Done, &view_over)
            .await
            .map(drop),
        TooLarge("view"),
    );
    check(
        "setting at max",
        store.set_setting("a.b", &setting_max).await,
        Accepted,
    );
    check(
        "setting over",
        store.set_setting("a.b", &setting_over).await,
        TooLarge("setting value"),
    );
    check(
        "too many entries",
        store
            .set_settings(many_keys.iter().map(|key| (key, &empty)))
            .await,
        TooLarge("a settings write"),
    );

    // What was refused left no trace; what was accepted reads back whole.
    assert_eq!(store.transcript("s", 0, 10).await.expect("read").len(), 1);
    assert_eq!(store.list_turns("s", 10).await.expect("list").len(), 1);
    assert_eq!(
        store.get_turn("s", "t-2").await.expect("get").view,
        view_max
    );
    assert_eq!(
        store.get_setting("a.b").await.expect("get"),
        Some(setting_max)
    );
    assert_eq!(store.get_setting("k.0").await.expect("get"), None);
}

#[tokio::test]
async fn ids_and_keys_outside_the_alphabet_are_refused() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    let id_max = "i".repeat(ID_CHARS_MAX);
    let id_over = "i".repeat(ID_CHARS_MAX + 1);
    let empty = json!({});

    use Expect::{Accepted, InvalidId};
    check(
        "id at max",
        store.create_session(Some(&id_max), None).await,
        Accepted,
    );
    check(
        "id over",
        store.create_session(Some(&id_over), None).await,
        InvalidId("session"),
    );
    check(
        "empty id",
        store.create_session(Some(""), None).await,
        InvalidId("session"),
    );
    check(
        "slash",
        store.get_session("../etc").await,
        InvalidId("session"),
    );
    check(
        "space",
        store.delete_session("a b").await,
        InvalidId("session"),
    );
    check(
        "unicode",
        store.append_message("sé", Role::User, "x").await,
        InvalidId("session"),
    );
    check(
        "turn id",
        store.insert_turn("s", "t 1", "x", &empty).await,
        InvalidId("turn"),
    );
    check(
        "turn id on get",
        store.get_turn("s", "").await,
        InvalidId("turn"),
    );
    check(
        "setting key",
        store.set_setting("agent maxSteps", &empty).await,
        InvalidId("setting key"),
    );
    check(
        "setting key on get",
        store.get_setting("").await,
        InvalidId("setting key"),
    );
    check(
        "setting key on delete",
        store.delete_setting("a/b").await,
        InvalidId("setting key"),
    );
}

#[tokio::test]
async fn lists_return_at_most_their_stated_maximum() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    for index in 0..=TURN_LIST_ROWS_MAX.max(SESSION_LIST_ROWS_MAX) {
        store
            .create_session(Some(&format!("s-{index}")), None)
            .await
            .expect("create");
        store
            .insert_turn("s", &format!("t-{index}"), "x", &json!(null))
            .await
            .expect("insert");
    }
    let sessions = store.list_sessions(u32::MAX).await.expect("list");
    assert_eq!(sessions.len(), SESSION_LIST_ROWS_MAX as usize);
    let turns = store.list_turns("s", u32::MAX).await.expect("list");
    assert_eq!(turns.len(), TURN_LIST_ROWS_MAX as usize);
    let last = turns.last().expect("turns");
    assert_eq!(
        last.turn_id,
        format!("t-{}", TURN_LIST_ROWS_MAX.max(SESSION_LIST_ROWS_MAX))
    );
}

/// A transcript at TRANSCRIPT_MESSAGES_MAX refuses the next message. The full transcript is
/// planted behind the store's back, since 100 000 synced appends would take minutes.
#[tokio::test]
async fn a_full_transcript_refuses_the_next_message() {
    use sqlx::Connection;
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    let mut connection = store.raw().await;
    sqlx::query(
        "INSERT INTO messages (session_id, seq, role, content, created_at_ms) \
         VALUES ('s', $1, 'user', 'last', 0)",
    )
    .bind(i64::try_from(TRANSCRIPT_MESSAGES_MAX).expect("fits"))
    .execute(&mut connection)
    .await
    .expect("plant");
    connection.close().await.expect("close");

    let refused = store
        .append_message("s", Role::Assistant, "one too many")
        .await;
    assert!(
        matches!(refused, Err(StoreError::RowsMaxReached { .. })),
        "{refused:?}"
    );
    let max_seq = i64::try_from(TRANSCRIPT_MESSAGES_MAX).expect("fits");
    let after = store.transcript("s", max_seq - 1, 10).await.expect("read");
    assert_eq!(after.len(), 1, "the refused message was rolled back");
}
