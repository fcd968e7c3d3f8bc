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

/// Argument keys and values in the order a model wrote them.
pub(crate) type Entries = Vec<(String, Value)>;

/// Fits `args` to the tool's `parameters` schema. Unknown top-level keys are dropped unless
/// the schema says `additionalProperties: true`; nested objects drop keys only when their
/// schema says `additionalProperties: false`.
pub(crate) fn fit_arguments(args: Entries, schema: &Value) -> Map<String, Value> {
    fit_object(args, schema, true)
}

fn fit_object(args: Entries, schema: &Value, top_level: bool) -> Map<String, Value> {
    let Some(properties) = schema_field(schema, "properties").and_then(Value::as_object) else {
        return args.into_iter().collect();
    };
    let extra_allowed = match schema_field(schema, "additionalProperties") {
        Some(Value::Bool(allowed)) => *allowed,
        Some(Value::Object(_)) => true,
        _ => !top_level,
    };
    let required: &[Value] = match schema_field(schema, "required") {
        Some(Value::Array(names)) => names,
        _ => &[],
    };

    // One pass: each key is kept, renamed or dropped, and its value coerced, in the order
    // the model wrote them. A rename never overwrites a key the model set by its real name.
    let mut fitted = Map::with_capacity(args.len());
    let written: Vec<bool> = properties
        .keys()
        .map(|name| args.iter().any(|(key, _)| key == name))
        .collect();
    let written_by_name = |name: &str| {
        properties
            .keys()
            .position(|key| key == name)
            .is_some_and(|slot| written[slot])
    };
    for (key, value) in args {
        let target = if field(properties, &key).is_some() {
            Some(key)
        } else {
            match rename_target(&key, properties) {
                Some(target) if !written_by_name(target) => Some(target.to_owned()),
                Some(_) => None,
                None if extra_allowed => Some(key),
                None => None,
            }
        };
        let Some(target) = target else { continue };
        if field(&fitted, &target).is_some() {
            continue;
        }
        // An explicit null for an optional parameter means "not given".
        if value.is_null()
            && !required
                .iter()
                .any(|name| name.as_str() == Some(target.as_str()))
        {
            continue;
        }
        let value = match field(properties, &target) {
            Some(property) => coerce(value, property),
            None => value,
        };
        fitted.insert(target, value);
    }
    fitted
}

/// The parameter an unknown key means: the same name in another case, or an alias.
fn rename_target<'p>(key: &str, properties: &'p Map<String, Value>) -> Option<&'p str> {
    let lower = key.to_lowercase();
    if let Some(same_name) = properties.keys().find(|name| name.to_lowercase() == lower) {
        return Some(same_name.as_str());
    }
    let target = ARGUMENT_ALIASES
        .iter()
        .find(|(target, aliases)| {
            aliases.contains(&lower.as_str()) && field(properties, target).is_some()
        })
        .map(|(target, _)| *target)?;
    properties
        .get_key_value(target)
        .map(|(name, _)| name.as_str())
}

/// Coerces one value to a property schema, or returns it unchanged when it cannot.
pub(crate) fn coerce(value: Value, schema: &Value) -> Value {
    let value = match schema_field(schema, "type") {
        // The common case, without collecting the allowed types.
        Some(Value::String(kind)) if matches_type(&value, kind) => value,
        Some(Value::String(kind)) => convert(&value, kind).unwrap_or(value),
        _ => {
            let types = declared_types(schema);
            if types.is_empty() || types.iter().any(|kind| matches_type(&value, kind)) {
                value
            } else {
                types
                    .iter()
                    .find_map(|kind| convert(&value, kind))
                    .unwrap_or(value)
            }
        }
    };
    let value = match_enum(value, schema);
    match value {
        Value::Object(map) => Value::Object(fit_object(map.into_iter().collect(), schema, false)),
        Value::Array(items) => match schema_field(schema, "items") {
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
    match schema_field(schema, "type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => ["anyOf", "oneOf"]
            .iter()
            .filter_map(|key| schema_field(schema, key).and_then(Value::as_array))
            .flatten()
            .filter_map(|branch| schema_field(branch, "type").and_then(Value::as_str))
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
            if trimmed.starts_with('[')
                && let Some(parsed @ Value::Array(_)) = parse_embedded(trimmed)
            {
                return Some(parsed);
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
    let (Some(options), Value::String(text)) = (
        schema_field(schema, "enum").and_then(Value::as_array),
        &value,
    ) else {
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

/// A field of a JSON object. Schemas and arguments hold a handful of keys, where comparing
/// them one by one is cheaper than hashing the key.
fn field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if object.len() <= 8 {
        object
            .iter()
            .find(|(name, _)| name.as_str() == key)
            .map(|(_, value)| value)
    } else {
        object.get(key)
    }
}

fn schema_field<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.as_object().and_then(|object| field(object, key))
}

/// A value written as a string of JSON (`"args": "{\"path\": \"a\"}"`), read tolerantly and
/// only when the whole string is that one value.
pub(crate) fn parse_embedded(text: &str) -> Option<Value> {
    let read = read_value(text, 0, text.len(), Dialect::Json, &mut Work::default()).ok()?;
    text[read.end..]
        .trim()
        .is_empty()
        .then(|| read.value.into_value())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(args: Value, schema: Value, expect: Value) {
        let args = args.as_object().cloned().unwrap().into_iter().collect();
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
