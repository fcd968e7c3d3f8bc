//! RFC 8785 (JCS) canonical JSON: the exact bytes every signature in Keep covers, and the strict
//! reader for the documents that get signed.
//!
//! Two parts with two jobs. [`canonicalize`] writes any JSON value the way RFC 8785 says: object
//! members sorted by their names' UTF-16 code units, no whitespace, strings with the minimal
//! escapes, numbers as ECMAScript writes them. [`parse_document`] reads the text of a document
//! that is about to be signed or verified and refuses what would make two parties disagree on
//! its meaning: duplicate member names, numbers that are not integers within ±(2^53 − 1),
//! lone surrogates, invalid UTF-8, and anything past the size and depth bounds. A document read
//! by [`parse_document`] holds only integers, so its canonical form never depends on how a
//! number is rounded.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::RuleError;

/// The largest integer a signed document may hold (and its negation the smallest): the largest
/// an IEEE-754 double holds exactly together with its neighbours, so JavaScript (the page signs
/// decisions in the browser) reads the same number. 2^53 itself is refused: 2^53 + 1 reads as
/// 2^53 in JavaScript, so 2^53 could mean either.
pub const SAFE_INTEGER_MAX: i64 = (1 << 53) - 1;

/// The largest signed document, in bytes of its text. Manifests, policies, ceilings, trust
/// roots and decisions are all far smaller; a bigger one is a mistake or an attack.
pub const DOCUMENT_BYTES_MAX: usize = 256 * 1024;

/// The deepest nesting of arrays and objects in a signed document. The deepest real one (a
/// policy holding a manifest holding egress rules) is five levels.
pub const DOCUMENT_DEPTH_MAX: usize = 16;

/// Reads the text of a document to be signed or verified, refusing duplicate member names,
/// non-integers, integers beyond ±[`SAFE_INTEGER_MAX`], lone surrogates, invalid UTF-8, more
/// than [`DOCUMENT_BYTES_MAX`] bytes and nesting deeper than [`DOCUMENT_DEPTH_MAX`].
pub fn parse_document(text: &[u8]) -> Result<Value, RuleError> {
    parse_strict(text, DOCUMENT_BYTES_MAX)
}

/// [`parse_document`] with another size bound: for a request that carries a signed document
/// beside bigger data (a deploy's bundle).
pub fn parse_strict(text: &[u8], bytes_max: usize) -> Result<Value, RuleError> {
    if text.len() > bytes_max {
        return Err(RuleError::Canonical(format!(
            "the document is {} bytes, more than the {bytes_max} allowed",
            text.len()
        )));
    }
    let mut reader = serde_json::Deserializer::from_slice(text);
    let value = StrictValue { depth: 0 }
        .deserialize(&mut reader)
        .map_err(read_error)?;
    reader
        .end()
        .map_err(|error| RuleError::Canonical(error.to_string()))?;
    Ok(value)
}

/// serde_json's message, with what a `\\u` escape must be when that is what failed: its words
/// for a lone surrogate ("unexpected end of hex escape") do not say so.
fn read_error(error: serde_json::Error) -> RuleError {
    let message = error.to_string();
    if message.contains("escape") || message.contains("surrogate") {
        return RuleError::Canonical(format!(
            "{message}: a \\u escape is four hexadecimal digits, and a surrogate must be half \
             of a pair"
        ));
    }
    RuleError::Canonical(message)
}

/// Checks that a value (made in code, not read from text) could be signed: integers within
/// ±[`SAFE_INTEGER_MAX`] only, and no deeper than [`DOCUMENT_DEPTH_MAX`].
pub fn check_document(value: &Value) -> Result<(), RuleError> {
    check_value(value, 0)
}

/// The RFC 8785 canonical text of `value`.
pub fn canonicalize(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(value, &mut out);
    out
}

