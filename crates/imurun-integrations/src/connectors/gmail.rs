//! Gmail: search the mailbox and send mail through the Gmail API
//! (<https://developers.google.com/gmail/api/reference/rest>), with an OAuth access token in
//! `IMURUN_GMAIL_TOKEN`.

use imurun_core::ToolCategory;
use serde_json::{Map, Value, json};

use super::encode::{base64, base64url};
use super::summary::{items, listing, text};
use super::{Body, ConnectorSpec, Credential, HttpMethod, Service};

pub static GMAIL: Service = Service {
    id: "gmail",
    display_name: "Gmail",
    cues: &[
        "gmail",
        "inbox",
        "email",
        "e mail",
        "mail",
        "mailbox",
        "unread",
        "mailing list",
    ],
    // An email *address* (its format, a regex that checks it) is not the mailbox; neither is
    // a mail server being configured.
    not_cues: &[
        "email address",
        "mail address",
        "email format",
        "email regex",
        "email validation",
        "email validator",
        "mail server",
    ],
    credential: Credential {
        token_var: "IMURUN_GMAIL_TOKEN",
        token_kind: "a Google OAuth access token with a Gmail scope",
    },
    base_url: "https://gmail.googleapis.com/gmail/v1",
    base_url_var: "IMURUN_GMAIL_API_URL",
    headers: &[("Accept", "application/json")],
    error_message,
    body_failure: |_| None,
    tools: &[
        ConnectorSpec {
            name: "gmail_search",
            description: "Search the Gmail mailbox (Gmail search syntax, e.g. `from:anna is:unread`); returns message ids.",
            parameters: || {
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "the Gmail search query"},
                    "max_results": {"type": "integer", "description": "how many messages at most"}
                }, "required": ["query"]})
            },
            method: HttpMethod::Get,
            path: "/users/me/messages",
            query: &[("query", "q"), ("max_results", "maxResults")],
            fixed_query: &[],
            body: Body::None,
            category: ToolCategory::Network,
            aliases: &["search_email", "email_search", "search_mail"],
            summarise: summarise_search,
        },
        ConnectorSpec {
            name: "gmail_send",
            description: "Send a plain-text email from the person's Gmail account.",
            parameters: || {
                json!({"type": "object", "properties": {
                    "to": {"type": "string", "description": "the recipient's address"},
                    "subject": {"type": "string", "description": "the subject line"},
                    "body": {"type": "string", "description": "the message text"}
                }, "required": ["to", "subject", "body"]})
            },
            method: HttpMethod::Post,
            path: "/users/me/messages/send",
            query: &[],
            fixed_query: &[],
            body: Body::Build(send_body),
            category: ToolCategory::External,
            aliases: &["send_email", "email_send", "send_mail"],
            summarise: summarise_sent,
        },
    ],
};

/// Google's `{"error": {"code", "message", "status"}}`.
fn error_message(body: &Value) -> Option<String> {
    let message = text(body, &["error", "message"]);
    (!message.is_empty()).then_some(message)
}

/// `{"raw": base64url(message)}`, the shape `messages.send` takes.
fn send_body(args: &Map<String, Value>) -> Result<Value, String> {
    let field = |name: &str| match args.get(name) {
        Some(Value::String(text)) => Ok(text.as_str()),
        _ => Err(format!("`{name}` is required and must be a string")),
    };
    let message = rfc822_message(field("to")?, field("subject")?, field("body")?)?;
    Ok(json!({"raw": base64url(message.as_bytes())}))
}

