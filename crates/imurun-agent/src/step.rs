//! One generation: the model's reply streamed to the page (through `StreamGuard` while tools
//! are on offer, so call syntax never shows), then read into calls, a retry or an answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use imurun_calls::{ParseKind, Parsed, StreamGuard, parse_tool_calls, spaced_json, split_think};
use imurun_core::{
    CallShape, Event, EventSink, GenerateRequest, Message, Model, ModelError, StopFlag, TokenUsage,
    ToolCall, ToolIndex,
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
    /// The start of the reply, written by the loop (a call prefill, or a call's opening
    /// chosen by likelihood).
    pub(crate) prefill: Option<String>,
    /// The shape asked of the reply's calls (the tools the prompt names).
    pub(crate) calls: Option<CallShape>,
    /// Hold the answer back: no `token` event, the loop publishes the answer once checked.
    pub(crate) hold: bool,
    /// The longest the step may generate for: past it, the generation is stopped.
    pub(crate) time_max: Duration,
    /// Only an answer is read from this reply (the pre-fetch's results answer the prompt): it
    /// is stopped as soon as it starts a call or copies a result header.
    pub(crate) answer_only: bool,
}

/// A bound a step's generation reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// It wrote as many tokens as the step may (`max_tokens`).
    Tokens(usize),
    /// It ran for as long as the step may (`time_max`) and was stopped.
    Time(Duration),
}

/// One generated step: the raw reply, its reading, the tokens it took, and the bound it
/// reached, if any.
pub(crate) struct Reply {
    pub(crate) raw: String,
    pub(crate) parsed: Parsed,
    pub(crate) usage: TokenUsage,
    pub(crate) bound: Option<Bound>,
}

/// Generates one reply to `messages`, streaming answer tokens as `token` events; returns it
/// raw and read, and the tokens it took.
pub(crate) async fn generate(
    generation: &Generation<'_>,
    messages: &[Message],
) -> Result<Reply, ModelError> {
    // The step's own stop: the turn's, the loop's when the reply goes round in circles, and
    // the step's time bound.
    let step_stop = generation.stop.child();
    let timed_out = Arc::new(AtomicBool::new(false));
    let timer = {
        let (stop, timed_out, time_max) =
            (step_stop.clone(), timed_out.clone(), generation.time_max);
        tokio::spawn(async move {
            tokio::time::sleep(time_max).await;
            timed_out.store(true, Ordering::SeqCst);
            stop.stop();
        })
    };
    let generated = generate_within(generation, messages, &step_stop).await;
    timer.abort();
    let mut reply = generated?;
    if timed_out.load(Ordering::SeqCst) {
        reply.bound = Some(Bound::Time(generation.time_max));
    }
    Ok(reply)
}

async fn generate_within(
    generation: &Generation<'_>,
    messages: &[Message],
    step_stop: &StopFlag,
) -> Result<Reply, ModelError> {
    let request = GenerateRequest {
        messages: messages.to_vec(),
        max_tokens: Some(generation.max_tokens),
        stop: step_stop.clone(),
        prefill: generation.prefill.clone(),
        calls: generation.calls.clone(),
    };
    let publish = |text: String| {
        if !text.is_empty() && !generation.hold {
            generation.events.publish(Event::Token {
                session_id: generation.session_id.map(str::to_owned),
                step: generation.step,
                text,
            });
        }
    };
    let mut guard = generation.tools.map(|_| StreamGuard::new());
    let mut tail = String::new();
    let raw = {
        let mut on_token = |token: &str| {
            if !step_stop.is_stopped() && loops(&mut tail, token) {
                step_stop.stop();
            }
            match guard.as_mut() {
                Some(guard) => {
                    publish(guard.push(token));
                    if generation.answer_only && (guard.is_holding() || guard.saw_result_header()) {
                        step_stop.stop();
                    }
                }
                None => publish(token.to_owned()),
            }
        };
        generation.model.generate(&request, &mut on_token).await?
    };
    let usage = TokenUsage::of(generation.model, &request, &raw);
    let mut parsed = match generation.tools {
        Some(index) => parse_tool_calls(&raw, index),
        None => answer_only(&raw),
    };
    drop_repeated_calls(&mut parsed.calls);
    if let Some(guard) = guard {
        publish(guard.finish(&parsed));
    }
    let bound = (usage.completion_tokens >= generation.max_tokens && !generation.stop.is_stopped())
        .then_some(Bound::Tokens(generation.max_tokens));
    Ok(Reply {
        raw,
        parsed,
        usage,
        bound,
    })
}

/// The end of a reply the loop watches for repetition, in bytes.
const LOOP_TAIL_BYTES: usize = 1024;
/// The longest repeating unit looked for, in bytes.
const LOOP_PERIOD_MAX: usize = 200;
/// A reply loops once its end is one unit written this many times in a row...
const LOOP_REPEATS_MIN: usize = 3;
/// ...over at least this many bytes.
const LOOP_BYTES_MIN: usize = 240;