/// The canonical text of a document that may be signed: [`check_document`], then
/// [`canonicalize`].
pub fn canonical_document(value: &Value) -> Result<Vec<u8>, RuleError> {
    check_document(value)?;
    Ok(canonicalize(value))
}

fn check_value(value: &Value, depth: usize) -> Result<(), RuleError> {
    match value {
        Value::Number(number) => check_number(number),
        Value::Array(items) => {
            let depth = deeper(depth)?;
            items.iter().try_for_each(|item| check_value(item, depth))
        }
        Value::Object(members) => {
            let depth = deeper(depth)?;
            members
                .values()
                .try_for_each(|item| check_value(item, depth))
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

fn deeper(depth: usize) -> Result<usize, RuleError> {
    if depth >= DOCUMENT_DEPTH_MAX {
        return Err(RuleError::Canonical(format!(
            "the document nests deeper than {DOCUMENT_DEPTH_MAX} levels"
        )));
    }
    Ok(depth + 1)
}

fn check_number(number: &Number) -> Result<(), RuleError> {
    let within = match (number.as_i64(), number.as_u64()) {
        (Some(value), _) => (-SAFE_INTEGER_MAX..=SAFE_INTEGER_MAX).contains(&value),
        (None, Some(_)) => false,
        (None, None) => {
            return Err(RuleError::Canonical(format!(
                "{number} is not an integer: signed documents hold integers only"
            )));
        }
    };
    if within {
        Ok(())
    } else {
        Err(RuleError::Canonical(format!(
            "{number} is beyond ±{SAFE_INTEGER_MAX}, the integers every reader holds exactly"
        )))
    }
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(members, out),
    }
}

/// Members sorted by their names as arrays of UTF-16 code units (RFC 8785 section 3.2.3), which
/// differs from sorting by bytes or by code points for characters beyond the Basic Multilingual
/// Plane.
fn write_object(members: &Map<String, Value>, out: &mut Vec<u8>) {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    sorted.sort_by(|(left, _), (right, _)| left.encode_utf16().cmp(right.encode_utf16()));
    out.push(b'{');
    for (index, (name, item)) in sorted.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_string(name, out);
        out.push(b':');
        write_value(item, out);
    }
    out.push(b'}');
}

/// Integers as decimal digits; any other number as ECMAScript's `Number.prototype.toString`
/// writes it (RFC 8785 section 3.2.2.3), which `ryu-js` implements.
fn write_number(number: &Number, out: &mut Vec<u8>) {
    if let Some(value) = number.as_i64() {
        out.extend_from_slice(value.to_string().as_bytes());
    } else if let Some(value) = number.as_u64() {
        out.extend_from_slice(value.to_string().as_bytes());
    } else if let Some(value) = number.as_f64() {
        let mut buffer = ryu_js::Buffer::new();
        out.extend_from_slice(buffer.format(value).as_bytes());
    }
}

/// The escapes of RFC 8785 section 3.2.2.2: `\"`, `\\`, the five short forms for control
/// characters that have one, `\u00xx` in lower-case hexadecimal for the other controls, and
/// every other character as itself.
fn write_string(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for character in text.chars() {
        match character {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\r' => out.extend_from_slice(b"\\r"),
            control if (control as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", control as u32).as_bytes());
            }
            other => {
                let mut buffer = [0_u8; 4];
                out.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// A JSON value read strictly; `depth` counts the arrays and objects around it.
struct StrictValue {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl StrictValue {
    fn inner<E: de::Error>(&self) -> Result<StrictValue, E> {
        deeper(self.depth)
            .map(|depth| StrictValue { depth })
            .map_err(|error| E::custom(error))
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        let number = Number::from(value);
        check_number(&number).map_err(E::custom)?;
        Ok(Value::Number(number))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        let number = Number::from(value);
        check_number(&number).map_err(E::custom)?;
        Ok(Value::Number(number))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Err(E::custom(format!(
            "{value} is not an integer (or is beyond ±{SAFE_INTEGER_MAX}): signed documents \
             hold integers only"
        )))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut items = Vec::new();
        while let Some(item) = sequence.next_element_seed(StrictValue { depth: inner.depth })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut map = Map::new();
        while let Some(name) = members.next_key::<String>()? {
            if map.contains_key(&name) {
                return Err(de::Error::custom(format!(
                    "the member name {name:?} appears twice"
                )));
            }
            let item = members.next_value_seed(StrictValue { depth: inner.depth })?;
            map.insert(name, item);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: Result<&str, &str>) {
        let got = parse_document(text.as_bytes()).map(|value| canonicalize(&value));
        match (got, expect) {
            (Ok(bytes), Ok(want)) => assert_eq!(String::from_utf8_lossy(&bytes), want, "{text}"),
            (Err(error), Err(want)) => {
                let message = error.to_string();
                assert!(message.contains(want), "{text}: {message}");
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn documents_read_strictly() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            (r#"{"b":1,"a":2}"#, Ok(r#"{"a":2,"b":1}"#)),
            (r#" { "a" : [ 1 , -2 , 0 ] } "#, Ok(r#"{"a":[1,-2,0]}"#)),
            (r#"{"a":1,"a":1}"#, Err("appears twice")),
            (r#"{"x":{"a":1,"b":{},"a":2}}"#, Err("appears twice")),
            (r#"{"a":1.0}"#, Err("not an integer")),
            (r#"{"a":1e3}"#, Err("not an integer")),
            (r#"{"a":9007199254740991}"#, Ok(r#"{"a":9007199254740991}"#)),
            (
                r#"{"a":-9007199254740991}"#,
                Ok(r#"{"a":-9007199254740991}"#),
            ),
            (r#"{"a":9007199254740992}"#, Err("beyond")),
            (r#"{"a":-9007199254740992}"#, Err("beyond")),
            (r#"{"a":18446744073709551616}"#, Err("not an integer")),
            (r#"{"a":"\ud800"}"#, Err("half of a pair")),
            (r#"{"a":"\udc00x"}"#, Err("half of a pair")),
            (r#"{"a":"\ud83d\ude02"}"#, Ok("{\"a\":\"\u{1f602}\"}")),
            (r#"{"a":1} x"#, Err("trailing")),
            (r#"{"a":1"#, Err("EOF")),
            (
                r#"{"a":"\u001f\u007f\u2028"}"#,
                Ok("{\"a\":\"\\u001f\u{7f}\u{2028}\"}"),
            ),
            (r#"{"a":"\b\f\n\r\t\/"}"#, Ok(r#"{"a":"\b\f\n\r\t/"}"#)),
        ];
        for (text, expect) in cases {
            check(text, *expect);
        }
    }

    #[test]
    fn nesting_and_size_are_bounded() {
        let deep_ok = format!("{}{}", "[".repeat(16), "]".repeat(16));
        check(&deep_ok, Ok(&deep_ok));
        let too_deep = format!("{}{}", "[".repeat(17), "]".repeat(17));
        check(&too_deep, Err("deeper than 16"));
        let big = format!("\"{}\"", "a".repeat(DOCUMENT_BYTES_MAX));
        check(&big, Err("more than the"));
    }

    #[test]
    fn invalid_utf8_is_refused() {
        let error = parse_document(b"{\"a\":\"\xff\"}").map(|_| ());
        assert!(error.is_err(), "{error:?}");
    }

    #[test]
    fn sorting_is_by_utf16_code_units() {
        // U+1F600 is D83D DE00 in UTF-16, which sorts before U+FB33; by code point it would be
        // after.
        let value = serde_json::json!({"\u{fb33}": 1, "\u{1f600}": 2});
        assert_eq!(
            String::from_utf8_lossy(&canonicalize(&value)),
            "{\"\u{1f600}\":2,\"\u{fb33}\":1}"
        );
    }
}
