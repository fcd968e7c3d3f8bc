//! One turn, step by step, exactly as the seed's loop: stop? → last-step note → fit →
//! generate → calls, a retry, a nudge, or an answer (and a queued prompt at that boundary).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use imurun_calls::{ParseKind, Parsed, RetryReason, render_call, split_think};
use imurun_core::{Event, Message, Role, StepKind, ToolCall, ToolIndex, TurnStatus};
use imurun_tools::Caller;
use serde_json::Value;

use crate::AgentError;
use crate::agent::{AgentLoop, CALLS_PER_STEP_MAX, HISTORY_MESSAGES_MAX, TurnRequest, TurnResult};
use crate::context::{Fit, Summariser, TOOL_RESULT_HEADER, fit, reserve};
use crate::prefetch::Prefetched;
use crate::prompt::{SKILLS_MAX, SystemPrompt, system_message};
use crate::realtime::{admits_no_live_data, is_realtime};
use crate::step::{Generation, generate, step_text};
use crate::style::{
    CALL_PREFILL, CALLS_DROPPED_NOTE, FINAL_ANSWER_NUDGE, LAST_STEP_NOTE, NO_ANSWER_SENTENCE,
    OFFLINE_SENTENCE, REALTIME_NUDGE, REPEATED_CALL_NOTE, STEP_LIMIT_SENTENCE, with_failed_suffix,
};
use crate::summary::ModelSummariser;

/// What a step decided.
enum Next {
    Continue,
    End(TurnStatus, String),
}

/// What the loop knows about the prompt being answered; a delivered queued prompt starts
/// afresh, so each prompt gets its own retry and nudges.
#[derive(Debug, Default)]
struct PromptState {
    realtime: bool,
    tool_result_seen: bool,
    retried: bool,
    thought_nudged: bool,
    realtime_nudged: bool,
    /// The prompt's first generation happened (a call prefill applies only to it).
    generated: bool,
}

impl PromptState {
    fn new(prompt: &str) -> Self {
        Self {
            realtime: is_realtime(prompt),
            ..Self::default()
        }
    }
}

pub(crate) struct Turn<'a> {
    agent: &'a AgentLoop,
    request: &'a TurnRequest,
    /// The tools the model sees: the registry's, or a sub-agent's share of them.
    index: Cow<'a, ToolIndex>,
    tools_on: bool,
    caller: Caller,
    messages: Vec<Message>,
    prompt_index: usize,
    /// Results of calls already made in this turn, by call: small models repeat calls. At
    /// most `MAX_STEPS_CAP × CALLS_PER_STEP_MAX` entries, like `tool_calls`.
    cache: HashMap<String, (String, String)>,
    /// Cache keys of the pre-fetch's lookups the model has not called yet: the first such
    /// call is answered from the pre-fetch as a fresh result, not as a repeat.
    prefetched: HashSet<String>,
    tool_calls: Vec<ToolCall>,
    transcript: Vec<Message>,
    tools_used: bool,
    note_added: bool,
    prompt: PromptState,
    step: usize,
    error: Option<AgentError>,
}

impl<'a> Turn<'a> {
    /// The system message, the history with thoughts stripped, and the prompt.
    pub(crate) fn new(agent: &'a AgentLoop, request: &'a TurnRequest) -> Self {
        let (index, also_connected) = tool_index(agent, request);
        let tools_on = agent.config.max_steps > 1 && index.offered().next().is_some();
        let system = system_message(&SystemPrompt {
            persona: &agent.config.persona,
            today: agent.clock.today(),
            tools: tools_on.then_some(index.as_ref()),
            also_connected: also_connected.as_deref(),
            skills: &request.skills,
            context: request.context.as_deref(),
            examples: agent.config.tool_examples,
            question: &request.prompt,
        });
        let mut messages = vec![Message::system(system)];
        let history: Vec<&Message> = request
            .history
            .iter()
            .filter(|message| matches!(message.role, Role::User | Role::Assistant))
            .collect();
        let tail = history.len().saturating_sub(HISTORY_MESSAGES_MAX);
        messages.extend(
            history[tail..]
                .iter()
                .map(|message| without_thought(message)),
        );
        messages.push(Message::user(request.prompt.clone()));
        let caller = match &agent.scope {
            None => Caller::model(request.session_id.clone(), request.stop.clone()),
            Some(scope) => Caller::sub_agent(
                request.session_id.clone(),
                scope.depth,
                scope.tools.clone(),
                request.stop.clone(),
            ),
        };
        Self {
            agent,
            request,
            index,
            tools_on,
            caller,
            prompt_index: messages.len() - 1,
            messages,
            cache: HashMap::new(),
            prefetched: HashSet::new(),
            tool_calls: Vec::new(),
            transcript: Vec::new(),
            tools_used: false,
            note_added: false,
            prompt: PromptState {
                // Pre-fetched live data counts as a tool result: an answer may state it.
                tool_result_seen: has_live_context(request.context.as_deref()),
                ..PromptState::new(&request.prompt)
            },
            step: 0,
            error: None,
        }
    }

