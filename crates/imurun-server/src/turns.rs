//! Turn tasks: a prompt starts a turn on a task of its own (or joins the running turn's
//! queue); the turn's events are stamped with its id and recorded into its view; its prompt,
//! answers and delivered prompts go into the transcript; and its view is persisted.
//!
//! A prompt that starts a turn has its skill tokens (`/<id>`) taken out before the model sees
//! it ([`take_skills`]); the transcript and `turn.start` keep it as typed. A prompt queued in
//! a running turn is delivered as typed.
//!
//! Persistence follows the seed: the transcript keeps only prompts and final answers. The
//! prompt is appended before the turn starts, so a crash mid-turn keeps it; the answers and
//! the delivered queued prompts are appended when the turn ends. Once the loop has returned
//! the turn's queue is closed: a prompt sent while the turn is saved waits for it to end and
//! starts the next turn, so its 202 comes after its prompt is stored. A panic inside the loop
//! ends the turn as `error`; it never reaches the server.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use imurun_agent::{
    AgentError, AgentLoop, HISTORY_MESSAGES_MAX, PromptQueue, Skill, TurnRequest, TurnResult,
    take_skills,
};
use imurun_core::{
    CallSource, Event, EventSink, Message, Model, Role, StopFlag, TokenUsage, TurnStatus,
};
use imurun_store::{Role as StoredRole, Turn, TurnStatus as StoredStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tracing::Instrument;

use crate::error::ApiError;
use crate::events::{ServerEvent, TurnEvent};
use crate::hub::EventHub;
use crate::state::{PROMPT_CHARS_MAX, RunningTurn, ServerState, lock};
use crate::wire::{GroundingInfo, PromptAccepted, StepInfo, ToolCallInfo, TurnView};

/// The error message of a turn whose task panicked.
const PANIC_MESSAGE: &str = "the turn failed unexpectedly inside the server; it was ended";

/// Steps, tool calls and grounding notes a view records (each); past them the view stops
/// growing. A turn has at most 20 steps of 3 calls, so this only binds if that changes.
const VIEW_ENTRIES_MAX: usize = 256;

/// What a turn's view holds beyond the turn row: the JSON stored in `turns.view`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RecordedView {
    pub(crate) answer: String,
    pub(crate) error: Option<String>,
    /// The loop's own end status (`done`, `max-steps`, ...), finer than the stored one.
    pub(crate) end_status: Option<String>,
    pub(crate) steps: Vec<StepInfo>,
    pub(crate) tool_calls: Vec<ToolCallInfo>,
    pub(crate) skills: Vec<String>,
    pub(crate) delivered_prompts: Vec<String>,
    /// The turn's `answer.grounding` events (absent from views stored before there were any).
    pub(crate) grounding: Vec<GroundingInfo>,
    /// The tokens the turn's generations took (the OpenAI facade's `usage`).
    pub(crate) usage: Option<TokenUsage>,
    /// Calls of `tool_calls` the policy or a person refused (`tool.denied`), for the
    /// server's own `turn.end`; not stored.
    #[serde(skip)]
    pub(crate) denied_calls: usize,
}

/// The view of a running turn, shared by its sink and the routes.
pub(crate) type LiveView = Arc<Mutex<RecordedView>>;

