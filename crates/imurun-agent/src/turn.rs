//! One turn, step by step, exactly as the seed's loop: stop? → last-step note → fit →
//! generate → calls, a retry, a nudge, or an answer (and a queued prompt at that boundary).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use imurun_calls::{ParseKind, Parsed, RetryReason, parse_tool_calls, render_call, split_think};
use imurun_core::{
    Event, Facts, GroundingAction, Message, Role, StepKind, TokenUsage, ToolCall, ToolCategory,
    ToolIndex, TurnStatus,
};
use imurun_exec::{Caller, Outcome};
use serde_json::Value;

use crate::AgentError;
use crate::agent::{
    AgentLoop, CALLS_PER_STEP_MAX, CallPrefill, HISTORY_MESSAGES_MAX, TurnRequest, TurnResult,
};
use crate::context::{Fit, Summariser, TOOL_RESULT_HEADER, fit, reserve};
use crate::ground::{Ground, Grounds, Identity, Problem, Verdict, asks_who, check, fallback};
use crate::likely::{
    CALL_MARGIN_MIN, Filled, Filler, Likelihood, NAMED_CALL_MARGIN_MIN, STANDING_CALL_MARGIN_MIN,
    call_margin_blank, call_opening, rank_tools,
};
use crate::prefetch::Prefetched;
use crate::prompt::{SKILLS_MAX, ShownExamples, SystemPrompt, shown_examples, system_message};
use crate::realtime::{admits_no_live_data, is_realtime};
use crate::step::{Bound, Fate, Generation, Reply, generate, step_text};
use crate::style::{
    AFTER_DECLINE_REASON, CALL_PREFILL, CALLS_DROPPED_NOTE, DECLINED_AFTER_WORK_SENTENCE,
    DECLINED_SENTENCE, EXAMPLE_VALUE_REASON, FINAL_ANSWER_NUDGE, LAST_STEP_NOTE,
    NO_ANSWER_SENTENCE, OFFLINE_SENTENCE, REALTIME_NUDGE, REPEATED_CALL_NOTE, STEP_LIMIT_SENTENCE,
    STEP_TIME_SENTENCE, STEP_TOKENS_NOTE, UNRELATED_CALL_NUDGE, with_failed_suffix,
};
use crate::summary::ModelSummariser;
use crate::unsaid::Said;

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
    /// An answer was sent back once with a grounding correction.
    grounding_retried: bool,
    /// The answer being read follows a pre-fetch whose results answer the whole prompt: one
    /// that does not hold them is made from them at once, with no second generation.
    prefetch_answered: bool,
    /// The first reply's calls were all dropped as unrelated: the first one's tool.
    unrelated: Option<String>,
    /// The prompt as the person wrote it (the model's copy may differ: `plain_numbers`).
    text: String,
}

impl PromptState {
    fn new(prompt: &str) -> Self {
        Self {
            realtime: is_realtime(prompt),
            text: prompt.to_owned(),
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
    cache: HashMap<String, Cached>,
    /// Cache keys of the pre-fetch's lookups the model has not called yet: the first such
    /// call is answered from the pre-fetch as a fresh result, not as a repeat.
    prefetched: HashSet<String>,
    /// The loop has told the model once that it repeated a call (`REPEATED_CALL_NOTE`).
    repeat_noted: bool,
    tool_calls: Vec<ToolCall>,
    /// What became of `tool_calls`, for `turn.end`.
    counts: CallCounts,
    /// The bound the latest step's generation reached, if any.
    bound: Option<Bound>,
    transcript: Vec<Message>,
    tools_used: bool,
    note_added: bool,
    prompt: PromptState,
    step: usize,
    error: Option<AgentError>,
    /// Every generation's tokens so far, summaries included.
    usage: TokenUsage,
    /// The results the next answer must hold: the latest tool step's, or the pre-fetch's.
    grounds: Vec<Ground>,
    /// Every tool that returned a result for the prompt being answered.
    ran: Vec<String>,
    /// What the system message's worked examples show.
    shown: ShownExamples,
    /// Who the assistant is; `None` for a sub-agent, whose answer goes to its parent.
    identity: Option<Identity>,
    /// Whether the step's answer was held back from the stream until it is checked.
    held: bool,
    /// The pre-fetch's lookups were handed over as a tool step: the first reply follows a
    /// result, and no call is started for it.
    prefetch_step: bool,
    /// What the likelihood decided for the prompt's first reply, when the back-end scores.
    likelihood: Option<Likelihood>,
    /// The call `fill_named` built while deciding, for the reply to hold.
    prefilled: Option<Filled>,
    /// The pre-fetch's step holds all the prompt asks for (the time, the listing, a file, a
    /// sum, and no other work): the first reply after it answers, and a call in it is not
    /// made.
    prefetch_answers: bool,
    /// The reply being read follows such a pre-fetch: a call in it is not made, and the
    /// answer is its text or, without one, made from the pre-fetch's results.
    answer_now: bool,
}

/// The most tokens an answer to a prompt the pre-fetch's results answer may take: the time,
/// the listing, a sum or what a file says, told in a few sentences.
const PREFETCH_ANSWER_TOKENS_MAX: usize = 192;

/// The model's calls of a turn by what became of them (`turn.end`). Calls of a last step are
/// in none: the step limit ends the turn before they are made, and its answer step shows
/// none of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CallCounts {
    ran: usize,
    cached: usize,
    refused: usize,
}

impl CallCounts {
    fn add(&mut self, fate: &Fate) {
        match fate {
            Fate::Ran => self.ran += 1,
            Fate::Cached => self.cached += 1,
            Fate::NotRun(_) => self.refused += 1,
        }
    }
}

/// Why the executor did not run a call, as a short phrase for its step: the refusal's own
/// first line (`FAILED: ` and the loop's suffix aside), or the kind of refusal.
fn not_run_reason(outcome: Outcome, text: &str) -> String {
    let said = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.trim_start_matches("FAILED:").trim())
        .filter(|line| !line.is_empty());
    let kind = match outcome {
        Outcome::UnknownTool => "no tool has that name",
        Outcome::NotAllowed => "this agent may not use that tool",
        Outcome::InvalidArguments => "its arguments do not fit the tool",
        Outcome::Denied(imurun_core::DenyReason::User) => "you said no",
        Outcome::Denied(imurun_core::DenyReason::Timeout) => "nobody answered in time",
        Outcome::Denied(imurun_core::DenyReason::Stopped) => "the turn was stopped",
        Outcome::Denied(imurun_core::DenyReason::NoClient) => "nobody was there to approve it",
        Outcome::Denied(imurun_core::DenyReason::Policy) => "the permissions refuse it",
        Outcome::NeedsApproval => "it needs approval",
        Outcome::Ok | Outcome::Failed => "it was refused",
    };
    match said {
        Some(line) if line.chars().count() <= NOT_RUN_REASON_CHARS_MAX => line.to_owned(),
        _ => kind.to_owned(),
    }
}

