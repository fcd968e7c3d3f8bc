//! A tolerant JSON reader for what models write.
//!
//! It is a real tokenizer and recursive-descent parser, never a text substitution: a repair
//! is a decision made at the exact place the grammar breaks, so an apostrophe inside a valid
//! string stays an apostrophe and a `</tool_call>` inside an argument string is just text.
//!
//! Repairs: smart quotes and single quotes as string delimiters; `True`/`False`/`None` and
//! other bare words; unquoted keys; trailing commas; missing commas between members; missing
//! closing braces or brackets (closed where the grammar breaks or at the end); an
//! unterminated string (closed at the end); raw newlines and tabs inside strings; unknown
//! escapes kept as written (`C:\Users`); `//` and `/* */` comments. The reader stops at the
//! end of the first value, so text after it is left to the caller.
//!
//! Every byte is examined a bounded number of times and nesting is capped at `DEPTH_MAX`, so
//! the reader is linear in its input and cannot overflow the stack.

use std::borrow::Cow;

use memchr::{memchr, memchr2, memmem};
use serde_json::{Number, Value};

/// A value as read. Objects keep their entries in a list, as written: the parser only
/// walks them, and hashing every key of every object read would cost more than the read.
/// `into_value` makes the `serde_json` value where one is kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'t> {
    Null,
    Bool(bool),
    Number(Number),
    /// Borrowed from the input when no escape had to be decoded.
    String(Cow<'t, str>),
    Array(Vec<Json<'t>>),
    Object(Vec<(Cow<'t, str>, Json<'t>)>),
}

impl Json<'_> {
    pub(crate) fn into_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(flag) => Value::Bool(flag),
            Json::Number(number) => Value::Number(number),
            Json::String(text) => Value::String(text.into_owned()),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(entries) => Value::Object(owned_entries(entries).into_iter().collect()),
        }
    }
}

use crate::work::Work;

/// Deeper nesting than this is refused: no tool takes arguments nested this deep, and the
/// cap keeps recursion bounded on hostile input.
pub(crate) const DEPTH_MAX: usize = 64;

/// Which repairs a read needed, when the caller must know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Repairs {
    /// A string ran to the end of the input and was closed there.
    pub(crate) string_closed_at_end: bool,
}

/// Object entries with owned keys and `serde_json` values, in the order written.
pub(crate) fn owned_entries(entries: Vec<(Cow<'_, str>, Json<'_>)>) -> Vec<(String, Value)> {
    entries
        .into_iter()
        .map(|(key, value)| (key.into_owned(), value.into_value()))
        .collect()
}

/// A value read from the text and the offset just past it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Read<'t> {
    pub(crate) value: Json<'t>,
    pub(crate) end: usize,
    pub(crate) repairs: Repairs,
}

/// Why nothing usable was read, and where the reader gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadError {
    pub(crate) kind: ReadErrorKind,
    pub(crate) at: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadErrorKind {
    /// No value starts here.
    NoValue,
    /// A key was not followed by `:`.
    KeyWithoutColon,
    /// Nesting deeper than `DEPTH_MAX`.
    TooDeep,
}

impl ReadErrorKind {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            ReadErrorKind::NoValue => "no JSON value where one was expected",
            ReadErrorKind::KeyWithoutColon => "an object key without a `:` after it",
            ReadErrorKind::TooDeep => "JSON nested too deeply",
        }
    }
}

/// The surrounding syntax, which decides what may follow a closing quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Json,
    /// Inside a Python-style call `name(key="value")`: `)` and `=` end values too.
    Python,
}

/// Reads one value starting at `start` (leading white space and comments are skipped).
pub(crate) fn read_value<'t>(
    text: &'t str,
    start: usize,
    limit: usize,
    dialect: Dialect,
    work: &mut Work,
) -> Result<Read<'t>, ReadError> {
    let mut reader = Reader {
        text: &text[..limit],
        bytes: &text.as_bytes()[..limit],
        pos: start,
        dialect,
        repairs: Repairs::default(),
        work,
    };
    let value = reader.value(0)?;
    Ok(Read {
        value,
        end: reader.pos,
        repairs: reader.repairs,
    })
}

