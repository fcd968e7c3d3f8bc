//! The fetch tool this agent proposes, and reading what the host answers about it: the
//! `tool.propose` payload (docs/keep/tools.md), the next version to try after a refusal, and
//! a fetched page in words.

use serde_json::{Value, json};

use crate::intent::Url;
use crate::text::cut_chars;

/// The tool's name.
pub const NAME: &str = "fetch";
/// Versions tried for one proposal: the host refuses a version deployed already or not above
/// the highest deployed, and the agent cannot read which are, so it tries the next.
pub const VERSION_ATTEMPTS_MAX: usize = 32;
/// Characters of a fetched body shown in a reply.
pub const BODY_CHARS_SHOWN: usize = 1_500;

/// The tool's description, as its person reads it in the review.
pub fn description(url: &Url) -> String {
    format!("Fetches pages from {} with GET.", url.authority())
}

/// The tool's manifest: GET on the address's scheme, host and port, every use asked of the
/// person, nothing else.
pub fn manifest(url: &Url, version: i64) -> Value {
    json!({
        "name": NAME,
        "version": version,
        "egress": {
            "mode": "ask",
            "rules": [{
                "scheme": url.scheme,
                "host": url.host,
                "port": url.port,
                "methods": ["GET"],
                "path_prefix": "/",
            }],
        },
        "credentials": [],
        "memory": "none",
        "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 1_000, "timeout_ms": 10_000},
        "approval_timeout_s": 120,
    })
}

/// The `tool.propose` payload for `url` at `version`, with the tool's component in base64.
pub fn payload(url: &Url, version: i64, bundle_base64: &str) -> String {
    json!({
        "name": NAME,
        "description": description(url),
        "bundle": bundle_base64,
        "manifest": manifest(url, version),
    })
    .to_string()
}

/// The version to try after the host refused `tried` for `reason`, if the refusal is about the
/// version: `... is deployed already ...: propose a higher version` gives the next one, and
/// `... version N is refused: version M was accepted already` the one above M.
pub fn next_version(reason: &str, tried: i64) -> Option<i64> {
    if reason.contains("is deployed already") {
        return tried.checked_add(1);
    }
    let (_, after) = reason.split_once("is refused: version ")?;
    let (highest, _) = after.split_once(" was accepted already")?;
    let highest: i64 = highest.trim().parse().ok()?;
    highest.max(tried).checked_add(1)
}

/// The reply after the tool was proposed.
pub fn proposed_reply(url: &Url, version: i64) -> String {
    format!(
        "I proposed a tool named {NAME} (version {version}) that fetches pages from {} with GET, \
         asking you before each request. Review it and approve it on one of your devices; then \
         ask me to fetch a page from {} and I will use it.",
        url.authority(),
        url.host,
    )
}

/// The reply when the host refused a call of the tool for `url`, with a way on when the person
/// has no such tool.
pub fn refused_reply(url: &Url, reason: &str) -> String {
    let mut reply = format!("The host refused: {reason}");
    if reason.contains("no tool named") {
        reply.push_str(&format!(
            "\n\nAsk me to make a tool for {} first; once you approve it, ask again.",
            url.text
        ));
    }
    reply
}

