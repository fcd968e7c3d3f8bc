//! The broker's decisions before connecting, driven by `testdata/egress.jsonl` (the same
//! table `imurun keep egress check` is tested with).

use imurun_cell::egress::{Question, decide};
use serde_json::Value;

pub(crate) fn table() -> Vec<Value> {
    include_str!("../../testdata/egress.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// A table row without its `name` and `expect`: the question as the command reads it.
pub(crate) fn question(row: &Value) -> Value {
    let mut question = row.clone();
    let object = question.as_object_mut().unwrap();
    object.remove("name");
    object.remove("expect");
    question
}

#[test]
fn every_case_of_the_table_is_decided_as_it_says() {
    let rows = table();
    assert!(rows.len() >= 60, "the table shrank to {}", rows.len());
    for row in &rows {
        let asked: Question = serde_json::from_value(question(row)).expect("a question");
        let answer = decide(&asked, &[]);
        let expect = &row["expect"];
        assert_eq!(
            answer.decision, expect["decision"],
            "{}: {answer:?}",
            row["name"]
        );
        if let Some(rule) = expect["rule"].as_str() {
            assert_eq!(answer.rule, rule, "{}: {answer:?}", row["name"]);
        }
    }
}

#[test]
fn this_machines_own_addresses_are_refused_and_opened_loopback_ports_are_not() {
    let ask = |json: Value, own: &[std::net::IpAddr]| {
        decide(&serde_json::from_value::<Question>(json).unwrap(), own)
    };
    let rule = serde_json::json!([{"scheme": "https", "host": "me.example.com", "port": 443,
        "methods": ["GET"], "path_prefix": "/"}]);
    let own = ["93.184.216.34".parse().unwrap()];
    let answer = ask(
        serde_json::json!({"rules": rule, "method": "GET", "url": "https://me.example.com/",
            "resolved": ["93.184.216.34"]}),
        &own,
    );
    assert_eq!(
        (answer.decision, answer.rule.as_str()),
        ("deny", "address"),
        "{answer:?}"
    );
    let local = serde_json::json!([{"scheme": "http", "host": "localhost", "port": 8080,
        "methods": ["GET"], "path_prefix": "/"}]);
    let closed = ask(
        serde_json::json!({"rules": local, "method": "GET", "url": "http://localhost:8080/",
            "resolved": ["127.0.0.1"]}),
        &[],
    );
    assert_eq!(closed.decision, "deny", "{closed:?}");
    let opened = ask(
        serde_json::json!({"rules": local, "method": "GET", "url": "http://localhost:8080/",
            "resolved": ["127.0.0.1"], "loopback_ports": [8080]}),
        &[],
    );
    assert_eq!(opened.decision, "allow", "{opened:?}");
    // An opened port lets loopback through, nothing else.
    let named = serde_json::json!([{"scheme": "http", "host": "box.example", "port": 8080,
        "methods": ["GET"], "path_prefix": "/"}]);
    let private = ask(
        serde_json::json!({"rules": named, "method": "GET", "url": "http://box.example:8080/",
            "resolved": ["10.0.0.1"], "loopback_ports": [8080]}),
        &[],
    );
    assert_eq!(private.decision, "deny", "{private:?}");
    // `localhost` is this machine whatever a resolver answers (RFC 6761): never 10.0.0.1,
    // and never an answer from the network's DNS for `localhost.`.
    for url in [
        "http://localhost:8080/",
        "http://localhost.:8080/",
        "http://LOCALHOST.:8080/",
    ] {
        let answer = ask(
            serde_json::json!({"rules": local, "method": "GET", "url": url,
                "resolved": ["93.184.216.34"]}),
            &[],
        );
        assert_eq!(
            (answer.decision, answer.rule.as_str()),
            ("deny", "address"),
            "{url}: {answer:?}"
        );
    }
}

#[test]
fn a_tainted_session_may_only_read_unless_a_rule_lets_the_person_approve_more() {
    let ask = |rule: Value, method: &str, tainted: bool, mode: &str| {
        let json = serde_json::json!({"rules": [rule], "method": method,
            "url": "https://api.example.com/v1/x", "resolved": ["93.184.216.34"],
            "tainted": tainted, "mode": mode});
        decide(&serde_json::from_value::<Question>(json).unwrap(), &[])
    };
    let plain = serde_json::json!({"scheme": "https", "host": "api.example.com", "port": 443,
        "methods": ["GET", "POST"], "path_prefix": "/v1"});
    assert_eq!(ask(plain.clone(), "POST", false, "allow").rule, "none");
    let refused = ask(plain.clone(), "POST", true, "allow");
    assert_eq!(
        (refused.decision, refused.rule.as_str()),
        ("deny", "tainted")
    );
    assert_eq!(ask(plain.clone(), "GET", true, "allow").decision, "allow");
    assert_eq!(ask(plain.clone(), "GET", false, "ask").rule, "person");
    let mut asking = plain.clone();
    asking["ask_when_tainted"] = true.into();
    assert_eq!(ask(asking, "POST", true, "allow").rule, "person");
    let mut signed = plain;
    signed["device_signature"] = true.into();
    assert_eq!(ask(signed, "GET", false, "allow").rule, "device");
}