/// Skips white space and comments from `pos`; returns the first other offset.
pub(crate) fn skip_space(text: &str, pos: usize, work: &mut Work) -> usize {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos,
        dialect: Dialect::Json,
        repairs: Repairs::default(),
        work,
    };
    reader.skip_space();
    reader.pos
}

/// The quote that opened a string, which decides what may close it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    Double,
    Single,
    /// `“` or `”`: closed by either.
    SmartDouble,
    /// `‘` or `’`: closed by either.
    SmartSingle,
}

const SMART_LEAD: u8 = 0xE2;

/// The quote that starts at `bytes[pos..]`, with its length in bytes.
fn quote_at(bytes: &[u8], pos: usize) -> Option<(Quote, usize)> {
    match bytes.get(pos)? {
        b'"' => Some((Quote::Double, 1)),
        b'\'' => Some((Quote::Single, 1)),
        &SMART_LEAD => match (bytes.get(pos + 1), bytes.get(pos + 2)) {
            (Some(0x80), Some(0x9C | 0x9D)) => Some((Quote::SmartDouble, 3)),
            (Some(0x80), Some(0x98 | 0x99)) => Some((Quote::SmartSingle, 3)),
            _ => None,
        },
        _ => None,
    }
}

fn is_word_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$'
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'$' | b'-' | b'.')
}

struct Reader<'t, 'w> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    dialect: Dialect,
    repairs: Repairs,
    work: &'w mut Work,
}