/// The reply for what the fetch tool answered for `url` (`{"status", "body"}`).
pub fn fetched_reply(url: &Url, result: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(result) else {
        return format!("The tool answered: {}", cut_chars(result, BODY_CHARS_SHOWN));
    };
    let Some(status) = value.get("status").and_then(Value::as_u64) else {
        return format!("The tool answered: {}", cut_chars(result, BODY_CHARS_SHOWN));
    };
    let body = value
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let body = body.trim();
    if body.is_empty() {
        return format!("{} answered {status}, with an empty body.", url.text);
    }
    let chars = body.chars().count();
    let shown = cut_chars(body, BODY_CHARS_SHOWN);
    let whole = if chars > BODY_CHARS_SHOWN {
        format!(" (the first {BODY_CHARS_SHOWN} of {chars} characters)")
    } else {
        String::new()
    };
    format!(
        "{} answered {status}. The body{whole}:\n\n{shown}",
        url.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str, scheme: &'static str, host: &str, port: u16) -> Url {
        Url {
            text: text.to_owned(),
            scheme,
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn the_payload_names_the_address_and_nothing_more() {
        let weather = url("http://127.0.0.1:8080/weather", "http", "127.0.0.1", 8080);
        let payload: Value = serde_json::from_str(&payload(&weather, 3, "AGFzbQ==")).unwrap();
        assert_eq!(
            payload,
            json!({
                "name": "fetch",
                "description": "Fetches pages from 127.0.0.1:8080 with GET.",
                "bundle": "AGFzbQ==",
                "manifest": {
                    "name": "fetch", "version": 3,
                    "egress": {"mode": "ask", "rules": [{"scheme": "http", "host": "127.0.0.1",
                        "port": 8080, "methods": ["GET"], "path_prefix": "/"}]},
                    "credentials": [], "memory": "none", "model_socket": false,
                    "resources": {"memory_mb": 32, "cpu_ms": 1000, "timeout_ms": 10000},
                    "approval_timeout_s": 120,
                },
            })
        );
        let secure = url("https://example.com/x", "https", "example.com", 443);
        assert_eq!(
            description(&secure),
            "Fetches pages from example.com:443 with GET."
        );
    }

    #[test]
    fn a_refused_version_gives_the_next_one_to_try() {
        // The host's words (crates/imurun-keep-rules: `version_free`, `check_increases`).
        let cases = [
            (
                "u/alice/fetch@1 is deployed already with these bytes: propose a higher version",
                1,
                Some(2),
            ),
            (
                "u/alice/fetch@4 is deployed already with other bytes; versions are immutable: propose a higher version",
                4,
                Some(5),
            ),
            (
                "tool u/alice/fetch version 1 is refused: version 7 was accepted already",
                1,
                Some(8),
            ),
            (
                "tool u/alice/fetch version 9 is refused: version 7 was accepted already",
                9,
                Some(10),
            ),
            (
                "10 tool proposals wait for their person already: one must be decided first",
                1,
                None,
            ),
            (
                "forbidden authority: egress.rules[0] names 127.0.0.1:8080",
                1,
                None,
            ),
            (
                "tool u/alice/fetch version 1 is refused: version x was accepted already",
                1,
                None,
            ),
            ("u/alice/fetch@1 is deployed already", i64::MAX, None),
        ];
        for (reason, tried, expected) in cases {
            assert_eq!(next_version(reason, tried), expected, "{reason}");
        }
    }

    #[test]
    fn a_refused_call_in_words() {
        let page = url("https://x.example/a", "https", "x.example", 443);
        assert_eq!(
            refused_reply(&page, "egress: rule host refused"),
            "The host refused: egress: rule host refused"
        );
        assert!(
            refused_reply(&page, "no tool named fetch")
                .ends_with("once you approve it, ask again.")
        );
    }

    #[test]
    fn a_fetched_page_in_words() {
        let page = url("http://127.0.0.1:8080/weather", "http", "127.0.0.1", 8080);
        assert_eq!(
            fetched_reply(&page, r#"{"status": 200, "body": "sunny\n"}"#),
            "http://127.0.0.1:8080/weather answered 200. The body:\n\nsunny"
        );
        assert_eq!(
            fetched_reply(&page, r#"{"status": 204, "body": ""}"#),
            "http://127.0.0.1:8080/weather answered 204, with an empty body."
        );
        let long = json!({"status": 200, "body": "x".repeat(5_000)}).to_string();
        let reply = fetched_reply(&page, &long);
        assert!(reply.contains("(the first 1500 of 5000 characters)"));
        assert!(reply.chars().count() < BODY_CHARS_SHOWN + 200);
        assert_eq!(
            fetched_reply(&page, "not json"),
            "The tool answered: not json"
        );
        assert_eq!(
            fetched_reply(&page, r#"{"error": 1}"#),
            r#"The tool answered: {"error": 1}"#
        );
    }
}
