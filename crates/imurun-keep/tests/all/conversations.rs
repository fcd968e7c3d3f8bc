//! A session's conversation is kept for its person: her messages and files, the agent's
//! replies, the errors and the network uses, in order; read by her alone; deleted by her; and
//! still there, the session ended as `host_restarted`, when the host starts again.

use std::sync::Arc;

use imurun_keep::KeepError;
use imurun_keep::service::HOST_RESTARTED;
use imurun_testkit::{Guest, Upstream};
use serde_json::json;

use super::session_bench::{Sessions, answer, manifest, rule};
use super::support::TestClock;

#[tokio::test]
async fn a_conversation_is_kept_in_order_and_read_by_its_person_alone() {
    let upstream = Upstream::start(answer).await;
    let s = Sessions::start(vec![upstream.port]).await;
    let rules = json!({"egress": {"mode": "allow", "rules": [rule(upstream.port, &["GET"])]}});
    s.deploy(Guest::ScriptedHttp, manifest("fetcher", rules))
        .await;
    let session = s.keep.sessions().start(&s.alice, "fetcher").await.unwrap();
    assert_eq!(session.title, "fetcher", "no message yet: the agent's name");
    let id = session.id.clone();

    s.say(&s.alice, &id, json!({"reply": "hello alice"})).await;
    let url = format!("http://127.0.0.1:{}/api/news", upstream.port);
    let fetched = s
        .say(
            &s.alice,
            &id,
            json!({"fetch": {"method": "GET", "url": url}}),
        )
        .await;
    s.keep
        .sessions()
        .upload_file(&s.alice, &id, "notes.txt", "line one\nline two\n")
        .await
        .unwrap();
    let trapped = s
        .keep
        .sessions()
        .send_message(&s.alice, &id, &json!({"trap": true}).to_string())
        .await;
    assert!(trapped.is_err(), "{trapped:?}");

    let conversation = s.keep.sessions().conversation(&s.alice, &id).await.unwrap();
    let roles: Vec<&str> = conversation
        .entries
        .iter()
        .map(|entry| entry.role.as_str())
        .collect();
    assert_eq!(
        roles,
        [
            "person", "agent", "person", "network", "agent", "file", "agent", "person", "error"
        ]
    );
    let texts: Vec<&str> = conversation
        .entries
        .iter()
        .map(|entry| entry.text.as_str())
        .collect();
    assert_eq!(texts[0], json!({"reply": "hello alice"}).to_string());
    assert_eq!(texts[1], "hello alice");
    assert!(
        texts[3].contains(&format!("GET {url}")) && texts[3].contains("allows"),
        "{}",
        texts[3]
    );
    assert_eq!(texts[4], fetched[0]);
    assert_eq!(
        (texts[5], conversation.entries[5].bytes),
        ("notes.txt", 18),
        "a file is kept by its name and size, not its text"
    );
    assert!(texts[8].starts_with("trap: "), "{}", texts[8]);
    // The title is the agent's and the first message's first words; the end has its reason.
    assert_eq!(
        conversation.session.title,
        format!("fetcher: {}", json!({"reply": "hello alice"}))
    );
    assert_eq!(conversation.session.end_reason.as_deref(), Some("trap"));

    // Nobody else reads it: bob as for an id that never existed, the operator not at all.
    let bobs = s.keep.sessions().conversation(&s.bob, &id).await;
    assert!(matches!(bobs, Err(KeepError::NotFound(_))), "{bobs:?}");
    let none = s.keep.sessions().conversation(&s.bob, "ks-none").await;
    assert_eq!(format!("{bobs:?}"), format!("{none:?}"));
    let operators = s.keep.sessions().conversation(&s.host.operator, &id).await;
    assert!(
        matches!(operators, Err(KeepError::Forbidden(_))),
        "{operators:?}"
    );
    // A file handed first taints a session by its name; a refused use names its URL.
    let second = s
        .keep
        .sessions()
        .start(&s.alice, "fetcher")
        .await
        .unwrap()
        .id;
    s.keep
        .sessions()
        .upload_file(&s.alice, &second, "secret-diagnosis.txt", "x")
        .await
        .unwrap();
    let refused = format!("http://127.0.0.1:{}/elsewhere/secret-path", upstream.port);
    s.say(
        &s.alice,
        &second,
        json!({"fetch": {"method": "GET", "url": refused}}),
    )
    .await;
    // The journal names the sessions and holds none of what was said, handed or fetched:
    // the taint's source and a refused URL by their hashes, the trap by its kind.
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    let text = serde_json::to_string(&journal).unwrap();
    assert!(text.contains(&format!("session:{id}")));
    for said in [
        "hello alice",
        "notes.txt",
        "line one",
        "/api/news",
        "secret-diagnosis",
        "secret-path",
        "the script asked for a trap",
    ] {
        assert!(!text.contains(said), "the journal holds {said:?}");
    }
    let taints = journal
        .iter()
        .filter(|entry| entry.detail["action"] == "taint")
        .count();
    assert_eq!(taints, 2, "{text}");
}