    /// Seeds the turn's cache with the pre-fetch's finished lookups, so a model that calls
    /// the same tool with the same arguments reads that result without a second run (as a
    /// fresh result, not a repeat).
    pub(crate) fn with_prefetched(mut self, prefetched: Vec<Prefetched>) -> Self {
        for lookup in prefetched {
            let key = cache_key(&lookup.call);
            self.prefetched.insert(key.clone());
            self.cache.insert(key, (lookup.tool, lookup.text));
        }
        self
    }

    /// Plays the turn and publishes `turn.end`.
    pub(crate) async fn run(mut self) -> TurnResult {
        let skills: Vec<String> = self.skill_ids();
        if !skills.is_empty() {
            self.agent.events.publish(Event::SkillUsed {
                session_id: self.request.session_id.clone(),
                skills,
            });
        }
        let (status, answer) = self.steps().await;
        if status == TurnStatus::Error {
            debug_assert!(
                self.error.is_some(),
                "an error status always has its reason"
            );
        } else if !answer.is_empty() {
            self.transcript.push(Message::assistant(answer.clone()));
        }
        self.agent.events.publish(Event::TurnEnd {
            session_id: self.request.session_id.clone(),
            status,
            tool_calls: self.tool_calls.len(),
            skills: self.skill_ids(),
            steps: self.step,
        });
        TurnResult {
            status,
            answer,
            tool_calls: self.tool_calls,
            transcript: self.transcript,
            steps: self.step,
            error: self.error,
        }
    }

    async fn steps(&mut self) -> (TurnStatus, String) {
        let max_steps = self.agent.config.max_steps;
        for step in 1..=max_steps {
            if self.request.stop.is_stopped() {
                return (TurnStatus::Stopped, String::new());
            }
            let last = step == max_steps;
            if last && self.tools_used && !self.note_added {
                self.messages.push(Message::user(LAST_STEP_NOTE));
                self.note_added = true;
            }
            let (raw, parsed) = match self.generate_step(step).await {
                Ok(generated) => generated,
                Err(error) => return self.fail(error),
            };
            if self.request.stop.is_stopped() {
                let partial = match parsed.kind {
                    ParseKind::Answer => parsed.visible,
                    ParseKind::Calls | ParseKind::Retry => String::new(),
                };
                return (TurnStatus::Stopped, partial);
            }
            if let Next::End(status, answer) = self.decide(&raw, parsed, last).await {
                return (status, answer);
            }
        }
        // The last step always ends the turn; this is reached only if that ever changes.
        (TurnStatus::MaxSteps, STEP_LIMIT_SENTENCE.to_owned())
    }

    /// The ids of the skills the system message injects.
    fn skill_ids(&self) -> Vec<String> {
        let skills = self.request.skills.iter().take(SKILLS_MAX);
        skills.map(|skill| skill.id.clone()).collect()
    }

    /// The first step alone, read but not acted on: what the model would call (a dry run,
    /// `imurun ask --dry-run`, evaluations). Nothing runs, and no `turn.end` is published.
    pub(crate) async fn plan(mut self) -> Result<Parsed, AgentError> {
        self.generate_step(1).await.map(|(_, parsed)| parsed)
    }