impl RecordedView {
    fn record_event(&mut self, event: &Event) {
        match event {
            Event::Step {
                step, kind, text, ..
            } if self.steps.len() < VIEW_ENTRIES_MAX => {
                self.steps.push(StepInfo {
                    step: *step,
                    kind: wire_name(kind),
                    text: text.clone(),
                });
            }
            Event::Grounding {
                step,
                action,
                tool,
                reason,
                ..
            } if self.grounding.len() < VIEW_ENTRIES_MAX => {
                self.grounding.push(GroundingInfo {
                    step: *step,
                    action: wire_name(action),
                    tool: tool.clone(),
                    reason: reason.clone(),
                });
            }
            Event::PromptDelivered { text, .. } => self.delivered_prompts.push(text.clone()),
            Event::SkillUsed { skills, .. } | Event::TurnEnd { skills, .. } => {
                self.skills.clone_from(skills);
            }
            // The turn's own calls reach its sink through their caller; a person's calls
            // (`POST /api/tools/run`) never do.
            Event::ToolCall {
                call_id,
                name,
                args,
                source,
                ..
            } if self.tool_calls.len() < VIEW_ENTRIES_MAX && *source != CallSource::User => {
                self.tool_calls.push(ToolCallInfo {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: args.clone(),
                    ok: None,
                });
            }
            Event::ToolDenied { .. } => self.denied_calls += 1,
            Event::ToolResult { call_id, ok, .. } => {
                if let Some(call) = self
                    .tool_calls
                    .iter_mut()
                    .find(|call| call.call_id == *call_id)
                {
                    call.ok = Some(*ok);
                }
            }
            _ => {}
        }
    }
}

