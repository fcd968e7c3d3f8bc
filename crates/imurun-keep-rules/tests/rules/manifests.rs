//! Manifest validation: unknown fields, every bound at N and N+1, hosts in normal form, and the
//! field each error names.

use imurun_keep_rules::host::HostAllowance;
use imurun_keep_rules::manifest::{self, Manifest};
use serde_json::{Value, json};

fn base() -> Value {
    json!({
        "name": "weather",
        "version": 1,
        "description": "Tells the weather.",
        "egress": {"mode": "allow", "rules": [
            {"scheme": "https", "host": "API.Example.com.", "port": 443, "methods": ["POST", "GET"], "path_prefix": "/v1"}
        ]},
        "credentials": [
            {"name": "weather_key", "bind": {"host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/v1/forecast"}, "header": "X-Api-Key"}
        ],
        "memory": "read",
        "model_socket": false,
        "card": true,
        "resources": {"memory_mb": 64, "cpu_ms": 1000, "timeout_ms": 5000},
        "approval_timeout_s": 60
    })
}

/// Sets `pointer` (a JSON pointer) in the base manifest to `value`, validates, and returns the
/// error's text or `ok`.
fn with(pointer: &str, value: Value) -> String {
    let mut document = base();
    match document.pointer_mut(pointer) {
        Some(slot) => *slot = value,
        None => {
            let (parent, key) = pointer.rsplit_once('/').expect("pointer");
            document
                .pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .expect("parent object")
                .insert(key.to_owned(), value);
        }
    }
    match Manifest::from_json(&document, HostAllowance::Operator) {
        Ok(_) => "ok".to_owned(),
        Err(error) => error.to_string(),
    }
}

fn check(pointer: &str, value: Value, expect: &str) {
    let got = with(pointer, value.clone());
    assert!(
        got.contains(expect),
        "{pointer} = {value}: got {got:?}, want {expect:?}"
    );
}

#[test]
fn the_base_manifest_is_valid_and_normalised() {
    let manifest = Manifest::from_json(&base(), HostAllowance::Operator).expect("valid");
    assert_eq!(manifest.egress.rules[0].host, "api.example.com");
    assert_eq!(manifest.egress.rules[0].methods, ["GET", "POST"]);
}

#[test]
fn unknown_fields_are_refused_by_name() {
    check("/auto_approve", json!(true), "unknown field `auto_approve`");
    check(
        "/egress/rules/0/query",
        json!("x"),
        "egress.rules[0].query: unknown field `query`",
    );
    check(
        "/resources/fuel",
        json!(1),
        "resources.fuel: unknown field `fuel`",
    );
    check(
        "/credentials/0/bind/scheme",
        json!("https"),
        "credentials[0].bind.scheme: unknown field",
    );
}

#[test]
fn types_are_checked_by_field() {
    check("/version", json!("2"), "version: invalid type");
    check("/memory", json!("all"), "memory: unknown variant");
    check(
        "/egress/mode",
        json!("open"),
        "egress.mode: unknown variant",
    );
    check("/egress/rules/0/port", json!(70000), "egress.rules[0].port");
    check(
        "/egress/rules/0/port",
        json!(0),
        "egress.rules[0].port: 0 is not a port",
    );
}

#[test]
fn every_bound_holds_at_n_and_fails_at_n_plus_one() {
    let name_max = "a".repeat(manifest::NAME_CHARS_MAX);
    check("/name", json!(name_max), "ok");
    check("/name", json!(format!("{name_max}a")), "name:");
    check("/version", json!(manifest::VERSION_MAX), "ok");
    check("/version", json!(0), "version: 0 is outside");
    let description = "d".repeat(manifest::DESCRIPTION_CHARS_MAX);
    check("/description", json!(description), "ok");
    check(
        "/description",
        json!(format!("{description}d")),
        "description:",
    );
    check("/description", json!("bidi \u{202e} override"), "U+202E");
    check("/description", json!("escape \u{1b}[31m"), "U+001B");
    check("/description", json!("line\nbreak\ttab"), "ok");

    let rule = json!({"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"});
    let rules = |count: usize| Value::Array(vec![rule.clone(); count]);
    check("/egress/rules", rules(manifest::EGRESS_RULES_MAX), "ok");
    check(
        "/egress/rules",
        rules(manifest::EGRESS_RULES_MAX + 1),
        "egress.rules: 33 entries",
    );

    let methods: Vec<&str> = manifest::METHODS.to_vec();
    check("/egress/rules/0/methods", json!(methods), "ok");
    let mut repeated = methods.clone();
    repeated.push("GET");
    check(
        "/egress/rules/0/methods",
        json!(repeated),
        "egress.rules[0].methods: 8 entries",
    );
    check(
        "/egress/rules/0/methods",
        json!(["GET", "GET"]),
        "listed twice",
    );
    check("/egress/rules/0/methods", json!(["get"]), "is not one of");
    check("/egress/rules/0/methods", json!([]), "at least one method");

    let path = format!("/{}", "p".repeat(manifest::PATH_PREFIX_BYTES_MAX - 1));
    check(
        "/egress/rules/0/path_prefix",
        json!(path),
        "credentials[0].bind",
    );
    check(
        "/egress/rules/0/path_prefix",
        json!(format!("{path}p")),
        "egress.rules[0].path_prefix: 257 bytes",
    );
    check(
        "/egress/rules/0/path_prefix",
        json!("/a/../b"),
        "`..` segments",
    );
    check(
        "/egress/rules/0/path_prefix",
        json!("/a?x"),
        "not allowed in a path prefix",
    );
    check(
        "/egress/rules/0/path_prefix",
        json!("v1"),
        "starts with `/`",
    );

    let credential = |index: usize| json!({"name": format!("key{index}"), "bind": {"host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/v1"}, "header": "Authorization"});
    let credentials = |count: usize| Value::Array((0..count).map(credential).collect());
    check("/credentials", credentials(manifest::CREDENTIALS_MAX), "ok");
    check(
        "/credentials",
        credentials(manifest::CREDENTIALS_MAX + 1),
        "credentials: 17 entries",
    );
    check("/credentials/0/name", json!("k".repeat(64)), "ok");
    check(
        "/credentials/0/name",
        json!("k".repeat(65)),
        "credentials[0].name",
    );
    check("/credentials/0/header", json!("H".repeat(64)), "ok");
    check(
        "/credentials/0/header",
        json!("H".repeat(65)),
        "credentials[0].header",
    );
    check("/credentials/0/header", json!("Host"), "frames the request");
    check(
        "/credentials/0/bind/host",
        json!("other.example.com"),
        "egress rule reaches",
    );
    check(
        "/credentials/0/bind/path_prefix",
        json!("/v1x"),
        "egress rule reaches",
    );
    check(
        "/credentials/0/bind/methods",
        json!(["DELETE"]),
        "egress rule reaches",
    );
    check(
        "/credentials/0/bind/port",
        json!(8443),
        "egress rule reaches",
    );
    check(
        "/credentials",
        json!([credential(1), credential(1)]),
        "named twice",
    );

    for (field, max) in [
        ("memory_mb", manifest::MEMORY_MB_MAX),
        ("cpu_ms", manifest::CPU_MS_MAX),
        ("timeout_ms", manifest::TIMEOUT_MS_MAX),
    ] {
        check(&format!("/resources/{field}"), json!(max), "ok");
        check(
            &format!("/resources/{field}"),
            json!(max + 1),
            &format!("resources.{field}"),
        );
        check(
            &format!("/resources/{field}"),
            json!(0),
            &format!("resources.{field}"),
        );
    }
    check(
        "/approval_timeout_s",
        json!(manifest::APPROVAL_TIMEOUT_S_MAX),
        "ok",
    );
    check(
        "/approval_timeout_s",
        json!(manifest::APPROVAL_TIMEOUT_S_MAX + 1),
        "approval_timeout_s",
    );
}