/// Whether a person turned the call down: a No on the card or the terminal, a card nobody
/// answered in time, or nobody there to ask. The permissions' own refusals and a stopped
/// turn are not hers.
fn declined_by_person(outcome: Outcome) -> bool {
    use imurun_core::DenyReason;
    matches!(
        outcome,
        Outcome::Denied(DenyReason::User | DenyReason::Timeout | DenyReason::NoClient)
    )
}

/// The longest refusal line a step shows as the reason; a longer one is named by its kind.
const NOT_RUN_REASON_CHARS_MAX: usize = 160;

/// A call's result, kept for the rest of the turn.
#[derive(Debug, Clone)]
struct Cached {
    tool: String,
    /// What the model reads (a failure with its suffix).
    text: String,
    ok: bool,
    facts: Option<Facts>,
}

impl Cached {
    fn ground(&self) -> Ground {
        Ground {
            tool: self.tool.clone(),
            text: self.text.clone(),
            ok: self.ok,
            facts: self.facts.clone(),
        }
    }
}

impl<'a> Turn<'a> {
    /// The system message, the history with thoughts stripped, and the prompt.
    pub(crate) fn new(agent: &'a AgentLoop, request: &'a TurnRequest) -> Self {
        let (index, also_connected) = tool_index(agent, request);
        let tools_on = agent.config.max_steps > 1 && index.offered().next().is_some();
        let system = system_message(&SystemPrompt {
            persona: &agent.config.persona,
            today: crate::clock::today(agent.clock.as_ref()),
            tools: tools_on.then_some(index.as_ref()),
            also_connected: also_connected.as_deref(),
            skills: &request.skills,
            context: request.context.as_deref(),
            examples: agent.config.tool_examples,
            question: &request.prompt,
        });
        let shown = match (tools_on && agent.config.tool_examples, index.as_ref()) {
            (true, index) => shown_examples(index, &request.prompt),
            (false, _) => ShownExamples::default(),
        };
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
        messages.push(Message::user(crate::prompt::plain_numbers(&request.prompt)));
        let caller = match &agent.scope {
            None => Caller::model(request.session_id.clone(), request.stop.clone()),
            Some(scope) => Caller::sub_agent(
                request.session_id.clone(),
                scope.depth,
                scope.tools.clone(),
                request.stop.clone(),
            ),
        }
        .with_events(Arc::clone(agent.tool_sink()));
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
            repeat_noted: false,
            tool_calls: Vec::new(),
            counts: CallCounts::default(),
            bound: None,
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
            usage: TokenUsage {
                exact: agent.model.counts_exactly(),
                ..TokenUsage::default()
            },
            grounds: Vec::new(),
            ran: Vec::new(),
            shown,
            identity: agent
                .scope
                .is_none()
                .then(|| Identity::from_persona(&agent.config.persona)),
            held: false,
            prefetch_step: false,
            likelihood: None,
            prefilled: None,
            prefetch_answers: false,
            answer_now: false,
        }
    }

    /// Seeds the turn's cache with the pre-fetch's finished lookups, so a model that calls
    /// the same tool with the same arguments reads that result without a second run (as a
    /// fresh result, not a repeat).
    /// `as_step` (the call and the text of each lookup) is written into the conversation as
    /// a tool step after the prompt.
    pub(crate) fn with_prefetched(
        mut self,
        prefetched: Vec<Prefetched>,
        as_step: Vec<(ToolCall, String)>,
    ) -> Self {
        if !as_step.is_empty() && self.tools_on {
            let calls: Vec<String> = as_step.iter().map(|(call, _)| render_call(call)).collect();
            self.messages.push(Message::assistant(calls.join("\n")));
            for (call, text) in &as_step {
                self.messages.push(Message::user(format!(
                    "{TOOL_RESULT_HEADER}{}]\n{text}",
                    call.name
                )));
            }
            self.prefetch_step = true;
            self.prompt.tool_result_seen = true;
            self.prefetch_answers = as_step.iter().all(|(call, _)| {
                matches!(
                    call.name.as_str(),
                    "get_time" | "list_dir" | "file_read" | "calculate"
                )
            }) && !crate::prefetch::asks_for_more_work(&self.prompt.text);
        }
        for lookup in prefetched {
            let key = cache_key(&lookup.call);
            let cached = Cached {
                tool: lookup.tool,
                text: lookup.text,
                ok: lookup.ok,
                facts: lookup.facts,
            };
            // A lookup the model reads is what its first answer must hold.
            self.ran.push(cached.tool.clone());
            self.grounds.push(cached.ground());
            // Written as a step, the lookup has been read: calling it again is a repeat.
            if !self.prefetch_step {
                self.prefetched.insert(key.clone());
            }
            self.cache.insert(key, cached);
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
            calls_ran: self.counts.ran,
            calls_cached: self.counts.cached,
            calls_refused: self.counts.refused,
            skills: self.skill_ids(),
            steps: self.step,
        });
        TurnResult {
            status,
            answer,
            tool_calls: self.tool_calls,
            lookups: Vec::new(),
            usage: self.usage,
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
            if let Some(Bound::Time(time_max)) = self.bound {
                return self.end_past_time(&parsed, time_max);
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
    pub(crate) async fn plan(mut self) -> Result<(Parsed, Option<Likelihood>), AgentError> {
        let (_, parsed) = self.generate_step(1).await?;
        Ok((parsed, self.likelihood))
    }

    /// Fits the messages to the budget and generates one step: the raw output and its parse.
    async fn generate_step(&mut self, step: usize) -> Result<(String, Parsed), AgentError> {
        let agent = self.agent;
        let count = |messages: &[Message]| agent.model.count_tokens(messages);
        let summaries = Mutex::new(TokenUsage {
            exact: agent.model.counts_exactly(),
            ..TokenUsage::default()
        });
        let summariser = ModelSummariser {
            model: agent.model.as_ref(),
            stop: self.request.stop.clone(),
            usage: &summaries,
        };
        let limit = agent.model.context_limit();
        let session_id = self.request.session_id.as_deref();
        // Counted once the step runs, so `steps` is the steps that reached the model.
        self.step = step;
        self.bound = None;
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
        self.usage = self.usage.plus(
            summaries
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.prompt_index = fitted.prompt_index;
        if !fitted.fits {
            let (tokens, budget) = (fitted.tokens, fitted.budget);
            return Err(AgentError::PromptTooLong { tokens, budget });
        }
        let first = !self.prompt.generated;
        let planned = self.written_change();
        if !planned.is_empty() {
            // The loop writes the plain request's calls; the model answers after them.
            self.prompt.generated = true;
            let raw: String = planned
                .iter()
                .map(render_call)
                .collect::<Vec<_>>()
                .join("\n");
            let parsed = parse_tool_calls(&raw, &self.index);
            return Ok((raw, parsed));
        }
        let mut prefill = self.call_prefill().map(str::to_owned);
        // The prompt's first reply keeps its calls to the tools the prompt names.
        let calls = (first && self.tools_on && !self.prefetch_step)
            .then(|| crate::tool_match::call_shape(self.prompt_text(), &self.index))
            .flatten();
        self.answer_now = first && self.prefetch_step && self.prefetch_answers;
        let mut answer_only = false;
        if first
            && self.tools_on
            && !self.prefetch_step
            && agent.config.call_prefill != CallPrefill::Off
            && agent.config.likelihood
            && agent.model.supports_prefill()
            && agent.model.supports_scoring()
        {
            let forced = prefill.is_some();
            // A greeting or a question about the assistant is answered: no tool is about it.
            let about_itself = self.identity.is_some() && asks_who(self.prompt_text());
            let mut decided = if about_itself && !forced {
                Likelihood::answer()
            } else {
                self.decide_by_likelihood(forced, calls.as_ref()).await?
            };
            // Short of the margin, a call whose every required value the question names is
            // still the one it asks for.
            if !forced && !decided.call && decided.margin >= NAMED_CALL_MARGIN_MIN {
                match self.fill_named(&decided).await? {
                    Some(filled) if filled.names_every_value() => {
                        self.prefilled = Some(filled);
                        decided.call = true;
                        decided.features.push(("named_call".to_owned(), 1.0));
                    }
                    // A question that raises the tool at all and holds every required value
                    // of it, each likely enough, asks for that call too.
                    Some(filled)
                        if decided.margin >= STANDING_CALL_MARGIN_MIN && filled.stands_alone() =>
                    {
                        self.prefilled = Some(filled);
                        decided.call = true;
                        decided.features.push(("standing_call".to_owned(), 1.0));
                    }
                    // The figures of the call not made, for the decision's record.
                    Some(filled) => decided.features.extend(filled.features),
                    None => {}
                }
            }
            if let Some((tool, _)) = decided.tools.first().filter(|_| decided.call) {
                prefill = Some(call_opening(tool));
            } else if !forced {
                answer_only = true;
            }
            self.likelihood = Some(decided);
        }
        self.prompt.generated = true;
        // An answer that will be checked is not streamed until it holds.
        self.held = !self.grounds.is_empty()
            || self.prompt.grounding_retried
            || (self.identity.is_some() && asks_who(self.prompt_text()));
        // A reply the loop started as a call is not an answer: nothing is held for checking.
        if self.held && prefill.is_none() {
            let mut tools: Vec<String> = Vec::new();
            for ground in &self.grounds {
                if !tools.contains(&ground.tool) {
                    tools.push(ground.tool.clone());
                }
            }
            agent.events.publish(Event::Checking {
                session_id: self.request.session_id.clone(),
                step,
                tools,
            });
        }
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
                .map_or(reserve(limit), |tokens| tokens.min(reserve(limit)))
                .min(if self.answer_now {
                    PREFETCH_ANSWER_TOKENS_MAX
                } else {
                    usize::MAX
                }),
            prefill,
            calls,
            hold: self.held,
            time_max: agent.config.step_time_max,
            answer_only: self.answer_now,
        };
        let filled = match self.prefilled.take() {
            Some(filled) => Some(filled),
            None => self.fill_by_likelihood(generation.calls.as_ref()).await?,
        };
        let (raw, mut parsed) = if let Some(filled) = filled {
            self.usage = self.usage.plus(filled.usage);
            if let Some(decided) = self.likelihood.as_mut() {
                decided.features.extend(filled.features);
            }
            let parsed = parse_tool_calls(&filled.raw, &self.index);
            (filled.raw, parsed)
        } else {
            let Reply {
                raw,
                parsed,
                usage,
                bound,
            } = generate(&generation, &self.messages)
                .await
                .map_err(AgentError::from)?;
            self.usage = self.usage.plus(usage);
            self.bound = bound;
            (raw, parsed)
        };
        if answer_only && parsed.kind == ParseKind::Calls {
            // The likelihood said answer: a call the model wrote anyway is not made.
            parsed.calls.clear();
            parsed.kind = ParseKind::Answer;
        }
        // Rules for the prompt's first reply only: later replies may use what results said.
        if first {
            let said_text = self.said();
            let said = Said::new(&said_text);
            for call in &mut parsed.calls {
                if let Some(tool) = self.index.get(&call.name) {
                    crate::unsaid::drop_unsaid_optionals(call, &tool.spec, &said);
                    crate::rates::percent_rates_as_fractions(call, &tool.spec, &said_text);
                }
                crate::repeats::collapse_repeated_items(call);
            }
            self.drop_unrelated_calls(&mut parsed, &said);
        }
        Ok((raw, parsed))
    }

    /// Call or answer, and which tool, by the model's likelihood (`likely`): the tools are
    /// ranked by how likely the model names each in a call (the call shape's when the prompt
    /// names some, else those on offer; a call no rule started may not name a built-in tool
    /// that writes, deletes or runs), and the reply is a call when a rule already started one
    /// (`forced`) or the best tool's margin reaches `CALL_MARGIN_MIN`.
    async fn decide_by_likelihood(
        &self,
        forced: bool,
        shape: Option<&imurun_core::CallShape>,
    ) -> Result<Likelihood, AgentError> {
        let model = self.agent.model.as_ref();
        let stop = &self.request.stop;
        let candidates = self.likely_candidates(forced, shape);
        if candidates.is_empty() {
            return Ok(Likelihood::answer());
        }
        let tools = rank_tools(model, &self.messages, &candidates, stop).await?;
        let (best, named) = tools[0].clone();
        let blank = call_margin_blank(model, &self.messages, &best, stop).await?;
        let margin = named - blank;
        let features = vec![
            ("tool".to_owned(), named),
            ("tool_blank".to_owned(), blank),
            ("rules".to_owned(), if forced { 1.0 } else { 0.0 }),
        ];
        Ok(Likelihood {
            margin,
            call: forced || margin >= CALL_MARGIN_MIN,
            tools,
            features,
        })
    }

    /// The tools a likelihood decision ranks: the call shape's when the prompt names some,
    /// else those on offer; a call no rule started may not name a built-in tool that writes,
    /// deletes or runs.
    fn likely_candidates(
        &self,
        forced: bool,
        shape: Option<&imurun_core::CallShape>,
    ) -> Vec<String> {
        let registry = self.agent.executor.registry();
        let may_start = |name: &String| {
            forced
                || !imurun_core::builtin::is_builtin(name)
                || registry.get(name).is_none_or(|tool| {
                    !matches!(
                        tool.category(),
                        ToolCategory::Write
                            | ToolCategory::Delete
                            | ToolCategory::Shell
                            | ToolCategory::Agent
                    )
                })
        };
        match shape {
            Some(shape) if !shape.tools.is_empty() => shape.tools.clone(),
            _ => self
                .index
                .offered()
                .map(|tool| tool.spec.name.clone())
                .collect(),
        }
        .into_iter()
        .filter(may_start)
        .collect()
    }

    /// The calls for a question that makes several requests (`stated::requests`: its
    /// sentences, its clauses after "also", "then", ", and" or an "and" before what a tool
    /// does, its questions after a comma), each decided and filled by likelihood as a question of its own, among the tools
    /// it names or describes when it does (`tool_match::call_shape`): the reply holds
    /// them when two or more requests are each a call (margin at least `CALL_MARGIN_MIN`) to
    /// a tool not imurun's own whose required values all come from the request
    /// (`Filled::stands_alone`), or, for a request that states none of its own ("and the
    /// distance covered"), all named by the whole question (`Filled::names_every_value`) for
    /// a tool no other request calls; `None` otherwise.
    async fn fill_requests(&self) -> Result<Option<Filled>, AgentError> {
        let model = self.agent.model.as_ref();
        let stop = &self.request.stop;
        // Every offered tool: a shape the whole question was read into may name only the
        // tool of one of its requests.
        let candidates: Vec<String> = self
            .likely_candidates(false, None)
            .into_iter()
            .filter(|name| !imurun_core::builtin::is_builtin(name))
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        let names: Vec<&str> = candidates.iter().map(String::as_str).collect();
        let requests = crate::stated::requests(self.prompt_text(), &names);
        if requests.len() < 2 {
            return Ok(None);
        }
        let mut raws: Vec<String> = Vec::new();
        // The tool of each request whose call stands on its own values.
        let mut own_tools: Vec<String> = Vec::new();
        // The requests whose values are the question's ("and the distance covered", "for
        // the same years"): each request's tool and its call from the whole question.
        let mut borrowing: Vec<(String, Filled)> = Vec::new();
        let mut usage = TokenUsage {
            exact: model.counts_exactly(),
            ..TokenUsage::default()
        };
        for request in &requests {
            let mut messages = self.messages.clone();
            if let Some(prompt) = messages.get_mut(self.prompt_index) {
                prompt.content.clone_from(request);
            }
            let offered = crate::tool_match::tools_for(request, &self.index, &candidates);
            let tools = rank_tools(model, &messages, &offered, stop).await?;
            let Some((best, named)) = tools.first().cloned() else {
                continue;
            };
            let blank = call_margin_blank(model, &messages, &best, stop).await?;
            let Some(tool) = self.index.get(&best) else {
                continue;
            };
            if named - blank < CALL_MARGIN_MIN {
                continue;
            }
            let filler = Filler {
                model,
                messages: &messages,
                stop,
                index: &self.index,
                question: request,
                again: false,
            };
            let filled = filler.fill(&tool.spec).await?;
            usage = usage.plus(filled.usage);
            if filled.stands_alone() {
                own_tools.push(best);
                if !raws.contains(&filled.raw) {
                    raws.push(filled.raw);
                }
                continue;
            }
            let whole = self.prompt_filler(false).fill(&tool.spec).await?;
            usage = usage.plus(whole.usage);
            if whole.names_every_value() {
                borrowing.push((best, whole));
            }
        }
        // A request that borrows the question's values is another tool's call: the same
        // tool again would be the other request's call with other values.
        for (tool, filled) in borrowing {
            if own_tools.contains(&tool) || raws.contains(&filled.raw) {
                continue;
            }
            own_tools.push(tool);
            raws.push(filled.raw);
        }
        if raws.len() < 2 {
            return Ok(None);
        }
        #[allow(clippy::cast_precision_loss)]
        let features = vec![("requests".to_owned(), raws.len() as f64)];
        Ok(Some(Filled {
            raw: raws.join("\n\n"),
            usage,
            features,
        }))
    }

    /// The call to the likeliest tool, when that tool is not imurun's own; `None` otherwise.
    /// It is made when the question names every required value of it
    /// (`Filled::names_every_value`).
    async fn fill_named(&self, decided: &Likelihood) -> Result<Option<Filled>, AgentError> {
        let Some(tool) = decided
            .tools
            .first()
            .filter(|(name, _)| !imurun_core::builtin::is_builtin(name))
            .and_then(|(name, _)| self.index.get(name))
        else {
            return Ok(None);
        };
        Ok(Some(self.prompt_filler(false).fill(&tool.spec).await?))
    }

    /// A `Filler` of calls for the prompt; `again` as `Filler::again`.
    fn prompt_filler(&self, again: bool) -> Filler<'_> {
        Filler {
            model: self.agent.model.as_ref(),
            messages: &self.messages,
            stop: &self.request.stop,
            index: &self.index,
            question: self.prompt_text(),
            again,
        }
    }

    /// The call the likelihood chose, its required arguments filled by likelihood too
    /// (`likely::Filler`), when it chose one; `None` leaves the reply to the model (with the
    /// call's opening as its prefill). A reply that must hold several calls is left to the
    /// model after its opening.
    async fn fill_by_likelihood(
        &self,
        shape: Option<&imurun_core::CallShape>,
    ) -> Result<Option<Filled>, AgentError> {
        let Some(decided) = self.likelihood.as_ref().filter(|decided| decided.call) else {
            return Ok(None);
        };
        if let Some(several) = self.fill_requests().await? {
            return Ok(Some(several));
        }
        if shape.is_some_and(|shape| shape.calls_min >= 2) {
            return Ok(None);
        }
        let Some(tool) = decided
            .tools
            .first()
            .and_then(|(name, _)| self.index.get(name))
        else {
            return Ok(None);
        };
        Ok(Some(self.prompt_filler(true).fill(&tool.spec).await?))
    }

    /// The start of the reply the loop writes for the model, per `AgentConfig::call_prefill`:
    /// only for a prompt's first generation, with tools on offer, on a back-end that can
    /// continue a started reply.
    fn call_prefill(&self) -> Option<&'static str> {
        // Without a Context block (`AgentLoop::run` holds the pre-fetch's back for a started
        // call), the call is answered from the pre-fetch's lookup when it is the same call.
        if self.prefetch_step {
            return None;
        }
        let wanted = self.agent.config.call_prefill.applies(self.rules_call());
        (wanted && self.tools_on && !self.prompt.generated && self.agent.model.supports_prefill())
            .then_some(CALL_PREFILL)
    }

    /// Whether the loop's rules start this prompt's reply as a call (`CallPrefill::Live`): a
    /// prompt about the present with a tool for it, a plain change request, a named tool.
    fn rules_call(&self) -> bool {
        (self.prompt.realtime
            && self.request.context.is_none()
            && crate::tool_match::offers_a_live_tool(&self.index))
            || crate::prefetch::asks_for_a_change(self.prompt_text())
            || crate::tool_match::names_an_offered_tool(self.prompt_text(), &self.index)
    }

    /// The prompt's first reply loses its calls that have nothing of the question in them
    /// (`tool_match::unrelated_call`); with none left it is read as an answer (the text before
    /// the call; when that is empty the model is told once why nothing ran).
    fn drop_unrelated_calls(&mut self, parsed: &mut Parsed, said: &Said) {
        let question = self.prompt_text();
        let seen: Vec<&str> = self
            .request
            .context
            .iter()
            .map(String::as_str)
            .chain(
                self.messages
                    .iter()
                    .filter(|message| message.role != Role::System)
                    .map(|message| message.content.as_str()),
            )
            .collect();
        let seen = Said::new(&seen.join("\n"));
        let before = parsed.calls.len();
        let mut dropped = None;
        parsed.calls.retain(|call| {
            let keep = self.index.get(&call.name).is_none_or(|tool| {
                !crate::tool_match::unrelated_call(question, call, tool, said, &seen)
            });
            if !keep && dropped.is_none() {
                dropped = Some(call.name.clone());
            }
            keep
        });
        if before > 0 && parsed.calls.is_empty() {
            self.prompt.unrelated = Some(dropped.unwrap_or_default());
            parsed.kind = ParseKind::Answer;
            parsed.retry = None;
            parsed.retry_reason = None;
        }
    }

    /// The call of a plain change request ("Delete notes.txt"), written by the loop for the
    /// prompt's first step when its tool is offered and the call prefill is not off.
    fn written_change(&self) -> Vec<ToolCall> {
        let due = !self.prompt.generated
            && !self.prefetch_step
            && self.tools_on
            && self.agent.config.call_prefill.applies(true);
        if !due {
            return Vec::new();
        }
        let calls = crate::change::planned_calls(&self.prompt.text);
        let offered = |name: &str| self.index.offered().any(|tool| tool.spec.name == name);
        if calls.iter().all(|call| offered(&call.name)) {
            calls
        } else {
            Vec::new()
        }
    }

    fn fail(&mut self, error: AgentError) -> (TurnStatus, String) {
        self.error = Some(error);
        (TurnStatus::Error, String::new())
    }

    async fn decide(&mut self, raw: &str, parsed: Parsed, last: bool) -> Next {
        let answer_now = std::mem::take(&mut self.answer_now);
        self.prompt.prefetch_answered = answer_now;
        if answer_now && parsed.kind != ParseKind::Answer {
            let visible = parsed.visible.trim();
            let answer = if visible.is_empty() {
                self.answer_from_results("", "the pre-fetch's results answer the question", None)
            } else {
                visible.to_owned()
            };
            return self.settle(answer, &parsed.thought, last);
        }
        match parsed.kind {
            ParseKind::Calls if last => self.end_at_limit(&parsed),
            ParseKind::Calls if self.repeat_noted && self.only_repeats(&parsed) => {
                self.end_repeating(&parsed)
            }
            ParseKind::Calls => match self.run_calls(&parsed).await {
                // A stop denies the card it interrupts: the turn was stopped, not declined.
                Some(_) if self.request.stop.is_stopped() => {
                    Next::End(TurnStatus::Stopped, String::new())
                }
                Some(declined) => self.end_declined(&declined),
                None => Next::Continue,
            },
            ParseKind::Retry => self.retry(raw, &parsed, last),
            ParseKind::Answer => self.answer(&parsed, last),
        }
    }

    /// The last step asked for a tool: it does not run. The answer is the text before the
    /// call, or the step-limit sentence.
    /// When results with facts stand, the text is checked like an answer, and the answer is
    /// made from the results when it fails or there is none.
    fn end_at_limit(&mut self, parsed: &Parsed) -> Next {
        let visible = parsed.visible.trim();
        let grounded = self
            .grounds
            .iter()
            .any(|ground| ground.ok && ground.facts.is_some());
        let answer = if grounded {
            self.answer_from_results(visible, "the step limit came before an answer", None)
        } else if visible.is_empty() {
            STEP_LIMIT_SENTENCE.to_owned()
        } else {
            visible.to_owned()
        };
        if self.held || grounded {
            self.publish_token(&answer);
        }
        self.publish_step(StepKind::Answer, step_text(&parsed.thought, &answer, &[]));
        Next::End(TurnStatus::MaxSteps, answer)
    }

    /// A step ran past its time bound: nothing of it runs, and the turn ends with a sentence
    /// saying so, after the answer's streamed start when one was shown (a held answer was
    /// not, and is not shown now: it was never checked).
    fn end_past_time(
        &mut self,
        parsed: &Parsed,
        time_max: std::time::Duration,
    ) -> (TurnStatus, String) {
        let sentence = STEP_TIME_SENTENCE.replace("{seconds}", &time_max.as_secs().to_string());
        let shown = parsed.visible.trim();
        let answer = if parsed.kind == ParseKind::Answer && !self.held && !shown.is_empty() {
            self.publish_token(&format!("\n\n{sentence}"));
            format!("{shown}\n\n{sentence}")
        } else {
            self.publish_token(&sentence);
            sentence
        };
        self.publish_step(StepKind::Answer, step_text(&parsed.thought, &answer, &[]));
        (TurnStatus::Stopped, answer)
    }

    /// The answer when the model will not write one: `visible` (its text beside a call) when
    /// it holds what the results said, else a plain sentence made from the results
    /// (published as a grounded fallback, for `reason`).
    /// `tool` names the result the answer is about when no result stands (a refused call).
    fn answer_from_results(&mut self, visible: &str, reason: &str, tool: Option<&str>) -> String {
        let said = self.said();
        let grounds = self.grounds_with(&said);
        let verdict = if visible.is_empty() {
            Verdict::Fails(Problem {
                tool: self
                    .grounds
                    .first()
                    .map(|ground| ground.tool.as_str())
                    .or(tool)
                    .map(str::to_owned),
                reason: reason.to_owned(),
                correction: String::new(),
            })
        } else {
            check(visible, &grounds)
        };
        match verdict {
            Verdict::Holds(cleaned) => cleaned,
            Verdict::Fails(problem) => {
                let made = fallback(&problem, &grounds);
                self.publish_grounding(GroundingAction::Fallback, &problem);
                made
            }
        }
    }

    /// A step that only repeats calls already answered, after the loop has once told the
    /// model so: it will not read the results, so the answer is made from them.
    fn end_repeating(&mut self, parsed: &Parsed) -> Next {
        let answer = self.answer_from_results(
            parsed.visible.trim(),
            "the model repeated a call whose result it already had",
            parsed.calls.first().map(|call| call.name.as_str()),
        );
        self.publish_token(&answer);
        self.publish_step(StepKind::Answer, step_text(&parsed.thought, &answer, &[]));
        Next::End(TurnStatus::Done, answer)
    }

    /// Up to `CALLS_PER_STEP_MAX` calls: the assistant's call in canonical form (anything
    /// after it dropped), then one `[tool result: name]` user message per call. The step is
    /// published once its calls ended, each shown with what became of it (`Fate`).
    /// A call a person declined stops the step: the calls after it are not made, and the
    /// declined tool's name is returned, for the turn to end there.
    async fn run_calls(&mut self, parsed: &Parsed) -> Option<String> {
        let calls = &parsed.calls[..parsed.calls.len().min(CALLS_PER_STEP_MAX)];
        let mut assistant: Vec<String> = Vec::new();
        if !parsed.visible.trim().is_empty() {
            assistant.push(parsed.visible.trim().to_owned());
        }
        assistant.extend(calls.iter().map(render_call));
        self.messages.push(Message::assistant(assistant.join("\n")));
        let mut repeats = 0;
        let mut grounds = Vec::with_capacity(calls.len());
        let mut fates = Vec::with_capacity(calls.len());
        let mut declined: Option<String> = None;
        for call in calls {
            if declined.is_some() {
                self.tool_calls.push(call.clone());
                let fate = Fate::NotRun(AFTER_DECLINE_REASON.to_owned());
                self.counts.add(&fate);
                fates.push((call, fate));
                continue;
            }
            let checked = self.without_example_values(call);
            let refused = checked.is_err();
            let (result, cached, fate) = match checked {
                Ok(call) => {
                    let (result, cached, fate, by_person) = self.call(&call).await;
                    if by_person {
                        declined = Some(result.tool.clone());
                    }
                    (result, cached, fate)
                }
                Err(refusal) => {
                    // Kept like a result, so that asking again counts as a repeat.
                    self.tool_calls.push(call.clone());
                    let repeated = self
                        .cache
                        .insert(cache_key(call), (*refusal).clone())
                        .is_some();
                    let fate = if repeated {
                        Fate::Cached
                    } else {
                        Fate::NotRun(EXAMPLE_VALUE_REASON.to_owned())
                    };
                    (*refusal, repeated, fate)
                }
            };
            self.counts.add(&fate);
            fates.push((call, fate));
            repeats += usize::from(cached);
            if !self.ran.contains(&result.tool) {
                self.ran.push(result.tool.clone());
            }
            // A refused call ran nothing: there is no result of it to answer from.
            if !refused {
                grounds.push(result.ground());
            }
            let message = format!("{TOOL_RESULT_HEADER}{}]\n{}", result.tool, result.text);
            self.messages.push(Message::user(message));
        }
        self.publish_step(
            StepKind::Tool,
            step_text(&parsed.thought, &parsed.visible, &fates),
        );
        if declined.is_some() {
            return declined;
        }
        // A step whose calls all failed adds nothing to answer from: the earlier results
        // (the pre-fetch's) still stand.
        if self.grounds.is_empty() || grounds.iter().any(|ground| ground.ok) {
            self.grounds = grounds;
        }
        let mut notes = Vec::new();
        if parsed.calls.len() > CALLS_PER_STEP_MAX {
            notes.push(CALLS_DROPPED_NOTE);
        }
        if repeats == calls.len() {
            notes.push(REPEATED_CALL_NOTE);
            self.repeat_noted = true;
        }
        if let Some(last) = self.messages.last_mut() {
            for note in notes {
                last.content.push_str("\n\n");
                last.content.push_str(note);
            }
        }
        self.tools_used = true;
        self.prompt.tool_result_seen = true;
        None
    }

    /// A person declined a call of the step: the turn ends with a sentence saying so, made
    /// by the loop. The model is not asked again: what it would do next is what she just
    /// turned down, or work she did not ask for after a No.
    fn end_declined(&mut self, tool: &str) -> Next {
        let sentence = if self.counts.ran == 0 {
            DECLINED_SENTENCE
        } else {
            DECLINED_AFTER_WORK_SENTENCE
        };
        let answer = sentence.replace("{tool}", &format!("`{tool}`"));
        self.publish_token(&answer);
        self.publish_step(StepKind::Answer, step_text("", &answer, &[]));
        Next::End(TurnStatus::Done, answer)
    }

    /// Whether every call of the step (as it would run) already ran in this turn and was
    /// read by the model.
    fn only_repeats(&self, parsed: &Parsed) -> bool {
        let calls = &parsed.calls[..parsed.calls.len().min(CALLS_PER_STEP_MAX)];
        calls.iter().all(|call| {
            let key = cache_key(call);
            self.cache.contains_key(&key) && !self.prefetched.contains(&key)
        })
    }

    /// One call through the executor, or from the turn's cache when the same call (name
    /// and arguments) already ran. Returns the result, whether it counts as a repeat, what
    /// became of the call, and whether a person declined it.
    async fn call(&mut self, call: &ToolCall) -> (Cached, bool, Fate, bool) {
        self.tool_calls.push(call.clone());
        let key = cache_key(call);
        if let Some(cached) = self.cache.get(&key) {
            let repeated = !self.prefetched.remove(&key);
            return (cached.clone(), repeated, Fate::Cached, false);
        }
        let execution = self.agent.executor.execute(call, &self.caller).await;
        let by_person = declined_by_person(execution.outcome);
        let output = execution.output;
        let fate = match execution.outcome {
            Outcome::Ok | Outcome::Failed => Fate::Ran,
            refused => Fate::NotRun(not_run_reason(refused, &output.text)),
        };
        let cached = Cached {
            tool: execution.tool,
            text: if output.ok {
                output.text
            } else {
                with_failed_suffix(&output.text)
            },
            ok: output.ok,
            facts: output.facts,
        };
        self.cache.insert(key, cached.clone());
        (cached, false, fate, by_person)
    }

    /// A call holding a worked example's argument value the person never gave is refused
    /// with a result that says so, and nothing runs: a small model copies an example's
    /// `example.txt` into "Read groceries.txt".
    fn without_example_values(&self, call: &ToolCall) -> Result<ToolCall, Box<Cached>> {
        let said = crate::ground::normalise(&self.said());
        let copied = call.args.iter().find_map(|(key, value)| {
            let value = value.as_str()?.trim();
            let shown = self.shown.args.iter().any(|(tool, shown_key, shown)| {
                *tool == call.name && shown_key == key && shown.eq_ignore_ascii_case(value)
            });
            (shown && !crate::ground::has_form(&said, value)).then_some((key, value))
        });
        let Some((key, value)) = copied else {
            return Ok(call.clone());
        };
        Err(Box::new(Cached {
            tool: call.name.clone(),
            text: with_failed_suffix(&format!(
                "FAILED: `{key}` \"{value}\" comes from the worked example, not from this \
                 conversation; nothing ran. Use what the person said, or ask them."
            )),
            ok: false,
            facts: None,
        }))
    }

    /// The prompt being answered.
    fn prompt_text(&self) -> &str {
        self.messages
            .get(self.prompt_index)
            .map_or("", |message| message.content.as_str())
    }

    /// What the person said: the prompt and the history's user messages (not tool results
    /// or notes), where their own values are.
    /// What an answer is checked against: the results, the calls that ran, what the person
    /// said (`said`, from [`Self::said`]), the example values shown and who the assistant is.
    fn grounds_with<'g>(&'g self, said: &'g str) -> Grounds<'g> {
        Grounds {
            results: &self.grounds,
            ran: &self.ran,
            said,
            example_values: &self.shown.values,
            identity: self.identity.as_ref(),
        }
    }

    fn said(&self) -> String {
        let mut said: Vec<&str> = self
            .messages
            .iter()
            .filter(|message| message.role == Role::User)
            .map(|message| message.content.as_str())
            .filter(|text| !text.starts_with(TOOL_RESULT_HEADER) && !text.starts_with("[note]"))
            .collect();
        said.push(&self.request.prompt);
        said.join("\n")
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
            return self.settle(plain, &parsed.thought, last);
        }
        self.prompt.retried = true;
        self.nudge(&parsed.thought, &plain, &message, StepKind::Retry)
    }

    /// An answer: the thought nudge when there is only a thought, the realtime nudge when a
    /// live-data question got no tool result and no admission, else the end of the prompt.
    fn answer(&mut self, parsed: &Parsed, last: bool) -> Next {
        let visible = parsed.visible.trim();
        if visible.is_empty()
            && !last
            && !self.prompt.thought_nudged
            && let Some(tool) = self.prompt.unrelated.take()
        {
            self.prompt.thought_nudged = true;
            let message = UNRELATED_CALL_NUDGE.replace("{tool}", &tool);
            return self.nudge(&parsed.thought, "", &message, StepKind::Nudge);
        }
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
        self.settle(visible.to_owned(), &parsed.thought, last)
    }

    /// An answer is checked against what the tools returned before it ends the prompt
    /// (`ground`): one that fails is sent back once with a correction that quotes the
    /// result, then made from the result itself. The rejected answer is never the answer.
    fn settle(&mut self, answer: String, thought: &str, last: bool) -> Next {
        if let Some(made) = self.file_answer(&answer) {
            self.publish_step(StepKind::Correction, step_text(thought, &answer, &[]));
            self.agent.events.publish(Event::Grounding {
                session_id: self.request.session_id.clone(),
                step: self.step,
                action: GroundingAction::Extract,
                tool: Some("file_read".to_owned()),
                reason: made.reason,
            });
            self.publish_token(&made.text);
            return self.deliver_or_end(made.text, "", last);
        }
        let said = self.said();
        let grounds = self.grounds_with(&said);
        let problem = match check(&answer, &grounds) {
            Verdict::Holds(mut cleaned) => {
                if self.held {
                    self.publish_token(&cleaned);
                }
                // The model's own answer, cut by the step's token bound: it says so.
                if let Some(Bound::Tokens(tokens)) = self.bound.take() {
                    let note = STEP_TOKENS_NOTE.replace("{tokens}", &tokens.to_string());
                    self.publish_token(&format!("\n\n{note}"));
                    cleaned = format!("{}\n\n{note}", cleaned.trim_end());
                }
                return self.deliver_or_end(cleaned, thought, last);
            }
            Verdict::Fails(problem) => problem,
        };
        let made = fallback(&problem, &grounds);
        self.publish_step(StepKind::Correction, step_text(thought, &answer, &[]));
        if !self.prompt.grounding_retried && !self.prompt.prefetch_answered && !last {
            self.prompt.grounding_retried = true;
            self.publish_grounding(GroundingAction::Retry, &problem);
            self.messages.push(Message::assistant(answer));
            self.messages.push(Message::user(problem.correction));
            return Next::Continue;
        }
        self.publish_grounding(GroundingAction::Fallback, &problem);
        self.publish_token(&made);
        self.deliver_or_end(made, "", last)
    }

    /// The answer made from a file the turn read and the prompt names, when it must stand
    /// in for `answer` (`file_answer`: a count, or an answer not made of the file).
    fn file_answer(&self, answer: &str) -> Option<crate::file_answer::FileAnswer> {
        let prompt = &self.prompt.text;
        self.grounds
            .iter()
            .filter(|ground| ground.tool == "file_read" && ground.ok)
            .find_map(|ground| {
                let name = crate::file_answer::read_name(&ground.facts.as_ref()?.sentence)?;
                if !crate::file_answer::names_file(prompt, name) {
                    return None;
                }
                crate::file_answer::from_file(prompt, name, &ground.text, answer)
            })
    }

    fn publish_grounding(&self, action: GroundingAction, problem: &Problem) {
        self.agent.events.publish(Event::Grounding {
            session_id: self.request.session_id.clone(),
            step: self.step,
            action,
            tool: problem.tool.clone(),
            reason: problem.reason.clone(),
        });
    }

    /// The checked answer as one `token` event, when the step's stream was held back.
    fn publish_token(&self, text: &str) {
        if !text.is_empty() {
            self.agent.events.publish(Event::Token {
                session_id: self.request.session_id.clone(),
                step: self.step,
                text: text.to_owned(),
            });
        }
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
        // The pre-fetch looked up what the first prompt asked, not this one.
        self.prefetch_step = false;
        self.prefetch_answers = false;
        self.grounds.clear();
        self.ran.clear();
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

/// Whether a turn for `request` offers the model tools (and so a tool prompt).
pub(crate) fn offers_tools(agent: &AgentLoop, request: &TurnRequest) -> bool {
    agent.config.max_steps > 1 && tool_index(agent, request).0.offered().next().is_some()
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
        if !registry.has_groups() {
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
