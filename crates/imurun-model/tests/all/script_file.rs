//! Reading scripts from JSON: the format, its defaults, and errors that say where.

use std::io::Write;

use imurun_core::{Model, ModelError};
use imurun_model::{Reply, SCRIPT_BYTES_MAX, Script, ScriptError, ScriptedModel};

use crate::common::{answer, ask};

#[test]
fn a_full_script_reads_into_its_replies_and_settings() {
    let json = r#"{
        "comment": "every field",
        "name": "demo",
        "context_limit": 4096,
        "enforce_context_limit": false,
        "replies": [
            {"text": "Hello, world", "delay_ms": 10, "token_delay_ms": 5},
            {"tokens": ["He", "llo"], "comment": ["a comment may be any JSON"]},
            {"when_last_user_contains": "weather", "text": "Sunny."},
            {"error": {"kind": "transport", "message": "connection reset"}},
            {"text": "cut", "error": {"kind": "rate_limited", "retry_after_ms": 1500}},
            {"error": {"kind": "rate_limited"}},
            {"error": {"kind": "context_overflow", "tokens": 9000, "limit": 8192}},
            {"error": {"kind": "protocol", "message": "bad frame"}},
            {"text": ""}
        ],
        "fallback": {"text": "Nothing more."}
    }"#;
    let script = Script::from_json(json).unwrap();
    assert_eq!(script.name(), "demo");
    assert_eq!(script.context_limit(), 4096);
    assert!(!script.enforces_context_limit());
    let expect = [
        Reply::text("Hello, world").delay_ms(10).token_delay_ms(5),
        Reply::tokens(["He", "llo"]),
        Reply::text("Sunny.").when_last_user_contains("weather"),
        Reply::error(ModelError::Transport {
            message: "connection reset".into(),
        }),
        Reply::text("cut").then_error(ModelError::RateLimited {
            retry_after_ms: Some(1500),
        }),
        Reply::error(ModelError::RateLimited {
            retry_after_ms: None,
        }),
        Reply::error(ModelError::ContextOverflow {
            tokens: 9000,
            limit: 8192,
        }),
        Reply::error(ModelError::Protocol {
            message: "bad frame".into(),
        }),
        Reply::text(""),
    ];
    assert_eq!(script.replies(), expect);
    assert_eq!(script.fallback(), Some(&Reply::text("Nothing more.")));
}

