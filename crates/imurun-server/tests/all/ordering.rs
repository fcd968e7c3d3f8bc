//! Ids, stamps and what `publish_value` accepts.

use imurun_core::{Event, EventSink, TurnStatus};
use imurun_server::{EventHub, HubError};
use serde_json::{Value, json};

use crate::support::{drain, ids, publish, types};

#[test]
fn ids_start_at_one_and_follow_publish_order() {
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(None, None);
    assert_eq!(hub.last_event_id(), None);
    let published: Vec<u64> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|event_type| publish(&hub, None, event_type))
        .collect();
    assert_eq!(published, [1, 2, 3, 4]);
    assert_eq!(hub.last_event_id(), Some(4));
    let received = drain(&mut subscription);
    assert_eq!(ids(&received), [Some(1), Some(2), Some(3), Some(4)]);
    assert_eq!(types(&received), ["a", "b", "c", "d"]);
}

#[test]
fn records_carry_the_fields_plus_id_and_ts() {
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(None, None);
    hub.publish_value(
        Some("s1"),
        json!({"type": "token", "text": "hi", "id": "overwritten"}),
    )
    .expect("publish");
    let record = subscription.try_recv().expect("one record");
    assert_eq!(record.id(), Some(1));
    assert_eq!(record.session_id(), Some("s1"));
    assert_eq!(record.event_type(), "token");
    let value = record.value();
    assert_eq!(value["type"], "token");
    assert_eq!(value["text"], "hi");
    assert_eq!(value["id"], 1, "the hub's id replaces a field of that name");
    assert_eq!(value["ts"].as_u64(), Some(record.ts_ms()));
    assert!(
        record.ts_ms() > 1_600_000_000_000,
        "ts is Unix milliseconds"
    );
    assert!(!record.json().contains('\n'), "one line of JSON");
}

#[test]
fn values_that_are_not_typed_objects_are_refused() {
    let cases: [Value; 5] = [
        json!(null),
        json!("token"),
        json!([{"type": "token"}]),
        json!({"text": "no type"}),
        json!({"type": 7}),
    ];
    let hub = EventHub::default();
    for value in cases {
        assert_eq!(
            hub.publish_value(None, value.clone()),
            Err(HubError::NotAnEvent),
            "{value}"
        );
    }
    assert_eq!(hub.last_event_id(), None, "a refused value uses no id");
}

#[test]
fn core_events_are_published_with_their_session_id() {
    let hub = EventHub::default();
    let mut watching_s1 = hub.subscribe(Some("s1".into()), None);
    let mut watching_s2 = hub.subscribe(Some("s2".into()), None);
    hub.publish(Event::TurnEnd {
        session_id: Some("s1".into()),
        status: TurnStatus::Done,
        tool_calls: 0,
        calls_ran: 0,
        calls_cached: 0,
        calls_refused: 0,
        skills: Vec::new(),
        steps: 1,
    });
    let received = drain(&mut watching_s1);
    assert_eq!(types(&received), ["turn.end"]);
    assert_eq!(received[0]["session_id"], "s1");
    assert_eq!(received[0]["status"], "done");
    assert_eq!(received[0]["id"], 1);
    assert!(drain(&mut watching_s2).is_empty());
}
