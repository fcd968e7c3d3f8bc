//! What the operator's console reads from Keep's tables: the journal filtered by person, kind
//! and page, and people counted by their tokens, on each engine.

use imurun_store::{JournalDraft, JournalFilter, TokenUser};

#[tokio::test]
async fn the_journal_filters_by_person_kind_and_page_newest_first() {
    let store = crate::support::fresh().await;
    let mut tx = store.keep_begin().await.expect("the store answers");
    for (user, kind) in [
        (Some("alice"), "token"),
        (Some("bob"), "token"),
        (None, "deploy"),
        (Some("alice"), "tool"),
        (Some("alice"), "token"),
    ] {
        let draft = JournalDraft {
            actor: "operator".into(),
            user_name: user.map(str::to_owned),
            kind: kind.into(),
            subject: "s".into(),
            detail: "{}".into(),
        };
        tx.append_journal(draft, |row| Ok::<_, ()>(format!("h{}", row.seq)))
            .await
            .expect("the store answers")
            .expect("hashed");
    }
    tx.commit().await.expect("the store answers");
    let seqs = |filter: JournalFilter<'static>| {
        let store = &store;
        async move {
            store
                .keep_journal_newest(&filter, 100)
                .await
                .expect("the store answers")
                .iter()
                .map(|row| row.seq)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(seqs(JournalFilter::default()).await, [5, 4, 3, 2, 1]);
    let alice = JournalFilter {
        user: Some("alice"),
        ..JournalFilter::default()
    };
    assert_eq!(seqs(alice).await, [5, 4, 1]);
    let tokens = JournalFilter {
        kind: Some("token"),
        ..JournalFilter::default()
    };
    assert_eq!(seqs(tokens).await, [5, 2, 1]);
    let alices_tokens = JournalFilter {
        user: Some("alice"),
        kind: Some("token"),
        before_seq: None,
    };
    assert_eq!(seqs(alices_tokens).await, [5, 1]);
    let older = JournalFilter {
        before_seq: Some(4),
        ..alices_tokens
    };
    assert_eq!(seqs(older).await, [1]);
    let page = store
        .keep_journal_newest(&JournalFilter::default(), 2)
        .await
        .expect("the store answers");
    assert_eq!(page.iter().map(|row| row.seq).collect::<Vec<_>>(), [5, 4]);
}

#[tokio::test]
async fn people_are_counted_by_their_tokens() {
    let store = crate::support::fresh().await;
    let mut tx = store.keep_begin().await.expect("the store answers");
    for (id, user) in [
        ("t1", Some("bob")),
        ("t2", Some("alice")),
        ("t3", Some("alice")),
        ("t4", None),
    ] {
        let role = if user.is_some() { "user" } else { "operator" };
        tx.insert_token(id, &format!("hash-{id}"), role, user)
            .await
            .expect("the store answers");
    }
    tx.revoke_token("t2")
        .await
        .expect("the store answers")
        .expect("t2 was live");
    tx.commit().await.expect("the store answers");
    let users = store.keep_token_users().await.expect("the store answers");
    let counted: Vec<_> = users
        .iter()
        .map(
            |TokenUser {
                 user_name,
                 live,
                 revoked,
                 since_ms,
             }| {
                assert!(*since_ms > 0);
                (user_name.as_str(), *live, *revoked)
            },
        )
        .collect();
    assert_eq!(counted, [("alice", 1, 1), ("bob", 1, 0)]);
    let alices = store
        .keep_tokens_of("alice")
        .await
        .expect("the store answers");
    let mut ids: Vec<_> = alices.iter().map(|row| row.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["t2", "t3"]);
    assert!(
        store
            .keep_tokens_of("carol")
            .await
            .expect("the store answers")
            .is_empty()
    );
}