#[test]
fn only_replies_is_required() {
    let script = Script::from_json(r#"{"replies": []}"#).unwrap();
    assert_eq!(script.name(), "scripted");
    assert_eq!(script.context_limit(), 8192);
    assert!(script.enforces_context_limit());
    assert!(script.replies().is_empty());
    assert!(script.fallback().is_none());
}

/// An error a serialized `ModelError` would make is read back as the same error.
#[test]
fn a_serialized_model_error_is_a_valid_failure() {
    let errors = [
        ModelError::Transport {
            message: "x".into(),
        },
        ModelError::RateLimited {
            retry_after_ms: Some(5),
        },
        ModelError::RateLimited {
            retry_after_ms: None,
        },
        ModelError::ContextOverflow {
            tokens: 2,
            limit: 1,
        },
        ModelError::Protocol {
            message: "y".into(),
        },
    ];
    for error in errors {
        let json = format!(
            r#"{{"replies": [{{"error": {}}}]}}"#,
            serde_json::to_string(&error).unwrap()
        );
        let script = Script::from_json(&json).unwrap();
        assert_eq!(script.replies(), [Reply::error(error)], "{json}");
    }
}

/// Each bad script with the line, column and message of its error. The column (from 1) is
/// that of the last character read when the mistake was found: the end of a bad key or
/// value, the closing brace of a bad reply, or the first character of what cannot start.
#[test]
fn a_bad_script_says_where_and_what() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 1, "EOF while parsing a value"),
        (
            "[]",
            1,
            1,
            "invalid type: sequence, expected a script object",
        ),
        ("{}", 1, 2, "missing field `replies`"),
        (
            "{\"replies\": [\n  {\"text\": \"a\"},\n  {\"txt\": \"b\"}\n]}",
            3,
            8,
            "unknown field `txt`, expected one of `comment`, `when_last_user_contains`, `delay_ms`, `token_delay_ms`, `text`, `tokens`, `error`",
        ),
        (
            "{\"replies\": [\n  {\"text\": \"a\", \"tokens\": [\"a\"]}\n]}",
            2,
            32,
            "a reply has either text or tokens, not both",
        ),
        (
            "{\"replies\": [\n  {\"delay_ms\": 5}\n]}",
            2,
            17,
            "a reply needs text, tokens or error",
        ),
        (
            "{\"replies\": [{\"tokens\": []}]}",
            1,
            27,
            "tokens is empty; give at least one piece, or use \"text\": \"\"",
        ),
        (
            "{\"replies\": [{\"tokens\": [\"a\", \"\"]}]}",
            1,
            34,
            "piece 1 is empty; every piece needs some text",
        ),
        (
            "{\"replies\": [\n\n  {\"text\": \"a\", \"delay_ms\": 60001}]}",
            3,
            34,
            "delay_ms is 60001; at most 60000",
        ),
        (
            "{\"replies\": [{\"text\": \"a\", \"token_delay_ms\": -1}]}",
            1,
            47,
            "invalid value: integer `-1`, expected u64",
        ),
        (
            "{\"replies\": [{\"text\": \"a\", \"when_last_user_contains\": \"\"}]}",
            1,
            57,
            "when_last_user_contains is empty; it would match every request",
        ),
        (
            "{\"replies\": [{\"error\": {\"kind\": \"timeout\"}}]}",
            1,
            41,
            "unknown variant `timeout`, expected one of `transport`, `rate_limited`, `context_overflow`, `protocol`",
        ),
        (
            "{\"replies\": [{\"error\": {\"kind\": \"transport\"}}]}",
            1,
            45,
            "missing field `message`",
        ),
        (
            "{\"replies\": [{\"error\": {\"kind\": \"protocol\", \"message\": \"x\", \"code\": 1}}]}",
            1,
            71,
            "unknown field `code`, expected `message`",
        ),
        (
            "{\"replies\": [{\"text\": 5}]}",
            1,
            23,
            "invalid type: integer `5`, expected a string",
        ),
        (
            "{\"replies\": [\"hello\"]}",
            1,
            20,
            "invalid type: string \"hello\", expected a reply object",
        ),
        (
            "{\"replies\": {}}",
            1,
            12,
            "invalid type: map, expected a list of reply objects",
        ),
        (
            "{\"replies\": [], \"context_limit\": 0}",
            1,
            34,
            "context_limit must be at least 1",
        ),
        (
            "{\"replies\": [], \"name\": \" \"}",
            1,
            27,
            "name must have 1 to 128 characters, not all white space (it has 1)",
        ),
        (
            "{\"replies\": [], \"fallback\": {\"text\": \"x\", \"when_last_user_contains\": \"y\"}}",
            1,
            73,
            "a fallback reply cannot have when_last_user_contains",
        ),
        (
            "{\"replies\": [], \"fallback\": null}",
            1,
            32,
            "invalid type: null, expected a reply object",
        ),
        (
            "{\"replies\": [], \"model\": \"x\"}",
            1,
            23,
            "unknown field `model`, expected one of `comment`, `name`, `context_limit`, `enforce_context_limit`, `replies`, `fallback`",
        ),
        ("{\"replies\": [],}", 1, 16, "trailing comma"),
        ("{\"replies\": []} {}", 1, 17, "trailing characters"),
        (
            "{\"replies\": [{\"text\": \"a\"}], \"replies\": []}",
            1,
            38,
            "duplicate field `replies`",
        ),
    ];
    let mut wrong = Vec::new();
    for (json, line, column, message) in cases {
        match Script::from_json(json) {
            Err(ScriptError::Invalid {
                origin,
                line: got_line,
                column: got_column,
                message: got_message,
            }) if origin == "the script" => {
                let got = (got_line, got_column, got_message.as_str());
                if got != (*line, *column, *message) {
                    wrong.push(format!("{json:?}\n  gave {got:?}"));
                }
            }
            other => wrong.push(format!("{json:?}\n  gave {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_script_with_one_reply_too_many_stops_at_it() {
    let replies = vec![r#"{"text": "x"}"#; imurun_model::SCRIPT_REPLIES_MAX + 1].join(",\n");
    let json = format!("{{\"replies\": [\n{replies}\n]}}");
    let error = Script::from_json(&json).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the script, line 10002, column 1: a script may have at most 10000 replies; this is \
         one more"
    );
}

#[test]
fn a_script_over_the_byte_bound_is_refused_unread() {
    let json = format!(
        "{{\"replies\": [], \"comment\": \"{}\"}}",
        "x".repeat(SCRIPT_BYTES_MAX)
    );
    let error = Script::from_json(&json).unwrap_err();
    assert!(
        matches!(error, ScriptError::TooLarge { bytes, bytes_max, .. }
            if bytes == json.len() as u64 && bytes_max == SCRIPT_BYTES_MAX as u64),
        "{error:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    std::fs::write(&path, &json).unwrap();
    let error = Script::from_file(&path).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} is {} bytes long; a script may be at most 4194304 bytes",
            path.display(),
            json.len()
        )
    );
    // Refused for its size even when the bound falls inside a character.
    let json = format!("{{\"comment\": \"x{}\"}}", "é".repeat(SCRIPT_BYTES_MAX / 2));
    assert!(!json.is_char_boundary(SCRIPT_BYTES_MAX + 1));
    std::fs::write(&path, &json).unwrap();
    let error = Script::from_file(&path).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} is {} bytes long; a script may be at most 4194304 bytes",
            path.display(),
            json.len()
        )
    );
}

#[tokio::test]
async fn a_script_file_replays_and_its_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"name": "from-file", "replies": [{"text": "hi there"}]}"#,
    )
    .unwrap();
    let model = ScriptedModel::from_file(&good).unwrap();
    assert_eq!(model.name(), "from-file");
    assert_eq!(answer(&model, &ask("go")).await, "hi there");

    let bad = dir.path().join("bad.json");
    let mut file = std::fs::File::create(&bad).unwrap();
    file.write_all(b"{\"replies\": [\n  {\"text\": 1}\n]}")
        .unwrap();
    let error = ScriptedModel::from_file(&bad).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}, line 2, column 12: invalid type: integer `1`, expected a string",
            bad.display()
        )
    );

    let missing = dir.path().join("missing.json");
    let error = ScriptedModel::from_file(&missing).unwrap_err();
    assert!(
        matches!(&error, ScriptError::Read { path, .. } if path == &missing),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot read the script {}", missing.display()))
    );

    let not_utf8 = dir.path().join("latin1.json");
    std::fs::write(&not_utf8, b"{\"replies\": [{\"text\": \"caf\xe9\"}]}").unwrap();
    assert!(matches!(
        ScriptedModel::from_file(&not_utf8),
        Err(ScriptError::Read { .. })
    ));
}