    /// Fits the messages to the budget and generates one step: the raw output and its parse.
    async fn generate_step(&mut self, step: usize) -> Result<(String, Parsed), AgentError> {
        let agent = self.agent;
        let count = |messages: &[Message]| agent.model.count_tokens(messages);
        let summariser = ModelSummariser {
            model: agent.model.as_ref(),
            stop: self.request.stop.clone(),
        };
        let limit = agent.model.context_limit();
        let session_id = self.request.session_id.as_deref();
        // Counted once the step runs, so `steps` is the steps that reached the model.
        self.step = step;
        let options = Fit {
            limit,
            count: &count,
            summariser: agent
                .config
                .summarise_history
                .then_some(&summariser as &dyn Summariser),
            events: agent.events.as_ref(),
            session_id,
        };
        let fitted = fit(&mut self.messages, self.prompt_index, &options).await;
        self.prompt_index = fitted.prompt_index;
        if !fitted.fits {
            let (tokens, budget) = (fitted.tokens, fitted.budget);
            return Err(AgentError::PromptTooLong { tokens, budget });
        }
        let prefill = self.call_prefill();
        self.prompt.generated = true;
        let generation = Generation {
            model: agent.model.as_ref(),
            events: agent.events.as_ref(),
            session_id,
            step,
            tools: self.tools_on.then_some(self.index.as_ref()),
            stop: &self.request.stop,
            max_tokens: agent
                .config
                .step_tokens_max
                .map_or(reserve(limit), |tokens| tokens.min(reserve(limit))),
            prefill,
        };
        generate(&generation, &self.messages)
            .await
            .map_err(AgentError::from)
    }

