//! Fitting a call's arguments to the tool's JSON Schema: renamed keys, dropped keys, and
//! values coerced to the declared types (`"5"` → 5, `"true"` → true, `"a,b"` → a list).
//!
//! Coercion only ever makes a value fit; a value that cannot be made to fit is left as the
//! model wrote it, so the executor's schema validation reports it instead of this code
//! guessing.

use serde_json::{Map, Value};

use crate::json::{Dialect, read_value};
use crate::work::Work;

/// Argument names models write, and the parameter each one means. A rename applies only
/// when the tool has that parameter and the call does not already set it.
pub const ARGUMENT_ALIASES: &[(&str, &[&str])] = &[
    (
        "path",
        &[
            "file_path",
            "filepath",
            "file",
            "filename",
            "file_name",
            "dir",
            "directory",
            "folder",
            "dirname",
            "dir_path",
            "directory_path",
            "folder_path",
        ],
    ),
    (
        "content",
        &[
            "contents",
            "text",
            "data",
            "body",
            "file_content",
            "file_contents",
        ],
    ),
    (
        "command",
        &[
            "cmd",
            "commands",
            "script",
            "shell_command",
            "command_line",
            "bash",
        ],
    ),
    (
        "query",
        &[
            "q",
            "search",
            "search_query",
            "search_term",
            "term",
            "keywords",
            "question",
        ],
    ),
    ("location", &["city", "place", "loc", "address", "region"]),
    ("timezone", &["tz", "zone", "time_zone"]),
    (
        "max_results",
        &["limit", "count", "num_results", "n", "top_k", "results"],
    ),
    ("task", &["prompt", "goal", "instruction", "instructions"]),
];

/// Fits `args` to the tool's `parameters` schema. Unknown top-level keys are dropped unless
/// the schema says `additionalProperties: true`; nested objects drop keys only when their
/// schema says `additionalProperties: false`.
pub(crate) fn fit_arguments(args: Map<String, Value>, schema: &Value) -> Map<String, Value> {
    fit_object(args, schema, true)
}

fn fit_object(args: Map<String, Value>, schema: &Value, top_level: bool) -> Map<String, Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return args;
    };
    let extra_allowed = match schema.get("additionalProperties") {
        Some(Value::Bool(allowed)) => *allowed,
        Some(Value::Object(_)) => true,
        _ => !top_level,
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();

    let mut fitted = Map::new();
    let mut unknown = Vec::new();
    for (key, value) in args {
        if properties.contains_key(&key) {
            fitted.insert(key, value);
        } else {
            unknown.push((key, value));
        }
    }
    for (key, value) in unknown {
        match rename_target(&key, properties, &fitted) {
            Some(target) => {
                fitted.insert(target, value);
            }
            None if extra_allowed => {
                fitted.insert(key, value);
            }
            None => {}
        }
    }

    let keys: Vec<String> = fitted.keys().cloned().collect();
    for key in keys {
        let Some(value) = fitted.remove(&key) else {
            continue;
        };
        // An explicit null for an optional parameter means "not given".
        if value.is_null() && !required.contains(&key.as_str()) {
            continue;
        }
        let value = match properties.get(&key) {
            Some(property) => coerce(value, property),
            None => value,
        };
        fitted.insert(key, value);
    }
    fitted
}

/// The parameter an unknown key means: the same name in another case, or an alias.
fn rename_target(
    key: &str,
    properties: &Map<String, Value>,
    fitted: &Map<String, Value>,
) -> Option<String> {
    let lower = key.to_lowercase();
    let same_name = properties.keys().find(|name| name.to_lowercase() == lower);
    let alias = ARGUMENT_ALIASES
        .iter()
        .find(|(target, aliases)| {
            aliases.contains(&lower.as_str()) && properties.contains_key(*target)
        })
        .map(|(target, _)| *target);
    let target = same_name.map(String::as_str).or(alias)?;
    (!fitted.contains_key(target)).then(|| target.to_owned())
}

