//! The shapes a call takes once read: which key holds the tool's name and which its
//! arguments, and how a found call becomes a `ToolCall` for a runnable tool.

use imurun_core::{IndexedTool, ToolCall, ToolIndex};
use serde_json::{Map, Value};

use crate::coerce::{fit_arguments, parse_embedded};
use crate::names::resolve;

/// Keys that hold the tool's name, in the order they are tried.
const NAME_KEYS: &[&str] = &[
    "name",
    "tool",
    "tool_name",
    "function_name",
    "function",
    "action",
];

/// Keys that hold the arguments (the seed's list, then two more agent frameworks use).
pub const ARGUMENT_KEYS: &[&str] = &[
    "args",
    "arguments",
    "parameters",
    "params",
    "input",
    "action_input",
    "tool_input",
    "kwargs",
];

/// Keys that describe the call itself rather than being arguments, when a model flattens
/// the arguments into the call object.
const ENVELOPE_KEYS: &[&str] = &["type", "id", "call_id"];

/// A call as written, before its name is resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    pub(crate) written_name: String,
    pub(crate) args: Args,
    /// The object had one of `ARGUMENT_KEYS` (a `json` code block must, to count as a call).
    pub(crate) has_argument_key: bool,
}

/// The arguments as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Args {
    Object(Map<String, Value>),
    /// Python-style positional arguments, then keyword arguments.
    Python {
        positional: Vec<Value>,
        keywords: Map<String, Value>,
    },
    /// Any other value: a string of JSON, a bare string for the only parameter, a number.
    Other(Value),
}

/// What a found call turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Call(ToolCall),
    /// No runnable tool has this name.
    Unknown(String),
    /// It names a tool, but its arguments cannot be read as that tool's arguments.
    Unusable(String),
}

/// The call an object describes, if it names anything: `{"name", "args"}` and its
/// synonyms, OpenAI's `{"type": "function", "function": {"name", "arguments"}}`, or a name
/// beside flattened arguments.
pub(crate) fn found_in_object(object: &Map<String, Value>) -> Option<Found> {
    if let Some(Value::Object(inner)) = object.get("function") {
        return found_in_object(inner);
    }
    let (name_key, written_name) = NAME_KEYS.iter().find_map(|key| match object.get(*key) {
        Some(Value::String(name)) if !name.trim().is_empty() => Some((*key, name.trim())),
        _ => None,
    })?;
    let argument = ARGUMENT_KEYS.iter().find_map(|key| object.get(*key));
    let args = match argument {
        Some(Value::Object(map)) => Args::Object(map.clone()),
        Some(Value::Null) => Args::Object(Map::new()),
        Some(other) => Args::Other(other.clone()),
        None => Args::Object(
            object
                .iter()
                .filter(|(key, _)| *key != name_key && !ENVELOPE_KEYS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
    };
    Some(Found {
        written_name: written_name.to_owned(),
        args,
        has_argument_key: argument.is_some(),
    })
}

/// Resolves the name against the index and fits the arguments to the tool's schema.
pub(crate) fn judge(found: Found, index: &ToolIndex) -> Verdict {
    let Some(tool) = resolve(index, &found.written_name) else {
        return Verdict::Unknown(found.written_name);
    };
    match arguments_object(found.args, tool) {
        Ok(args) => Verdict::Call(ToolCall::new(
            tool.spec.name.clone(),
            fit_arguments(args, &tool.spec.parameters),
        )),
        Err(detail) => Verdict::Unusable(detail),
    }
}

/// Whether `found` names a runnable tool (after aliases).
pub(crate) fn names_runnable(found: &Found, index: &ToolIndex) -> bool {
    resolve(index, &found.written_name).is_some()
}

fn arguments_object(args: Args, tool: &IndexedTool) -> Result<Map<String, Value>, String> {
    match args {
        Args::Object(map) => Ok(map),
        Args::Python {
            positional,
            mut keywords,
        } => {
            let order = parameter_order(tool);
            if positional.len() > order.len() {
                return Err(format!(
                    "`{}` takes at most {} positional argument(s)",
                    tool.spec.name,
                    order.len()
                ));
            }
            for (name, value) in order.into_iter().zip(positional) {
                keywords.entry(name).or_insert(value);
            }
            Ok(keywords)
        }
        Args::Other(Value::String(text)) => {
            if let Some(Value::Object(map)) = parse_embedded(&text) {
                return Ok(map);
            }
            single_parameter(tool, Value::String(text))
        }
        Args::Other(other) => single_parameter(tool, other),
    }
}

/// Puts a lone value on the tool's only required parameter, or its only parameter.
fn single_parameter(tool: &IndexedTool, value: Value) -> Result<Map<String, Value>, String> {
    let required = tool.spec.required();
    let properties: Vec<&String> = tool
        .spec
        .properties()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    let target = match (required.as_slice(), properties.as_slice()) {
        ([only], _) => (*only).to_owned(),
        ([], [only]) => (*only).clone(),
        _ => {
            let names: Vec<&str> = properties.iter().map(|name| name.as_str()).collect();
            return Err(format!(
                "the arguments of `{}` must be a JSON object with the keys {}",
                tool.spec.name,
                names.join(", ")
            ));
        }
    };
    let mut map = Map::new();
    map.insert(target, value);
    Ok(map)
}

/// Parameters in the order positional arguments fill them: required ones first, in the
/// order `required` lists them, then the others in schema order.
fn parameter_order(tool: &IndexedTool) -> Vec<String> {
    let required = tool.spec.required();
    let mut order: Vec<String> = required.iter().map(|name| (*name).to_owned()).collect();
    if let Some(properties) = tool.spec.properties() {
        order.extend(
            properties
                .keys()
                .filter(|name| !required.contains(&name.as_str()))
                .cloned(),
        );
    }
    order
}
