//! Native tool calling: offering tools through the server's `tools` parameter, and turning the
//! calls the model makes back into imurun's text format (a ```` ```tool ```` block holding
//! `{"name", "args"}`), so the loop's parser reads them as it reads any model's text.

use imurun_core::{ModelError, ToolSpec};
use serde_json::{Value, json};

/// The most tool calls one reply may make natively; more is a broken server.
pub const NATIVE_TOOL_CALLS_MAX: usize = 64;

/// The most bytes of arguments one natively made call may stream.
pub const NATIVE_TOOL_ARGUMENTS_BYTES_MAX: usize = 256 * 1024;

/// How tools reach the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ToolMode {
    /// The seed's text format, which every model can use: the loop describes the tools in
    /// the prompt and the model writes ```` ```tool ```` blocks. The default.
    #[default]
    Text,
    /// The server's own tool calling: these tools go as the request's `tools`, and each call
    /// the model makes is appended to the reply as a ```` ```tool ```` block once the reply
    /// is complete. The loop still validates every call against the tools it runs.
    Native(Vec<ToolSpec>),
}

impl ToolMode {
    /// The request's `tools` array, or `None` in text mode (or with no tools).
    pub(crate) fn wire_tools(&self) -> Option<Value> {
        match self {
            ToolMode::Native(tools) if !tools.is_empty() => Some(Value::Array(
                tools
                    .iter()
                    .map(|tool| {
                        json!({
                            "type": "function",
                            "function": {
                                "name": tool.name,
                                "description": tool.description,
                                "parameters": tool.parameters,
                            },
                        })
                    })
                    .collect(),
            )),
            _ => None,
        }
    }
}

/// One call as the server sent it, assembled from stream deltas.
#[derive(Debug, Default, PartialEq)]
struct NativeCall {
    /// OpenAI's `index` within the reply's calls; Ollama sends none.
    index: Option<u64>,
    name: String,
    /// A JSON object, or (OpenAI) the text of one, streamed in pieces.
    arguments: Arguments,
}

#[derive(Debug, PartialEq)]
enum Arguments {
    Text(String),
    Object(Value),
}

impl Default for Arguments {
    fn default() -> Self {
        Arguments::Text(String::new())
    }
}

/// The tool calls of one reply, gathered as they stream.
#[derive(Debug, Default)]
pub(crate) struct NativeCalls {
    calls: Vec<NativeCall>,
}

