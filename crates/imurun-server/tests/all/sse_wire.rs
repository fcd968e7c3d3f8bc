//! The SSE endpoint through a real axum server: wire format, replay on reconnect, the session
//! query, heartbeats, and reading `Last-Event-ID`.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use imurun_core::EventSink;
use imurun_server::{EventHub, HubConfig, last_event_id};

use crate::support::{SseClient, publish, serve, without_timestamps};

/// Long enough that no heartbeat comes between the messages a test waits for.
const HEARTBEAT_QUIET: Duration = Duration::from_secs(600);

#[tokio::test]
async fn each_event_is_one_message_with_its_id_and_one_json_object() {
    let hub = EventHub::new(HubConfig {
        buffer_events_max: 2,
        ..HubConfig::default()
    });
    let addr = serve(&hub, HEARTBEAT_QUIET).await;
    for _ in 0..3 {
        publish(&hub, None, "permissions");
    }
    // Replay from 0 with only 2 kept: a gap notice (no id line), then events 2 and 3.
    let mut client = SseClient::connect(addr, "/events", Some("0")).await;
    assert!(client.headers.contains("content-type: text/event-stream"));
    assert!(client.headers.contains("cache-control: no-cache"));
    publish(&hub, Some("s1"), "token");
    let mut wire = String::new();
    for _ in 0..4 {
        let message = client.next_event().await.expect("a message");
        wire.push_str(&message.text);
        wire.push_str("\n\n");
    }
    insta::assert_snapshot!(without_timestamps(&wire), @r#"
    data: {"type":"stream.gap","missed_from":1,"missed_to":1,"ts":"<ts>"}

    id: 2
    data: {"type":"permissions","session_id":null,"id":2,"ts":"<ts>"}

    id: 3
    data: {"type":"permissions","session_id":null,"id":3,"ts":"<ts>"}

    id: 4
    data: {"type":"token","session_id":"s1","id":4,"ts":"<ts>"}
    "#);
}

#[tokio::test]
async fn reconnecting_with_last_event_id_gets_exactly_the_missed_events() {
    let hub = EventHub::default();
    let addr = serve(&hub, HEARTBEAT_QUIET).await;

    let mut first = SseClient::connect(addr, "/events", None).await;
    for _ in 0..3 {
        publish(&hub, Some("s1"), "token");
    }
    let mut last_seen = None;
    for expected in 1..=3 {
        let message = first.next_event().await.expect("a live event");
        assert_eq!(message.id(), Some(expected));
        assert_eq!(message.data()["id"], expected);
        last_seen = message.id();
    }
    drop(first);

    for _ in 0..4 {
        publish(&hub, Some("s1"), "token");
    }
    let last_seen = last_seen.expect("an id").to_string();
    let mut second = SseClient::connect(addr, "/events", Some(&last_seen)).await;
    publish(&hub, Some("s1"), "turn.end");
    let mut received = Vec::new();
    for _ in 0..5 {
        let message = second.next_event().await.expect("an event");
        received.push((message.id(), message.data()["type"].clone()));
    }
    let expected: Vec<_> = [4, 5, 6, 7]
        .map(|id| (Some(id), "token".into()))
        .into_iter()
        .chain([(Some(8), "turn.end".into())])
        .collect();
    assert_eq!(received, expected);
}

#[tokio::test]
async fn the_session_query_narrows_the_stream() {
    let hub = EventHub::default();
    let addr = serve(&hub, HEARTBEAT_QUIET).await;
    let mut client = SseClient::connect(addr, "/events?session=s2", None).await;
    publish(&hub, Some("s1"), "token");
    publish(&hub, None, "session.created");
    publish(&hub, Some("s2"), "token");
    let first = client.next_event().await.expect("the global event");
    assert_eq!(first.id(), Some(2));
    assert_eq!(first.data()["type"], "session.created");
    let second = client.next_event().await.expect("the s2 event");
    assert_eq!(second.id(), Some(3));
    assert_eq!(second.data()["session_id"], "s2");
}

#[tokio::test]
async fn a_silent_stream_sends_heartbeat_comments() {
    let hub = EventHub::default();
    let addr = serve(&hub, Duration::from_millis(20)).await;
    let mut client = SseClient::connect(addr, "/events", None).await;
    let message = client.next_message().await.expect("a heartbeat");
    assert_eq!(message.text, ": heartbeat");
    // The stream still carries events after heartbeats.
    publish(&hub, None, "permissions");
    let event = client.next_event().await.expect("an event");
    assert_eq!(event.id(), Some(1));
}

#[tokio::test]
async fn a_closed_connection_unsubscribes_by_the_next_heartbeat() {
    let hub = EventHub::default();
    let addr = serve(&hub, Duration::from_millis(20)).await;
    let client = SseClient::connect(addr, "/events?session=s1", None).await;
    assert!(hub.has_subscriber(Some("s1")));
    drop(client);
    // Polls instead of sleeping a fixed time: the bound is a safety net, not an assertion.
    let unsubscribed = async {
        while hub.subscriber_count() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), unsubscribed)
        .await
        .expect("the subscription is dropped once the server notices the closed connection");
    assert!(!hub.has_subscriber(Some("s1")));
}

#[test]
fn last_event_id_reads_a_number_and_ignores_anything_else() {
    let cases: [(Option<&str>, Option<u64>); 6] = [
        (None, None),
        (Some("42"), Some(42)),
        (Some(" 7 "), Some(7)),
        (Some(""), None),
        (Some("abc"), None),
        (Some("-1"), None),
    ];
    for (header, expected) in cases {
        let mut headers = HeaderMap::new();
        if let Some(header) = header {
            headers.insert(
                "Last-Event-ID",
                HeaderValue::from_str(header).expect("header"),
            );
        }
        assert_eq!(last_event_id(&headers), expected, "header {header:?}");
    }
}