/// The name a unit enum has on the wire (`StepKind::Tool` → `tool`).
fn wire_name(value: &impl Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|name| name.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The wire view of a stored turn, with the live view when the turn is still running here.
pub(crate) fn turn_view(turn: Turn, live: Option<RecordedView>) -> TurnView {
    let recorded = live.unwrap_or_else(|| serde_json::from_value(turn.view).unwrap_or_default());
    let status = match (turn.status, recorded.end_status.as_deref()) {
        (StoredStatus::Done, Some("max-steps")) => "max-steps".to_owned(),
        (status, _) => status.as_str().to_owned(),
    };
    TurnView {
        turn_id: turn.turn_id,
        session_id: turn.session_id,
        prompt: turn.prompt,
        status,
        started_at_ms: turn.started_at_ms,
        ended_at_ms: turn.ended_at_ms,
        answer: recorded.answer,
        error: recorded.error,
        steps: recorded.steps,
        tool_calls: recorded.tool_calls,
        skills: recorded.skills,
        delivered_prompts: recorded.delivered_prompts,
        grounding: recorded.grounding,
    }
}

/// The tokens a stored turn's generations took (none recorded: zero).
pub(crate) fn recorded_usage(turn: &Turn) -> TokenUsage {
    serde_json::from_value::<RecordedView>(turn.view.clone())
        .ok()
        .and_then(|view| view.usage)
        .unwrap_or_default()
}

/// The live view of `turn_id` if it is the one running in `session_id`.
pub(crate) fn live_view(
    state: &ServerState,
    session_id: &str,
    turn_id: &str,
) -> Option<RecordedView> {
    let turns = lock(&state.inner.turns);
    let running = turns
        .get(session_id)
        .filter(|turn| turn.turn_id == turn_id)?;
    let view = lock(&running.view).clone();
    Some(view)
}

/// Checks a prompt: not empty, at most [`PROMPT_CHARS_MAX`] characters.
pub(crate) fn check_prompt(prompt: &str) -> Result<(), ApiError> {
    if prompt.trim().is_empty() {
        return Err(ApiError::bad_request(
            "the prompt is empty; write something to ask",
        ));
    }
    let chars = prompt.chars().count();
    if chars > PROMPT_CHARS_MAX {
        return Err(ApiError::too_large(format!(
            "the prompt is {chars} characters long; at most {PROMPT_CHARS_MAX} are accepted"
        )));
    }
    Ok(())
}

/// Starts a turn for `prompt` in `session_id`, or queues the prompt in the turn running there.
pub(crate) async fn submit_prompt(
    state: &ServerState,
    session_id: &str,
    prompt: String,
) -> Result<PromptAccepted, ApiError> {
    submit_prompt_with(state, session_id, prompt, TurnOptions::default())
        .await
        .map(|started| started.accepted)
}

/// Sees every event of one turn as the turn publishes it (after its `turn_id` is known, and
/// `turn.end` once the turn is saved): the OpenAI facade's token stream.
pub(crate) type Tap = Arc<dyn Fn(&Event) + Send + Sync>;

/// How a turn started by another route differs from a prompt typed on the page.
#[derive(Clone, Default)]
pub(crate) struct TurnOptions {
    /// Added after the persona for this turn only (an OpenAI client's system messages). The
    /// policy never reads the prompt, so instructions cannot change what a tool may do.
    pub(crate) instructions: Option<String>,
    /// Answer 409 instead of queuing the prompt when a turn already runs in the session.
    pub(crate) refuse_if_running: bool,
    /// Sees the turn's events (a turn this prompt starts; a queued prompt's turn is another's).
    pub(crate) tap: Option<Tap>,
}

/// What [`submit_prompt_with`] did.
pub(crate) struct StartedTurn {
    pub(crate) accepted: PromptAccepted,
    /// Becomes true once the turn has ended and its view is stored; `None` when queued.
    pub(crate) ended: Option<watch::Receiver<bool>>,
}

/// [`submit_prompt`] with [`TurnOptions`].
pub(crate) async fn submit_prompt_with(
    state: &ServerState,
    session_id: &str,
    prompt: String,
    options: TurnOptions,
) -> Result<StartedTurn, ApiError> {
    let model = state
        .model()
        .model()
        .ok_or_else(|| model_not_loaded(state))?;
    state.store().get_session(session_id).await?;
    let (turn_id, stop, queue, view, ended_tx) = loop {
        let mut ending = {
            let mut turns = lock(&state.inner.turns);
            let Some(running) = turns.get(session_id) else {
                break start_running(&mut turns, session_id);
            };
            if options.refuse_if_running {
                return Err(ApiError::conflict(format!(
                    "a turn is already running in session {session_id}; wait for it to end"
                )));
            }
            match running.queue.push(prompt.clone()) {
                Ok(()) => {
                    return Ok(StartedTurn {
                        accepted: PromptAccepted {
                            turn_id: running.turn_id.clone(),
                            queued: true,
                        },
                        ended: None,
                    });
                }
                // The turn has answered for the last time and is being saved: this prompt
                // starts the next turn once it has ended.
                Err(AgentError::QueueClosed) => running.ended.clone(),
                Err(error) => return Err(queue_full(error)),
            }
        };
        // A dropped sender also means the turn is over.
        let _ = ending.wait_for(|ended| *ended).await;
    };
    let persisted = persist_start(state, session_id, &turn_id, &prompt).await;
    let prompt_seq = match persisted {
        Ok(seq) => seq,
        Err(error) => {
            forget_turn(state, session_id, &turn_id);
            return Err(error);
        }
    };
    let start = ServerEvent::TurnStart {
        session_id: session_id.to_owned(),
        turn_id: turn_id.clone(),
        prompt: prompt.clone(),
    };
    state.hub().publish_event(start.session_id(), &start);
    let ended = ended_tx.subscribe();
    let task = TurnTask {
        state: state.clone(),
        session_id: session_id.to_owned(),
        turn_id: turn_id.clone(),
        prompt,
        prompt_seq,
        model,
        stop,
        queue,
        view,
        ended_tx,
        instructions: options.instructions,
        tap: options.tap,
    };
    let span = tracing::info_span!("turn", %session_id, %turn_id);
    tokio::spawn(boxed_turn(task).instrument(span));
    Ok(StartedTurn {
        accepted: PromptAccepted {
            turn_id,
            queued: false,
        },
        ended: Some(ended),
    })
}

/// Registers a new running turn in `session_id` and returns its parts.
fn start_running(
    turns: &mut HashMap<String, RunningTurn>,
    session_id: &str,
) -> (String, StopFlag, PromptQueue, LiveView, watch::Sender<bool>) {
    let turn_id = new_turn_id();
    let (ended_tx, ended) = watch::channel(false);
    let running = RunningTurn {
        turn_id: turn_id.clone(),
        stop: StopFlag::new(),
        queue: PromptQueue::new(),
        view: LiveView::default(),
        ended,
    };
    let parts = (
        turn_id,
        running.stop.clone(),
        running.queue.clone(),
        Arc::clone(&running.view),
        ended_tx,
    );
    turns.insert(session_id.to_owned(), running);
    parts
}

/// The 503 answer while the model is not ready.
pub(crate) fn model_not_loaded(state: &ServerState) -> ApiError {
    let status = state.model().status();
    let message = match &status {
        crate::state::ModelStatus::Loading => {
            "the model is still loading; try again in a moment".to_owned()
        }
        crate::state::ModelStatus::Failed { message } => {
            format!("the model failed to load: {message}")
        }
        _ => "no model is loaded; start the server with a model".to_owned(),
    };
    ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "model_not_loaded",
        message,
    )
    .with_field("status", status.as_str())
}

