//! Argument validation against a tool's JSON Schema, for the parts of JSON Schema tool
//! schemas use: `type` (one name or a list, with `integer` apart from `number`), `properties`,
//! `required`, `additionalProperties`, `enum`, and `items` for arrays — nested to any depth
//! up to a bound. Anything else in a schema (`description`, `default`, formats) is ignored:
//! the schema describes what a tool accepts, and the tool still checks its own limits.

use serde_json::{Map, Value};

/// How deeply schemas and values are followed. Tool arguments are flat in practice; the bound
/// keeps a hostile or broken schema from costing more than a few hundred steps of recursion.
pub const SCHEMA_DEPTH_MAX: usize = 32;

/// Checks `args` against `schema` (a JSON Schema of type `object`). The error names the first
/// problem found, in words a model can act on: which argument, what was expected, what came.
pub fn validate_arguments(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    match schema.as_object() {
        Some(schema) => check_object(schema, args, "", 0),
        None => Ok(()),
    }
}

fn check(schema: &Value, value: &Value, at: &str, depth: usize) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        // `true`, `{}`-less schemas and junk accept anything: there is nothing to check.
        return Ok(());
    };
    if depth >= SCHEMA_DEPTH_MAX {
        return Err(format!(
            "{} nests deeper than {SCHEMA_DEPTH_MAX} levels",
            shown(at)
        ));
    }
    if let Some(expected) = schema.get("type") {
        check_type(expected, value, at)?;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let choices: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(format!(
            "{} must be one of {}",
            shown(at),
            choices.join(", ")
        ));
    }
    match value {
        Value::Object(map) => check_object(schema, map, at, depth),
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => items.iter().enumerate().try_for_each(|(i, item)| {
                check(item_schema, item, &format!("{at}[{i}]"), depth + 1)
            }),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

fn check_object(
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
    at: &str,
    depth: usize,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                return Err(format!(
                    "{} is required but missing",
                    shown(&join(at, name))
                ));
            }
        }
    }
    for (name, value) in map {
        let path = join(at, name);
        match properties.and_then(|properties| properties.get(name)) {
            Some(property) => check(property, value, &path, depth + 1)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = properties
                        .map(|properties| properties.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(format!(
                        "{} is not an argument of this tool (it takes: {})",
                        shown(&path),
                        if known.is_empty() {
                            "nothing".to_string()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
                Some(extra @ Value::Object(_)) => check(extra, value, &path, depth + 1)?,
                // JSON Schema's default: extra keys are allowed. The parser already drops keys
                // a tool does not take; a direct caller's extras are ignored by the tool.
                _ => {}
            },
        }
    }
    Ok(())
}

fn check_type(expected: &Value, value: &Value, at: &str) -> Result<(), String> {
    let names: Vec<&str> = match expected {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if names.is_empty() || names.iter().any(|name| has_type(value, name)) {
        return Ok(());
    }
    let wanted: Vec<String> = names.iter().map(|name| article(name)).collect();
    Err(format!(
        "{} must be {}, got {}",
        shown(at),
        wanted.join(" or "),
        article(type_name(value))
    ))
}

/// Whether `value` is of the JSON Schema type `name`. Unknown type names accept anything:
/// a schema this validator does not understand must not block every call of its tool.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        // Strict: 5.0 is a number, not an integer, because tools read integers with
        // `as_i64`/`as_u64`. The parser's coercion already turns "5" into 5.
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn article(name: &str) -> String {
    match name {
        "null" => "null".to_string(),
        "integer" | "object" | "array" => format!("an {name}"),
        _ => format!("a {name}"),
    }
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}.{name}")
    }
}

fn shown(at: &str) -> String {
    if at.is_empty() {
        "the arguments".to_string()
    } else {
        format!("`{at}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_case(schema: Value, args: Value, expected: Result<(), &str>) {
        let args = args.as_object().cloned().unwrap_or_default();
        let got = validate_arguments(&schema, &args);
        assert_eq!(
            got.as_ref().map(|_| ()).map_err(String::as_str),
            expected,
            "{schema} / {args:?}"
        );
    }

    #[test]
    fn validates_what_tool_schemas_use() {
        let shell = json!({"type": "object", "properties": {
            "command": {"type": "string"}, "timeout": {"type": "integer"}
        }, "required": ["command"]});
        let agent = json!({"type": "object", "properties": {
            "task": {"type": "string"},
            "tools": {"type": "array", "items": {"type": "string"}},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "scale": {"type": "number"},
            "opt": {"type": ["string", "null"]},
            "nested": {"type": "object", "properties": {"n": {"type": "boolean"}}, "required": ["n"]}
        }, "required": ["task"], "additionalProperties": false});
        let cases: &[(&Value, Value, Result<(), &str>)] = &[
            (&shell, json!({"command": "ls"}), Ok(())),
            (&shell, json!({"command": "ls", "timeout": 5}), Ok(())),
            (&shell, json!({"command": "ls", "extra": 1}), Ok(())),
            (&shell, json!({}), Err("`command` is required but missing")),
            (
                &shell,
                json!({"command": 5}),
                Err("`command` must be a string, got an integer"),
            ),
            (
                &shell,
                json!({"command": "ls", "timeout": 5.5}),
                Err("`timeout` must be an integer, got a number"),
            ),
            (
                &shell,
                json!({"command": "ls", "timeout": "5"}),
                Err("`timeout` must be an integer, got a string"),
            ),
            (
                &agent,
                json!({"task": "t", "tools": ["a", "b"], "scale": 2}),
                Ok(()),
            ),
            (
                &agent,
                json!({"task": "t", "scale": 2.5, "opt": null}),
                Ok(()),
            ),
            (
                &agent,
                json!({"task": "t", "tools": ["a", 3]}),
                Err("`tools[1]` must be a string, got an integer"),
            ),
            (
                &agent,
                json!({"task": "t", "tools": "a"}),
                Err("`tools` must be an array, got a string"),
            ),
            (
                &agent,
                json!({"task": "t", "unit": "k"}),
                Err("`unit` must be one of \"c\", \"f\""),
            ),
            (
                &agent,
                json!({"task": "t", "opt": 1}),
                Err("`opt` must be a string or null, got an integer"),
            ),
            (
                &agent,
                json!({"task": "t", "nested": {}}),
                Err("`nested.n` is required but missing"),
            ),
            (
                &agent,
                json!({"task": "t", "nested": {"n": "yes"}}),
                Err("`nested.n` must be a boolean, got a string"),
            ),
            (
                &agent,
                json!({"task": "t", "cwd": "x"}),
                Err(
                    "`cwd` is not an argument of this tool (it takes: task, tools, unit, scale, opt, nested)",
                ),
            ),
            (&json!({"type": "object"}), json!({"anything": [1]}), Ok(())),
            (&json!(true), json!({"anything": 1}), Ok(())),
        ];
        for (schema, args, expected) in cases {
            check_case((*schema).clone(), args.clone(), *expected);
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_followed() {
        let mut schema = json!({"type": "object"});
        let mut value = json!(1);
        for _ in 0..40 {
            schema = json!({"type": "object", "properties": {"a": schema}});
            value = json!({"a": value});
        }
        let args = value.as_object().unwrap().clone();
        let problem = validate_arguments(&schema, &args).unwrap_err();
        assert!(problem.contains("nests deeper than 32 levels"), "{problem}");
    }
}
