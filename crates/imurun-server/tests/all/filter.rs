//! Which events reach a subscriber with and without a session filter.

use imurun_server::EventHub;

use crate::support::{drain, publish, types};

/// Subscribes with `filter`, publishes a fixed mix of session and global events, and checks
/// the types received.
fn check(filter: Option<&str>, expected: &[&str]) {
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(filter.map(str::to_owned), None);
    publish(&hub, Some("a"), "a.token");
    publish(&hub, None, "session.created");
    publish(&hub, Some("b"), "b.token");
    publish(&hub, None, "permissions");
    publish(&hub, Some("a"), "a.turn.end");
    assert_eq!(
        types(&drain(&mut subscription)),
        expected,
        "filter {filter:?}"
    );
}

#[test]
fn a_subscriber_gets_its_session_and_the_global_events() {
    let all = [
        "a.token",
        "session.created",
        "b.token",
        "permissions",
        "a.turn.end",
    ];
    check(None, &all);
    check(
        Some("a"),
        &["a.token", "session.created", "permissions", "a.turn.end"],
    );
    check(Some("b"), &["session.created", "b.token", "permissions"]);
    check(Some("nobody"), &["session.created", "permissions"]);
}