#[test]
fn egress_needs_consistent_modes_and_schemes() {
    check("/egress/mode", json!("deny"), "contradictory");
    check(
        "/egress/rules/0/scheme",
        json!("ftp"),
        "egress.rules[0].scheme",
    );
    check(
        "/egress/rules/0/host",
        json!("user@api.example.com"),
        "egress.rules[0].host: user information",
    );
    check(
        "/egress/rules/0/host",
        json!("api.example.com:443"),
        "egress.rules[0].host",
    );
}

#[test]
fn hosts_in_a_user_tool_are_bounded_by_the_ceiling() {
    use imurun_keep_rules::host::Host;
    let ceiling = [Host::Wildcard("example.com".into())];
    let mut document = base();
    document["egress"]["rules"][0]["host"] = json!("*.example.com");
    document["credentials"] = json!([]);
    assert!(Manifest::from_json(&document, HostAllowance::Within(&ceiling)).is_ok());
    document["egress"]["rules"][0]["host"] = json!("10.0.0.1");
    let error = Manifest::from_json(&document, HostAllowance::Within(&ceiling)).expect_err("ip");
    assert!(
        error
            .to_string()
            .contains("IP literal the ceiling does not name"),
        "{error}"
    );
}

/// What acts rather than shows, ASCII or not: controls (but newline and tab), invisible
/// formatting characters and the line and paragraph separators.
#[test]
fn hidden_controls_are_told_from_plain_text() {
    let hidden = [
        '\u{0}',
        '\u{7}',
        '\u{1b}',
        '\r',
        '\u{7f}',
        '\u{85}',
        '\u{ad}',
        '\u{200b}',
        '\u{200e}',
        '\u{202e}',
        '\u{2066}',
        '\u{2028}',
        '\u{2029}',
        '\u{feff}',
        '\u{e0041}',
        // Unassigned, yet default-ignorable: nothing a later Unicode puts there shows.
        '\u{e0000}',
        '\u{e0002}',
        '\u{e001f}',
        '\u{e0080}',
        '\u{e0fff}',
        '\u{2065}',
        // Variation selectors (bytes hide behind a visible character), Hangul fillers and
        // the others that show nothing.
        '\u{fe00}',
        '\u{e0100}',
        '\u{e01ef}',
        '\u{3164}',
        '\u{115f}',
        '\u{ffa0}',
        '\u{17b4}',
        '\u{180e}',
        '\u{34f}',
        '\u{1d173}',
        '\u{1bca0}',
        // Noncharacters.
        '\u{fdd0}',
        '\u{fdef}',
        '\u{fffe}',
        '\u{ffff}',
        '\u{1fffe}',
        '\u{10ffff}',
    ];
    for character in hidden {
        assert!(
            manifest::is_hidden_control(character),
            "{}",
            manifest::code_point(character)
        );
    }
    // Text and emoji presentation selectors choose how the character before them shows.
    let plain = [
        'a',
        ' ',
        '~',
        '\n',
        '\t',
        'é',
        '中',
        '\u{a0}',
        '😀',
        '\u{fe0e}',
        '\u{fe0f}',
        '\u{fdcf}',
        '\u{fdf0}',
        '\u{fffd}',
        '\u{e1000}',
    ];
    for character in plain {
        assert!(
            !manifest::is_hidden_control(character),
            "{}",
            manifest::code_point(character)
        );
    }
}
