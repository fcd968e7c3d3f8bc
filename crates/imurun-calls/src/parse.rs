//! `parse_tool_calls`: one raw model output in, one decision out — calls to run, an answer
//! to show, or a retry message for the model.

use imurun_core::{ToolCall, ToolIndex};
use serde::Serialize;

use crate::render::render_call;
use crate::scan::{self, Problem};
use crate::think::split_think_counting;
use crate::work::Work;

/// What the output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParseKind {
    /// Run `calls`.
    Calls,
    /// Show `visible` as the answer.
    Answer,
    /// Send `retry` back to the model: it tried to call a tool and the call cannot be run.
    Retry,
}

/// Why a retry was asked for, for the loop to act on (the model reads `retry`).
#[derive(Debug, Clone, PartialEq)]
pub enum RetryReason {
    /// A call marker with nothing usable after it.
    Unusable { detail: String },
    /// A call to a name no runnable tool has.
    UnknownTool { name: String },
    /// The only call was written inside the thought, where calls never run, and there is
    /// no answer. The call is reported so the nudge can name it; it is never run.
    CallInThought { call: ToolCall },
}

/// The result of reading one raw output. Serialises as the `imurun parse` contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parsed {
    pub kind: ParseKind,
    pub calls: Vec<ToolCall>,
    /// For an answer, the answer; for calls and retries, the text before the first marker.
    pub visible: String,
    pub thought: String,
    /// The message to send the model, for a retry.
    pub retry: Option<String>,
    #[serde(skip)]
    pub retry_reason: Option<RetryReason>,
    /// Where in the raw text the first call marker starts (calls and retries): text from
    /// here on is call syntax the answer stream must not show.
    #[serde(skip)]
    pub marker_offset: Option<usize>,
}

/// Reads a raw model output against the tools that can run in this step.
pub fn parse_tool_calls(raw: &str, index: &ToolIndex) -> Parsed {
    parse_tool_calls_counting(raw, index).0
}

/// `parse_tool_calls`, also returning the bytes examined: tests use it to prove the parser
/// is linear by counting work instead of timing it.
pub fn parse_tool_calls_counting(raw: &str, index: &ToolIndex) -> (Parsed, Work) {
    let mut work = Work::default();
    let split = split_think_counting(raw, &mut work);
    let found = scan::scan(&split.visible, index, &mut work);
    let marker_offset = found.first_marker.map(|at| split.raw_offset(at));
    let before_marker = |at: Option<usize>| match at {
        Some(at) => split.visible[..at].trim().to_owned(),
        None => split.visible.trim().to_owned(),
    };

    let parsed = if let Some(problem) = found.problem {
        let reason = match problem {
            Problem::Unusable(detail) => RetryReason::Unusable { detail },
            Problem::UnknownTool(name) => RetryReason::UnknownTool { name },
        };
        retry(
            reason,
            before_marker(found.first_marker),
            split.thought,
            index,
            marker_offset,
        )
    } else if !found.calls.is_empty() {
        Parsed {
            kind: ParseKind::Calls,
            calls: found.calls,
            visible: before_marker(found.first_marker),
            thought: split.thought,
            retry: None,
            retry_reason: None,
            marker_offset,
        }
    } else {
        let visible = before_marker(None);
        let in_thought = if visible.is_empty() && !split.thought.is_empty() {
            scan::scan(&split.thought, index, &mut work)
                .calls
                .into_iter()
                .next()
        } else {
            None
        };
        match in_thought {
            Some(call) => retry(
                RetryReason::CallInThought { call },
                visible,
                split.thought,
                index,
                None,
            ),
            None => Parsed {
                kind: ParseKind::Answer,
                calls: Vec::new(),
                visible,
                thought: split.thought,
                retry: None,
                retry_reason: None,
                marker_offset: None,
            },
        }
    };
    (parsed, work)
}

fn retry(
    reason: RetryReason,
    visible: String,
    thought: String,
    index: &ToolIndex,
    marker_offset: Option<usize>,
) -> Parsed {
    Parsed {
        kind: ParseKind::Retry,
        calls: Vec::new(),
        visible,
        thought,
        retry: Some(retry_message(&reason, index)),
        retry_reason: Some(reason),
        marker_offset,
    }
}

/// The one retry message: what went wrong, the valid names, and the format again.
pub fn retry_message(reason: &RetryReason, index: &ToolIndex) -> String {
    let mut names: Vec<&str> = index
        .offered()
        .map(|tool| tool.spec.name.as_str())
        .collect();
    if names.is_empty() {
        names = index
            .runnable()
            .map(|tool| tool.spec.name.as_str())
            .collect();
    }
    let valid = if names.is_empty() {
        "There are no tools in this step: answer without one.".to_owned()
    } else {
        format!("The tools you can call are: {}.", names.join(", "))
    };
    let example = names.first().copied().unwrap_or("tool_name");
    match reason {
        RetryReason::UnknownTool { name } => format!(
            "There is no tool called `{name}`. {valid} Write the call again with one of these \
             names in a ```tool block, or answer without a tool."
        ),
        RetryReason::Unusable { detail } => format!(
            "Your tool call could not be read ({detail}). Write it as one JSON object in a \
             ```tool block, like this:\n```tool\n{{\"name\": \"{example}\", \"args\": {{...}}}}\n```\n\
             {valid} Or answer without a tool."
        ),
        RetryReason::CallInThought { call } => format!(
            "You wrote a call to `{}` inside your thinking, where calls are never run. If you \
             need it, write it after your thinking, exactly like this:\n{}\nOtherwise give your \
             final answer now.",
            call.name,
            render_call(call)
        ),
    }
}