fn queue_full(error: AgentError) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        "queue_full",
        format!("the running turn cannot take another prompt: {error}"),
    )
}

/// Records the turn and appends its prompt to the transcript; returns the prompt's number.
async fn persist_start(
    state: &ServerState,
    session_id: &str,
    turn_id: &str,
    prompt: &str,
) -> Result<i64, ApiError> {
    let view = serde_json::to_value(RecordedView::default()).unwrap_or(Value::Null);
    state
        .store()
        .insert_turn(session_id, turn_id, prompt, &view)
        .await?;
    let message = state
        .store()
        .append_message(session_id, StoredRole::User, prompt)
        .await?;
    Ok(message.seq)
}

/// Removes the session's running turn if it is still `turn_id`.
fn forget_turn(state: &ServerState, session_id: &str, turn_id: &str) {
    let mut turns = lock(&state.inner.turns);
    if turns
        .get(session_id)
        .is_some_and(|running| running.turn_id == turn_id)
    {
        turns.remove(session_id);
    }
}

/// Everything a turn task owns.
struct TurnTask {
    state: ServerState,
    session_id: String,
    turn_id: String,
    prompt: String,
    prompt_seq: i64,
    model: Arc<dyn Model>,
    stop: StopFlag,
    queue: PromptQueue,
    view: LiveView,
    ended_tx: watch::Sender<bool>,
    /// See [`TurnOptions::instructions`].
    instructions: Option<String>,
    /// See [`TurnOptions::tap`].
    tap: Option<Tap>,
}

/// The turn task as a boxed future. Boxing breaks the type cycle of a turn that starts the
/// next turn (for prompts left in its queue), which starts the next, and so on.
fn boxed_turn(task: TurnTask) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
    Box::pin(run_turn(task))
}

async fn run_turn(task: TurnTask) {
    let state = task.state.clone();
    let history = load_history(&state, &task.session_id, task.prompt_seq).await;
    let sink = Arc::new(TurnSink {
        hub: state.hub().clone(),
        session_id: task.session_id.clone(),
        turn_id: task.turn_id.clone(),
        view: Arc::clone(&task.view),
        tap: task.tap.clone(),
        held_end: Mutex::new(None),
    });
    let mut config = state.agent_config();
    if let Some(instructions) = &task.instructions {
        config.persona = format!("{}\n\n{instructions}", config.persona.trim_end());
    }
    let agent = AgentLoop::new(
        Arc::clone(&task.model),
        Arc::clone(state.executor()),
        Arc::clone(&sink) as Arc<dyn EventSink>,
    )
    .with_config(config);
    let (prompt, skills) = invoked_skills(&state, &task.prompt).await;
    let request = TurnRequest {
        session_id: Some(task.session_id.clone()),
        prompt,
        history,
        skills,
        context: None,
        stop: task.stop.clone(),
        queue: Some(task.queue.clone()),
    };
    // The loop runs on a task of its own so that a panic in it (a tool, a model back-end)
    // ends as a `JoinError` here instead of unwinding through the server.
    let joined = tokio::spawn(async move { agent.run(request).await }.in_current_span()).await;
    // From here a new prompt waits for this turn to end and then starts the next one.
    let leftovers = task.queue.close();
    match joined {
        Ok(result) => finish(&state, &task, result).await,
        Err(error) => {
            tracing::error!("the turn failed unexpectedly and was ended: {error}");
            finish_after_panic(&state, &task, &sink).await;
        }
    }
    forget_turn(&state, &task.session_id, &task.turn_id);
    sink.release_end();
    // Prompts queued too late for this turn (after its last answer boundary) start the next,
    // before the prompts that waited for this turn to end.
    for prompt in leftovers {
        if submit_prompt(&state, &task.session_id, prompt)
            .await
            .is_err()
        {
            break;
        }
    }
    task.ended_tx.send_replace(true);
}