    /// The start of the reply the loop writes for the model, per `AgentConfig::call_prefill`:
    /// only for a prompt's first generation, with tools on offer, on a back-end that can
    /// continue a started reply.
    fn call_prefill(&self) -> Option<&'static str> {
        // Without a Context block (`AgentLoop::run` holds the pre-fetch's back for a started
        // call), the call is answered from the pre-fetch's lookup when it is the same call.
        let live = self.prompt.realtime && self.request.context.is_none();
        let wanted = self.agent.config.call_prefill.applies(live);
        (wanted && self.tools_on && !self.prompt.generated && self.agent.model.supports_prefill())
            .then_some(CALL_PREFILL)
    }

    fn fail(&mut self, error: AgentError) -> (TurnStatus, String) {
        self.error = Some(error);
        (TurnStatus::Error, String::new())
    }

    async fn decide(&mut self, raw: &str, parsed: Parsed, last: bool) -> Next {
        match parsed.kind {
            ParseKind::Calls if last => self.end_at_limit(&parsed),
            ParseKind::Calls => {
                self.run_calls(&parsed).await;
                Next::Continue
            }
            ParseKind::Retry => self.retry(raw, &parsed, last),
            ParseKind::Answer => self.answer(&parsed, last),
        }
    }

    /// The last step asked for a tool: it does not run. The answer is the text before the
    /// call, or the step-limit sentence.
    fn end_at_limit(&mut self, parsed: &Parsed) -> Next {
        let answer = match parsed.visible.trim() {
            "" => STEP_LIMIT_SENTENCE.to_owned(),
            visible => visible.to_owned(),
        };
        self.publish_step(StepKind::Answer, step_text(&parsed.thought, &answer, &[]));
        Next::End(TurnStatus::MaxSteps, answer)
    }

    /// Up to `CALLS_PER_STEP_MAX` calls: the assistant's call in canonical form (anything
    /// after it dropped), then one `[tool result: name]` user message per call.
    async fn run_calls(&mut self, parsed: &Parsed) {
        let calls = &parsed.calls[..parsed.calls.len().min(CALLS_PER_STEP_MAX)];
        let mut assistant: Vec<String> = Vec::new();
        if !parsed.visible.trim().is_empty() {
            assistant.push(parsed.visible.trim().to_owned());
        }
        assistant.extend(calls.iter().map(render_call));
        self.messages.push(Message::assistant(assistant.join("\n")));
        self.publish_step(
            StepKind::Tool,
            step_text(&parsed.thought, &parsed.visible, calls),
        );
        let mut repeats = 0;
        for call in calls {
            let (name, text, cached) = self.call(call).await;
            repeats += usize::from(cached);
            let result = format!("{TOOL_RESULT_HEADER}{name}]\n{text}");
            self.messages.push(Message::user(result));
        }
        let mut notes = Vec::new();
        if parsed.calls.len() > CALLS_PER_STEP_MAX {
            notes.push(CALLS_DROPPED_NOTE);
        }
        if repeats == calls.len() {
            notes.push(REPEATED_CALL_NOTE);
        }
        if let Some(last) = self.messages.last_mut() {
            for note in notes {
                last.content.push_str("\n\n");
                last.content.push_str(note);
            }
        }
        self.tools_used = true;
        self.prompt.tool_result_seen = true;
    }

    /// One call through the executor, or from the turn's cache when the same call (name
    /// and arguments) already ran. Returns the tool's name, the text the model reads, and
    /// whether it came from the cache.
    async fn call(&mut self, call: &ToolCall) -> (String, String, bool) {
        self.tool_calls.push(call.clone());
        let key = cache_key(call);
        if let Some((name, text)) = self.cache.get(&key) {
            let repeated = !self.prefetched.remove(&key);
            return (name.clone(), text.clone(), repeated);
        }
        let execution = self.agent.executor.execute(call, &self.caller).await;
        let text = if execution.output.ok {
            execution.output.text
        } else {
            with_failed_suffix(&execution.output.text)
        };
        self.cache
            .insert(key, (execution.tool.clone(), text.clone()));
        (execution.tool, text, false)
    }

    /// An unreadable call gets one retry message; a second failure is returned as plain
    /// text. A call written only inside the thought gets the one thought nudge, naming it.
    fn retry(&mut self, raw: &str, parsed: &Parsed, last: bool) -> Next {
        let message = parsed.retry.clone().unwrap_or_default();
        if let Some(RetryReason::CallInThought { .. }) = parsed.retry_reason {
            if last || self.prompt.thought_nudged {
                return self.deliver_or_end(NO_ANSWER_SENTENCE.to_owned(), &parsed.thought, last);
            }
            self.prompt.thought_nudged = true;
            return self.nudge(&parsed.thought, "", &message, StepKind::Nudge);
        }
        if last {
            return self.end_at_limit(parsed);
        }
        let plain = split_think(raw).visible.trim().to_owned();
        if self.prompt.retried {
            return self.deliver_or_end(plain, &parsed.thought, last);
        }
        self.prompt.retried = true;
        self.nudge(&parsed.thought, &plain, &message, StepKind::Retry)
    }

    /// An answer: the thought nudge when there is only a thought, the realtime nudge when a
    /// live-data question got no tool result and no admission, else the end of the prompt.
    fn answer(&mut self, parsed: &Parsed, last: bool) -> Next {
        let visible = parsed.visible.trim();
        if visible.is_empty() {
            if parsed.thought.trim().is_empty() || last || self.prompt.thought_nudged {
                return self.deliver_or_end(NO_ANSWER_SENTENCE.to_owned(), &parsed.thought, last);
            }
            self.prompt.thought_nudged = true;
            return self.nudge(&parsed.thought, "", FINAL_ANSWER_NUDGE, StepKind::Nudge);
        }
        let state = &self.prompt;
        if state.realtime
            && !state.tool_result_seen
            && !state.realtime_nudged
            && !last
            && !admits_no_live_data(visible)
        {
            self.prompt.realtime_nudged = true;
            return self.nudge(&parsed.thought, visible, REALTIME_NUDGE, StepKind::Nudge);
        }
        self.deliver_or_end(visible.to_owned(), &parsed.thought, last)
    }

    /// The model's visible text as an assistant message, then `message` from the user.
    fn nudge(&mut self, thought: &str, visible: &str, message: &str, kind: StepKind) -> Next {
        self.publish_step(kind, step_text(thought, visible, &[]));
        self.messages.push(Message::assistant(visible));
        self.messages.push(Message::user(message));
        Next::Continue
    }

    /// The answer ends the prompt. A queued prompt is delivered here, at the boundary, and
    /// the turn goes on; on the last step it stays queued for the next turn.
    fn deliver_or_end(&mut self, answer: String, thought: &str, last: bool) -> Next {
        self.publish_step(StepKind::Answer, step_text(thought, &answer, &[]));
        let next = match &self.request.queue {
            Some(queue) if !last => queue.pop(),
            _ => None,
        };
        let Some(next) = next else {
            return Next::End(TurnStatus::Done, answer);
        };
        self.messages.push(Message::assistant(answer.clone()));
        self.messages.push(Message::user(next.clone()));
        self.transcript.push(Message::assistant(answer));
        self.transcript.push(Message::user(next.clone()));
        self.prompt_index = self.messages.len() - 1;
        self.prompt = PromptState::new(&next);
        self.agent.events.publish(Event::PromptDelivered {
            session_id: self.request.session_id.clone(),
            text: next,
        });
        Next::Continue
    }

    fn publish_step(&self, kind: StepKind, text: String) {
        self.agent.events.publish(Event::Step {
            session_id: self.request.session_id.clone(),
            step: self.step,
            kind,
            text,
        });
    }
}

