//! What each server event shows in the terminal: a pure function from the event's JSON (the
//! payloads of `imurun_core::Event`, plus the hub's `stream.*` notices) to what to print, so
//! that every kind is tested without a terminal or a server.

use imurun_agent::CALL_LINE_STARTS;
use serde_json::Value;

/// Arguments, results and step summaries are cut to this many characters: one readable line,
/// not a file body.
pub(crate) const SHOWN_CHARS_MAX: usize = 160;

/// What one event shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shown {
    /// A piece of the answer, printed as it comes.
    Answer(String),
    /// A line about the turn's progress, dimmed on a terminal.
    Progress(String),
    /// A call that waits for the person's answer.
    Approval(ApprovalCard),
    /// The turn is over; `line` says how when it did not end with an answer.
    TurnEnd {
        status: String,
        line: Option<String>,
    },
}

/// A `tool.approval_needed` event, as the question to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApprovalCard {
    pub(crate) approval_id: String,
    pub(crate) question: String,
    /// Whether "always for this session" may be offered (never for deletes).
    pub(crate) rememberable: bool,
}

/// The person's answer to an approval card, as the approvals endpoint takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApprovalAnswer {
    pub(crate) approved: bool,
    pub(crate) remember: bool,
}

/// What rendering remembers within a turn.
#[derive(Debug, Default)]
pub(crate) struct TurnView {
    /// Tokens of the current step were printed, so its `step` event need not repeat them.
    answer_streamed: bool,
}

/// What `event` shows, if anything. Unknown types show nothing: the server may be newer.
pub(crate) fn render(event: &Value, view: &mut TurnView) -> Option<Shown> {
    let text = |field: &str| event.get(field).and_then(Value::as_str).unwrap_or("");
    let indent = "  ".repeat(
        usize::try_from(event.get("depth").and_then(Value::as_u64).unwrap_or(0))
            .unwrap_or(0)
            .min(4),
    );
    let name = text("name");
    match text("type") {
        "token" => {
            let piece = text("text");
            if piece.is_empty() {
                return None;
            }
            view.answer_streamed = true;
            Some(Shown::Answer(piece.to_owned()))
        }
        "step" => Some(render_step(event, view)),
        "tool.call" => Some(Shown::Progress(format!(
            "{indent}→ {name} {}",
            compact(event.get("args"))
        ))),
        "tool.result" => {
            let outcome = if event.get("ok").and_then(Value::as_bool) == Some(true) {
                "ok"
            } else {
                "failed"
            };
            let first = first_line(text("text"));
            Some(Shown::Progress(if first.is_empty() {
                format!("{indent}← {name} {outcome}")
            } else {
                format!("{indent}← {name} {outcome} ({first})")
            }))
        }
        "tool.approval_needed" => {
            let rememberable = event
                .get("rememberable")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let choices = if rememberable {
                "[y]es / [n]o / [a]lways"
            } else {
                "[y]es / [n]o"
            };
            Some(Shown::Approval(ApprovalCard {
                approval_id: text("approval_id").to_owned(),
                question: format!("Allow {name} {}? {choices}: ", compact(event.get("args"))),
                rememberable,
            }))
        }
        "tool.approved" => {
            let always = event.get("remember").and_then(Value::as_bool) == Some(true);
            let suffix = if always {
                " (always, this session)"
            } else {
                ""
            };
            Some(Shown::Progress(format!("· approved {name}{suffix}")))
        }
        "tool.denied" => Some(Shown::Progress(format!(
            "✗ {name} not run: {}",
            first_line(text("message"))
        ))),
        "compaction.start" => Some(Shown::Progress(format!(
            "· history over budget: compacting {} messages",
            number(event, "messages")
        ))),
        "compaction.done" => Some(Shown::Progress(format!(
            "· history {}: {} messages removed",
            text("mode"),
            number(event, "messages")
        ))),
        "prompt.delivered" => Some(Shown::Progress(format!(
            "· queued prompt delivered: {}",
            first_line(text("text"))
        ))),
        "stream.gap" | "stream.reset" | "stream.lagged" => Some(Shown::Progress(
            "· some events were missed while the stream was behind".to_owned(),
        )),
        "answer.checking" => {
            let tools: Vec<String> = event
                .get("tools")
                .and_then(Value::as_array)
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|tool| format!("`{tool}`"))
                        .collect()
                })
                .unwrap_or_default();
            Some(Shown::Progress(if tools.is_empty() {
                "· checking the answer against who the assistant is…".to_owned()
            } else {
                format!(
                    "· checking the answer against what {} returned…",
                    tools.join(" and ")
                )
            }))
        }
        "turn.end" => {
            let status = text("status").to_owned();
            let ended = match status.as_str() {
                "done" => None,
                "max-steps" => Some("turn ended: max-steps (the step limit was reached)".into()),
                other => Some(format!("turn ended: {other}")),
            };
            // Said when some call did not run: a repeat, or a refusal.
            let (cached, refused) = (
                number(event, "calls_cached"),
                number(event, "calls_refused"),
            );
            let calls = (cached + refused > 0).then(|| {
                format!(
                    "· calls: {} ran, {cached} served from the cache, {refused} not run",
                    number(event, "calls_ran")
                )
            });
            let line = match (ended, calls) {
                (Some(ended), Some(calls)) => Some(format!("{calls}\n{ended}")),
                (ended, calls) => ended.or(calls),
            };
            Some(Shown::TurnEnd { status, line })
        }
        _ => None,
    }
}

