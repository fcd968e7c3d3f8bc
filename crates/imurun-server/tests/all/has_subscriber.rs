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
