//! Grammar-constrained tool calls: once the model writes the call marker (```` ```tool ````),
//! llama.cpp's sampler only allows tokens that continue a valid call to a runnable tool,
//! so a started call always ends as one: a known name and arguments that match its schema.
//!
//! The grammar is GBNF built by llama.cpp's own JSON-Schema converter from one schema: a
//! `oneOf` with, per runnable tool, an object `{"name": <that name>, "args": <its parameters
//! schema>}`. It is *lazy*: text before the marker is free, so the model can still answer
//! in prose.

use imurun_core::{CallShape, ToolIndex};
use serde_json::{Value, json};

/// The text that switches the grammar on: the opening of the tool-call fence.
pub const TOOL_CALL_MARKER: &str = "```tool";

/// The grammar's root rule: the marker, a newline, the call object, the closing fence.
const ROOT_RULE: &str = "imurun-tool-call";

/// The most calls one constrained reply holds (the loop runs at most 3 per step; the rest
/// serve evaluations that expect parallel calls).
pub const GRAMMAR_CALLS_MAX: usize = 8;

/// The most tools a grammar is built from: the converter's output grows with every schema,
/// and a step offers at most a few dozen tools.
pub const GRAMMAR_TOOLS_MAX: usize = 256;

/// Why a grammar could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolGrammarError {
    /// There is no runnable tool, so no call could be valid.
    #[error("no runnable tool to build a call grammar from")]
    NoTools,
    /// More tools than `GRAMMAR_TOOLS_MAX`.
    #[error("{count} tools; a call grammar is built from at most {GRAMMAR_TOOLS_MAX}")]
    TooManyTools { count: usize },
    /// llama.cpp's converter refused a schema.
    #[error("a tool schema could not be turned into a grammar: {message}")]
    Schema { message: String },
}

/// A compiled-to-text call grammar for one set of runnable tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallGrammar {
    gbnf: String,
    /// Per runnable tool, its name and the schema of a call to it: kept to build a narrower
    /// grammar for one reply (`shaped`).
    calls: Vec<(String, Value)>,
}

impl ToolCallGrammar {
    /// The grammar for the runnable tools of `index` (offered or not: a hidden tool still
    /// runs when named).
    pub fn from_index(index: &ToolIndex) -> Result<Self, ToolGrammarError> {
        let count = index.runnable().count();
        if count == 0 {
            return Err(ToolGrammarError::NoTools);
        }
        if count > GRAMMAR_TOOLS_MAX {
            return Err(ToolGrammarError::TooManyTools { count });
        }
        let calls: Vec<(String, Value)> = index
            .runnable()
            .map(|tool| {
                let call = json!({
                    "type": "object",
                    "properties": {
                        "name": {"const": tool.spec.name},
                        "args": arguments_schema(&tool.spec.parameters),
                    },
                    "required": ["name", "args"],
                    "additionalProperties": false,
                });
                (tool.spec.name.clone(), call)
            })
            .collect();
        let gbnf = gbnf(calls.iter().map(|(_, call)| call), 1)?;
        Ok(Self { gbnf, calls })
    }

    /// The grammar for one reply of `shape`: calls only to the shape's tools (those of them
    /// this grammar has; all of its tools when the shape names none), and at least its
    /// `calls_min` calls once a call starts. An error when the shape names none of them.
    pub fn shaped(&self, shape: &CallShape) -> Result<Self, ToolGrammarError> {
        let calls: Vec<(String, Value)> = self
            .calls
            .iter()
            .filter(|(name, _)| shape.tools.is_empty() || shape.tools.contains(name))
            .cloned()
            .collect();
        if calls.is_empty() {
            return Err(ToolGrammarError::NoTools);
        }
        let calls_min = shape.calls_min.clamp(1, GRAMMAR_CALLS_MAX);
        let gbnf = gbnf(calls.iter().map(|(_, call)| call), calls_min)?;
        Ok(Self { gbnf, calls })
    }

    /// The GBNF text (root rule `imurun-tool-call`).
    pub fn gbnf(&self) -> &str {
        &self.gbnf
    }

    pub(super) fn root_rule() -> &'static str {
        ROOT_RULE
    }
}