/// Coerces one value to a property schema, or returns it unchanged when it cannot.
pub(crate) fn coerce(value: Value, schema: &Value) -> Value {
    let value = match declared_types(schema) {
        types if types.is_empty() => value,
        types if types.iter().any(|kind| matches_type(&value, kind)) => value,
        types => match types.iter().find_map(|kind| convert(&value, kind)) {
            Some(converted) => converted,
            None => value,
        },
    };
    let value = match_enum(value, schema);
    match value {
        Value::Object(map) => Value::Object(fit_object(map, schema, false)),
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => Value::Array(
                items
                    .into_iter()
                    .map(|item| coerce(item, item_schema))
                    .collect(),
            ),
            None => Value::Array(items),
        },
        other => other,
    }
}

/// The `type` names a schema allows, including those of `anyOf`/`oneOf` branches.
fn declared_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => ["anyOf", "oneOf"]
            .iter()
            .filter_map(|key| schema.get(*key).and_then(Value::as_array))
            .flatten()
            .filter_map(|branch| branch.get("type").and_then(Value::as_str))
            .collect(),
    }
}

fn matches_type(value: &Value, kind: &str) -> bool {
    match (kind, value) {
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("null", Value::Null) => true,
        ("object", Value::Object(_)) | ("array", Value::Array(_)) => true,
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(number)) => number.is_i64() || number.is_u64(),
        _ => false,
    }
}

fn convert(value: &Value, kind: &str) -> Option<Value> {
    match kind {
        "integer" => to_integer(value),
        "number" => to_number(value),
        "boolean" => to_boolean(value),
        "string" => to_string(value),
        "array" => to_array(value),
        "object" => match value {
            Value::String(text) => parse_embedded(text).filter(Value::is_object),
            _ => None,
        },
        _ => None,
    }
}

fn to_integer(value: &Value) -> Option<Value> {
    let float = match value {
        Value::Number(number) => number.as_f64()?,
        Value::String(text) => {
            let text = text.trim();
            if let Ok(integer) = text.parse::<i64>() {
                return Some(Value::from(integer));
            }
            text.parse::<f64>().ok()?
        }
        _ => return None,
    };
    // Only whole numbers become integers: 2.5 stays 2.5 for validation to report.
    let fits = float.fract() == 0.0 && float.abs() < 9.0e15;
    #[allow(clippy::cast_possible_truncation)]
    fits.then(|| Value::from(float as i64))
}

fn to_number(value: &Value) -> Option<Value> {
    let Value::String(text) = value else {
        return None;
    };
    let text = text.trim();
    if let Ok(integer) = text.parse::<i64>() {
        return Some(Value::from(integer));
    }
    let float: f64 = text.parse().ok()?;
    serde_json::Number::from_f64(float).map(Value::Number)
}

