//! Transcripts: messages come back in order, numbered from 1 per session, page by page.

use std::sync::Arc;

use imurun_store::{Message, Role, TRANSCRIPT_READ_ROWS_MAX};

/// Asserts that `messages` are `expected` (role and content), numbered from `first_seq` on.
fn check(messages: &[Message], first_seq: i64, expected: &[(Role, &str)]) {
    let got: Vec<(i64, Role, &str)> = messages
        .iter()
        .map(|message| (message.seq, message.role, message.content.as_str()))
        .collect();
    let expected: Vec<(i64, Role, &str)> = (first_seq..)
        .zip(expected)
        .map(|(seq, (role, content))| (seq, *role, *content))
        .collect();
    assert_eq!(got, expected);
}

const CONVERSATION: [(Role, &str); 5] = [
    (Role::User, "What is in README.md?"),
    (Role::Assistant, "A title and two sections."),
    (Role::User, ""),
    (
        Role::Assistant,
        "日本語 ✓ 'quotes' \"and\" ;-- DROP TABLE messages",
    ),
    (
        Role::User,
        "line one\nline two\u{1}after a control character",
    ),
];

#[tokio::test]
async fn messages_read_back_in_order_numbered_from_one() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    for (index, (role, content)) in (1..).zip(CONVERSATION) {
        let appended = store
            .append_message("s", role, content)
            .await
            .expect("append");
        assert_eq!((appended.seq, appended.role), (index, role));
        assert_eq!(appended.content, content);
    }
    let all = store.transcript("s", 0, 100).await.expect("read");
    check(&all, 1, &CONVERSATION);
    assert!(
        all.windows(2)
            .all(|pair| pair[0].created_at_ms < pair[1].created_at_ms),
        "times must follow the order"
    );
}

#[tokio::test]
async fn a_transcript_reads_page_by_page() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    for (role, content) in CONVERSATION {
        store
            .append_message("s", role, content)
            .await
            .expect("append");
    }
    let cases = [
        (0, 2, 1, &CONVERSATION[0..2]),
        (2, 2, 3, &CONVERSATION[2..4]),
        (4, 2, 5, &CONVERSATION[4..5]),
        (5, 2, 6, &CONVERSATION[5..5]),
        (-7, 0, 1, &CONVERSATION[0..0]),
    ];
    for (after_seq, limit, first_seq, expected) in cases {
        let page = store.transcript("s", after_seq, limit).await.expect("read");
        check(&page, first_seq, expected);
    }
}

#[tokio::test]
async fn each_session_numbers_its_own_messages() {
    let store = crate::support::fresh().await;
    for id in ["a", "b"] {
        store.create_session(Some(id), None).await.expect("create");
    }
    for round in 0..3 {
        for id in ["a", "b"] {
            let appended = store
                .append_message(id, Role::User, id)
                .await
                .expect("append");
            assert_eq!(appended.seq, round + 1, "session {id}");
        }
    }
    assert!(
        store
            .transcript("a", 0, 10)
            .await
            .expect("read")
            .iter()
            .all(|m| m.content == "a")
    );
}

#[tokio::test]
async fn an_empty_transcript_reads_as_empty() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    assert!(store.transcript("s", 0, 10).await.expect("read").is_empty());
}

/// Many tasks appending to one session at once on a database on disk: every append commits, and the
/// numbers are exactly 1..=n, with no gap and no number given twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_get_distinct_numbers() {
    const TASKS: usize = 8;
    const APPENDS_PER_TASK: usize = 15;
    let store = Arc::new(crate::support::fresh().await);
    store.create_session(Some("s"), None).await.expect("create");
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for index in 0..APPENDS_PER_TASK {
                    store
                        .append_message("s", Role::Assistant, &format!("{task}-{index}"))
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    let total = TASKS * APPENDS_PER_TASK;
    assert!(total <= TRANSCRIPT_READ_ROWS_MAX as usize);
    let all = store
        .transcript("s", 0, TRANSCRIPT_READ_ROWS_MAX)
        .await
        .expect("read");
    let seqs: Vec<i64> = all.iter().map(|message| message.seq).collect();
    let expected: Vec<i64> = (1..=i64::try_from(total).expect("fits")).collect();
    assert_eq!(seqs, expected);
}

/// PostgreSQL's text cannot hold the NUL character, so no engine takes it: the message is
/// refused with an error that says why, and nothing is written.
#[tokio::test]
async fn a_message_with_a_nul_character_is_refused_and_nothing_is_written() {
    let store = crate::support::fresh().await;
    store.create_session(Some("s"), None).await.expect("create");
    let refused = store
        .append_message("s", Role::User, "before\0after")
        .await
        .expect_err("a NUL is refused");
    assert!(
        matches!(
            refused,
            imurun_store::StoreError::NulCharacter {
                what: "message content"
            }
        ),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("NUL"), "{refused}");
    assert!(store.transcript("s", 0, 10).await.expect("read").is_empty());
    let titled = store.rename_session("s", Some("a\0title")).await;
    assert!(
        matches!(titled, Err(imurun_store::StoreError::NulCharacter { .. })),
        "{titled:?}"
    );
}