/// The GBNF for replies of `calls_min` to `GRAMMAR_CALLS_MAX` calls, each one of `calls`.
fn gbnf<'c>(
    calls: impl Iterator<Item = &'c Value>,
    calls_min: usize,
) -> Result<String, ToolGrammarError> {
    let schema = json!({"oneOf": calls.collect::<Vec<_>>()});
    let object_grammar =
        llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|error| {
            ToolGrammarError::Schema {
                message: error.to_string(),
            }
        })?;
    // The first call, then the rest, each in its own fence; after the last fence only the
    // end of the reply can follow, so nothing is invented after calls.
    let call = format!("\"{TOOL_CALL_MARKER}\\n\" root \"\\n```\"");
    let (more_min, more_max) = (calls_min - 1, GRAMMAR_CALLS_MAX - 1);
    let object_grammar = without_placeholder_strings(&object_grammar);
    Ok(format!(
        "{ROOT_RULE} ::= {call} (\"\\n\" \"\\n\"? {call}){{{more_min},{more_max}}}\n{object_grammar}"
    ))
}

/// The converter's rule for a string of any length.
const STRING_RULE: &str = r#"string ::= "\"" char* "\"""#;

/// A string that does not start with `..` or `…`: a small model copies a worked example's
/// placeholder (`"..."`) as a value when it finds none in the question, and the grammar
/// makes it write one. (`.env` and `.5` are still strings.)
const STRING_RULE_WITHOUT_PLACEHOLDER: &str = concat!(
    r#"string ::= "\"" ( string-first char* | "." ( string-first char* )? )? "\"""#,
    "\n",
    r#"string-first ::= [^".\u2026\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#,
);

/// `grammar` with its plain string rule replaced by `STRING_RULE_WITHOUT_PLACEHOLDER`.
fn without_placeholder_strings(grammar: &str) -> String {
    grammar
        .lines()
        .map(|line| match line.strip_prefix(STRING_RULE) {
            Some(rest) => format!("{STRING_RULE_WITHOUT_PLACEHOLDER}{rest}"),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool's parameters as the grammar constrains them: an object schema. A tool without
/// a usable schema takes an empty object.
fn arguments_schema(parameters: &Value) -> Value {
    match parameters {
        Value::Object(schema) if !schema.is_empty() => {
            let mut schema = schema.clone();
            schema
                .entry("type")
                .or_insert_with(|| Value::String("object".into()));
            Value::Object(schema)
        }
        _ => json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

#[cfg(test)]
mod tests {
    use imurun_core::ToolSpec;

    use super::*;

    fn spec(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn the_grammar_starts_at_the_marker_and_names_every_runnable_tool() {
        let mut index = ToolIndex::offering([spec(
            "get_weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )]);
        index.insert(spec("hidden_tool", Value::Null), false);
        let grammar = ToolCallGrammar::from_index(&index).unwrap();
        let gbnf = grammar.gbnf();
        assert!(
            gbnf.starts_with(
                "imurun-tool-call ::= \"```tool\\n\" root \"\\n```\" \
                 (\"\\n\" \"\\n\"? \"```tool\\n\" root \"\\n```\"){0,7}\n"
            ),
            "{gbnf}"
        );
        assert!(gbnf.contains("get_weather"), "{gbnf}");
        assert!(
            gbnf.contains("hidden_tool"),
            "a runnable tool that is not offered: {gbnf}"
        );
        assert!(gbnf.contains("city"), "{gbnf}");
    }

    #[test]
    fn a_shaped_grammar_names_only_the_shape_s_tools_and_asks_for_its_calls() {
        let index = ToolIndex::offering([
            spec(
                "math.gcd",
                json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            ),
            spec(
                "math.lcm",
                json!({"type": "object", "properties": {"b": {"type": "integer"}}}),
            ),
        ]);
        let grammar = ToolCallGrammar::from_index(&index).unwrap();
        let shaped = grammar
            .shaped(&CallShape {
                tools: vec!["math.lcm".into()],
                calls_min: 2,
            })
            .unwrap();
        let gbnf = shaped.gbnf();
        assert!(
            gbnf.contains("math.lcm") && !gbnf.contains("math.gcd"),
            "{gbnf}"
        );
        assert!(gbnf.lines().next().unwrap().ends_with("{1,7}"), "{gbnf}");
        // No tool named: every tool; a shape naming none of them cannot narrow.
        let all = grammar.shaped(&CallShape::default()).unwrap();
        assert_eq!(all.gbnf(), grammar.gbnf());
        assert_eq!(
            grammar.shaped(&CallShape {
                tools: vec!["other".into()],
                calls_min: 1,
            }),
            Err(ToolGrammarError::NoTools)
        );
    }

    #[test]
    fn no_tools_is_an_error() {
        assert_eq!(
            ToolCallGrammar::from_index(&ToolIndex::new()),
            Err(ToolGrammarError::NoTools)
        );
    }
}
