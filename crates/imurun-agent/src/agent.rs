//! `AgentLoop`: one per model and tool set; `run` plays one turn — from the prompt to the
//! answer — and reports how it ended.

use std::sync::Arc;
use std::time::Duration;

use imurun_calls::Parsed;
use imurun_core::TokenUsage;
use imurun_core::{EventSink, Message, Model, StopFlag, ToolCall, TurnStatus};
use imurun_exec::ToolExecutor;

use crate::AgentError;
use crate::prefetch::{PREFETCH_DEADLINE, observe_full};
use crate::prompt::Skill;
use crate::queue::PromptQueue;
use crate::style::DEFAULT_PERSONA;
use crate::turn::Turn;
use imurun_core::{Clock, SystemClock};

/// Steps per turn when nothing else is set.
pub const MAX_STEPS_DEFAULT: usize = 6;

/// The most steps a turn may have, whatever the setting says.
pub const MAX_STEPS_CAP: usize = 20;

/// History messages that go into a turn, newest last.
pub const HISTORY_MESSAGES_MAX: usize = 6;

/// Tool calls run per step; more are dropped with a note to the model.
pub const CALLS_PER_STEP_MAX: usize = 3;

/// The longest one step generates for by default: the default model writes a full reply
/// reserve (1024 tokens) in well under a minute on two cores, so a step past two minutes is
/// stuck, not slow.
pub const STEP_TIME_MAX_DEFAULT: Duration = Duration::from_secs(120);

/// How the loop behaves; the binary fills it from settings (`agent.maxSteps`,
/// `IMURUN_MAX_STEPS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// 1..=`MAX_STEPS_CAP`; 1 turns model tool calling off.
    pub max_steps: usize,
    pub persona: String,
    /// Over budget, summarise history with the raw model (true) or drop it (false). Dropping
    /// costs no generation, which matters on slow back-ends.
    pub summarise_history: bool,
    /// When the loop starts the model's reply with the call marker itself.
    pub call_prefill: CallPrefill,
    /// Whether the tool prompt carries its two worked examples (they cost about 150 tokens
    /// and are what makes a small model call at all).
    pub tool_examples: bool,
    /// The most tokens one step generates; `None`: the reply reserve of the context budget
    /// (1024 tokens for most windows). Evaluations lower it: a call is short, and a small
    /// model that answers in prose instead may ramble to the limit.
    pub step_tokens_max: Option<usize>,
    /// The longest one step may generate for (`STEP_TIME_MAX_DEFAULT`): a step that reaches
    /// it is stopped and ends the turn with a sentence saying so.
    pub step_time_max: Duration,
    /// Whether the pre-fetch looks up what a prompt plainly asks about the present (the
    /// time, the weather, a web search) before the model reads it. Sub-agents and
    /// evaluations run without it.
    pub prefetch: bool,
    /// Whether a back-end that scores ([`Model::supports_scoring`]) decides the first reply's
    /// call or answer, its tool and its values by likelihood (`docs/agent-loop.md`,
    /// "Decisions by likelihood").
    pub likelihood: bool,
}

/// When the loop starts a reply with the call marker (```` ```tool ````), so the model only
/// has to finish a call. Small models often answer from memory where a tool is needed; a
/// started call (with the embedded back-end's call grammar) always ends as a valid one. It
/// applies to the first generation for each prompt, only while tools are on offer and only
/// with back-ends that can continue a started reply ([`Model::supports_prefill`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallPrefill {
    /// Never: the model decides alone (the seed's behaviour).
    Off,
    /// When the prompt asks about the present (`is_realtime`) and no pre-fetched Context
    /// answers it: those prompts need a tool, and small models answer them from memory.
    #[default]
    Live,
    /// Always: every prompt's first reply is a call (evaluations of calling skill).
    Always,
}

impl CallPrefill {
    /// Whether this policy starts a reply with a call, for a prompt that is `live` (about the
    /// present, with no Context block that answers it).
    pub fn applies(self, live: bool) -> bool {
        match self {
            Self::Off => false,
            Self::Live => live,
            Self::Always => true,
        }
    }

    /// `off`, `live` or `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Live => "live",
            Self::Always => "always",
        }
    }
}

impl std::str::FromStr for CallPrefill {
    type Err = String;

