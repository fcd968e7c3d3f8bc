//! Replay after `Last-Event-ID`, in the hub: exactly the missed events, then live ones, with a
//! notice when some can no longer be replayed.

use imurun_server::{EventHub, HubConfig};
use serde_json::{Value, json};

use crate::support::{drain, ids, publish, types};

fn hub_keeping(buffer_events_max: usize) -> EventHub {
    EventHub::new(HubConfig {
        buffer_events_max,
        ..HubConfig::default()
    })
}

/// Publishes `count` global events, subscribes after `last_event_id`, publishes one more, and
/// checks everything received with `ts` removed.
fn check(buffer_events_max: usize, count: u64, last_event_id: u64, expected: &[Value]) {
    let hub = hub_keeping(buffer_events_max);
    for _ in 0..count {
        publish(&hub, None, "token");
    }
    let mut subscription = hub.subscribe(None, Some(last_event_id));
    publish(&hub, None, "live");
    let mut received = drain(&mut subscription);
    for value in &mut received {
        value.as_object_mut().map(|object| object.remove("ts"));
        value
            .as_object_mut()
            .map(|object| object.remove("session_id"));
    }
    assert_eq!(
        received, expected,
        "buffer {buffer_events_max}, {count} events, after {last_event_id}"
    );
}

#[test]
fn replay_yields_the_newer_buffered_events_then_live_ones() {
    check(
        10,
        5,
        3,
        &[
            json!({"type": "token", "id": 4}),
            json!({"type": "token", "id": 5}),
            json!({"type": "live", "id": 6}),
        ],
    );
    check(10, 5, 5, &[json!({"type": "live", "id": 6})]);
    check(
        10,
        2,
        0,
        &[
            json!({"type": "token", "id": 1}),
            json!({"type": "token", "id": 2}),
            json!({"type": "live", "id": 3}),
        ],
    );
}

#[test]
fn an_id_older_than_the_buffer_gets_a_gap_notice_first() {
    check(
        3,
        8,
        2,
        &[
            json!({"type": "stream.gap", "missed_from": 3, "missed_to": 5}),
            json!({"type": "token", "id": 6}),
            json!({"type": "token", "id": 7}),
            json!({"type": "token", "id": 8}),
            json!({"type": "live", "id": 9}),
        ],
    );
    // Just inside the buffer: no gap.
    check(
        3,
        8,
        5,
        &[
            json!({"type": "token", "id": 6}),
            json!({"type": "token", "id": 7}),
            json!({"type": "token", "id": 8}),
            json!({"type": "live", "id": 9}),
        ],
    );
    // With replay off every missed event is a gap.
    check(
        0,
        4,
        1,
        &[
            json!({"type": "stream.gap", "missed_from": 2, "missed_to": 4}),
            json!({"type": "live", "id": 5}),
        ],
    );
}

#[test]
fn an_id_the_hub_never_issued_gets_a_reset_notice_and_the_whole_buffer() {
    // What a client sees after the server restarted: its id is ahead of the new hub's.
    check(
        3,
        4,
        900,
        &[
            json!({"type": "stream.reset", "last_event_id": 900, "replay_from": 2}),
            json!({"type": "token", "id": 2}),
            json!({"type": "token", "id": 3}),
            json!({"type": "token", "id": 4}),
            json!({"type": "live", "id": 5}),
        ],
    );
    check(
        3,
        0,
        7,
        &[
            json!({"type": "stream.reset", "last_event_id": 7, "replay_from": 1}),
            json!({"type": "live", "id": 1}),
        ],
    );
}

#[test]
fn replay_follows_the_session_filter() {
    let hub = EventHub::default();
    publish(&hub, Some("a"), "a.1");
    publish(&hub, Some("b"), "b.2");
    publish(&hub, None, "global.3");
    publish(&hub, Some("a"), "a.4");
    let mut subscription = hub.subscribe(Some("a".into()), Some(1));
    assert_eq!(types(&drain(&mut subscription)), ["global.3", "a.4"]);
}

#[test]
fn gap_and_reset_notices_have_no_id_and_carry_a_ts() {
    let hub = hub_keeping(1);
    publish(&hub, None, "token");
    publish(&hub, None, "token");
    for last_event_id in [0, 99] {
        let mut subscription = hub.subscribe(None, Some(last_event_id));
        let notice = subscription.try_recv().expect("a notice");
        assert_eq!(notice.id(), None);
        assert_eq!(notice.session_id(), None);
        assert!(notice.event_type().starts_with("stream."));
        assert!(notice.value()["ts"].as_u64().is_some());
    }
}

#[test]
fn subscribing_while_another_thread_publishes_loses_and_repeats_nothing() {
    const EVENTS: u64 = 20_000;
    let hub = EventHub::new(HubConfig {
        buffer_events_max: 30_000,
        queue_events_max: 30_000,
    });
    let publisher = {
        let hub = hub.clone();
        std::thread::spawn(move || {
            for _ in 0..EVENTS {
                publish(&hub, None, "token");
            }
        })
    };
    // Subscribe somewhere in the middle of the publishing, replaying from the start.
    while hub.last_event_id().unwrap_or(0) < EVENTS / 10 {
        std::thread::yield_now();
    }
    let mut subscription = hub.subscribe(None, Some(0));
    publisher.join().expect("publisher thread");
    let received = ids(&drain(&mut subscription));
    let expected: Vec<Option<u64>> = (1..=EVENTS).map(Some).collect();
    assert!(received == expected, "ids not 1..={EVENTS} exactly once");
}
