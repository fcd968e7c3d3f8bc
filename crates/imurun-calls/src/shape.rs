//! The shapes a call takes once read: which key holds the tool's name and which its
//! arguments, and how a found call becomes a `ToolCall` for a runnable tool.

use imurun_core::{IndexedTool, ToolCall, ToolIndex};
use serde_json::Value;

use crate::coerce::{Entries, fit_arguments, parse_embedded};
use std::borrow::Cow;

use crate::json::{Json, owned_entries};
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
    /// Keys and values in the order written.
    Object(Entries),
    /// Python-style positional arguments, then keyword arguments.
    Python {
        positional: Vec<Value>,
        keywords: Entries,
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
pub(crate) fn found_in_object(object: Vec<(Cow<'_, str>, Json<'_>)>) -> Option<Found> {
    // One walk over the entries, comparing keys as strings.
    let mut name: Option<(usize, Cow<'_, str>)> = None;
    let mut argument: Option<(usize, Json<'_>)> = None;
    let mut function: Option<Vec<(Cow<'_, str>, Json<'_>)>> = None;
    let mut rest: Vec<(Cow<'_, str>, Json<'_>)> = Vec::new();
    for (key, value) in object {
        if key == "function"
            && let Json::Object(inner) = value
        {
            function = Some(inner);
            continue;
        }
        let name_rank = NAME_KEYS.iter().position(|candidate| *candidate == key);
        match (name_rank, value) {
            (Some(rank), Json::String(text)) if !text.trim().is_empty() => {
                if name.as_ref().is_none_or(|(best, _)| rank < *best) {
                    if let Some((previous_rank, previous)) = name.replace((rank, text)) {
                        rest.push((
                            Cow::Borrowed(NAME_KEYS[previous_rank]),
                            Json::String(previous),
                        ));
                    }
                } else {
                    rest.push((key, Json::String(text)));
                }
            }
            (_, value) => match ARGUMENT_KEYS.iter().position(|candidate| *candidate == key) {
                Some(rank) if argument.as_ref().is_none_or(|(best, _)| rank < *best) => {
                    argument = Some((rank, value));
                }
                _ => rest.push((key, value)),
            },
        }
    }
    // OpenAI's envelope: the call is the inner `function` object.
    if let Some(inner) = function {
        return found_in_object(inner);
    }
    let (_, written_name) = name?;
    let has_argument_key = argument.is_some();
    let args = match argument.map(|(_, value)| value) {
        Some(Json::Object(entries)) => Args::Object(owned_entries(entries)),
        Some(Json::Null) => Args::Object(Vec::new()),
        Some(other) => Args::Other(other.into_value()),
        None => Args::Object(owned_entries(
            rest.into_iter()
                .filter(|(key, _)| {
                    !ENVELOPE_KEYS.contains(&key.as_ref()) && !NAME_KEYS.contains(&key.as_ref())
                })
                .collect(),
        )),
    };
    Some(Found {
        written_name: written_name.trim().to_owned(),
        args,
        has_argument_key,
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

fn arguments_object(args: Args, tool: &IndexedTool) -> Result<Entries, String> {
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
                if !keywords.iter().any(|(key, _)| *key == name) {
                    keywords.push((name, value));
                }
            }
            Ok(keywords)
        }
        Args::Other(Value::String(text)) => {
            if let Some(Value::Object(map)) = parse_embedded(&text) {
                return Ok(map.into_iter().collect());
            }
            single_parameter(tool, Value::String(text))
        }
        Args::Other(other) => single_parameter(tool, other),
    }
}

/// Puts a lone value on the tool's only required parameter, or its only parameter.
fn single_parameter(tool: &IndexedTool, value: Value) -> Result<Entries, String> {
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
    Ok(vec![(target, value)])
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
