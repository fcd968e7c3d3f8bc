//! What only several hosts on one PostgreSQL database can meet (run by `tests/postgres.rs`).

use serde_json::json;

use super::support::Host;

/// A use recorded as waiting on a host that is gone (killed, or restarted under another name:
/// no live host holds its name) is answered by nobody: the answer is refused, nothing is
/// journaled, and the row stays unanswered. The same answer to a use waiting on a live host
/// is recorded.
#[tokio::test]
async fn an_answer_to_a_use_waiting_on_a_gone_host_is_refused() {
    let s = super::sessions::Sessions::start(Vec::new()).await;
    let database = s.host.database.as_ref().expect("a PostgreSQL host");
    let store = imurun_store::Store::open_url(&s.host.url).await.unwrap();
    let _live = store.claim_host("live-host:1").await.unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    for (id, host) in [("ea-gone", "gone-host:1"), ("ea-live", "live-host:1")] {
        let view = json!({
            "session_id": "s1", "agent": "maker", "agent_version": 1, "method": "GET",
            "url": "https://example.org/", "headers": [], "tainted": false, "body_bytes": 0,
            "body_sha256": "00", "credentials": [], "device_signature": false,
            "hashes": {}, "asked_at_ms": now_ms,
        });
        database.sql(&format!(
            "INSERT INTO keep_egress_waits (id, user_name, host, view, asked_at_ms, \
             expires_at_ms, state) VALUES ('{id}', 'alice', '{host}', '{view}', {now_ms}, {}, \
             'waiting')",
            now_ms + 60_000
        ));
    }
    let listed = s.keep.approvals(&s.alice).await.unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let before = s.host.keep.journal(&s.host.operator).await.unwrap().len();
    let answered = s
        .keep
        .answer_approval(&s.alice, "ea-gone", true, None)
        .await;
    assert!(
        matches!(answered, Err(imurun_keep::KeepError::Conflict(_))),
        "{answered:?}"
    );
    assert_eq!(
        s.host.keep.journal(&s.host.operator).await.unwrap().len(),
        before,
        "nothing journaled"
    );
    assert_eq!(
        database.sql("SELECT state FROM keep_egress_waits WHERE id = 'ea-gone'"),
        "waiting"
    );
    s.keep
        .answer_approval(&s.alice, "ea-live", true, None)
        .await
        .expect("a live host's use is answered");
    assert_eq!(
        database.sql("SELECT state FROM keep_egress_waits WHERE id = 'ea-live'"),
        "approved"
    );
    assert_eq!(
        s.host.keep.journal(&s.host.operator).await.unwrap().len(),
        before + 1
    );
}

/// Two hosts cannot run under one name: the second claim is refused by name.
#[tokio::test]
async fn a_host_name_is_claimed_once() {
    let host = Host::new().await;
    let store = imurun_store::Store::open_url(&host.url).await.unwrap();
    let first = store.claim_host("web:8484").await.unwrap();
    assert!(first.is_some());
    let second = store.claim_host("web:8484").await;
    let error = second.expect_err("a second host with the same name");
    assert!(error.to_string().contains("web:8484"), "{error}");
    assert!(store.claim_host("web:8485").await.unwrap().is_some());
    drop(first);
    // Let go: the name can be claimed again once the first holder's connection closes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match store.claim_host("web:8484").await {
            Ok(Some(_)) => break,
            _ if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            other => panic!("the name was never let go: {other:?}"),
        }
    }
}