impl<'t> Reader<'t, '_> {
    fn error(&self, kind: ReadErrorKind) -> ReadError {
        ReadError { kind, at: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => {
                    self.work.add(1);
                    self.pos += 1;
                }
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    let rest = &self.bytes[self.pos..];
                    let skip = memchr(b'\n', rest).unwrap_or(rest.len());
                    self.work.add(skip);
                    self.pos += skip;
                }
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'*') => {
                    let rest = &self.bytes[self.pos + 2..];
                    let skip = memmem::find(rest, b"*/").map_or(rest.len(), |at| at + 2);
                    self.work.add(skip + 2);
                    self.pos += 2 + skip;
                }
                // A no-break space (U+00A0) is white space to a reader, whatever JSON says.
                Some(0xC2) if self.bytes.get(self.pos + 1) == Some(&0xA0) => {
                    self.work.add(2);
                    self.pos += 2;
                }
                _ => return,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json<'t>, ReadError> {
        if depth > DEPTH_MAX {
            return Err(self.error(ReadErrorKind::TooDeep));
        }
        self.skip_space();
        let Some(byte) = self.peek() else {
            return Err(self.error(ReadErrorKind::NoValue));
        };
        if let Some((quote, len)) = quote_at(self.bytes, self.pos) {
            self.pos += len;
            return Ok(Json::String(self.string(quote)));
        }
        match byte {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'-' | b'+' | b'0'..=b'9' => self.number(),
            b'.' if self.bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit) => self.number(),
            byte if is_word_start(byte) => Ok(self.word_value()),
            _ => Err(self.error(ReadErrorKind::NoValue)),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json<'t>, ReadError> {
        self.pos += 1;
        self.work.add(1);
        let mut entries = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                // A closing brace, or a trailing comma before it.
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(entries));
                }
                Some(b',') => {
                    self.pos += 1;
                    self.work.add(1);
                    continue;
                }
                // The end, or something no member can start with: the brace was never
                // written, so close the object here and leave the rest to the caller.
                None => return Ok(Json::Object(entries)),
                Some(byte) if !self.starts_key(byte) => return Ok(Json::Object(entries)),
                Some(_) => {}
            }
            let key = self.key();
            self.skip_space();
            match self.peek() {
                Some(b':') => self.pos += 1,
                // `key=value` is what a model writes when it thinks in Python.
                Some(b'=') => self.pos += 1,
                // A dangling key at the very end: the object was cut off before its value.
                None => return Ok(Json::Object(entries)),
                Some(_) => return Err(self.error(ReadErrorKind::KeyWithoutColon)),
            }
            let value = self.value(depth + 1)?;
            entries.push((key, value));
            // After a member: a comma, the closing brace, or (repaired) neither. A missing
            // comma before the next key is forgiven by the loop above, which accepts a key
            // wherever one can start.
        }
    }

    fn starts_key(&self, byte: u8) -> bool {
        is_word_start(byte) || byte.is_ascii_digit() || quote_at(self.bytes, self.pos).is_some()
    }

    fn key(&mut self) -> Cow<'t, str> {
        if let Some((quote, len)) = quote_at(self.bytes, self.pos) {
            self.pos += len;
            return self.string(quote);
        }
        Cow::Borrowed(self.word())
    }

    fn array(&mut self, depth: usize) -> Result<Json<'t>, ReadError> {
        self.pos += 1;
        self.work.add(1);
        let mut items = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    self.work.add(1);
                    continue;
                }
                // The end, or a closer that belongs to an enclosing object or call.
                None | Some(b'}' | b')') => return Ok(Json::Array(items)),
                Some(_) => {}
            }
            match self.value(depth + 1) {
                Ok(value) => items.push(value),
                // Something that is not a value: the bracket was never written.
                Err(error) if error.kind == ReadErrorKind::NoValue => {
                    return Ok(Json::Array(items));
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Reads a string body after its opening quote. Never fails: an unterminated string is
    /// closed at the end of the input.
    fn string(&mut self, quote: Quote) -> Cow<'t, str> {
        let start = self.pos;
        let mut out = String::new();
        let mut escaped = false;
        let mut run_start = self.pos;
        loop {
            let rest = &self.bytes[self.pos..];
            let found = match quote {
                Quote::Double => memchr2(b'"', b'\\', rest),
                Quote::Single => memchr2(b'\'', b'\\', rest),
                Quote::SmartDouble | Quote::SmartSingle => memchr2(SMART_LEAD, b'\\', rest),
            };
            let Some(offset) = found else {
                self.work.add(rest.len());
                self.pos = self.bytes.len();
                self.repairs.string_closed_at_end = true;
                // The line break before a closing tag or fence belongs to the tag.
                if !escaped {
                    return Cow::Borrowed(self.text[start..].trim_end_matches(['\n', '\r']));
                }
                out.push_str(&self.text[run_start..]);
                let kept = out.trim_end_matches(['\n', '\r']).len();
                out.truncate(kept);
                return Cow::Owned(out);
            };
            self.work.add(offset + 1);
            let at = self.pos + offset;
            if self.bytes[at] == b'\\' {
                escaped = true;
                out.push_str(&self.text[run_start..at]);
                self.pos = at;
                self.escape(&mut out);
                run_start = self.pos;
                continue;
            }
            let closer_len = match (quote, quote_at(self.bytes, at)) {
                (Quote::Double, Some((Quote::Double, len)))
                | (Quote::Single, Some((Quote::Single, len)))
                | (Quote::SmartDouble, Some((Quote::SmartDouble, len)))
                | (Quote::SmartSingle, Some((Quote::SmartSingle, len))) => len,
                // A lead byte of some other character: keep scanning after it.
                _ => {
                    self.pos = at + 1;
                    continue;
                }
            };
            if self.closes_here(at + closer_len) {
                self.pos = at + closer_len;
                if !escaped {
                    return Cow::Borrowed(&self.text[start..at]);
                }
                out.push_str(&self.text[run_start..at]);
                return Cow::Owned(out);
            }
            // A quote inside the text (`'don't'`, `"say "hi""`): keep it as a character.
            self.pos = at + closer_len;
        }
    }

    /// Whether a quote ending just before `after` closes its string: in valid JSON a closing
    /// quote is always followed by `,` `:` `]` `}` or the end, so any other follower means
    /// the quote is part of the text. A newline then another quote is a missing comma.
    fn closes_here(&mut self, after: usize) -> bool {
        let mut pos = after;
        let mut saw_newline = false;
        while let Some(&byte) = self.bytes.get(pos) {
            match byte {
                b' ' | b'\t' | b'\r' => {}
                b'\n' => saw_newline = true,
                b',' | b':' | b']' | b'}' => return true,
                b')' | b'=' => return self.dialect == Dialect::Python,
                _ => return saw_newline && quote_at(self.bytes, pos).is_some(),
            }
            pos += 1;
            self.work.add(1);
        }
        true
    }

    /// Reads one escape at `self.pos` (a backslash) into `out`.
    fn escape(&mut self, out: &mut String) {
        let Some(&next) = self.bytes.get(self.pos + 1) else {
            out.push('\\');
            self.pos += 1;
            return;
        };
        let simple = match next {
            b'"' => Some('"'),
            b'\'' => Some('\''),
            b'\\' => Some('\\'),
            b'/' => Some('/'),
            b'n' => Some('\n'),
            b't' => Some('\t'),
            b'r' => Some('\r'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            self.pos += 2;
            self.work.add(1);
            return;
        }
        if next == b'u'
            && let Some(first) = self.hex4(self.pos + 2)
        {
            self.pos += 6;
            self.work.add(5);
            out.push(self.unicode_escape(first));
            return;
        }
        // An escape JSON does not know (`C:\Users`): keep the backslash as written.
        out.push('\\');
        self.pos += 1;
    }

    fn unicode_escape(&mut self, first: u16) -> char {
        if (0xD800..0xDC00).contains(&first)
            && self.bytes.get(self.pos) == Some(&b'\\')
            && self.bytes.get(self.pos + 1) == Some(&b'u')
            && let Some(second) = self.hex4(self.pos + 2)
            && (0xDC00..0xE000).contains(&second)
        {
            self.pos += 6;
            self.work.add(6);
            let code = 0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00);
            return char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
        }
        char::from_u32(u32::from(first)).unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    fn hex4(&self, at: usize) -> Option<u16> {
        let digits = self.bytes.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        u16::from_str_radix(text, 16).ok()
    }

    fn number(&mut self) -> Result<Json<'t>, ReadError> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        let digits_start = self.pos;
        while let Some(byte) = self.peek() {
            // A sign belongs to the number only right after its exponent marker.
            let exponent_sign = matches!(byte, b'+' | b'-')
                && matches!(self.bytes.get(self.pos - 1), Some(b'e' | b'E'));
            if !(byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E') || exponent_sign) {
                break;
            }
            self.pos += 1;
        }
        self.work.add(self.pos - start);
        let literal = self.text[digits_start..self.pos].trim_end_matches('.');
        let negative = self.bytes[start] == b'-';
        match parse_number(literal, negative) {
            Some(number) => Ok(Json::Number(number)),
            None => {
                self.pos = start;
                Err(self.error(ReadErrorKind::NoValue))
            }
        }
    }

    fn word(&mut self) -> &'t str {
        let start = self.pos;
        while self.peek().is_some_and(is_word_byte) {
            self.pos += 1;
        }
        self.work.add(self.pos - start);
        &self.text[start..self.pos]
    }

    /// A bare word in value position: a literal in any of the spellings models use, or else
    /// the word itself as a string (`{"name": get_time}`).
    fn word_value(&mut self) -> Json<'t> {
        let word = self.word();
        match word {
            "true" | "True" | "TRUE" => Json::Bool(true),
            "false" | "False" | "FALSE" => Json::Bool(false),
            "null" | "None" | "NULL" | "none" | "nil" | "undefined" => Json::Null,
            other => Json::String(Cow::Borrowed(other)),
        }
    }
}

