//! Helpers the per-service summarisers share: reading fields of a JSON answer without
//! panicking on a shape that changed, and listing items with a bound.

use serde_json::Value;

/// A list names at most this many items; the model rarely needs more, and the rest would
/// push other context out of the prompt.
pub(crate) const ITEMS_LISTED_MAX: usize = 30;

/// The text at `path` (`["user", "login"]`) in `value`; numbers and booleans as written.
pub(crate) fn text(value: &Value, path: &[&str]) -> String {
    let mut current = value;
    for key in path {
        match current.get(key) {
            Some(next) => current = next,
            None => return String::new(),
        }
    }
    match current {
        Value::String(text) => one_line(text),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        _ => String::new(),
    }
}

/// `text` on one line: other people's titles may carry newlines that would break a list.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `heading`, then one line per item (at most [`ITEMS_LISTED_MAX`]), then how many were
/// left out.
pub(crate) fn listing(heading: String, lines: Vec<String>) -> String {
    let total = lines.len();
    let mut text = heading;
    for line in lines.into_iter().take(ITEMS_LISTED_MAX) {
        text.push('\n');
        text.push_str(&line);
    }
    if total > ITEMS_LISTED_MAX {
        text.push_str(&format!("\n... and {} more", total - ITEMS_LISTED_MAX));
    }
    text
}

/// The array at `key`, or the value itself when it is an array.
pub(crate) fn items<'a>(value: &'a Value, key: Option<&str>) -> &'a [Value] {
    let array = match key {
        Some(key) => value.get(key),
        None => Some(value),
    };
    array.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}