fn to_boolean(value: &Value) -> Option<Value> {
    match value {
        Value::String(text) => match text.trim().to_lowercase().as_str() {
            "true" | "yes" | "y" | "on" | "1" => Some(Value::Bool(true)),
            "false" | "no" | "n" | "off" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        Value::Number(number) => match number.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
}

fn to_string(value: &Value) -> Option<Value> {
    match value {
        Value::Number(number) => Some(Value::String(number.to_string())),
        Value::Bool(flag) => Some(Value::String(flag.to_string())),
        // A command or query split into words: join them back.
        Value::Array(items) if items.iter().all(Value::is_string) => Some(Value::String(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        )),
        _ => None,
    }
}

fn to_array(value: &Value) -> Option<Value> {
    match value {
        Value::String(text) => {
            let trimmed = text.trim();
            if trimmed.starts_with('[') {
                if let Some(parsed @ Value::Array(_)) = parse_embedded(trimmed) {
                    return Some(parsed);
                }
            }
            let items = trimmed
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::String(item.to_owned()))
                .collect();
            Some(Value::Array(items))
        }
        Value::Null => None,
        scalar => Some(Value::Array(vec![scalar.clone()])),
    }
}

fn match_enum(value: Value, schema: &Value) -> Value {
    let (Some(options), Value::String(text)) =
        (schema.get("enum").and_then(Value::as_array), &value)
    else {
        return value;
    };
    let wanted = text.trim().to_lowercase();
    options
        .iter()
        .find(|option| {
            option
                .as_str()
                .is_some_and(|option| option.to_lowercase() == wanted)
        })
        .cloned()
        .unwrap_or(value)
}

/// A value written as a string of JSON (`"args": "{\"path\": \"a\"}"`), read tolerantly and
/// only when the whole string is that one value.
pub(crate) fn parse_embedded(text: &str) -> Option<Value> {
    let read = read_value(text, 0, text.len(), Dialect::Json, &mut Work::default()).ok()?;
    text[read.end..].trim().is_empty().then_some(read.value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(args: Value, schema: Value, expect: Value) {
        let args = args.as_object().cloned().unwrap();
        let fitted = fit_arguments(args, &schema);
        assert_eq!(Value::Object(fitted), expect);
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "s": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "opts": {"type": "object", "properties": {"depth": {"type": "integer"}},
                     "additionalProperties": false},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "path": {"type": "string"}
        }, "required": ["s"]})
    }

    #[test]
    fn values_are_coerced_to_the_schema() {
        let cases = [
            (json!({"n": "5"}), json!({"n": 5})),
            (json!({"n": 5.0}), json!({"n": 5})),
            (json!({"n": "5.0"}), json!({"n": 5})),
            (json!({"n": "five"}), json!({"n": "five"})),
            (json!({"n": 2.5}), json!({"n": 2.5})),
            (json!({"x": "3.25"}), json!({"x": 3.25})),
            (json!({"flag": "true"}), json!({"flag": true})),
            (json!({"flag": "No"}), json!({"flag": false})),
            (json!({"flag": 1}), json!({"flag": true})),
            (json!({"s": 42}), json!({"s": "42"})),
            (json!({"s": ["ls", "-la"]}), json!({"s": "ls -la"})),
            (json!({"tags": "a,b"}), json!({"tags": ["a", "b"]})),
            (
                json!({"tags": "a, b ,,c"}),
                json!({"tags": ["a", "b", "c"]}),
            ),
            (
                json!({"tags": "[\"a\", \"b\"]"}),
                json!({"tags": ["a", "b"]}),
            ),
            (json!({"tags": "solo"}), json!({"tags": ["solo"]})),
            (json!({"ids": "1,2"}), json!({"ids": [1, 2]})),
            (json!({"unit": "Celsius"}), json!({"unit": "celsius"})),
            (
                json!({"opts": {"depth": "3", "junk": 1}}),
                json!({"opts": {"depth": 3}}),
            ),
            (
                json!({"opts": "{\"depth\": \"2\"}"}),
                json!({"opts": {"depth": 2}}),
            ),
            (json!({"either": "7"}), json!({"either": "7"})),
            (json!({"either": true}), json!({"either": "true"})),
        ];
        for (args, expect) in cases {
            check(args, schema(), expect);
        }
    }

    #[test]
    fn unknown_keys_are_dropped_and_known_misspellings_renamed() {
        check(json!({"s": "a", "cwd": "."}), schema(), json!({"s": "a"}));
        check(json!({"S": "a"}), schema(), json!({"s": "a"}));
        check(
            json!({"file_path": "a.txt", "s": "x"}),
            schema(),
            json!({"path": "a.txt", "s": "x"}),
        );
        // A rename never overwrites what the model set under the real name.
        check(
            json!({"path": "a", "file": "b"}),
            schema(),
            json!({"path": "a"}),
        );
        // Null optional parameters are "not given"; a null required one stays for validation.
        check(json!({"n": null, "s": null}), schema(), json!({"s": null}));
    }

    #[test]
    fn schemas_that_allow_more_keep_more() {
        let open = json!({"type": "object", "properties": {"a": {"type": "integer"}},
                          "additionalProperties": true});
        check(json!({"a": "1", "b": 2}), open, json!({"a": 1, "b": 2}));
        check(
            json!({"anything": 1}),
            json!({"type": "object"}),
            json!({"anything": 1}),
        );
    }
}