/// The prompt the model sees and the skills its `/<id>` tokens invoke. The transcript keeps
/// the prompt as typed. Reading the skill directory is file I/O, so it runs on the blocking
/// pool; if that fails the prompt goes to the model as typed.
async fn invoked_skills(state: &ServerState, prompt: &str) -> (String, Vec<Skill>) {
    let store = state.skills().clone();
    let typed = prompt.to_owned();
    tokio::task::spawn_blocking(move || take_skills(&typed, &store))
        .await
        .unwrap_or_else(|_| (prompt.to_owned(), Vec::new()))
}

/// The last messages of the transcript before the prompt numbered `prompt_seq`.
async fn load_history(state: &ServerState, session_id: &str, prompt_seq: i64) -> Vec<Message> {
    let history_max = i64::try_from(HISTORY_MESSAGES_MAX).unwrap_or(i64::MAX);
    let after_seq = (prompt_seq - 1 - history_max).max(0);
    let limit = u32::try_from(HISTORY_MESSAGES_MAX).unwrap_or(u32::MAX);
    // Without its history the turn still answers the prompt; a read error costs context only.
    let stored = state
        .store()
        .transcript(session_id, after_seq, limit)
        .await
        .unwrap_or_default();
    stored
        .into_iter()
        .filter(|message| message.seq < prompt_seq)
        .map(|message| match message.role {
            StoredRole::User => Message::user(message.content),
            StoredRole::Assistant => Message::assistant(message.content),
        })
        .collect()
}

async fn finish(state: &ServerState, task: &TurnTask, result: TurnResult) {
    tracing::info!(
        status = result.status.as_str(),
        steps = result.steps,
        tool_calls = result.tool_calls.len(),
        "the turn ended"
    );
    if let Some(error) = &result.error {
        tracing::warn!("the turn ended in an error: {error}");
    }
    for message in &result.transcript {
        let role = match message.role {
            Role::User => StoredRole::User,
            Role::Assistant => StoredRole::Assistant,
            // The loop's transcript holds only prompts and answers.
            _ => continue,
        };
        // A failed append (the session was deleted meanwhile) loses only this message.
        if let Err(error) = state
            .store()
            .append_message(&task.session_id, role, &message.content)
            .await
        {
            tracing::warn!("a message of the turn was not saved to the transcript: {error}");
        }
    }
    let status = match result.status {
        TurnStatus::Done | TurnStatus::MaxSteps => StoredStatus::Done,
        TurnStatus::Stopped => StoredStatus::Stopped,
        TurnStatus::Error => StoredStatus::Error,
    };
    let view = {
        let mut view = lock(&task.view);
        view.answer.clone_from(&result.answer);
        view.error = result.error.as_ref().map(ToString::to_string);
        view.end_status = Some(result.status.as_str().to_owned());
        view.usage = Some(result.usage);
        view.clone()
    };
    persist_end(state, task, status, &view).await;
}