#[tokio::test]
async fn a_person_deletes_her_conversation_and_only_hers() {
    let s = Sessions::start(Vec::new()).await;
    s.deploy(Guest::Scripted, manifest("talker", json!({})))
        .await;
    let id = s
        .keep
        .sessions()
        .start(&s.alice, "talker")
        .await
        .unwrap()
        .id;
    s.say(&s.alice, &id, json!({"reply": "kept"})).await;

    let bobs = s.keep.sessions().delete(&s.bob, &id).await;
    assert!(matches!(bobs, Err(KeepError::NotFound(_))), "{bobs:?}");
    let operators = s.keep.sessions().delete(&s.host.operator, &id).await;
    assert!(
        matches!(operators, Err(KeepError::Forbidden(_))),
        "{operators:?}"
    );
    assert_eq!(
        s.keep
            .sessions()
            .conversation(&s.alice, &id)
            .await
            .unwrap()
            .entries
            .len(),
        2
    );

    // A live session is stopped first: its slot is free again.
    let free = s.free_slots();
    s.keep.sessions().delete(&s.alice, &id).await.unwrap();
    assert_eq!(s.free_slots(), free + 1);
    for read in [
        s.keep.sessions().conversation(&s.alice, &id).await.err(),
        s.keep.sessions().get(&s.alice, &id).await.err(),
        s.keep.sessions().delete(&s.alice, &id).await.err(),
    ] {
        assert!(matches!(read, Some(KeepError::NotFound(_))), "{read:?}");
    }
    assert!(s.keep.sessions().list(&s.alice).await.unwrap().is_empty());
    let entry = s.host.last_entry().await;
    assert_eq!(
        (entry.actor.as_str(), entry.subject.as_str(), &entry.detail),
        (
            "user:alice",
            format!("session:{id}").as_str(),
            &json!({"action": "delete"})
        )
    );
}

#[tokio::test]
async fn sessions_left_running_end_as_host_restarted_and_stay_readable() {
    let s = Sessions::start(Vec::new()).await;
    s.deploy(Guest::Scripted, manifest("talker", json!({})))
        .await;
    let running = s
        .keep
        .sessions()
        .start(&s.alice, "talker")
        .await
        .unwrap()
        .id;
    let stopped = s
        .keep
        .sessions()
        .start(&s.alice, "talker")
        .await
        .unwrap()
        .id;
    s.say(&s.alice, &running, json!({"reply": "before the restart"}))
        .await;
    s.keep.sessions().stop(&s.alice, &stopped).await.unwrap();

    // The host starts again over the same database and Keep folder.
    let store = imurun_store::Store::open_url(&s.host.url).await.unwrap();
    let clock: Arc<dyn imurun_core::Clock> = Arc::new(TestClock(s.host.now.clone()));
    let again = imurun_keep::init::open(&s.host.dir.path().join("keep"), store, clock)
        .await
        .unwrap();
    assert_eq!(again.sessions().end_left_running().await.unwrap(), 1);
    assert_eq!(again.sessions().end_left_running().await.unwrap(), 0);

    let view = again.sessions().get(&s.alice, &running).await.unwrap();
    assert_eq!(view.end_reason.as_deref(), Some(HOST_RESTARTED));
    assert!(view.ended_at_ms.is_some() && !view.live);
    let kept = again.sessions().get(&s.alice, &stopped).await.unwrap();
    assert_eq!(kept.end_reason.as_deref(), Some("stopped"));
    let conversation = again
        .sessions()
        .conversation(&s.alice, &running)
        .await
        .unwrap();
    let texts: Vec<&str> = conversation
        .entries
        .iter()
        .map(|entry| entry.text.as_str())
        .collect();
    assert_eq!(texts[1], "before the restart");
    let entry = s.host.last_entry().await;
    assert_eq!(
        (
            entry.actor.as_str(),
            entry.subject,
            entry.detail["reason"].clone()
        ),
        ("host", format!("session:{running}"), json!(HOST_RESTARTED))
    );
}
