//! A Keep session's conversation: entries come back in order, at most
//! `CONVERSATION_ENTRIES_MAX` per session (the oldest go), a deleted conversation is gone and
//! takes nothing more, only the newest `CONVERSATIONS_KEPT_MAX` sessions of a person keep
//! theirs, and a host finds the sessions it left running.

use imurun_store::{CONVERSATION_ENTRIES_MAX, CONVERSATIONS_KEPT_MAX, NewMessage};

fn entry<'a>(role: &'a str, text: &'a str) -> NewMessage<'a> {
    NewMessage {
        role,
        text,
        bytes: i64::try_from(text.len()).expect("a short text"),
        at_ms: 7,
    }
}

#[tokio::test]
async fn a_conversation_keeps_its_newest_entries_in_order_until_deleted() {
    let store = crate::support::fresh().await;
    let mut tx = store.keep_begin().await.expect("the store answers");
    tx.insert_session(("s1", "alice"), ("helper", 1), "h1")
        .await
        .expect("the store answers");
    tx.insert_session(("s2", "alice"), ("helper", 1), "h1")
        .await
        .expect("the store answers");
    tx.commit().await.expect("the store answers");
    store
        .keep_conversation_add("s1", &[entry("person", "hello"), entry("agent", "hi")])
        .await
        .expect("the store answers");
    store
        .keep_conversation_add("s2", &[entry("person", "other")])
        .await
        .expect("the store answers");
    let rows = store
        .keep_conversation("s1")
        .await
        .expect("the store answers");
    let got: Vec<_> = rows
        .iter()
        .map(|row| (row.role.as_str(), row.text.as_str(), row.bytes, row.at_ms))
        .collect();
    assert_eq!(got, [("person", "hello", 5, 7), ("agent", "hi", 2, 7)]);
    // A role outside the five is refused by the table itself.
    assert!(
        store
            .keep_conversation_add("s1", &[entry("operator", "x")])
            .await
            .is_err()
    );

    // Past the bound, the oldest go: the newest CONVERSATION_ENTRIES_MAX stay, in order.
    let texts: Vec<String> = (0..CONVERSATION_ENTRIES_MAX + 3)
        .map(|n| format!("m{n}"))
        .collect();
    let batch: Vec<_> = texts.iter().map(|text| entry("agent", text)).collect();
    store
        .keep_conversation_add("s1", &batch)
        .await
        .expect("the store answers");
    let rows = store
        .keep_conversation("s1")
        .await
        .expect("the store answers");
    assert_eq!(
        rows.len(),
        usize::try_from(CONVERSATION_ENTRIES_MAX).expect("a small bound")
    );
    assert_eq!(rows[0].text, "m3");
    assert_eq!(
        rows.last().expect("the store answers").text,
        texts.last().expect("the store answers").as_str()
    );

    store
        .keep_session_entitle("s1", "helper: hello")
        .await
        .expect("the store answers");
    store
        .keep_session_entitle("s1", "a second title")
        .await
        .expect("the store answers");
    assert_eq!(
        store
            .keep_session("s1")
            .await
            .expect("the store answers")
            .expect("the store answers")
            .title
            .as_deref(),
        Some("helper: hello")
    );

    let mut tx = store.keep_begin().await.expect("the store answers");
    assert!(
        tx.delete_conversation("s1", 9)
            .await
            .expect("the store answers")
    );
    assert!(
        !tx.delete_conversation("s1", 10)
            .await
            .expect("the store answers")
    );
    tx.commit().await.expect("the store answers");
    assert!(
        store
            .keep_conversation("s1")
            .await
            .expect("the store answers")
            .is_empty()
    );
    let row = store
        .keep_session("s1")
        .await
        .expect("the store answers")
        .expect("the store answers");
    assert_eq!((row.deleted_at_ms, row.title), (Some(9), None));
    // Gone from the list, and a late reply of its cell is not kept.
    let listed: Vec<_> = store
        .keep_sessions("alice")
        .await
        .expect("the store answers")
        .into_iter()
        .map(|row| row.id)
        .collect();
    assert_eq!(listed, ["s2"]);
    store
        .keep_conversation_add("s1", &[entry("agent", "late")])
        .await
        .expect("the store answers");
    assert!(
        store
            .keep_conversation("s1")
            .await
            .expect("the store answers")
            .is_empty()
    );
    assert_eq!(
        store
            .keep_conversation("s2")
            .await
            .expect("the store answers")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_person_keeps_the_conversations_of_her_newest_sessions() {
    let store = crate::support::fresh().await;
    let count = CONVERSATIONS_KEPT_MAX + 2;
    for n in 0..count {
        let id = format!("s{n:03}");
        let mut tx = store.keep_begin().await.expect("the store answers");
        tx.insert_session((&id, "alice"), ("helper", 1), "h1")
            .await
            .expect("the store answers");
        tx.commit().await.expect("the store answers");
        store
            .keep_conversation_add(&id, &[entry("person", "hello")])
            .await
            .expect("the store answers");
    }
    let mut tx = store.keep_begin().await.expect("the store answers");
    tx.insert_session(("b1", "bob"), ("helper", 1), "h1")
        .await
        .expect("the store answers");
    tx.commit().await.expect("the store answers");
    store
        .keep_conversation_add("b1", &[entry("person", "bob's")])
        .await
        .expect("the store answers");
    assert_eq!(
        store
            .keep_conversations_trim("alice")
            .await
            .expect("the store answers"),
        2
    );
    // The two oldest lost their entries; the newest and bob's kept theirs.
    for n in 0..count {
        let kept = !store
            .keep_conversation(&format!("s{n:03}"))
            .await
            .expect("the store answers")
            .is_empty();
        assert_eq!(kept, n >= 2, "s{n:03}");
    }
    assert_eq!(
        store
            .keep_conversation("b1")
            .await
            .expect("the store answers")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_host_finds_the_sessions_it_left_running() {
    let store = crate::support::fresh().await;
    let mut tx = store.keep_begin().await.expect("the store answers");
    for (id, host) in [("a", "h1"), ("b", "h2"), ("c", "h1")] {
        tx.insert_session((id, "alice"), ("helper", 1), host)
            .await
            .expect("the store answers");
    }
    assert!(
        tx.end_session("c", "stopped")
            .await
            .expect("the store answers")
    );
    let left = tx
        .sessions_left_running("h1", false)
        .await
        .expect("the store answers");
    assert_eq!(left, [("a".to_owned(), "alice".to_owned())]);
    let left = tx
        .sessions_left_running("h1", true)
        .await
        .expect("the store answers");
    let ids: Vec<_> = left.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
}
