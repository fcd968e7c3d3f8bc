//! The checks every input passes before it reaches a query: ids, lengths, JSON sizes.

use serde_json::Value;

use crate::StoreError;

/// Longest id the store accepts (sessions, turns) and longest settings key, in characters. Ids
/// travel in URLs and log lines; 128 holds any UUID or hash with room to spare.
///
/// Ids and keys are ASCII letters, digits, `.`, `_` and `-`, and do not start with `.`; anything
/// else is refused with [`StoreError::InvalidId`].
pub const ID_CHARS_MAX: usize = 128;

// `check_id`'s reason text spells the bound out, since the reason is a `&'static str`.
const _: () = assert!(ID_CHARS_MAX == 128, "update the reason text in check_id");

/// How much of a refused id an error repeats.
const SHOWN_ID_CHARS_MAX: usize = 64;

/// Refuses an id that is empty, longer than [`ID_CHARS_MAX`], holds anything but ASCII letters,
/// digits, `.`, `_` and `-`, or starts with `.`. The alphabet keeps ids safe in a URL path and a
/// file name without escaping, and keeps look-alike Unicode out of them.
pub(crate) fn check_id(what: &'static str, id: &str) -> Result<(), StoreError> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > ID_CHARS_MAX {
        "it is longer than 128 characters"
    } else if !id
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        "only ASCII letters, digits, '.', '_' and '-' are allowed"
    } else if id.starts_with('.') {
        // `.` and `..` mean something else in a URL path or a file name, and a hidden name helps
        // nobody.
        "it starts with '.'"
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidId {
        what,
        id: id.chars().take(SHOWN_ID_CHARS_MAX).collect(),
        reason,
    })
}

/// Refuses a text with the NUL character: PostgreSQL's text type cannot hold it.
pub(crate) fn check_no_nul(what: &'static str, text: &str) -> Result<(), StoreError> {
    if text.contains('\0') {
        return Err(StoreError::NulCharacter { what });
    }
    Ok(())
}

/// `text` with each NUL character replaced by U+FFFD, for a log that must keep every row
/// rather than refuse one.
pub(crate) fn without_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Refuses `text` past `chars_max` characters (Unicode scalar values, what a user counts).
pub(crate) fn check_chars(
    what: &'static str,
    text: &str,
    chars_max: usize,
) -> Result<(), StoreError> {
    check_no_nul(what, text)?;
    // The byte length bounds the character count from above, so most texts skip the count.
    if text.len() <= chars_max {
        return Ok(());
    }
    let chars = text.chars().count();
    if chars <= chars_max {
        return Ok(());
    }
    Err(StoreError::TooLarge {
        what,
        size: chars,
        size_max: chars_max,
        unit: "characters",
    })
}

/// Refuses `text` past `bytes_max` bytes of UTF-8 (what the database stores).
pub(crate) fn check_bytes(
    what: &'static str,
    text: &str,
    bytes_max: usize,
) -> Result<(), StoreError> {
    check_no_nul(what, text)?;
    if text.len() <= bytes_max {
        return Ok(());
    }
    Err(StoreError::TooLarge {
        what,
        size: text.len(),
        size_max: bytes_max,
        unit: "bytes",
    })
}

/// `value` as compact JSON text for `column`, refused past `bytes_max` bytes.
pub(crate) fn json_text(
    column: &'static str,
    value: &Value,
    bytes_max: usize,
) -> Result<String, StoreError> {
    // Serialising a `Value` cannot fail (its map keys are strings), but the signature says it
    // may, so the error is passed on rather than unwrapped.
    let text =
        serde_json::to_string(value).map_err(|source| StoreError::Json { column, source })?;
    check_bytes(column, &text, bytes_max)?;
    Ok(text)
}

/// The JSON value stored as `text` in `column`.
pub(crate) fn parse_json(column: &'static str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Json { column, source })
}

/// Whether `error` is the database refusing a duplicate primary key.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|database_error| database_error.is_unique_violation())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, accepted: bool) {
        let result = check_id("session", id);
        assert_eq!(result.is_ok(), accepted, "{id:?}: {result:?}");
    }

    #[test]
    fn ids_are_short_plain_ascii() {
        let long = "a".repeat(ID_CHARS_MAX);
        let too_long = "a".repeat(ID_CHARS_MAX + 1);
        let cases = [
            ("s-1", true),
            ("0f9e_A.b-Z", true),
            (long.as_str(), true),
            (too_long.as_str(), false),
            ("", false),
            ("a b", false),
            ("a/b", false),
            ("é", false),
            ("a\0", false),
            ("%2e", false),
            (".", false),
            ("..", false),
            (".hidden", false),
            ("a..b", true),
        ];
        for (id, accepted) in cases {
            check(id, accepted);
        }
    }

    #[test]
    fn characters_are_counted_not_bytes() {
        assert!(check_chars("title", &"é".repeat(200), 200).is_ok());
        assert!(matches!(
            check_chars("title", &"é".repeat(201), 200),
            Err(StoreError::TooLarge { size: 201, .. })
        ));
    }

    #[test]
    fn a_refused_id_is_cut_in_the_error() {
        let Err(StoreError::InvalidId { id, .. }) = check_id("turn", &"x".repeat(10_000)) else {
            panic!("a 10 000 character id must be refused");
        };
        assert_eq!(id.len(), SHOWN_ID_CHARS_MAX);
    }
}
