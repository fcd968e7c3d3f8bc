//! Live events: one JSON object per message with a `type` field. The loop and the executor
//! publish them through `EventSink`; the server fans them out over SSE.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::CallSource;

/// Long strings in event arguments are cut to this many characters: the approval card needs
/// to show what will run, not a whole file body.
pub const EVENT_STRING_CHARS_MAX: usize = 2000;

/// Why a call that needed approval did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DenyReason {
    /// A person pressed Deny.
    User,
    /// Nobody answered before the approval timeout.
    Timeout,
    /// The turn was stopped while waiting.
    Stopped,
    /// No client was subscribed to events, so nobody could see the card.
    NoClient,
    /// The policy refused it before any card was shown.
    Policy,
}

/// Everything the agent layer tells a watching client. New kinds are added here, never as
/// loose JSON, so that every payload is documented in one place.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type")]
pub enum Event {
    /// A tool call is about to be decided and run.
    #[serde(rename = "tool.call")]
    ToolCall {
        call_id: String,
        session_id: Option<String>,
        name: String,
        /// The arguments, long strings cut to `EVENT_STRING_CHARS_MAX` (2000) characters.
        args: Map<String, Value>,
        source: CallSource,
        /// 0 for the main agent, 1 and 2 for sub-agents.
        depth: u8,
        /// The session had read untrusted content (this turn or the one before) when the
        /// call was decided: calls that send or change ask below `allow-all`.
        tainted: bool,
    },
    /// A tool call ended (it ran, failed, or was refused).
    #[serde(rename = "tool.result")]
    ToolResult {
        call_id: String,
        session_id: Option<String>,
        name: String,
        ok: bool,
        /// What the model reads; a failure starts with `FAILED:`.
        text: String,
        /// 0 for the main agent, 1 and 2 for sub-agents.
        depth: u8,
        /// The text came from outside the person's control (a web result, a page, an MCP
        /// server): it taints the session for the rest of this turn and the next.
        untrusted: bool,
    },
    /// The policy asks a person: show a card and send the decision (its `approval_id`) before
    /// `deadline_ms`.
    #[serde(rename = "tool.approval_needed")]
    ToolApprovalNeeded {
        approval_id: String,
        call_id: String,
        session_id: Option<String>,
        name: String,
        /// The arguments, long strings cut to `EVENT_STRING_CHARS_MAX` (2000) characters.
        args: Map<String, Value>,
        /// When the card times out and counts as denied (milliseconds since the Unix epoch),
        /// for a countdown.
        deadline_ms: i64,
        /// Whether "always for this session" may be offered (never for deletes).
        rememberable: bool,
        /// 0 for the main agent, 1 and 2 for sub-agents.
        depth: u8,
        /// Why the policy asks, for the card ("this session read untrusted content" when
        /// the taint made it ask).
        reason: String,
        /// The taint made it ask: no remembered grant answered, and the card says why.
        tainted: bool,
    },
    /// A person approved a call.
    #[serde(rename = "tool.approved")]
    ToolApproved {
        approval_id: String,
        call_id: String,
        session_id: Option<String>,
        name: String,
        /// The tool now runs without asking for the rest of the session.
        remember: bool,
    },
    /// A call that needed approval (or that the policy refused) did not run.
    #[serde(rename = "tool.denied")]
    ToolDenied {
        /// `null` when the policy refused before any card was shown.
        approval_id: Option<String>,
        call_id: String,
        session_id: Option<String>,
        name: String,
        reason: DenyReason,
        /// A sentence for a person.
        message: String,
    },
    /// One step of a turn ended. `text` is readable: for a tool step, the thought in
    /// `<think>…</think>`, the text before the call, then ``Using `name` {args}`` per call.
    #[serde(rename = "step")]
    Step {
        session_id: Option<String>,
        /// 1-based, counted across the whole turn.
        step: usize,
        kind: StepKind,
        text: String,
    },
    /// A piece of the answer as it streams. Call syntax never reaches it while tools are on
    /// offer.
    #[serde(rename = "token")]
    Token {
        session_id: Option<String>,
        /// The step the token belongs to, as in the `step` event that follows it.
        step: usize,
        text: String,
    },
    /// The context budget was exceeded and history is being summarised or dropped.
    #[serde(rename = "compaction.start")]
    CompactionStart {
        session_id: Option<String>,
        /// The history messages about to be compacted.
        messages: usize,
        /// Tokens of the whole request before compaction.
        tokens: usize,
        /// The budget the request must fit, in tokens.
        budget: usize,
    },
    /// History was compacted.
    #[serde(rename = "compaction.done")]
    CompactionDone {
        session_id: Option<String>,
        mode: CompactionMode,
        /// The history messages removed from the request.
        messages: usize,
        /// Tokens of the whole request after compaction.
        tokens: usize,
    },
    /// A prompt queued while the turn ran was handed to the model at an answer boundary.
    #[serde(rename = "prompt.delivered")]
    PromptDelivered {
        session_id: Option<String>,
        text: String,
    },
    /// Skills were invoked for the turn (`/<id>` tokens in its prompt; published at its
    /// start, only when there are some).
    #[serde(rename = "skill.used")]
    SkillUsed {
        session_id: Option<String>,
        /// The skills' ids, in prompt order (at most 3).
        skills: Vec<String>,
    },
    /// A sub-agent (`run_agent`) started. Its tool calls follow with `depth` set.
    #[serde(rename = "agent.start")]
    AgentStart {
        session_id: Option<String>,
        /// The sub-agent's depth: 1 for the main agent's helper, 2 for the helper's.
        depth: u8,
        /// The task it was given (long tasks cut to `EVENT_STRING_CHARS_MAX` characters).
        task: String,
        /// The tools it may use (canonical names), after the intersection with its parent's.
        tools: Vec<String>,
    },
    /// A sub-agent ended; its final answer is the `run_agent` call's `tool.result`.
    #[serde(rename = "agent.end")]
    AgentEnd {
        session_id: Option<String>,
        /// The sub-agent's depth, as in its `agent.start`.
        depth: u8,
        status: TurnStatus,
        /// The steps it took.
        steps: usize,
    },
    /// The pre-fetch started lookups for what the prompt asks about the present (before the
    /// model's first step; its calls also publish `tool.call` and `tool.result`).
    #[serde(rename = "tools.start")]
    ToolsStart {
        session_id: Option<String>,
        /// The tools it runs (`get_time`, `get_weather`, `web_search`), in Context order.
        tools: Vec<String>,
    },
    /// The pre-fetch's web search started.
    #[serde(rename = "web_search.start")]
    WebSearchStart {
        session_id: Option<String>,
        /// The query (cut to `EVENT_STRING_CHARS_MAX` characters).
        query: String,
    },
    /// The pre-fetch's web search ended (`ok: false`: it failed, was refused or ran out of
    /// time).
    #[serde(rename = "web_search.done")]
    WebSearchDone {
        session_id: Option<String>,
        /// The query, as in `web_search.start`.
        query: String,
        ok: bool,
    },
    /// The pre-fetch ended; its results are in the turn's Context block.
    #[serde(rename = "tools.done")]
    ToolsDone {
        session_id: Option<String>,
        /// One per tool of `tools.start`, in the same order.
        results: Vec<PrefetchResult>,
        /// How long the lookups took, in milliseconds (at most 10 s).
        elapsed_ms: u64,
    },
    /// An answer did not hold what the turn's tools returned (it left out their facts, stated
    /// values they do not hold, copied a result header, invented a tool result, or answered
    /// as someone other than the assistant): the loop asked the model again with the result
    /// quoted (`retry`), or answered from the result itself in a plain sentence (`fallback`).
    /// The rejected answer is never shown or stored as the answer.
    #[serde(rename = "answer.grounding")]
    Grounding {
        session_id: Option<String>,
        /// The step whose answer was rejected.
        step: usize,
        action: GroundingAction,
        /// The tool whose result the answer must carry; `None` for a persona correction.
        tool: Option<String>,
        /// What was wrong, as a sentence for a person ("the answer left out the time that
        /// get_time returned").
        reason: String,
    },
    /// The step's answer is held back, not streamed, until it is checked against what
    /// these tools returned (or, with none, against who the assistant is): a client says so
    /// until the step's `step` event (or `turn.end`) comes.
    #[serde(rename = "answer.checking")]
    Checking {
        session_id: Option<String>,
        /// The step whose answer is held.
        step: usize,
        /// The tools whose results the answer must hold, in the order they returned.
        tools: Vec<String>,
    },
    /// The turn ended.
    #[serde(rename = "turn.end")]
    TurnEnd {
        session_id: Option<String>,
        status: TurnStatus,
        /// Calls the model made in the turn, cached and refused ones included:
        /// `calls_ran + calls_cached + calls_refused`.
        tool_calls: usize,
        /// Of those, the calls that went to their tool and ran (a failed run included).
        calls_ran: usize,
        /// Of those, repeats answered with a result the turn already had: nothing ran.
        calls_cached: usize,
        /// Of those, the calls that never ran: refused by the permissions, a person, the
        /// tool's schema, or the worked-example check.
        calls_refused: usize,
        /// The skills invoked for the turn, by id.
        skills: Vec<String>,
        /// The steps the turn took.
        steps: usize,
    },
}