async fn finish_after_panic(state: &ServerState, task: &TurnTask, sink: &TurnSink) {
    task.stop.stop();
    let view = {
        let mut view = lock(&task.view);
        view.error = Some(PANIC_MESSAGE.to_owned());
        view.end_status = Some(TurnStatus::Error.as_str().to_owned());
        view.clone()
    };
    persist_end(state, task, StoredStatus::Error, &view).await;
    // The loop's own `turn.end` never came; clients still need to know the turn is over.
    // Its counts are of the calls the server saw: a repeat the loop answered from its cache
    // never reached it.
    let ended = view
        .tool_calls
        .iter()
        .filter(|call| call.ok.is_some())
        .count();
    let calls_refused = view.denied_calls.min(ended);
    let calls_ran = ended - calls_refused;
    let end = ServerEvent::TurnFailed {
        session_id: task.session_id.clone(),
        turn_id: task.turn_id.clone(),
        status: TurnStatus::Error.as_str().to_owned(),
        tool_calls: view.tool_calls.len(),
        calls_ran,
        calls_cached: 0,
        calls_refused,
        skills: view.skills.clone(),
        steps: view.steps.len(),
        error: PANIC_MESSAGE.to_owned(),
    };
    state.hub().publish_event(end.session_id(), &end);
    if let Some(tap) = &sink.tap {
        tap(&Event::TurnEnd {
            session_id: Some(task.session_id.clone()),
            status: TurnStatus::Error,
            tool_calls: view.tool_calls.len(),
            calls_ran,
            calls_cached: 0,
            calls_refused,
            skills: view.skills,
            steps: view.steps.len(),
        });
    }
}

async fn persist_end(
    state: &ServerState,
    task: &TurnTask,
    status: StoredStatus,
    view: &RecordedView,
) {
    let view = serde_json::to_value(view).unwrap_or(Value::Null);
    // The session may have been deleted while the turn ran; then there is nothing to update.
    if let Err(error) = state
        .store()
        .update_turn(&task.session_id, &task.turn_id, status, &view)
        .await
    {
        tracing::warn!("the turn's end was not saved: {error}");
    }
}

/// The loop's event sink for one turn: records steps, tool calls, delivered prompts and
/// skills into the turn's view, hands each event to the turn's tap, and publishes it to the
/// hub with the turn's `turn_id` added. The turn's tool calls come here through their caller.
struct TurnSink {
    hub: EventHub,
    session_id: String,
    turn_id: String,
    view: LiveView,
    tap: Option<Tap>,
    /// The loop's `turn.end`, held back until the turn is saved and no longer takes prompts:
    /// a client that sends its next prompt on `turn.end` then starts a new turn instead of
    /// landing in the queue of one that is ending.
    held_end: Mutex<Option<Event>>,
}

impl TurnSink {
    /// Publishes the held `turn.end`, if the loop sent one.
    fn release_end(&self) {
        if let Some(end) = lock(&self.held_end).take() {
            self.send(&end);
        }
    }

    fn send(&self, event: &Event) {
        if let Some(tap) = &self.tap {
            tap(event);
        }
        let stamped = TurnEvent {
            event,
            turn_id: &self.turn_id,
        };
        // A turn's events belong to its session even when the loop left `session_id` out.
        let session = event.session_id().unwrap_or(&self.session_id);
        self.hub.publish_event(Some(session), &stamped);
    }
}

impl EventSink for TurnSink {
    fn publish(&self, event: Event) {
        lock(&self.view).record_event(&event);
        if matches!(event, Event::TurnEnd { .. }) {
            *lock(&self.held_end) = Some(event);
            return;
        }
        self.send(&event);
    }

    fn has_subscriber(&self, session_id: Option<&str>) -> bool {
        self.hub.has_subscriber(session_id)
    }
}

/// A turn id unique in this process and, through the clock, across restarts.
fn new_turn_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now_ms = imurun_core::now_unix_ms();
    format!("turn-{now_ms:x}-{count}")
}
