//! One generation: the model's reply streamed to the page (through `StreamGuard` while tools
//! are on offer, so call syntax never shows), then read into calls, a retry or an answer.

use imurun_calls::{ParseKind, Parsed, StreamGuard, parse_tool_calls, spaced_json, split_think};
use imurun_core::{
    Event, EventSink, GenerateRequest, Message, Model, ModelError, StopFlag, ToolCall, ToolIndex,
};
use serde_json::Value;

/// What one step generation needs.
pub(crate) struct Generation<'a> {
    pub(crate) model: &'a dyn Model,
    pub(crate) events: &'a dyn EventSink,
    pub(crate) session_id: Option<&'a str>,
    /// The step's number, for `token` events.
    pub(crate) step: usize,
    /// `Some` while tools are on offer: the stream is guarded and calls are read.
    pub(crate) tools: Option<&'a ToolIndex>,
    pub(crate) stop: &'a StopFlag,
    pub(crate) max_tokens: usize,
    /// The start of the reply, written by the loop (a call prefill).
    pub(crate) prefill: Option<&'static str>,
}

/// Generates one reply to `messages`, streaming answer tokens as `token` events.
pub(crate) async fn generate(
    generation: &Generation<'_>,
    messages: &[Message],
) -> Result<(String, Parsed), ModelError> {
    let request = GenerateRequest {
        messages: messages.to_vec(),
        max_tokens: Some(generation.max_tokens),
        stop: generation.stop.clone(),
        prefill: generation.prefill.map(str::to_owned),
    };
    let publish = |text: String| {
        if !text.is_empty() {
            generation.events.publish(Event::Token {
                session_id: generation.session_id.map(str::to_owned),
                step: generation.step,
                text,
            });
        }
    };
    let mut guard = generation.tools.map(|_| StreamGuard::new());
    let raw = {
        let mut on_token = |token: &str| match guard.as_mut() {
            Some(guard) => publish(guard.push(token)),
            None => publish(token.to_owned()),
        };
        generation.model.generate(&request, &mut on_token).await?
    };
    let mut parsed = match generation.tools {
        Some(index) => parse_tool_calls(&raw, index),
        None => answer_only(&raw),
    };
    drop_repeated_calls(&mut parsed.calls);
    if let Some(guard) = guard {
        publish(guard.finish(&parsed));
    }
    Ok((raw, parsed))
}

/// The same call written twice in one reply counts once: small models repeat a call block
/// until they run out of tokens, and the repeats would crowd out the calls that differ.
fn drop_repeated_calls(calls: &mut Vec<ToolCall>) {
    let mut seen: Vec<ToolCall> = Vec::with_capacity(calls.len());
    calls.retain(|call| {
        if seen.contains(call) {
            false
        } else {
            seen.push(call.clone());
            true
        }
    });
}

/// With no tools on offer everything is an answer: the visible text, thought split off.
fn answer_only(raw: &str) -> Parsed {
    let split = split_think(raw);
    Parsed {
        kind: ParseKind::Answer,
        calls: Vec::new(),
        visible: split.visible.trim().to_owned(),
        thought: split.thought,
        retry: None,
        retry_reason: None,
        marker_offset: None,
    }
}

/// A step's readable text: the thought in `<think>…</think>`, the visible text, then
/// ``Using `name` {args}`` for each call.
pub(crate) fn step_text(thought: &str, visible: &str, calls: &[ToolCall]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !thought.trim().is_empty() {
        parts.push(format!("<think>{}</think>", thought.trim()));
    }
    if !visible.trim().is_empty() {
        parts.push(visible.trim().to_owned());
    }
    for call in calls {
        let args = spaced_json(&Value::Object(call.args.clone()));
        parts.push(format!("Using `{}` {args}", call.name));
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_step_reads_thought_text_then_calls() {
        let call = ToolCall::new(
            "web_search",
            json!({"query": "latest \"Python\"", "n": [1, 2]})
                .as_object()
                .cloned()
                .unwrap(),
        );
        assert_eq!(
            step_text(" I should look. ", "Let me check.", &[call]),
            "<think>I should look.</think>\n\nLet me check.\n\nUsing `web_search` \
             {\"query\": \"latest \\\"Python\\\"\", \"n\": [1, 2]}"
        );
        assert_eq!(step_text("", "", &[]), "");
    }
}
