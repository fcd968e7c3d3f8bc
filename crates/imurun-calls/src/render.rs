//! Writing a call back in the one format the prompt teaches, for the history the model
//! sees on its next step.

use std::fmt::Write;

use imurun_core::ToolCall;
use serde_json::Value;

/// The call as a clean ```` ```tool ```` block: `{"name": ..., "args": {...}}` on one line,
/// spaced like the prompt's example. Anything the model wrote after its call is not part of
/// it, so an invented "Result: ..." never reaches the history.
pub fn render_call(call: &ToolCall) -> String {
    let mut out = String::from("```tool\n{\"name\": ");
    write_value(&mut out, &Value::String(call.name.clone()));
    out.push_str(", \"args\": ");
    write_value(&mut out, &Value::Object(call.args.clone()));
    out.push_str("}\n```");
    out
}

/// Compact JSON with a space after `:` and `,`, as people write it and as the prompt shows
/// calls: `{"query": "x", "max_results": 3}`.
pub fn spaced_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            out.push('{');
            for (slot, (key, item)) in map.iter().enumerate() {
                if slot > 0 {
                    out.push_str(", ");
                }
                write_value(out, &Value::String(key.clone()));
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (slot, item) in items.iter().enumerate() {
                if slot > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        // Scalars are written by serde_json, which escapes strings correctly.
        scalar => {
            let _infallible = write!(out, "{scalar}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_the_taught_format() {
        let args = json!({"query": "latest \"Python\" release", "n": [1, 2.5, true, null]});
        let call = ToolCall::new("web_search", args.as_object().cloned().unwrap());
        assert_eq!(
            render_call(&call),
            "```tool\n{\"name\": \"web_search\", \"args\": {\"query\": \"latest \\\"Python\\\" release\", \"n\": [1, 2.5, true, null]}}\n```"
        );
    }
}
