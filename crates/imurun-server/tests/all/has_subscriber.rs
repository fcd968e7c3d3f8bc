//! `EventSink::has_subscriber`: whether anyone could see an approval card for a session.

use imurun_core::EventSink;
use imurun_server::EventHub;

/// Subscribes with each of `filters` and checks `has_subscriber` for sessions s1, s2 and none.
fn check(filters: &[Option<&str>], expected: [bool; 3]) {
    let hub = EventHub::default();
    let _subscriptions: Vec<_> = filters
        .iter()
        .map(|filter| hub.subscribe(filter.map(str::to_owned), None))
        .collect();
    let seen = [
        hub.has_subscriber(Some("s1")),
        hub.has_subscriber(Some("s2")),
        hub.has_subscriber(None),
    ];
    assert_eq!(seen, expected, "subscribed with {filters:?}");
}

#[test]
fn has_subscriber_follows_the_filters() {
    check(&[], [false, false, false]);
    check(&[None], [true, true, true]);
    check(&[Some("s1")], [true, false, true]);
    check(&[Some("s1"), Some("s2")], [true, true, true]);
    check(&[Some("s2"), None], [true, true, true]);
}

#[test]
fn a_dropped_subscription_stops_counting_at_once() {
    let hub = EventHub::default();
    let subscription = hub.subscribe(Some("s1".into()), None);
    assert!(hub.has_subscriber(Some("s1")));
    assert_eq!(hub.subscriber_count(), 1);
    drop(subscription);
    assert!(!hub.has_subscriber(Some("s1")));
    assert_eq!(hub.subscriber_count(), 0);
}

/// The server watches turns through observers; were they counted, a turn's own recorder would
/// make every approval wait for a person nobody shows the card to.
#[test]
fn observers_see_events_in_order_and_are_not_subscribers() {
    use std::sync::{Arc, Mutex};

    let hub = EventHub::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&seen);
    let guard = hub.observe(
        Some("s1".into()),
        Arc::new(move |record| {
            recorded
                .lock()
                .expect("lock")
                .push(record.event_type().to_owned());
        }),
    );
    assert!(!hub.has_subscriber(Some("s1")));
    assert!(!hub.has_subscriber(None));
    assert_eq!(hub.subscriber_count(), 0);
    crate::support::publish(&hub, Some("s1"), "a");
    crate::support::publish(&hub, Some("s2"), "b");
    crate::support::publish(&hub, None, "c");
    drop(guard);
    crate::support::publish(&hub, Some("s1"), "d");
    assert_eq!(*seen.lock().expect("lock"), ["a", "c"]);
}
