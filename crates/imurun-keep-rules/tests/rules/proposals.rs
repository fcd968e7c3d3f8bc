//! Proposals a cell may emit: each kind's bounds hold at N and refuse N + 1, unknown fields
//! and kinds are refused, and the grants that gate memory and cards are checked.

use imurun_keep_rules::manifest::MemoryAccess;
use imurun_keep_rules::proposals::{
    CARD_BODY_CHARS_MAX, CARD_FIELDS_MAX, CARD_LABEL_CHARS_MAX, CARD_VALUE_CHARS_MAX, EmitGrants,
    MEMORY_CHARS_MAX, PAYLOAD_BYTES_MAX, PLAN_STEPS_MAX, ProposalKind, STEP_CHARS_MAX,
    SUGGESTION_CHARS_MAX, TITLE_CHARS_MAX, validate,
};
use serde_json::json;

const ALL: EmitGrants = EmitGrants {
    memory: MemoryAccess::Write,
    card: true,
};

fn text(n: usize) -> String {
    "é".repeat(n)
}

fn holds_at_n_and_refuses_n_plus_one(
    kind: &str,
    make: impl Fn(usize) -> serde_json::Value,
    n: usize,
    field: &str,
) {
    validate(kind, &make(n).to_string(), ALL)
        .unwrap_or_else(|error| panic!("{kind} {field} at {n}: {error}"));
    let Err(error) = validate(kind, &make(n + 1).to_string(), ALL) else {
        panic!("{kind} {field} at {} was accepted", n + 1);
    };
    assert!(
        error.to_string().contains(field),
        "{kind} {field} at {}: {error}",
        n + 1
    );
}

#[test]
fn each_kind_holds_its_bounds_at_n_and_refuses_n_plus_one() {
    holds_at_n_and_refuses_n_plus_one(
        "memory.propose",
        |n| json!({"text": text(n)}),
        MEMORY_CHARS_MAX,
        "payload.text",
    );
    holds_at_n_and_refuses_n_plus_one(
        "suggestion",
        |n| json!({"text": text(n)}),
        SUGGESTION_CHARS_MAX,
        "payload.text",
    );
    holds_at_n_and_refuses_n_plus_one(
        "suggestion",
        |n| json!({"title": text(n), "text": "x"}),
        TITLE_CHARS_MAX,
        "payload.title",
    );
    holds_at_n_and_refuses_n_plus_one(
        "plan",
        |n| json!({"title": text(n), "steps": ["a"]}),
        TITLE_CHARS_MAX,
        "payload.title",
    );
    holds_at_n_and_refuses_n_plus_one(
        "plan",
        |n| json!({"title": "t", "steps": vec!["a"; n]}),
        PLAN_STEPS_MAX,
        "payload.steps",
    );
    holds_at_n_and_refuses_n_plus_one(
        "plan",
        |n| json!({"title": "t", "steps": [text(n)]}),
        STEP_CHARS_MAX,
        "payload.steps[0]",
    );
    holds_at_n_and_refuses_n_plus_one(
        "card.propose",
        |n| json!({"title": text(n)}),
        TITLE_CHARS_MAX,
        "payload.title",
    );
    holds_at_n_and_refuses_n_plus_one(
        "card.propose",
        |n| json!({"title": "t", "body": text(n)}),
        CARD_BODY_CHARS_MAX,
        "payload.body",
    );
    holds_at_n_and_refuses_n_plus_one(
        "card.propose",
        |n| json!({"title": "t", "fields": vec![json!({"label": "l", "value": "v"}); n]}),
        CARD_FIELDS_MAX,
        "payload.fields",
    );
    holds_at_n_and_refuses_n_plus_one(
        "card.propose",
        |n| json!({"title": "t", "fields": [{"label": text(n), "value": "v"}]}),
        CARD_LABEL_CHARS_MAX,
        "payload.fields[0].label",
    );
    holds_at_n_and_refuses_n_plus_one(
        "card.propose",
        |n| json!({"title": "t", "fields": [{"label": "l", "value": text(n)}]}),
        CARD_VALUE_CHARS_MAX,
        "payload.fields[0].value",
    );
}

#[test]
fn a_payload_past_the_byte_bound_is_refused_before_it_is_read() {
    let padding = " ".repeat(PAYLOAD_BYTES_MAX);
    let error = validate("suggestion", &format!("{padding}{{\"text\": \"x\"}}"), ALL).unwrap_err();
    assert!(error.to_string().contains("payload"), "{error}");
    // A payload of exactly the bound is read.
    let text_json = r#"{"text": "x"}"#;
    let exact = format!(
        "{}{text_json}",
        " ".repeat(PAYLOAD_BYTES_MAX - text_json.len())
    );
    validate("suggestion", &exact, ALL).unwrap();
}

#[test]
fn unknown_fields_kinds_and_duplicate_names_are_refused() {
    for (kind, payload) in [
        (
            "plan",
            r#"{"title": "t", "steps": ["a"], "auto_accept": true}"#,
        ),
        ("suggestion", r#"{"text": "a", "text": "b"}"#),
        ("suggestion", r#"["not", "an", "object"]"#),
        ("suggestion", r#"{"text": "   "}"#),
        ("deploy", r#"{"text": "a"}"#),
        ("tool.propose", r#"{"name": "t"}"#),
    ] {
        assert!(validate(kind, payload, ALL).is_err(), "{kind} {payload}");
    }
}

#[test]
fn memory_needs_write_and_cards_need_card_true() {
    let none = EmitGrants {
        memory: MemoryAccess::Read,
        card: false,
    };
    let error = validate("memory.propose", r#"{"text": "x"}"#, none).unwrap_err();
    assert!(error.to_string().contains("memory: write"), "{error}");
    let error = validate("card.propose", r#"{"title": "x"}"#, none).unwrap_err();
    assert!(error.to_string().contains("card: true"), "{error}");
    let proposal = validate(
        "plan",
        r#"{"title": "tidy", "steps": ["one", "two"]}"#,
        none,
    )
    .unwrap();
    assert_eq!(proposal.kind, ProposalKind::Plan);
    assert_eq!(
        proposal.payload,
        json!({"title": "tidy", "steps": ["one", "two"]})
    );
}

#[test]
fn a_proposal_is_stored_only_from_a_session_that_has_not_ended() {
    use imurun_keep_rules::proposals::may_store;
    let rule = |session| may_store(session).map_err(|error| error.rule());
    assert_eq!(rule(Some((1_000, None))), Ok(()), "a running session");
    assert_eq!(
        rule(Some((1_000, Some(1_500)))),
        Err("conflict"),
        "an ended session"
    );
    assert_eq!(rule(None), Err("conflict"), "no such session of hers");
}
