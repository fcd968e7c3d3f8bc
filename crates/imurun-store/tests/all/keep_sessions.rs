//! Keep sessions and proposals: taint is set once, pending proposals are counted per kind,
//! only a person's own pending proposal can be decided, and accepted memory entries are what a
//! cell reads back.

use imurun_store::ProposalRow;

fn proposal(id: &str, user: &str, kind: &str, text: &str) -> ProposalRow {
    ProposalRow {
        id: id.to_owned(),
        user_name: user.to_owned(),
        session_id: "s1".to_owned(),
        agent: "helper".to_owned(),
        kind: kind.to_owned(),
        payload: format!("{{\"text\":\"{text}\"}}"),
        tainted: false,
        taint_source: None,
        state: "pending".to_owned(),
        created_at_ms: 0,
        decided_at_ms: None,
    }
}

#[tokio::test]
async fn sessions_taint_once_and_proposals_are_decided_only_by_their_person() {
    let store = crate::support::fresh().await;
    let mut tx = store.keep_begin().await.unwrap();
    tx.insert_session(("s1", "alice"), ("helper", 3), "h1")
        .await
        .unwrap();
    assert!(
        tx.taint_session("s1", "egress response from https://a.example/")
            .await
            .unwrap()
    );
    assert!(!tx.taint_session("s1", "a later source").await.unwrap());
    for (id, kind) in [("p1", "memory"), ("p2", "memory"), ("p3", "plan")] {
        tx.insert_proposal(&proposal(id, "alice", kind, id))
            .await
            .unwrap();
    }
    assert_eq!(tx.pending_proposals("alice", "memory").await.unwrap(), 2);
    assert_eq!(tx.pending_proposals("alice", "plan").await.unwrap(), 1);
    assert_eq!(tx.pending_proposals("bob", "memory").await.unwrap(), 0);
    // Bob cannot decide Alice's proposal; Alice can, once.
    assert!(
        tx.decide_proposal("p1", "bob", "accepted")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        tx.decide_proposal("p1", "alice", "accepted")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        tx.decide_proposal("p1", "alice", "rejected")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        tx.decide_proposal("p2", "alice", "rejected")
            .await
            .unwrap()
            .is_some()
    );
    assert!(tx.end_session("s1", "stopped").await.unwrap());
    assert!(!tx.end_session("s1", "again").await.unwrap());
    tx.commit().await.unwrap();

    let session = store.keep_session("s1").await.unwrap().unwrap();
    assert_eq!(
        session.taint_source.as_deref(),
        Some("egress response from https://a.example/")
    );
    assert_eq!(session.end_reason.as_deref(), Some("stopped"));
    assert_eq!(
        store.keep_memory("alice", "helper").await.unwrap(),
        [("{\"text\":\"p1\"}".to_owned(), false)]
    );
    assert!(store.keep_memory("bob", "helper").await.unwrap().is_empty());
    assert_eq!(
        store
            .keep_proposals("alice", Some("plan"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.keep_proposals("alice", None).await.unwrap().len(), 3);
    assert!(store.keep_proposals("bob", None).await.unwrap().is_empty());
    let decided = store.keep_proposal("p1").await.unwrap().unwrap();
    assert_eq!(decided.state, "accepted");
    assert!(decided.decided_at_ms.is_some());
}

#[tokio::test]
async fn a_proposal_must_belong_to_a_session_and_have_a_known_kind() {
    let store = crate::support::fresh().await;
    let mut tx = store.keep_begin().await.unwrap();
    assert!(
        tx.insert_proposal(&proposal("p1", "alice", "memory", "x"))
            .await
            .is_err()
    );
    // A failed statement ends the transaction on PostgreSQL: each write starts anew.
    drop(tx);
    let mut tx = store.keep_begin().await.unwrap();
    tx.insert_session(("s1", "alice"), ("helper", 1), "h1")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut tx = store.keep_begin().await.unwrap();
    assert!(
        tx.insert_proposal(&proposal("p2", "alice", "deploy", "x"))
            .await
            .is_err()
    );
}