impl NativeCalls {
    /// Adds a `tool_calls` array from an OpenAI delta or message, or an Ollama message.
    /// OpenAI streams a call in pieces sharing an `index`: the first names it, the rest
    /// carry more of `function.arguments` as text.
    pub(crate) fn add(&mut self, tool_calls: &Value, url: &str) -> Result<(), ModelError> {
        let Some(tool_calls) = tool_calls.as_array() else {
            return Ok(());
        };
        for tool_call in tool_calls {
            let index = tool_call.get("index").and_then(Value::as_u64);
            let function = tool_call.get("function");
            let name = function
                .and_then(|function| function.get("name"))
                .and_then(Value::as_str);
            let arguments = function.and_then(|function| function.get("arguments"));
            let existing = index.and_then(|index| {
                self.calls
                    .iter_mut()
                    .position(|call| call.index == Some(index))
            });
            let position = match existing {
                Some(position) => position,
                None => {
                    if self.calls.len() == NATIVE_TOOL_CALLS_MAX {
                        return Err(protocol(url, "more tool calls than NATIVE_TOOL_CALLS_MAX"));
                    }
                    self.calls.push(NativeCall {
                        index,
                        ..NativeCall::default()
                    });
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[position];
            // OpenAI names a call in its first delta; a server that repeats the whole name in
            // later deltas must not double it.
            if let Some(name) = name
                && call.name != name
            {
                call.name.push_str(name);
            }
            match (arguments, &mut call.arguments) {
                (Some(Value::String(piece)), Arguments::Text(text)) => {
                    if text.len() + piece.len() > NATIVE_TOOL_ARGUMENTS_BYTES_MAX {
                        return Err(protocol(url, "tool call arguments over their bound"));
                    }
                    text.push_str(piece);
                }
                (Some(object @ Value::Object(_)), _) => {
                    call.arguments = Arguments::Object(object.clone());
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Each call as a ```` ```tool ```` block, one per line, preceded by a newline when the
    /// reply's text does not end with one; empty when the model made no call. Arguments that
    /// are not valid JSON are written as they came, for the parser's repairs.
    pub(crate) fn render(&self, text_so_far: &str) -> String {
        let mut rendered = String::new();
        for call in &self.calls {
            let name = Value::String(call.name.clone());
            let arguments = match &call.arguments {
                Arguments::Object(object) => object.to_string(),
                Arguments::Text(text) if text.trim().is_empty() => "{}".to_owned(),
                Arguments::Text(text) => match serde_json::from_str::<Value>(text) {
                    Ok(value) => value.to_string(),
                    Err(_) => text.clone(),
                },
            };
            let needs_newline = if rendered.is_empty() {
                !text_so_far.is_empty() && !text_so_far.ends_with('\n')
            } else {
                true
            };
            if needs_newline {
                rendered.push('\n');
            }
            rendered.push_str(&format!(
                "```tool\n{{\"name\": {name}, \"args\": {arguments}}}\n```"
            ));
        }
        rendered
    }
}

fn protocol(url: &str, what: &str) -> ModelError {
    ModelError::Protocol {
        message: format!("the stream from {url} has {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1/v1/chat/completions";

    fn check(deltas: &[Value], text_so_far: &str, expected: &str) {
        let mut calls = NativeCalls::default();
        for delta in deltas {
            calls.add(delta, URL).unwrap();
        }
        assert_eq!(calls.render(text_so_far), expected);
    }

    #[test]
    fn calls_render_as_tool_blocks() {
        let openai_streamed = [
            json!([{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]),
            json!([{"index": 0, "function": {"arguments": "{\"city\": "}}]),
            json!([{"index": 0, "function": {"arguments": "\"Lima\"}"}}]),
            json!([{"index": 1, "id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]),
        ];
        check(
            &openai_streamed,
            "",
            "```tool\n{\"name\": \"get_weather\", \"args\": {\"city\":\"Lima\"}}\n```\n\
             ```tool\n{\"name\": \"get_time\", \"args\": {}}\n```",
        );
        let ollama =
            [json!([{"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}}])];
        check(
            &ollama,
            "Let me look.",
            "\n```tool\n{\"name\": \"get_weather\", \"args\": {\"city\":\"Toronto\"}}\n```",
        );
        let broken = [json!([{"index": 0, "function": {"name": "f", "arguments": "{\"a\": 1"}}])];
        check(
            &broken,
            "x\n",
            "```tool\n{\"name\": \"f\", \"args\": {\"a\": 1}\n```",
        );
        check(&[], "text", "");
    }

    #[test]
    fn calls_are_bounded() {
        let mut calls = NativeCalls::default();
        for index in 0..NATIVE_TOOL_CALLS_MAX {
            calls
                .add(&json!([{"index": index, "function": {"name": "f"}}]), URL)
                .unwrap();
        }
        let over = json!([{"index": NATIVE_TOOL_CALLS_MAX, "function": {"name": "f"}}]);
        assert!(calls.add(&over, URL).is_err());
        let long = "x".repeat(NATIVE_TOOL_ARGUMENTS_BYTES_MAX + 1);
        let mut calls = NativeCalls::default();
        assert!(
            calls
                .add(&json!([{"index": 0, "function": {"arguments": long}}]), URL)
                .is_err()
        );
    }

    #[test]
    fn text_mode_sends_no_tools() {
        assert_eq!(ToolMode::Text.wire_tools(), None);
        assert_eq!(ToolMode::Native(Vec::new()).wire_tools(), None);
        let spec = ToolSpec::new(
            "get_time",
            "The time.",
            json!({"type": "object", "properties": {}}),
        );
        assert_eq!(
            ToolMode::Native(vec![spec]).wire_tools(),
            Some(
                json!([{"type": "function", "function": {"name": "get_time", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}])
            )
        );
    }
}