/// Reads the person's answer to a card; `None` asks again.
pub(crate) fn approval_answer(line: &str, rememberable: bool) -> Option<ApprovalAnswer> {
    let answer = |approved, remember| Some(ApprovalAnswer { approved, remember });
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => answer(true, false),
        "n" | "no" => answer(false, false),
        "a" | "always" if rememberable => answer(true, true),
        _ => None,
    }
}

/// The approval a `tool.approved` or `tool.denied` event settles, so that a card answered
/// elsewhere (the web page) or timed out is not asked here.
pub(crate) fn settled_approval(event: &Value) -> Option<&str> {
    match event.get("type").and_then(Value::as_str)? {
        "tool.approved" | "tool.denied" => event.get("approval_id").and_then(Value::as_str),
        _ => None,
    }
}

fn render_step(event: &Value, view: &mut TurnView) -> Shown {
    let step = number(event, "step");
    let kind = event.get("kind").and_then(Value::as_str).unwrap_or("step");
    let text = event.get("text").and_then(Value::as_str).unwrap_or("");
    let streamed = std::mem::take(&mut view.answer_streamed);
    // The answer is the point of the turn: when no tokens carried it (a back-end that does
    // not stream), the step's text is the answer itself.
    if kind == "answer" && !streamed && !text.trim().is_empty() {
        return Shown::Answer(text.to_owned());
    }
    // A tool step shows what became of each of its calls; another step its first line.
    let calls: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| CALL_LINE_STARTS.iter().any(|start| line.starts_with(start)))
        .map(|line| cut(line, SHOWN_CHARS_MAX))
        .collect();
    let summary = if kind == "tool" && !calls.is_empty() {
        calls.join("; ")
    } else {
        text.lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with("<think>"))
            .map(|line| cut(line, SHOWN_CHARS_MAX))
            .unwrap_or_default()
    };
    if kind == "answer" || summary.is_empty() {
        Shown::Progress(format!("· step {step}: {kind}"))
    } else {
        Shown::Progress(format!("· step {step}: {kind} — {summary}"))
    }
}

fn number(event: &Value, field: &str) -> u64 {
    event.get(field).and_then(Value::as_u64).unwrap_or(0)
}

fn compact(args: Option<&Value>) -> String {
    let text = args
        .map(Value::to_string)
        .unwrap_or_else(|| "{}".to_owned());
    cut(&text, SHOWN_CHARS_MAX)
}

fn first_line(text: &str) -> String {
    cut(
        text.lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("")
            .trim(),
        SHOWN_CHARS_MAX,
    )
}