impl Event {
    /// The session the event belongs to; `None` for a call made outside any session.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Event::ToolCall { session_id, .. }
            | Event::ToolResult { session_id, .. }
            | Event::ToolApprovalNeeded { session_id, .. }
            | Event::ToolApproved { session_id, .. }
            | Event::ToolDenied { session_id, .. }
            | Event::Step { session_id, .. }
            | Event::Token { session_id, .. }
            | Event::CompactionStart { session_id, .. }
            | Event::CompactionDone { session_id, .. }
            | Event::PromptDelivered { session_id, .. }
            | Event::SkillUsed { session_id, .. }
            | Event::AgentStart { session_id, .. }
            | Event::AgentEnd { session_id, .. }
            | Event::ToolsStart { session_id, .. }
            | Event::WebSearchStart { session_id, .. }
            | Event::WebSearchDone { session_id, .. }
            | Event::ToolsDone { session_id, .. }
            | Event::Grounding { session_id, .. }
            | Event::Checking { session_id, .. }
            | Event::TurnEnd { session_id, .. } => session_id.as_deref(),
        }
    }
}

/// One pre-fetch lookup's end, in `tools.done`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrefetchResult {
    /// The tool, as named in `tools.start`.
    pub tool: String,
    /// False when it failed, was refused, or did not finish before the deadline.
    pub ok: bool,
}

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The model called tools; their results go back to it.
    Tool,
    /// The model answered.
    Answer,
    /// The model's call could not be run; it was asked to write it again.
    Retry,
    /// The model was reminded (no answer after a thought, or live data without a tool).
    Nudge,
    /// The model's answer did not hold what the tools returned: it was asked again, with the
    /// result quoted (see `answer.grounding`). The step's text is the rejected answer.
    Correction,
}