    /// `off`, `live` or `always`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "off" => Ok(Self::Off),
            "live" => Ok(Self::Live),
            "always" => Ok(Self::Always),
            other => Err(format!(
                "unknown call prefill `{other}`: expected off, live or always"
            )),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_steps: MAX_STEPS_DEFAULT,
            persona: DEFAULT_PERSONA.to_owned(),
            summarise_history: true,
            call_prefill: CallPrefill::default(),
            tool_examples: true,
            step_tokens_max: None,
            step_time_max: STEP_TIME_MAX_DEFAULT,
            prefetch: true,
            likelihood: true,
        }
    }
}

impl AgentConfig {
    /// `max_steps` clamped to 1..=`MAX_STEPS_CAP`.
    pub fn with_max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps.clamp(1, MAX_STEPS_CAP);
        self
    }

    pub fn with_persona(mut self, persona: impl Into<String>) -> Self {
        self.persona = persona.into();
        self
    }

    pub fn with_summarise_history(mut self, summarise_history: bool) -> Self {
        self.summarise_history = summarise_history;
        self
    }

    /// At least 1.
    pub fn with_step_tokens_max(mut self, step_tokens_max: Option<usize>) -> Self {
        self.step_tokens_max = step_tokens_max.map(|tokens| tokens.max(1));
        self
    }

    /// At least one second.
    pub fn with_step_time_max(mut self, step_time_max: Duration) -> Self {
        self.step_time_max = step_time_max.max(Duration::from_secs(1));
        self
    }

    pub fn with_tool_examples(mut self, tool_examples: bool) -> Self {
        self.tool_examples = tool_examples;
        self
    }

    pub fn with_prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = prefetch;
        self
    }

    pub fn with_likelihood(mut self, likelihood: bool) -> Self {
        self.likelihood = likelihood;
        self
    }

    pub fn with_call_prefill(mut self, call_prefill: CallPrefill) -> Self {
        self.call_prefill = call_prefill;
        self
    }
}

/// One turn's input.
#[derive(Debug, Clone, Default)]
pub struct TurnRequest {
    pub session_id: Option<String>,
    pub prompt: String,
    /// The session's transcript so far; only the last `HISTORY_MESSAGES_MAX` are sent.
    pub history: Vec<Message>,
    /// Skills invoked for this turn ([`crate::take_skills`] finds them in a prompt); only the
    /// first [`crate::SKILLS_MAX`] are used.
    pub skills: Vec<Skill>,
    /// The pre-fetch Context block. `None` lets the loop's pre-fetch fill it (when
    /// [`AgentConfig::prefetch`] is on); a caller that sets it skips the pre-fetch.
    pub context: Option<String>,
    /// The Stop button, the kill switch, or a parent agent.
    pub stop: StopFlag,
    /// Prompts sent while the turn runs.
    pub queue: Option<PromptQueue>,
}

impl TurnRequest {
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            ..Self::default()
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub status: TurnStatus,
    /// The final answer (to the last delivered prompt); empty after an error.
    pub answer: String,
    /// Every call the model made, in order, cached ones included.
    pub tool_calls: Vec<ToolCall>,
    /// The pre-fetch's lookups that finished before the model read the prompt, in order.
    pub lookups: Vec<ToolCall>,
    /// The tokens every generation of the turn took (history summaries included), counted
    /// by the model over exactly what was sent and generated.
    pub usage: TokenUsage,
    /// What the transcript keeps: final answers and delivered queued prompts, in order.
    pub transcript: Vec<Message>,
    pub steps: usize,
    /// Set when `status` is `Error`.
    pub error: Option<AgentError>,
}

/// The turn loop over one model and one executor.
pub struct AgentLoop {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) executor: Arc<ToolExecutor>,
    pub(crate) events: Arc<dyn EventSink>,
    /// Where the turn's tool calls publish their events, when not `events` (a helper's
    /// calls go to its parent's turn while its own loop events are silent).
    pub(crate) tool_events: Option<Arc<dyn EventSink>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: AgentConfig,
    /// Set for a sub-agent's loop: its depth and the tools it may use.
    pub(crate) scope: Option<Scope>,
    pub(crate) prefetch_deadline: Duration,
}

