//! Python-style calls: `get_time(timezone="UTC")`, Llama's `web_search.call(query="x")`, and
//! Llama 3.2's list `[get_time(timezone="UTC"), web_search(query="x")]`.

use crate::json::{Dialect, read_value, skip_space};
use crate::shape::{Args, Found};
use crate::work::Work;

/// A name longer than this is not a function name.
const NAME_BYTES_MAX: usize = 128;

/// Reads `name(arguments)` at `pos`, or returns `None` when no call starts there.
pub(crate) fn read_python_call(
    text: &str,
    pos: usize,
    limit: usize,
    work: &mut Work,
) -> Option<(Found, usize)> {
    let bytes = &text.as_bytes()[..limit];
    let name_end = name_end(bytes, pos)?;
    work.add(name_end - pos);
    let mut cursor = name_end;
    while bytes.get(cursor) == Some(&b' ') {
        cursor += 1;
    }
    if bytes.get(cursor) != Some(&b'(') {
        return None;
    }
    cursor += 1;
    let name = text[pos..name_end].trim_end_matches(".call");

    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    loop {
        cursor = skip_space(&text[..limit], cursor, work);
        match bytes.get(cursor) {
            Some(b')') => {
                cursor += 1;
                break;
            }
            Some(b',') => {
                cursor += 1;
                continue;
            }
            // Generation stopped inside the call: keep what was written.
            None => break,
            Some(_) => {}
        }
        if let Some(keyword_end) = keyword_at(bytes, cursor) {
            let key = text[cursor..keyword_end.0].to_owned();
            let read = read_value(text, keyword_end.1, limit, Dialect::Python, work).ok()?;
            keywords.push((key, read.value.into_value()));
            cursor = read.end;
        } else {
            let read = read_value(text, cursor, limit, Dialect::Python, work).ok()?;
            positional.push(read.value.into_value());
            cursor = read.end;
        }
        cursor = skip_space(&text[..limit], cursor, work);
        match bytes.get(cursor) {
            Some(b',') => cursor += 1,
            Some(b')') => {
                cursor += 1;
                break;
            }
            None => break,
            Some(_) => return None,
        }
    }
    let args = if positional.is_empty() {
        Args::Object(keywords)
    } else {
        Args::Python {
            positional,
            keywords,
        }
    };
    Some((
        Found {
            written_name: name.to_owned(),
            args,
            has_argument_key: true,
        },
        cursor,
    ))
}

/// Reads `[call(...), call(...)]` at `pos` (which holds the `[`).
pub(crate) fn read_python_list(
    text: &str,
    pos: usize,
    limit: usize,
    work: &mut Work,
) -> Option<(Vec<Found>, usize)> {
    let bytes = &text.as_bytes()[..limit];
    let mut cursor = pos + 1;
    let mut calls = Vec::new();
    loop {
        cursor = skip_space(&text[..limit], cursor, work);
        match bytes.get(cursor) {
            Some(b']') => return (!calls.is_empty()).then_some((calls, cursor + 1)),
            Some(b',') => cursor += 1,
            None => return (!calls.is_empty()).then_some((calls, cursor)),
            Some(_) => {
                let (found, end) = read_python_call(text, cursor, limit, work)?;
                calls.push(found);
                cursor = end;
            }
        }
    }
}

/// The end of a dotted identifier starting at `pos`.
fn name_end(bytes: &[u8], pos: usize) -> Option<usize> {
    let first = *bytes.get(pos)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let mut end = pos + 1;
    while end < bytes.len() && end - pos < NAME_BYTES_MAX {
        let byte = bytes[end];
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.' || byte == b'-' {
            end += 1;
        } else {
            break;
        }
    }
    Some(end)
}

/// `key=` at `pos` (but not `key==`): the end of the key and the start of the value.
fn keyword_at(bytes: &[u8], pos: usize) -> Option<(usize, usize)> {
    let key_end = name_end(bytes, pos)?;
    let mut cursor = key_end;
    while bytes.get(cursor) == Some(&b' ') {
        cursor += 1;
    }
    let is_keyword = bytes.get(cursor) == Some(&b'=') && bytes.get(cursor + 1) != Some(&b'=');
    is_keyword.then_some((key_end, cursor + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn call(text: &str) -> Option<(String, Args)> {
        read_python_call(text, 0, text.len(), &mut Work::default())
            .map(|(found, _)| (found.written_name, found.args))
    }

    fn object(value: Value) -> Args {
        Args::Object(value.as_object().cloned().unwrap().into_iter().collect())
    }

    #[test]
    fn reads_python_calls() {
        assert_eq!(
            call(r#"get_time(timezone="UTC")"#),
            Some(("get_time".into(), object(json!({"timezone": "UTC"}))))
        );
        assert_eq!(
            call(r#"web_search.call(query="x", max_results=3)"#),
            Some((
                "web_search".into(),
                object(json!({"query": "x", "max_results": 3}))
            ))
        );
        assert_eq!(
            call("list_files()"),
            Some(("list_files".into(), object(json!({}))))
        );
        assert_eq!(
            call("f(flag=True, items=['a', 'b'])"),
            Some((
                "f".into(),
                object(json!({"flag": true, "items": ["a", "b"]}))
            ))
        );
        assert_eq!(
            call(r#"get_weather("Paris")"#),
            Some((
                "get_weather".into(),
                Args::Python {
                    positional: vec![json!("Paris")],
                    keywords: Vec::new()
                }
            ))
        );
        // Cut off mid-call: what was written is kept.
        assert_eq!(
            call(r#"get_time(timezone="UTC""#),
            Some(("get_time".into(), object(json!({"timezone": "UTC"}))))
        );
    }

    #[test]
    fn prose_is_not_a_python_call() {
        for text in ["cargo test", "sorry, I can't", "(a)", "1(2)", "f x(y)"] {
            assert_eq!(call(text), None, "{text:?}");
        }
    }

    #[test]
    fn reads_a_list_of_python_calls() {
        let text = r#"[get_time(timezone="UTC"), web_search(query="x")]"#;
        let (calls, end) = read_python_list(text, 0, text.len(), &mut Work::default()).unwrap();
        assert_eq!(end, text.len());
        let names: Vec<_> = calls
            .iter()
            .map(|found| found.written_name.as_str())
            .collect();
        assert_eq!(names, ["get_time", "web_search"]);
        assert!(read_python_list("[1, 2]", 0, 6, &mut Work::default()).is_none());
        assert!(read_python_list("[]", 0, 2, &mut Work::default()).is_none());
    }
}