/// What the loop did with an answer that did not hold what the tools returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum GroundingAction {
    /// The model was asked again, once, with a short correction quoting the result.
    Retry,
    /// The answer is a plain sentence made from the result itself.
    Fallback,
    /// The answer is an extract of the file the turn read (or a count made from it): the
    /// model's answer was not made of the file, or the prompt asked for a count.
    Extract,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TurnStatus {
    /// The model answered.
    Done,
    /// The Stop button, the kill switch, or a parent agent stopped the turn.
    Stopped,
    /// The step limit was reached while the model still wanted tools.
    MaxSteps,
    /// The model failed, or the prompt alone does not fit the context window.
    Error,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Done => "done",
            TurnStatus::Stopped => "stopped",
            TurnStatus::MaxSteps => "max-steps",
            TurnStatus::Error => "error",
        }
    }
}

/// How history was compacted to fit the context budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CompactionMode {
    /// Summarised by the raw model into the system message.
    Summarised,
    /// Dropped, oldest first (no summariser, or the summary did not help).
    Dropped,
}

/// Where events go. Publishing never blocks on a slow reader: sinks queue with a bound.
pub trait EventSink: Send + Sync {
    fn publish(&self, event: Event);

    /// Whether anyone could see an approval card for this session right now. With nobody
    /// watching, an "ask" is denied at once instead of waiting for a timeout.
    fn has_subscriber(&self, session_id: Option<&str>) -> bool;
}

