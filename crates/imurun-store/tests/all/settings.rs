//! Settings: set and upsert, get one or all, write many in one transaction, delete.

use std::collections::BTreeMap;

use imurun_store::{SETTINGS_MAX, SETTINGS_WRITE_ENTRIES_MAX, Store, StoreError};
use serde_json::{Value, json};

/// Asserts that the table holds exactly `expected`, through both readers.
async fn check(store: &Store, expected: &[(&str, Value)]) {
    let expected: BTreeMap<String, Value> = expected
        .iter()
        .map(|(key, value)| ((*key).to_owned(), value.clone()))
        .collect();
    assert_eq!(store.get_all_settings().await.expect("get all"), expected);
    for (key, value) in &expected {
        assert_eq!(
            store.get_setting(key).await.expect("get").as_ref(),
            Some(value),
            "{key}"
        );
    }
}

#[tokio::test]
async fn a_set_replaces_the_value_and_a_delete_removes_it() {
    let store = crate::support::fresh().await;
    check(&store, &[]).await;
    assert_eq!(
        store.get_setting("agent.maxSteps").await.expect("get"),
        None
    );

    store
        .set_setting("agent.maxSteps", &json!(12))
        .await
        .expect("set");
    store
        .set_setting("permissions.mode", &json!("ask"))
        .await
        .expect("set");
    check(
        &store,
        &[
            ("agent.maxSteps", json!(12)),
            ("permissions.mode", json!("ask")),
        ],
    )
    .await;

    store
        .set_setting("agent.maxSteps", &json!(20))
        .await
        .expect("upsert");
    check(
        &store,
        &[
            ("agent.maxSteps", json!(20)),
            ("permissions.mode", json!("ask")),
        ],
    )
    .await;

    assert!(
        store
            .delete_setting("agent.maxSteps")
            .await
            .expect("delete")
    );
    assert!(
        !store
            .delete_setting("agent.maxSteps")
            .await
            .expect("delete again")
    );
    check(&store, &[("permissions.mode", json!("ask"))]).await;
}

#[tokio::test]
async fn every_kind_of_json_value_reads_back() {
    let store = crate::support::fresh().await;
    let values = [
        ("null", json!(null)),
        ("bool", json!(true)),
        ("int", json!(-9_007_199_254_740_993_i64)),
        ("float", json!(0.1)),
        ("text", json!("日本語 ✓ 'quotes' \"and\" \n")),
        ("list", json!([1, "two", [3]])),
        ("map", json!({"z": 1, "a": {"b": []}})),
    ];
    let entries: Vec<(&str, &Value)> = values.iter().map(|(key, value)| (*key, value)).collect();
    store.set_settings(entries).await.expect("set many");
    check(&store, &values).await;
}

#[tokio::test]
async fn set_settings_writes_in_order_so_a_repeated_key_keeps_its_last_value() {
    let store = crate::support::fresh().await;
    let (first, last) = (json!("first"), json!("last"));
    store
        .set_settings([("ui.theme", &first), ("ui.theme", &last)])
        .await
        .expect("set many");
    check(&store, &[("ui.theme", last)]).await;
}

/// A batch with one bad entry writes none of them: every entry is checked before the
/// transaction starts.
#[tokio::test]
async fn a_batch_with_a_bad_entry_writes_nothing() {
    let store = crate::support::fresh().await;
    let value = json!(1);
    let result = store
        .set_settings([("good.key", &value), ("bad key", &value)])
        .await;
    assert!(
        matches!(
            &result,
            Err(StoreError::InvalidId {
                what: "setting key",
                ..
            })
        ),
        "{result:?}"
    );
    check(&store, &[]).await;
}

/// The table stops at SETTINGS_MAX rows; the batch that would pass it is rolled back whole, and
/// replacing an existing value still works.
#[tokio::test]
async fn the_table_holds_at_most_settings_max_rows() {
    let store = crate::support::fresh().await;
    let value = json!(0);
    let keys: Vec<String> = (0..SETTINGS_MAX)
        .map(|index| format!("k.{index}"))
        .collect();
    for batch in keys.chunks(SETTINGS_WRITE_ENTRIES_MAX) {
        store
            .set_settings(batch.iter().map(|key| (key, &value)))
            .await
            .expect("fill");
    }
    let one_too_many = store
        .set_settings([("k.0", &json!("changed")), ("k.new", &value)])
        .await;
    assert!(
        matches!(
            one_too_many,
            Err(StoreError::RowsMaxReached {
                what: "settings",
                ..
            })
        ),
        "{one_too_many:?}"
    );
    let all = store.get_all_settings().await.expect("get all");
    assert_eq!(all.len() as u64, SETTINGS_MAX);
    assert_eq!(
        all.get("k.0"),
        Some(&value),
        "the refused batch was rolled back"
    );

    store
        .set_setting("k.0", &json!("replaced"))
        .await
        .expect("upsert at the limit");
    assert_eq!(
        store.get_setting("k.0").await.expect("get"),
        Some(json!("replaced"))
    );
}

/// A write that waits past the busy timeout for another writer holding the file is "the
/// database is busy, try again" (a 503 at the server), never a failure of the request.
#[tokio::test]
async fn a_write_kept_waiting_by_another_writer_is_unavailable_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imurun.db");
    let store = Store::open(&path).await.unwrap();
    let other = Store::open(&path).await.unwrap();
    // The other opener holds SQLite's write lock (Keep's write lock is taken first thing).
    let held = other.keep_begin().await.unwrap();
    let error = store
        .set_setting("agent.maxSteps", &json!(3))
        .await
        .expect_err("the file is held by another writer");
    assert!(error.is_unavailable(), "{error:?}");
    drop(held);
    store
        .set_setting("agent.maxSteps", &json!(3))
        .await
        .unwrap();
}
