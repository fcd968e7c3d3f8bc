//! What every route shares: [`ServerState`] (the store, the executor, the hub, the model slot,
//! the skills, the agent settings and the running turns), built once by the binary from [`ServerParts`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use imurun_agent::{AgentConfig, MAX_STEPS_CAP, PromptQueue, SkillStore};
use imurun_core::{Model, SandboxStatus, StopFlag};
use imurun_exec::ToolExecutor;
use imurun_integrations::McpHub;
use imurun_store::{Store, StoreError};
use serde_json::Value;
use tokio::sync::watch;

use crate::hub::EventHub;
use crate::sse::HEARTBEAT_INTERVAL_DEFAULT;
use crate::turns::LiveView;

/// Request bodies larger than this are refused with 413 on every route unless configured
/// otherwise. A prompt of 32 000 characters is at most 192 KiB as escaped JSON.
pub const BODY_BYTES_MAX_DEFAULT: usize = 256 << 10;

/// The longest prompt accepted, in characters, as the seed's UI allowed.
pub const PROMPT_CHARS_MAX: usize = 32_000;

/// The longest persona accepted by `POST /api/agent`, in characters.
pub const PERSONA_CHARS_MAX: usize = 4_000;

/// The approval timeout a person may set, in seconds: one second to one hour.
pub const APPROVAL_TIMEOUT_S_MAX: u64 = 3_600;

/// How long deleting a session waits for its stopped turn to end before deleting anyway.
pub const STOP_WAIT_DEFAULT: Duration = Duration::from_secs(10);

/// Where the model stands. The binary loads the model in the background and moves the slot
/// through `loading` to `ready` (or `failed`); prompt routes answer 503 until it is ready.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelStatus {
    /// No model was configured or loading has not begun.
    #[default]
    None,
    /// Loading.
    Loading,
    /// Loaded; turns can run.
    Ready,
    /// Loading failed; the message says why, for a person.
    Failed { message: String },
}

impl ModelStatus {
    /// `none`, `loading`, `ready` or `failed`, as on the wire.
    pub fn as_str(&self) -> &'static str {
        match self {
            ModelStatus::None => "none",
            ModelStatus::Loading => "loading",
            ModelStatus::Ready => "ready",
            ModelStatus::Failed { .. } => "failed",
        }
    }
}

/// The model the server's turns use, set once it is loaded. Cloning shares the slot, so the
/// binary keeps a clone to fill it after the server has started.
#[derive(Clone, Default)]
pub struct ModelSlot {
    inner: Arc<RwLock<SlotState>>,
}

#[derive(Default)]
struct SlotState {
    status: ModelStatus,
    model: Option<Arc<dyn Model>>,
}

impl ModelSlot {
    /// An empty slot (`none`).
    pub fn new() -> Self {
        ModelSlot::default()
    }

    /// A slot that already holds `model`.
    pub fn ready(model: Arc<dyn Model>) -> Self {
        let slot = ModelSlot::new();
        slot.set_ready(model);
        slot
    }

    /// Loading has begun; any previous model is dropped from the slot.
    pub fn set_loading(&self) {
        self.set(ModelStatus::Loading, None);
    }

    /// The model is loaded: prompts are accepted from now on.
    pub fn set_ready(&self, model: Arc<dyn Model>) {
        self.set(ModelStatus::Ready, Some(model));
    }

    /// Loading failed; `message` is shown to a person as it is.
    pub fn set_failed(&self, message: impl Into<String>) {
        let message = message.into();
        self.set(ModelStatus::Failed { message }, None);
    }

    pub fn status(&self) -> ModelStatus {
        self.read().status.clone()
    }

    /// The model, when ready.
    pub fn model(&self) -> Option<Arc<dyn Model>> {
        self.read().model.clone()
    }