/// An event sink with no subscribers.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullEvents;

impl EventSink for NullEvents {
    fn publish(&self, _event: Event) {}

    fn has_subscriber(&self, _session_id: Option<&str>) -> bool {
        false
    }
}

/// A copy of `args` with every string longer than `EVENT_STRING_CHARS_MAX` characters cut
/// to that length (nested values too), for events to the local page.
pub fn cut_long_strings(args: &Map<String, Value>) -> Map<String, Value> {
    args.iter()
        .map(|(key, value)| (key.clone(), cut_value(value)))
        .collect()
}

fn cut_value(value: &Value) -> Value {
    match value {
        Value::String(text) if text.chars().count() > EVENT_STRING_CHARS_MAX => {
            Value::String(text.chars().take(EVENT_STRING_CHARS_MAX).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(cut_value).collect()),
        Value::Object(map) => Value::Object(cut_long_strings(map)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_strings_are_cut_at_2000_chars_at_any_depth() {
        let long = "é".repeat(2500);
        let args = json!({"content": long, "nested": {"list": [long]}, "n": 3});
        let cut = cut_long_strings(args.as_object().unwrap());
        assert_eq!(cut["content"].as_str().unwrap().chars().count(), 2000);
        assert_eq!(
            cut["nested"]["list"][0].as_str().unwrap().chars().count(),
            2000
        );
        assert_eq!(cut["n"], 3);
    }

    #[test]
    fn events_serialize_with_a_type_field() {
        let event = Event::ToolDenied {
            approval_id: None,
            call_id: "c1".into(),
            session_id: Some("s1".into()),
            name: "shell".into(),
            reason: DenyReason::NoClient,
            message: "no client is connected to approve it".into(),
        };
        let wire = serde_json::to_value(&event).unwrap();
        assert_eq!(wire["type"], "tool.denied");
        assert_eq!(wire["reason"], "no_client");
    }

    #[test]
    fn turn_events_use_the_seed_type_names() {
        let end = Event::TurnEnd {
            session_id: None,
            status: TurnStatus::MaxSteps,
            tool_calls: 2,
            calls_ran: 1,
            calls_cached: 0,
            calls_refused: 1,
            skills: vec!["haiku".into()],
            steps: 6,
        };
        let wire = serde_json::to_value(&end).unwrap();
        assert_eq!(wire["type"], "turn.end");
        assert_eq!(wire["status"], "max-steps");
        let step = Event::Step {
            session_id: None,
            step: 1,
            kind: StepKind::Tool,
            text: String::new(),
        };
        assert_eq!(serde_json::to_value(&step).unwrap()["kind"], "tool");
        let done = Event::CompactionDone {
            session_id: None,
            mode: CompactionMode::Summarised,
            messages: 3,
            tokens: 10,
        };
        let wire = serde_json::to_value(&done).unwrap();
        assert_eq!(wire["type"], "compaction.done");
        assert_eq!(wire["mode"], "summarised");
    }
}