/// Adds `token` to `tail` (the reply's last `LOOP_TAIL_BYTES`) and says whether the reply now
/// goes round in circles: it ends with one piece of text, of up to `LOOP_PERIOD_MAX` bytes,
/// written `LOOP_REPEATS_MIN` times or more in a row over `LOOP_BYTES_MIN` bytes or more.
/// Small models fall into such loops and would fill the whole token budget, minutes on a
/// small machine; the loop stops the generation there (the text so far is read as usual).
pub(crate) fn loops(tail: &mut String, token: &str) -> bool {
    tail.push_str(token);
    if tail.len() > LOOP_TAIL_BYTES {
        let mut cut = tail.len() - LOOP_TAIL_BYTES;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
    let bytes = tail.as_bytes();
    (1..=LOOP_PERIOD_MAX).any(|period| {
        let span = (period * LOOP_REPEATS_MIN).max(LOOP_BYTES_MIN);
        span <= bytes.len() && {
            let end = &bytes[bytes.len() - span..];
            end[period..]
                .iter()
                .zip(end)
                .all(|(later, earlier)| later == earlier)
        }
    })
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

/// What became of one call of a tool step, as the step's text shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fate {
    /// It went to its tool and ran (its result may be a failure).
    Ran,
    /// The same call already had a result in this turn (or the pre-fetch's): that result was
    /// given again and nothing ran.
    Cached,
    /// It never ran: refused (by the policy, a person, the schema, the worked-example check)
    /// or cut off by the step limit; the reason is a short phrase for a person.
    NotRun(String),
}

/// How a step's line for a call starts, by what became of the call: it ran, it was served from
/// the cache, it was not run. The call's name follows in backticks. Clients read a step's call
/// lines by these starts (`imurun chat`; the page's `CALL_LINE` in `web/chat.js`).
pub const CALL_LINE_STARTS: [&str; 3] = ["Using `", "Served from the cache: `", "Not run: `"];

/// A step's readable text: the thought in `<think>…</think>`, the visible text, then a line
/// per call with what became of it: ``Using `name` {args}`` for a call that ran,
/// ``Served from the cache: `name` {args}`` for a repeat, ``Not run: `name` {args} — reason``
/// for a call that never ran.
pub(crate) fn step_text(thought: &str, visible: &str, calls: &[(&ToolCall, Fate)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !thought.trim().is_empty() {
        parts.push(format!("<think>{}</think>", thought.trim()));
    }
    if !visible.trim().is_empty() {
        parts.push(visible.trim().to_owned());
    }
    for (call, fate) in calls {
        let args = spaced_json(&Value::Object(call.args.clone()));
        let name = &call.name;
        let [ran, cached, not_run] = CALL_LINE_STARTS;
        parts.push(match fate {
            Fate::Ran => format!("{ran}{name}` {args}"),
            Fate::Cached => format!("{cached}{name}` {args}"),
            Fate::NotRun(reason) => format!("{not_run}{name}` {args} — {reason}"),
        });
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loops_after(pieces: &[&str]) -> Option<usize> {
        let mut tail = String::new();
        pieces.iter().position(|piece| loops(&mut tail, piece))
    }

    #[test]
    fn a_reply_that_repeats_itself_is_seen_to_loop() {
        let line = "The answer is 12. ";
        let pieces: Vec<&str> = std::iter::repeat_n(line, 40).collect();
        // 18 bytes a line: 240 bytes take 14 lines.
        assert_eq!(loops_after(&pieces), Some(13));
        let dots: Vec<&str> = std::iter::repeat_n(".", 500).collect();
        assert_eq!(loops_after(&dots), Some(LOOP_BYTES_MIN - 1));
        // A long unit, three times.
        let long = "x".repeat(150) + "y";
        let pieces = [long.as_str(), long.as_str(), long.as_str()];
        assert_eq!(loops_after(&pieces), Some(2));
    }

    #[test]
    fn ordinary_replies_do_not_loop() {
        let story = "Once upon a time a small robot lived by the sea. Every morning it \
                     counted the waves, and every evening it wrote down a new number. One \
                     day the numbers ran out, so the robot began to count the stars \
                     instead, and found there were always more of them than it expected.";
        let words: Vec<&str> = story.split_inclusive(' ').collect();
        assert_eq!(loops_after(&words), None);
        let list = "1. milk\n2. eggs\n3. bread\n4. apples\n5. rice\n6. tea\n7. salt\n";
        assert_eq!(
            loops_after(&[list, list]),
            None,
            "a list, even twice, is not a loop"
        );
        let table = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n";
        assert_eq!(loops_after(&[table]), None);
        let wide = "é".repeat(700);
        let mut tail = String::new();
        assert!(
            loops(&mut tail, &wide),
            "multi-byte text is cut on char boundaries"
        );
    }

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
            step_text(" I should look. ", "Let me check.", &[(&call, Fate::Ran)]),
            "<think>I should look.</think>\n\nLet me check.\n\nUsing `web_search` \
             {\"query\": \"latest \\\"Python\\\"\", \"n\": [1, 2]}"
        );
        let refused = Fate::NotRun("the person said no".to_owned());
        assert_eq!(
            step_text("", "", &[(&call, Fate::Cached), (&call, refused)]),
            "Served from the cache: `web_search` {\"query\": \"latest \\\"Python\\\"\", \"n\": [1, 2]}\
             \n\nNot run: `web_search` {\"query\": \"latest \\\"Python\\\"\", \"n\": [1, 2]} — the \
             person said no"
        );
        assert_eq!(step_text("", "", &[]), "");
    }
}