    fn set(&self, status: ModelStatus, model: Option<Arc<dyn Model>>) {
        let mut state = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        state.status = status;
        state.model = model;
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, SlotState> {
        // Each write replaces both fields together, so a poisoned lock still holds a whole
        // state.
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ModelSlot {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.read();
        formatter
            .debug_struct("ModelSlot")
            .field("status", &state.status)
            .field("model", &state.model.as_ref().map(|model| model.name()))
            .finish()
    }
}

/// The server's own bounds and names.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Reported by `GET /api/health`.
    pub version: String,
    /// SSE heartbeat after this much silence.
    pub heartbeat_interval: Duration,
    /// The largest request body, in bytes, on every route.
    pub body_bytes_max: usize,
    /// How long `DELETE /api/sessions/{id}` waits for the session's stopped turn to end.
    pub stop_wait: Duration,
    /// When set, every route but `GET /api/health` needs `Authorization: Bearer <token>`.
    pub api_token: Option<String>,
    /// Setting keys (`permissions.mode`, `agent.maxSteps`) that the settings stored through
    /// the endpoints must not override at start-up: a flag or an environment variable set
    /// them for this run.
    pub pinned_settings: Vec<String>,
    /// The OS sandbox the shell and stdio servers run in, as `GET /api/permissions` reports it.
    pub sandbox: SandboxStatus,
    /// Keep mode: when set, every `/api` and `/v1` route but `GET /api/health` needs a Keep
    /// token, the assistant's routes need the operator's, and the Keep routes answer. When not
    /// set, the Keep routes answer exactly as a path that does not exist.
    pub keep: Option<imurun_keep::service::KeepService>,
    /// Keep's live events, one hub per person (`GET /v1/events`); the Keep service's cells
    /// must publish into a clone of it.
    pub keep_events: crate::keep_hubs::KeepHubs,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            heartbeat_interval: HEARTBEAT_INTERVAL_DEFAULT,
            body_bytes_max: BODY_BYTES_MAX_DEFAULT,
            stop_wait: STOP_WAIT_DEFAULT,
            api_token: None,
            pinned_settings: Vec::new(),
            sandbox: SandboxStatus::None {
                reason: "no sandbox was reported to this server".to_owned(),
            },
            keep: None,
            keep_events: crate::keep_hubs::KeepHubs::default(),
        }
    }
}

/// What the binary hands the server.
#[derive(Debug)]
pub struct ServerParts {
    pub store: Store,
    /// Must have been built with `hub` (a clone of it) as its event sink, so that tool events
    /// reach SSE clients and approvals see who is subscribed.
    pub executor: Arc<ToolExecutor>,
    pub hub: EventHub,
    pub model: ModelSlot,
    /// The skills `/<id>` tokens in prompts invoke and `/api/skills` manages.
    pub skills: SkillStore,
    /// The agent settings until `agent.*` settings in the store replace them at start-up.
    pub agent_config: AgentConfig,
    pub options: ServerOptions,
    /// The MCP servers whose tools are in the executor's registry (`GET /api/integrations`
    /// lists them); `McpHub::default()` when none are configured.
    pub mcp: Arc<McpHub>,
}

/// Everything the routes share. Cloning is cheap (one `Arc`).
#[derive(Clone)]
pub struct ServerState {
    pub(crate) inner: Arc<Inner>,
}

/// The state behind the `Arc`.
pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) executor: Arc<ToolExecutor>,
    pub(crate) hub: EventHub,
    pub(crate) model: ModelSlot,
    pub(crate) skills: SkillStore,
    pub(crate) options: ServerOptions,
    pub(crate) mcp: Arc<McpHub>,
    pub(crate) agent_config: RwLock<AgentConfig>,
    /// The running turn of each session, by session id: at most one per session.
    pub(crate) turns: Mutex<HashMap<String, RunningTurn>>,
    /// Flips to true when the server shuts down, ending the SSE streams.
    pub(crate) shutdown: watch::Sender<bool>,
}

/// A turn in progress.
pub(crate) struct RunningTurn {
    pub(crate) turn_id: String,
    pub(crate) stop: StopFlag,
    pub(crate) queue: PromptQueue,
    pub(crate) view: LiveView,
    /// Becomes true when the turn's task has finished everything, persistence included.
    pub(crate) ended: watch::Receiver<bool>,
}

/// An alias the routes read better with.
pub type AppState = ServerState;

impl ServerState {
    /// The state, from its parts. Call [`ServerState::start_up`] (or use [`crate::serve`], which
    /// does) before the first request.
    pub fn new(parts: ServerParts) -> ServerState {
        let (shutdown, _) = watch::channel(false);
        ServerState {
            inner: Arc::new(Inner {
                store: parts.store,
                executor: parts.executor,
                hub: parts.hub,
                model: parts.model,
                skills: parts.skills,
                options: parts.options,
                mcp: parts.mcp,
                agent_config: RwLock::new(parts.agent_config),
                turns: Mutex::new(HashMap::new()),
                shutdown,
            }),
        }
    }