/// A plain-text RFC 822 (RFC 5322) message. Header values with a control character are
/// refused — CR and LF, but also NUL, vertical tab, form feed, NEL and the Unicode line and
/// paragraph separators, which some mail software treats as line breaks — so an argument
/// cannot add headers (a hidden `Bcc:`); a non-ASCII subject is an RFC 2047 encoded word.
/// Line ends in the body (LF, CRLF or a lone CR) all become CRLF.
pub(crate) fn rfc822_message(to: &str, subject: &str, body: &str) -> Result<String, String> {
    for (name, value) in [("to", to), ("subject", subject)] {
        if value.chars().any(breaks_a_header) {
            return Err(format!(
                "`{name}` must be one line without control characters"
            ));
        }
    }
    let to = to.trim();
    if !to.contains('@') {
        return Err(format!("`to` must be an email address, not `{to}`"));
    }
    let body = body
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\n', "\r\n");
    Ok(format!(
        "To: {to}\r\nSubject: {}\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=\"UTF-8\"\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{body}",
        encode_header(subject)
    ))
}

/// Control characters (C0, DEL, C1 such as NEL) and the Unicode line and paragraph separators.
fn breaks_a_header(character: char) -> bool {
    character.is_control() || matches!(character, '\u{2028}' | '\u{2029}')
}

/// `value` as it may appear in a header: as is when ASCII, else UTF-8 encoded words of at
/// most 45 bytes each (RFC 2047 limits an encoded word to 75 characters).
fn encode_header(value: &str) -> String {
    if value.is_ascii() {
        return value.to_owned();
    }
    let mut words = Vec::new();
    let mut chunk = String::new();
    for character in value.chars() {
        if chunk.len() + character.len_utf8() > 45 {
            words.push(format!("=?UTF-8?B?{}?=", base64(chunk.as_bytes())));
            chunk.clear();
        }
        chunk.push(character);
    }
    if !chunk.is_empty() {
        words.push(format!("=?UTF-8?B?{}?=", base64(chunk.as_bytes())));
    }
    words.join("\r\n ")
}

fn summarise_search(value: &Value, _args: &Map<String, Value>) -> String {
    let lines: Vec<String> = items(value, Some("messages"))
        .iter()
        .map(|message| {
            format!(
                "message {} (thread {})",
                text(message, &["id"]),
                text(message, &["threadId"])
            )
        })
        .collect();
    if lines.is_empty() {
        return "No messages match.".to_owned();
    }
    listing(
        format!(
            "About {} messages match:",
            text(value, &["resultSizeEstimate"])
        ),
        lines,
    )
}

fn summarise_sent(value: &Value, args: &Map<String, Value>) -> String {
    format!(
        "Sent the email to {} (message {}).",
        args.get("to").and_then(Value::as_str).unwrap_or("?"),
        text(value, &["id"])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_cannot_be_injected() {
        assert!(rfc822_message("a@b.c\r\nBcc: x@y.z", "hi", "").is_err());
        assert!(rfc822_message("a@b.c", "hi\nBcc: x@y.z", "").is_err());
        assert!(rfc822_message("nobody", "hi", "").is_err());
    }

    #[test]
    fn headers_refuse_every_control_character() {
        // Regression: only CR and LF were refused; NUL, VT, FF, NEL, LS and PS went through.
        for bad in [
            "\0", "\x0b", "\x0c", "\u{85}", "\u{2028}", "\u{2029}", "\t", "\x7f",
        ] {
            assert!(
                rfc822_message(&format!("a@b.c{bad}x"), "hi", "").is_err(),
                "{bad:?}"
            );
            assert!(
                rfc822_message("a@b.c", &format!("hi{bad}Bcc: x@y.z"), "").is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_body_line_end_becomes_crlf() {
        // Regression: a lone CR stayed as it was.
        let message = rfc822_message("a@b.c", "hi", "one\rtwo\r\nthree\nfour").unwrap();
        assert!(message.ends_with("\r\n\r\none\r\ntwo\r\nthree\r\nfour"));
    }

    #[test]
    fn a_non_ascii_subject_is_an_encoded_word() {
        let message = rfc822_message("a@b.c", "Grüße", "line 1\nline 2").unwrap();
        assert!(message.contains("Subject: =?UTF-8?B?R3LDvMOfZQ==?=\r\n"));
        assert!(message.ends_with("\r\n\r\nline 1\r\nline 2"));
    }
}