fn cut(text: &str, chars_max: usize) -> String {
    if text.chars().count() <= chars_max {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(chars_max).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Renders `events` in order within one turn.
    fn check(events: &[Value], expect: &[Option<Shown>]) {
        let mut view = TurnView::default();
        let shown: Vec<Option<Shown>> = events
            .iter()
            .map(|event| render(event, &mut view))
            .collect();
        assert_eq!(shown, expect);
    }

    fn progress(text: &str) -> Option<Shown> {
        Some(Shown::Progress(text.to_owned()))
    }

    #[test]
    fn a_tool_turn_shows_calls_results_and_the_streamed_answer() {
        check(
            &[
                json!({"type": "tool.call", "call_id": "c1", "name": "get_time", "args": {"timezone": "UTC"}, "depth": 0, "id": 1}),
                json!({"type": "tool.result", "call_id": "c1", "name": "get_time", "ok": true, "text": "12:00 UTC\nmore", "depth": 0}),
                json!({"type": "step", "step": 1, "kind": "tool", "text": "<think>hm</think>\nUsing `get_time` {\"timezone\": \"UTC\"}"}),
                json!({"type": "token", "step": 2, "text": "It is "}),
                json!({"type": "token", "step": 2, "text": "noon."}),
                json!({"type": "step", "step": 2, "kind": "answer", "text": "It is noon."}),
                json!({"type": "turn.end", "status": "done", "tool_calls": 1, "skills": [], "steps": 2}),
            ],
            &[
                progress("→ get_time {\"timezone\":\"UTC\"}"),
                progress("← get_time ok (12:00 UTC)"),
                progress("· step 1: tool — Using `get_time` {\"timezone\": \"UTC\"}"),
                Some(Shown::Answer("It is ".into())),
                Some(Shown::Answer("noon.".into())),
                progress("· step 2: answer"),
                Some(Shown::TurnEnd {
                    status: "done".into(),
                    line: None,
                }),
            ],
        );
    }

    #[test]
    fn an_answer_that_did_not_stream_is_shown_from_its_step() {
        check(
            &[json!({"type": "step", "step": 1, "kind": "answer", "text": "Hello."})],
            &[Some(Shown::Answer("Hello.".into()))],
        );
    }

    #[test]
    fn approval_cards_offer_always_only_when_it_may_be_remembered() {
        let card = |rememberable| {
            json!({"type": "tool.approval_needed", "approval_id": "a1", "call_id": "c1",
                   "name": "shell", "args": {"command": "ls"}, "deadline_ms": 1, "rememberable": rememberable, "depth": 0})
        };
        check(
            &[card(true), card(false)],
            &[
                Some(Shown::Approval(ApprovalCard {
                    approval_id: "a1".into(),
                    question: "Allow shell {\"command\":\"ls\"}? [y]es / [n]o / [a]lways: ".into(),
                    rememberable: true,
                })),
                Some(Shown::Approval(ApprovalCard {
                    approval_id: "a1".into(),
                    question: "Allow shell {\"command\":\"ls\"}? [y]es / [n]o: ".into(),
                    rememberable: false,
                })),
            ],
        );
        let cases = [
            ("y", true, Some((true, false))),
            ("YES\n", false, Some((true, false))),
            ("n", true, Some((false, false))),
            ("a", true, Some((true, true))),
            ("always", false, None),
            ("", true, None),
            ("maybe", true, None),
        ];
        for (line, rememberable, expect) in cases {
            let got = approval_answer(line, rememberable).map(|a| (a.approved, a.remember));
            assert_eq!(got, expect, "{line:?}");
        }
    }

    #[test]
    fn failures_denials_and_other_ends_say_what_happened() {
        check(
            &[
                json!({"type": "tool.result", "name": "read_file", "ok": false, "text": "", "depth": 1}),
                json!({"type": "tool.denied", "approval_id": "a1", "name": "shell", "reason": "user", "message": "denied by the user"}),
                json!({"type": "tool.approved", "approval_id": "a2", "name": "write_file", "remember": true}),
                json!({"type": "stream.gap", "missed_from": 3, "missed_to": 9}),
                json!({"type": "something.new"}),
                json!({"type": "token", "text": ""}),
                json!({"type": "turn.end", "status": "max-steps"}),
                json!({"type": "turn.end", "status": "stopped"}),
            ],
            &[
                progress("  ← read_file failed"),
                progress("✗ shell not run: denied by the user"),
                progress("· approved write_file (always, this session)"),
                progress("· some events were missed while the stream was behind"),
                None,
                None,
                Some(Shown::TurnEnd {
                    status: "max-steps".into(),
                    line: Some("turn ended: max-steps (the step limit was reached)".into()),
                }),
                Some(Shown::TurnEnd {
                    status: "stopped".into(),
                    line: Some("turn ended: stopped".into()),
                }),
            ],
        );
        assert_eq!(
            settled_approval(&json!({"type": "tool.denied", "approval_id": "a1"})),
            Some("a1")
        );
        assert_eq!(
            settled_approval(&json!({"type": "tool.call", "approval_id": "a1"})),
            None
        );
    }

    #[test]
    fn a_step_shows_which_calls_never_ran_and_the_end_counts_them() {
        check(
            &[
                json!({"type": "answer.checking", "step": 2, "tools": ["file_read"]}),
                json!({"type": "answer.checking", "step": 1, "tools": []}),
                json!({"type": "step", "step": 1, "kind": "tool", "text": "Let me see.\n\nUsing `file_read` {\"path\": \"a.txt\"}\n\nNot run: `get_weather` {\"location\": \"Lima\"} — its value comes from the worked example, not from you\n\nServed from the cache: `get_time` {}"}),
                json!({"type": "turn.end", "status": "done", "tool_calls": 3, "calls_ran": 1, "calls_cached": 1, "calls_refused": 1}),
                json!({"type": "turn.end", "status": "stopped", "tool_calls": 1, "calls_ran": 0, "calls_cached": 0, "calls_refused": 1}),
            ],
            &[
                progress("· checking the answer against what `file_read` returned…"),
                progress("· checking the answer against who the assistant is…"),
                progress(
                    "· step 1: tool — Using `file_read` {\"path\": \"a.txt\"}; Not run: `get_weather` \
                     {\"location\": \"Lima\"} — its value comes from the worked example, not from you; \
                     Served from the cache: `get_time` {}",
                ),
                Some(Shown::TurnEnd {
                    status: "done".into(),
                    line: Some("· calls: 1 ran, 1 served from the cache, 1 not run".into()),
                }),
                Some(Shown::TurnEnd {
                    status: "stopped".into(),
                    line: Some(
                        "· calls: 0 ran, 0 served from the cache, 1 not run\nturn ended: stopped"
                            .into(),
                    ),
                }),
            ],
        );
    }

    #[test]
    fn long_arguments_are_cut_to_one_line() {
        let long = "x".repeat(500);
        let Some(Shown::Progress(line)) = render(
            &json!({"type": "tool.call", "name": "write_file", "args": {"content": long}}),
            &mut TurnView::default(),
        ) else {
            panic!("expected a progress line");
        };
        assert!(line.chars().count() < SHOWN_CHARS_MAX + 20, "{line}");
        assert!(line.ends_with('…'));
    }
}