/// A sub-agent's limits: its calls go through the executor as `Caller::sub_agent`, and its
/// prompt offers only `tools`.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) depth: u8,
    pub(crate) tools: Vec<String>,
}

impl AgentLoop {
    /// A loop with the default configuration and the machine clock.
    pub fn new(
        model: Arc<dyn Model>,
        executor: Arc<ToolExecutor>,
        events: Arc<dyn EventSink>,
    ) -> Self {
        Self {
            model,
            executor,
            events,
            tool_events: None,
            clock: Arc::new(SystemClock),
            config: AgentConfig::default(),
            scope: None,
            prefetch_deadline: PREFETCH_DEADLINE,
        }
    }

    /// This loop as a sub-agent at `depth` that may use only `tools`.
    pub(crate) fn scoped(mut self, depth: u8, tools: Vec<String>) -> Self {
        self.scope = Some(Scope { depth, tools });
        self
    }

    /// How long the pre-fetch waits for its lookups (default [`PREFETCH_DEADLINE`]).
    pub fn with_prefetch_deadline(mut self, deadline: Duration) -> Self {
        self.prefetch_deadline = deadline;
        self
    }

    /// Sends the turn's tool-call events to `events` instead of the loop's own sink.
    pub fn with_tool_events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.tool_events = Some(events);
        self
    }

    /// The sink the turn's tool calls publish to.
    pub(crate) fn tool_sink(&self) -> &Arc<dyn EventSink> {
        self.tool_events.as_ref().unwrap_or(&self.events)
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets the configuration; `max_steps` is clamped to 1..=`MAX_STEPS_CAP`.
    pub fn with_config(mut self, config: AgentConfig) -> Self {
        let max_steps = config.max_steps;
        self.config = config.with_max_steps(max_steps);
        self
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Plays one turn. Never fails: errors end the turn with status `error` and the reason
    /// in `TurnResult::error`. `turn.end` is always published.
    pub async fn run(&self, mut request: TurnRequest) -> TurnResult {
        // A main turn is a new turn of its session (a sub-agent runs inside its parent's):
        // a taint mark from two turns ago expires here.
        if self.scope.is_none()
            && let Some(session_id) = request.session_id.as_deref()
        {
            self.executor.begin_turn(session_id);
        }
        let mut prefetched = Vec::new();
        let mut as_step = Vec::new();
        if self.config.prefetch && self.scope.is_none() && request.context.is_none() {
            let found = observe_full(
                &self.executor,
                &self.events,
                request.session_id.as_deref(),
                &request.prompt,
                &request.stop,
                self.prefetch_deadline,
            )
            .await;
            // With tools on offer, the lookups reach the model as a tool step it did not
            // have to write: its call in canonical form, then each result headed like any
            // tool result, so the model's first reply follows a result, as the worked
            // examples show. Measured with SmolLM2-135M (`docs/agent-loop.md`): from a Context
            // block at the end of the system message it stated the time wrong, or called the
            // tool again with invented arguments until the step limit; after the step it
            // answers from the result. Without tools the Context block carries them.
            if !found.steps.is_empty() && crate::turn::offers_tools(self, &request) {
                as_step = found.steps;
            } else {
                request.context = found.context;
            }
            prefetched = found.results;
        }
        let lookups = prefetched.iter().map(|found| found.call.clone()).collect();
        let mut result = Turn::new(self, &request)
            .with_prefetched(prefetched, as_step)
            .run()
            .await;
        result.lookups = lookups;
        result
    }

    /// A dry run: the turn's first step generated and read, with nothing run. Returns what
    /// the model would call (or answer) — `imurun ask --dry-run` and evaluations use it.
    pub async fn plan(&self, request: TurnRequest) -> Result<Parsed, AgentError> {
        Turn::new(self, &request)
            .plan()
            .await
            .map(|(parsed, _)| parsed)
    }

    /// [`AgentLoop::plan`], with what the likelihood decided when the back-end scores
    /// (`docs/agent-loop.md`, "Decisions by likelihood").
    pub async fn plan_detailed(
        &self,
        request: TurnRequest,
    ) -> Result<(Parsed, Option<crate::Likelihood>), AgentError> {
        Turn::new(self, &request).plan().await
    }
}

impl std::fmt::Debug for AgentLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoop")
            .field("model", &self.model.name())
            .field("executor", &self.executor)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