    /// Start-up work, once, before the first turn: marks the turns a previous process left
    /// running as `interrupted`, and applies the saved `permissions.*` (the approval timeout
    /// included) and `agent.*` settings, except those a flag or variable pinned (values that
    /// do not parse are ignored and keep their defaults).
    pub async fn start_up(&self) -> Result<(), StoreError> {
        self.inner.store.mark_interrupted_turns().await?;
        let mut saved = self.inner.store.get_all_settings().await?;
        saved.retain(|key, _| !self.options().pinned_settings.contains(key));
        let mut settings = self.inner.executor.settings();
        if let Some(mode) = saved.get("permissions.mode").and_then(Value::as_str)
            && let Ok(mode) = mode.parse()
        {
            settings.mode = mode;
        }
        let toggles = [
            ("permissions.readFiles", &mut settings.toggles.read_files),
            ("permissions.writeFiles", &mut settings.toggles.write_files),
            ("permissions.runShell", &mut settings.toggles.run_shell),
            ("permissions.network", &mut settings.toggles.network),
        ];
        for (key, toggle) in toggles {
            if let Some(value) = saved.get(key).and_then(Value::as_bool) {
                *toggle = value;
            }
        }
        self.inner.executor.set_settings(settings);
        if let Some(seconds) = saved
            .get(crate::APPROVAL_TIMEOUT_KEY)
            .and_then(Value::as_u64)
            .filter(|seconds| (1..=APPROVAL_TIMEOUT_S_MAX).contains(seconds))
        {
            self.inner
                .executor
                .approvals()
                .set_approval_timeout(Duration::from_secs(seconds));
        }
        let mut config = self.agent_config();
        if let Some(max_steps) = saved.get("agent.maxSteps").and_then(Value::as_u64)
            && let Ok(max_steps) = usize::try_from(max_steps)
            && (1..=MAX_STEPS_CAP).contains(&max_steps)
        {
            config.max_steps = max_steps;
        }
        if let Some(persona) = saved.get("agent.persona").and_then(Value::as_str) {
            config.persona = persona.to_owned();
        }
        if let Some(summarise) = saved.get("agent.summariseHistory").and_then(Value::as_bool) {
            config.summarise_history = summarise;
        }
        self.set_agent_config(config);
        Ok(())
    }

    /// Stops every running turn and ends every SSE stream: what a shutdown does before the
    /// server waits for its connections to close.
    pub fn begin_shutdown(&self) {
        self.inner.shutdown.send_replace(true);
        for turn in lock(&self.inner.turns).values() {
            turn.stop.stop();
        }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn executor(&self) -> &Arc<ToolExecutor> {
        &self.inner.executor
    }

    pub fn hub(&self) -> &EventHub {
        &self.inner.hub
    }

    pub fn model(&self) -> &ModelSlot {
        &self.inner.model
    }

    /// The MCP servers whose tools are registered.
    pub fn mcp(&self) -> &McpHub {
        &self.inner.mcp
    }

    pub fn skills(&self) -> &SkillStore {
        &self.inner.skills
    }

    pub fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    /// The agent settings the next turn starts with.
    pub fn agent_config(&self) -> AgentConfig {
        self.inner
            .agent_config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_agent_config(&self, config: AgentConfig) {
        *self
            .inner
            .agent_config
            .write()
            .unwrap_or_else(PoisonError::into_inner) = config;
    }

    /// The id of the turn running in `session_id`, if any.
    pub fn running_turn_id(&self, session_id: &str) -> Option<String> {
        lock(&self.inner.turns)
            .get(session_id)
            .map(|turn| turn.turn_id.clone())
    }

    /// How many turns are running, over all sessions.
    pub fn running_turns(&self) -> usize {
        lock(&self.inner.turns).len()
    }
}

impl std::fmt::Debug for ServerState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ServerState")
            .field("model", &self.inner.model)
            .field("options", &self.inner.options)
            .field("running_turns", &self.running_turns())
            .finish_non_exhaustive()
    }
}

/// Locks a mutex of the server state. Every critical section is a single map or queue update,
/// so a poisoned lock still guards consistent data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