fn parse_number(literal: &str, negative: bool) -> Option<Number> {
    if literal.is_empty()
        || !literal
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.')
    {
        return None;
    }
    let is_integer = literal.bytes().all(|b| b.is_ascii_digit());
    if is_integer && let Ok(magnitude) = literal.parse::<u64>() {
        if !negative {
            return Some(Number::from(magnitude));
        }
        if let Ok(signed) = i64::try_from(magnitude) {
            return Some(Number::from(-signed));
        }
    }
    let float: f64 = literal.parse().ok()?;
    Number::from_f64(if negative { -float } else { float })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(text: &str, expect: Value) {
        let read = read_value(text, 0, text.len(), Dialect::Json, &mut Work::default())
            .unwrap_or_else(|error| panic!("{text:?} failed: {error:?}"));
        assert_eq!(read.value.into_value(), expect, "{text:?}");
    }

    fn check_end(text: &str, end: usize) {
        let read = read_value(text, 0, text.len(), Dialect::Json, &mut Work::default()).unwrap();
        assert_eq!(read.end, end, "{text:?}");
    }

    #[test]
    fn valid_json_reads_as_json() {
        let cases = [
            r#"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#,
            r#"[1, -2, 3.5, 1e3, -0.25, "x\ny\u00e9\ud83d\ude00"]"#,
            r#""plain""#,
            r#"{"empty": {}, "list": []}"#,
        ];
        for text in cases {
            let strict: Value = serde_json::from_str(text).unwrap();
            check(text, strict);
        }
    }

    #[test]
    fn each_repair() {
        check("{“name”: “make_dir”}", json!({"name": "make_dir"}));
        check("{‘a’: ‘b’}", json!({"a": "b"}));
        check(
            "{'command': 'git log -1'}",
            json!({"command": "git log -1"}),
        );
        check("{'text': 'don't stop'}", json!({"text": "don't stop"}));
        check(r#"{"text": "it's fine"}"#, json!({"text": "it's fine"}));
        check(
            "{a: True, b: False, c: None}",
            json!({"a": true, "b": false, "c": null}),
        );
        check(r#"{"a": 1,}"#, json!({"a": 1}));
        check(r#"[1, 2,]"#, json!([1, 2]));
        check(r#"{"a": {"b": 1}"#, json!({"a": {"b": 1}}));
        check(r#"{"a": [1, 2"#, json!({"a": [1, 2]}));
        check(r#"{"q": "how to profile"#, json!({"q": "how to profile"}));
        check(
            "{\"content\": \"line 1\nline\t2\"}",
            json!({"content": "line 1\nline\t2"}),
        );
        check(
            r#"{"path": "C:\Users\me"}"#,
            json!({"path": "C:\\Users\\me"}),
        );
        check(r#"{"a": 1 "b": 2}"#, json!({"a": 1, "b": 2}));
        check("{\"a\": \"x\"\n\"b\": \"y\"}", json!({"a": "x", "b": "y"}));
        check(r#"{"name": get_time}"#, json!({"name": "get_time"}));
        check("{// note\n\"a\": /* why */ 1}", json!({"a": 1}));
        check(r#"{"say": "print("hi")"}"#, json!({"say": "print(\"hi\")"}));
    }

    #[test]
    fn a_closing_tag_inside_a_string_is_text() {
        check(
            r#"{"content": "use </tool_call> to end"}</tool_call>"#,
            json!({"content": "use </tool_call> to end"}),
        );
    }

    #[test]
    fn stops_after_the_first_value() {
        check_end(r#"{"a": 1} and then some"#, 8);
        check_end("{\"a\": 1}\n```", 8);
        // A missing brace closes where the grammar breaks, before the fence.
        check_end("{\"a\": {\"b\": 1}\n```", 15);
    }

    #[test]
    fn refuses_what_is_not_a_value() {
        for text in ["", "   ", "<tool_call>", "}", "- x"] {
            let result = read_value(text, 0, text.len(), Dialect::Json, &mut Work::default());
            assert!(result.is_err(), "{text:?} gave {result:?}");
        }
        let deep = "[".repeat(1000);
        let error =
            read_value(&deep, 0, deep.len(), Dialect::Json, &mut Work::default()).unwrap_err();
        assert_eq!(error.kind, ReadErrorKind::TooDeep);
    }
}
