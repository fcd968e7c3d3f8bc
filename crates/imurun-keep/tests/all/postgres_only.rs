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
    // The uses' session, running (a use of a session that has ended is no one's to answer).
    database.sql(&format!(
        "INSERT INTO keep_sessions (id, user_name, agent, agent_version, created_at_ms, host_id) \
         VALUES ('s1', 'alice', 'maker', 1, {now_ms}, 'gone-host:1')"
    ));
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
    let listed = s.keep.approvals().list(&s.alice).await.unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let before = s
        .host
        .keep
        .journal()
        .list(&s.host.operator)
        .await
        .unwrap()
        .len();
    let answered = s
        .keep
        .approvals()
        .answer(&s.alice, "ea-gone", true, None)
        .await;
    assert!(
        matches!(answered, Err(imurun_keep::KeepError::Conflict(_))),
        "{answered:?}"
    );
    assert_eq!(
        s.host
            .keep
            .journal()
            .list(&s.host.operator)
            .await
            .unwrap()
            .len(),
        before,
        "nothing journaled"
    );
    assert_eq!(
        database.sql("SELECT state FROM keep_egress_waits WHERE id = 'ea-gone'"),
        "waiting"
    );
    s.keep
        .approvals()
        .answer(&s.alice, "ea-live", true, None)
        .await
        .expect("a live host's use is answered");
    assert_eq!(
        database.sql("SELECT state FROM keep_egress_waits WHERE id = 'ea-live'"),
        "approved"
    );
    assert_eq!(
        s.host
            .keep
            .journal()
            .list(&s.host.operator)
            .await
            .unwrap()
            .len(),
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

/// The backend holding `host`'s database's claims is ended, as a database restart or a lost
/// connection ends it: every session-level advisory lock taken in this test's database goes.
fn end_claim_connections(host: &Host) {
    let database = host.database.as_ref().expect("a PostgreSQL host");
    database.sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
}

/// Whether the name `host_id` is held by a live host, as an answering host asks.
async fn held(store: &imurun_store::Store, host_id: &str) -> bool {
    let mut tx = store.keep_begin().await.unwrap();
    let gone = tx.host_gone(host_id).await.unwrap();
    drop(tx);
    !gone
}

/// A claim whose connection was lost (the database restarted, failed over or ended it) is
/// taken again as soon as the database answers: the name is held again, a second host is
/// still refused, and the claim is not lost.
#[tokio::test]
async fn a_claim_lost_with_its_connection_is_taken_again() {
    let host = Host::new().await;
    let store = imurun_store::Store::open_url(&host.url).await.unwrap();
    let mut claim = store.claim_host("web:9000").await.unwrap().unwrap();
    assert!(held(&store, "web:9000").await);
    end_claim_connections(&host);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut was_down = false;
    loop {
        if held(&store, "web:9000").await {
            if was_down {
                break;
            }
        } else {
            was_down = true;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the claim was never taken again"
        );
        // Asked often, as answering hosts ask: asking never stands in the claim's way.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(was_down, "the claim went with its connection");
    let second = store.claim_host("web:9000").await;
    assert!(second.is_err(), "a second host is still refused");
    let lost = tokio::time::timeout(std::time::Duration::from_secs(3), claim.lost()).await;
    assert!(lost.is_err(), "the claim is held, not lost");
}

/// While a host's claim is down, another host takes the same name: the first host is told
/// its name is lost (it stops serving) rather than run beside the other under one name.
#[tokio::test]
async fn a_name_taken_while_its_claim_was_down_is_lost() {
    let host = Host::new().await;
    let store = imurun_store::Store::open_url(&host.url).await.unwrap();
    let mut first = store.claim_host("web:9001").await.unwrap().unwrap();
    end_claim_connections(&host);
    // The ended backend lets go of its lock a moment after it is told to end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let _other = loop {
        match store.claim_host("web:9001").await {
            Ok(Some(claim)) => break claim,
            other => assert!(
                std::time::Instant::now() < deadline,
                "the name was never free while the first claim was down: {other:?}"
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    tokio::time::timeout(std::time::Duration::from_secs(15), first.lost())
        .await
        .expect("the first host learns its name is lost");
}