/// The tools a turn's model sees, and the line naming connected services it does not list.
/// The main agent gets the registry's offer for this prompt: with many connector tools, only
/// the services the prompt or the last messages point at (`Registry::offer`). A sub-agent's
/// index keeps every runnable tool (so a call to a tool it may not use is still read, and the
/// executor refuses it with a FAILED result) but offers only its own tools.
fn tool_index<'a>(
    agent: &'a AgentLoop,
    request: &TurnRequest,
) -> (Cow<'a, ToolIndex>, Option<String>) {
    let registry = agent.executor.registry();
    let index = registry.index();
    let Some(scope) = &agent.scope else {
        if !registry.has_connectors() {
            return (Cow::Borrowed(index), None);
        }
        let recent: Vec<&str> = request
            .history
            .iter()
            .map(|message| message.content.as_str())
            .collect();
        let offer = registry.offer(&request.prompt, &recent);
        let line = offer.others_line();
        return (Cow::Owned(offer.index), line);
    };
    let mut scoped = index.clone();
    for tool in index.runnable() {
        let offered = tool.offered && scope.tools.contains(&tool.spec.name);
        scoped.insert(tool.spec.clone(), offered);
    }
    (Cow::Owned(scoped), None)
}

/// Whether the pre-fetch Context block holds data rather than only the offline sentence.
fn has_live_context(context: Option<&str>) -> bool {
    context.is_some_and(|text| {
        let text = text.replace(OFFLINE_SENTENCE, "");
        !text.trim().is_empty()
    })
}

/// A history message as the model sees it: assistant thoughts stripped.
fn without_thought(message: &Message) -> Message {
    match message.role {
        Role::Assistant => Message::assistant(split_think(&message.content).visible.trim()),
        _ => message.clone(),
    }
}

/// The call with its arguments' keys sorted at every depth, so the same call written with
/// keys in another order is still the same call.
fn cache_key(call: &ToolCall) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let args = sorted(&Value::Object(call.args.clone()));
    format!("{}\u{0}{args}", call.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_cache_key_ignores_argument_order_at_every_depth() {
        let call = |args: Value| ToolCall::new("t", args.as_object().cloned().unwrap());
        let a = call(json!({"a": 1, "b": {"x": [1, {"p": 1, "q": 2}], "y": 2}}));
        let b = call(json!({"b": {"y": 2, "x": [1, {"q": 2, "p": 1}]}, "a": 1}));
        let c = call(json!({"a": 1, "b": {"x": [{"p": 1, "q": 2}, 1], "y": 2}}));
        assert_eq!(cache_key(&a), cache_key(&b));
        assert_ne!(cache_key(&a), cache_key(&c), "array order matters");
        assert_ne!(
            cache_key(&a),
            cache_key(&ToolCall::new("u", a.args.clone()))
        );
    }
}
