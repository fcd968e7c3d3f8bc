//! A slow subscriber never slows the publisher: it is dropped with `stream.lagged`.

use imurun_core::EventSink;
use imurun_server::{EventHub, HubConfig, QUEUE_EVENTS_MAX_DEFAULT};
use serde_json::json;

use crate::support::{drain, ids, publish};

#[tokio::test]
async fn a_slow_subscriber_is_dropped_with_stream_lagged_while_a_fast_one_gets_everything() {
    const EVENTS: u64 = 100_000;
    let hub = EventHub::default();
    let mut slow = hub.subscribe(None, None);
    let mut fast = hub.subscribe(None, None);
    let mut fast_next_id = 1;
    // Publishing 100k events returns although `slow` never reads: that is the non-blocking
    // property. `fast` drains after every event, so it never falls behind.
    for _ in 0..EVENTS {
        publish(&hub, Some("s1"), "token");
        while let Some(record) = fast.try_recv() {
            assert_eq!(record.id(), Some(fast_next_id));
            fast_next_id += 1;
        }
    }
    assert_eq!(
        fast_next_id,
        EVENTS + 1,
        "the fast subscriber got every event"
    );
    assert_eq!(hub.subscriber_count(), 1, "the slow subscriber was dropped");
    assert!(hub.has_subscriber(Some("s1")), "the fast one still counts");

    let queue = u64::try_from(QUEUE_EVENTS_MAX_DEFAULT).expect("small");
    let mut slow_ids = Vec::new();
    while let Some(record) = slow.recv().await {
        if record.id().is_none() {
            assert_eq!(
                record.value()["missed_from"],
                json!(queue + 1),
                "the first event that did not fit"
            );
            assert_eq!(record.event_type(), "stream.lagged");
            assert_eq!(record.value()["queue_events_max"], json!(queue));
            assert!(slow.recv().await.is_none(), "the lagged notice is the last");
            break;
        }
        slow_ids.push(record.id());
    }
    let expected: Vec<Option<u64>> = (1..=queue).map(Some).collect();
    assert_eq!(slow_ids, expected, "a full queue, in order");
}

#[test]
fn the_lagged_notice_fits_even_in_the_smallest_queues() {
    for queue_events_max in [0, 1, 2] {
        let hub = EventHub::new(HubConfig {
            queue_events_max,
            ..HubConfig::default()
        });
        let mut slow = hub.subscribe(None, None);
        for _ in 0..5 {
            publish(&hub, None, "token");
        }
        let received = drain(&mut slow);
        let mut expected: Vec<Option<u64>> = (1..=queue_events_max as u64).map(Some).collect();
        expected.push(None);
        assert_eq!(ids(&received), expected, "queue {queue_events_max}");
        let lagged = received.last().expect("a notice");
        assert_eq!(lagged["type"], "stream.lagged");
        assert_eq!(lagged["missed_from"], queue_events_max as u64 + 1);
        assert_eq!(hub.subscriber_count(), 0);
    }
}

#[test]
fn events_a_subscriber_does_not_watch_do_not_fill_its_queue() {
    let hub = EventHub::new(HubConfig {
        queue_events_max: 2,
        ..HubConfig::default()
    });
    let mut watching_a = hub.subscribe(Some("a".into()), None);
    for _ in 0..10 {
        publish(&hub, Some("b"), "token");
    }
    publish(&hub, Some("a"), "token");
    assert_eq!(ids(&drain(&mut watching_a)), [Some(11)]);
    assert_eq!(hub.subscriber_count(), 1);
}

#[tokio::test]
async fn a_subscription_ends_when_every_hub_clone_is_gone() {
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(None, None);
    let id = hub
        .publish_value(None, json!({"type": "permissions"}))
        .expect("publish");
    drop(hub);
    assert_eq!(
        subscription.recv().await.and_then(|record| record.id()),
        Some(id)
    );
    assert!(subscription.recv().await.is_none());
}
