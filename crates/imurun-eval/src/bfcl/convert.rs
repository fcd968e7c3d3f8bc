//! BFCL's function docs use Python's type names; tools use JSON Schema. The conversion is
//! the one BFCL applies before offering functions to a model: `dict` → `object`, `float` →
//! `number`, `tuple` → `array`, `any` → `string`, recursively.

use imurun_core::ToolSpec;
use serde_json::{Map, Value};

/// A BFCL function doc as a tool spec.
pub fn convert_function(function: &Value) -> Result<ToolSpec, String> {
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a function without a `name`")?;
    let description = function
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let parameters = match function.get("parameters") {
        Some(parameters) => convert_schema(parameters),
        None => serde_json::json!({"type": "object", "properties": {}}),
    };
    Ok(ToolSpec::new(name, description, parameters))
}

fn convert_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let converted = match key.as_str() {
                        "type" => convert_type(value),
                        // Property names are data, not schemas: convert each property's schema.
                        "properties" => match value {
                            Value::Object(properties) => Value::Object(
                                properties
                                    .iter()
                                    .map(|(name, property)| {
                                        (name.clone(), convert_schema(property))
                                    })
                                    .collect::<Map<_, _>>(),
                            ),
                            other => other.clone(),
                        },
                        "items" | "additionalProperties" => convert_schema(value),
                        _ => value.clone(),
                    };
                    (key.clone(), converted)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn convert_type(kind: &Value) -> Value {
    match kind {
        Value::String(name) => Value::String(
            match name.as_str() {
                "dict" => "object",
                "float" => "number",
                "tuple" => "array",
                "any" => "string",
                other => other,
            }
            .to_owned(),
        ),
        Value::Array(kinds) => Value::Array(kinds.iter().map(convert_type).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_types_become_json_schema_types_at_any_depth() {
        let function = json!({"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {
            "x": {"type": "float"},
            "pair": {"type": "tuple", "items": {"type": "float"}},
            "options": {"type": "dict", "properties": {"dict": {"type": "any"}}},
            "list": {"type": "array", "items": {"type": "dict", "properties": {"n": {"type": "integer"}}}}
        }, "required": ["x"]}});
        let spec = convert_function(&function).unwrap();
        assert_eq!(spec.name, "f");
        assert_eq!(
            spec.parameters,
            json!({"type": "object", "properties": {
            "x": {"type": "number"},
            "pair": {"type": "array", "items": {"type": "number"}},
            "options": {"type": "object", "properties": {"dict": {"type": "string"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
        }, "required": ["x"]})
        );
        assert!(convert_function(&json!({"description": "no name"})).is_err());
    }
}
