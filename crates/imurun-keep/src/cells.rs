//! The host side of Keep sessions: each live session's cell, what the host does for each of
//! its imports, the egress approvals waiting for a person, and the events a session publishes.
//!
//! A session's authority comes from its agent's manifest and nothing else: the imports a cell
//! is linked with ([`imports_for`]), its limits ([`limits_for`]) and the broker's grant
//! ([`grant_for`]). What the cell hands back (replies, emitted proposals) is data: it is
//! validated, stored for the session's person and shown to them, never acted on.
//!
//! Taint: a session is tainted from the moment it receives untrusted content — an egress
//! answer, a tool result marked untrusted, a file the person uploaded. The mark is set in the
//! store once (with its source), published as `session.tainted`, changes the broker's rules for
//! the session (writes refused or asked about), and is copied onto every proposal made after.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use imurun_cell::broker::{Broker, EgressDecision, EgressHost, EgressUse};
use imurun_cell::egress::{self, Approval, CredentialRule, EgressGrant};
use imurun_cell::{
    Cell, CellConfig, CellEngine, CellError, CellHost, ChatMessage, HttpRequest, HttpResponse,
    Imports, Limits, WallClock,
};
use imurun_core::{BoxFuture, GenerateRequest, Message, Model, Role};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::KeepError;
use crate::manifest::{EgressMode, Manifest, MemoryAccess};
use crate::proposals::{self, EmitGrants};
use crate::service::KeepService;
use crate::service::refusals::Bound;

/// Live sessions one person may have at once; the next start is refused until one stops.
pub const SESSIONS_PER_USER_MAX: usize = 4;

/// Refusals journaled per session; past this a refusal is still an event, and the journal
/// holds one entry saying the rest were not written (a cell looping on a refused door must not
/// flood the journal).
pub const REFUSALS_JOURNALED_PER_SESSION_MAX: usize = 64;

/// The broker's refusals made before anything is sent and without any outside word in them:
/// every other refusal (a redirect, an encoding, a size, the network, and an address, which
/// quotes what a name server answered) may carry what upstream said, so it taints.
const REFUSED_BEFORE_SENDING: &[&str] = &[
    "url",
    "scheme",
    "host",
    "port",
    "method",
    "path",
    "header",
    "tainted",
    "approval",
    "credential",
];

/// Egress uses one message may ask its person about; past this a use that needs the person is
/// refused without asking (a cell must not hold its slot by asking in a loop while its clock
/// is stopped).
pub const APPROVALS_PER_MESSAGE_MAX: usize = 8;

/// The longest reply a cell's `model.generate` asks the model for, in tokens.
pub const GENERATE_TOKENS_MAX: usize = 512;

/// Where Keep's live events go. The server gives each person's events to that person's
/// streams only.
pub trait KeepEvents: Send + Sync {
    /// Hands `event` (a JSON object with a `type`) to `user`'s streams.
    fn publish(&self, user: &str, event: Value);
}

/// The model cells call through `model.generate`, once it is loaded: the same `Model` seam the
/// assistant uses.
pub type ModelSource = Arc<dyn Fn() -> Option<Arc<dyn Model>> + Send + Sync>;

/// What a tool answered a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolAnswer {
    pub text: String,
    /// The result holds content from outside (a fetched page, a file): the session is tainted.
    pub untrusted: bool,
}

/// Tools the host itself gives agents, for their cells' `tools.call`, beside the person's own
/// deployed tools: a name in [`CellTools::names`] is the host's tool, any other name (or
/// `u/<user>/<name>`) the person's.
pub trait CellTools: Send + Sync {
    /// Whether `agent` has any tools for `user`.
    fn offers(&self, user: &str, agent: &str) -> bool;

    /// The names of every tool the host gives any agent: a person's tool may not take one or
    /// look like one, and a call by one of these names goes to the host's tool.
    fn names(&self) -> Vec<String>;

    /// Runs `name` for `agent` in `user`'s session; an unknown tool is an error result.
    fn call<'a>(
        &'a self,
        user: &'a str,
        agent: &'a str,
        name: &'a str,
        args_json: &'a str,
    ) -> BoxFuture<'a, Result<ToolAnswer, String>>;
}

/// How the host runs cells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellsConfig {
    pub cell: CellConfig,
    /// Loopback ports the operator opened for tests and local services: a rule naming
    /// `127.0.0.1` or `::1` at one of these ports may reach it. Empty by default.
    pub loopback_ports: Vec<u16>,
    /// The port the host's own API listens on: no tool's egress may name it on a local
    /// address, whatever ports the operator opened.
    pub api_port: Option<u16>,
}

/// The ports a grant is built with ([`Cells::egress_ports`]).
#[derive(Debug, Clone, Copy)]
pub struct EgressPorts<'a> {
    /// Opened by the operator on loopback.
    pub loopback: &'a [u16],
    /// The host's own: never reached on loopback.
    pub host: &'a [u16],
}

/// The cells of every live session on this host.
pub struct Cells {
    engine: CellEngine,
    broker: Broker,
    loopback_ports: Vec<u16>,
    api_port: Option<u16>,
    events: Arc<dyn KeepEvents>,
    model: ModelSource,
    tools: Option<Arc<dyn CellTools>>,
    live: Mutex<HashMap<String, Arc<LiveSession>>>,
    /// Sessions being started, per person: counted with the live ones, so that parallel
    /// starts cannot take more slots than a person may hold.
    starting: Mutex<HashMap<String, usize>>,
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Calls of people's tools running on this host, by call: a revocation ends them.
    calls: Mutex<HashMap<u64, CallOfTool>>,
    next_call: AtomicU64,
}

/// One call of a person's tool in flight.
struct CallOfTool {
    user: String,
    name: String,
    end: watch::Sender<bool>,
}

/// A call of a person's tool, registered while it runs ([`Cells::start_call`]); `ended`
/// turns `true` when the tool is revoked.
pub(crate) struct CallInFlight {
    cells: Arc<Cells>,
    id: u64,
    pub(crate) ended: watch::Receiver<bool>,
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        lock(&self.cells.calls).remove(&self.id);
    }
}

impl std::fmt::Debug for Cells {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Cells")
            .field("loopback_ports", &self.loopback_ports)
            .field("free_slots", &self.engine.free_slots())
            .finish_non_exhaustive()
    }
}

impl Cells {
    /// Cells on a new engine, their requests through `broker`, their events to `events` and
    /// their `model.generate` to `model`.
    pub fn new(
        config: &CellsConfig,
        broker: Broker,
        events: Arc<dyn KeepEvents>,
        model: ModelSource,
    ) -> Result<Cells, KeepError> {
        let engine = CellEngine::new(config.cell).map_err(cell_error)?;
        Ok(Cells {
            engine,
            broker,
            loopback_ports: config.loopback_ports.clone(),
            api_port: config.api_port,
            events,
            model,
            tools: None,
            live: Mutex::new(HashMap::new()),
            starting: Mutex::new(HashMap::new()),
            waiting: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(0),
        })
    }

    /// Registers a call of `user`'s tool `name` until the returned guard is dropped.
    pub(crate) fn start_call(self: &Arc<Self>, user: &str, name: &str) -> CallInFlight {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (end, ended) = watch::channel(false);
        lock(&self.calls).insert(
            id,
            CallOfTool {
                user: user.to_owned(),
                name: name.to_owned(),
                end,
            },
        );
        CallInFlight {
            cells: Arc::clone(self),
            id,
            ended,
        }
    }

    /// The tools (person, name) with a call in flight on this host.
    pub(crate) fn tools_in_flight(&self) -> Vec<(String, String)> {
        let mut tools: Vec<(String, String)> = lock(&self.calls)
            .values()
            .map(|call| (call.user.clone(), call.name.clone()))
            .collect();
        tools.sort();
        tools.dedup();
        tools
    }

    /// Ends every call in flight of `user`'s tool `name`; how many there were.
    pub(crate) fn end_calls(&self, user: &str, name: &str) -> usize {
        let calls = lock(&self.calls);
        let ending: Vec<&CallOfTool> = calls
            .values()
            .filter(|call| call.user == user && call.name == name)
            .collect();
        for call in &ending {
            call.end.send_replace(true);
        }
        ending.len()
    }

    /// Gives agents the tools `tools` offers them.
    pub fn with_tools(mut self, tools: Arc<dyn CellTools>) -> Cells {
        self.tools = Some(tools);
        self
    }

    /// The ports a cell's egress is judged with: those the operator opened on loopback and
    /// the host's own (its API's), which no cell reaches on loopback whatever was opened.
    pub fn egress_ports(&self) -> EgressPorts<'_> {
        EgressPorts {
            loopback: &self.loopback_ports,
            host: self.api_port.as_slice(),
        }
    }

    /// The loopback ports the operator opened.
    pub fn loopback_ports(&self) -> &[u16] {
        &self.loopback_ports
    }

    /// Slots free for new cells.
    pub fn free_slots(&self) -> usize {
        self.engine.free_slots()
    }

    pub(crate) fn publish(&self, user: &str, event: Value) {
        self.events.publish(user, event);
    }

    pub(crate) fn engine(&self) -> &CellEngine {
        &self.engine
    }

    /// A place for one more of `user`'s sessions, unless they have `max` live or starting
    /// already. Held while the cell starts; the session is inserted before it is let go.
    pub(crate) fn reserve(&self, user: &str, max: usize) -> Option<Reservation<'_>> {
        let sessions = lock(&self.live);
        let mut starting = lock(&self.starting);
        let live = sessions
            .values()
            .filter(|other| other.host.user == user)
            .count();
        let pending = starting.entry(user.to_owned()).or_insert(0);
        if live + *pending >= max {
            return None;
        }
        *pending += 1;
        Some(Reservation {
            cells: self,
            user: user.to_owned(),
        })
    }

    /// Adds a started session (its place was reserved).
    pub(crate) fn insert(&self, live: Arc<LiveSession>) {
        lock(&self.live).insert(live.host.session_id.clone(), live);
    }

    /// `user`'s live session `id`.
    pub(crate) fn get(&self, user: &str, id: &str) -> Option<Arc<LiveSession>> {
        lock(&self.live)
            .get(id)
            .filter(|live| live.host.user == user)
            .cloned()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<LiveSession>> {
        lock(&self.live).remove(id)
    }

    /// Takes `user`'s waiting approval `id`, if there is one.
    pub(crate) fn take_waiting(&self, user: &str, id: &str) -> Option<Waiting> {
        let mut waiting = lock(&self.waiting);
        if waiting.get(id).is_some_and(|entry| entry.user == user) {
            waiting.remove(id)
        } else {
            None
        }
    }

    /// Puts a waiting approval back (a decision for it was refused).
    pub(crate) fn put_back(&self, id: String, entry: Waiting) {
        // A use that stopped waiting meanwhile is not put back; its wait ends under the same
        // lock, so the check and the insert cannot straddle it.
        let mut waiting = lock(&self.waiting);
        if !entry.answer.is_closed() {
            waiting.insert(id, entry);
        }
    }

    /// The ids of every use waiting here.
    pub(crate) fn waiting_ids(&self) -> Vec<String> {
        lock(&self.waiting).keys().cloned().collect()
    }
}

/// A place reserved for a session being started; let go when dropped.
pub(crate) struct Reservation<'a> {
    cells: &'a Cells,
    user: String,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut starting = lock(&self.cells.starting);
        if let Some(pending) = starting.get_mut(&self.user) {
            *pending = pending.saturating_sub(1);
            if *pending == 0 {
                starting.remove(&self.user);
            }
        }
    }
}

/// One live session: its cell and the host around it.
pub(crate) struct LiveSession {
    /// `None` once the cell has ended or was stopped.
    pub(crate) cell: Arc<tokio::sync::Mutex<Option<Cell>>>,
    /// Turned true by a stop: a call in flight is dropped (and with it the instance).
    pub(crate) stopped: watch::Sender<bool>,
    pub(crate) host: Arc<SessionHost>,
}

/// An egress use waiting for its person.
pub(crate) struct Waiting {
    pub(crate) user: String,
    pub(crate) view: WaitingView,
    pub(crate) answer: oneshot::Sender<bool>,
}

/// What a person is shown about a waiting use, and what a device decision must name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WaitingView {
    pub session_id: String,
    pub agent: String,
    pub agent_version: i64,
    pub method: String,
    pub url: String,
    /// The headers the cell set, as `[name, value]` (values cut at 1 000 characters and
    /// escaped for showing; the `request` hash covers them whole).
    pub headers: Vec<[String; 2]>,
    /// Whether the session is tainted (the person should know what may be steering it).
    pub tainted: bool,
    pub body_bytes: usize,
    pub body_sha256: String,
    /// The credentials the host would add, by name.
    pub credentials: Vec<String>,
    /// Only a decision signed on one of the person's devices approves it.
    pub device_signature: bool,
    /// The hashes a device decision names: `request` (the method, URL, headers, body's hash and
    /// the credentials the host would add) and `body`.
    pub hashes: BTreeMap<String, String>,
    pub asked_at_ms: i64,
}

/// The hash a device decision about an egress use names as `request`: the SHA-256 of the
/// canonical JSON `{"body_sha256", "credentials": [name, ...], "headers": [[name, value],
/// ...], "method", "url"}`, with the credentials the host would add and the headers the cell
/// set, whole and in the order it set them.
pub fn egress_request_hash(
    method: &str,
    url: &str,
    headers: &[[String; 2]],
    body_sha256: &str,
    credentials: &[String],
) -> String {
    let text = crate::canonical::canonicalize(&json!({
        "body_sha256": body_sha256,
        "credentials": credentials,
        "headers": headers,
        "method": method,
        "url": url,
    }));
    imurun_cell::sha256_hex(&text)
}

/// What the host does for one session's cell.
pub(crate) struct SessionHost {
    /// The service without its cells (no cycle through them).
    pub(crate) service: KeepService,
    pub(crate) cells: Weak<Cells>,
    pub(crate) session_id: String,
    pub(crate) user: String,
    pub(crate) agent: String,
    pub(crate) agent_version: i64,
    /// Whose memory entries `memory.read` answers: the session's agent's, for a tool too (a
    /// tool runs only in sessions of the agent that proposed it).
    memory_of: String,
    pub(crate) manifest: Manifest,
    pub(crate) grant: Option<EgressGrant>,
    /// Whose vault the grant's credentials come from: `operator` for an agent, `user:<name>`
    /// for a tool in the person's namespace.
    credential_owner: String,
    /// A deployed tool's cell: it hands back a result and proposes nothing.
    tool: bool,
    /// The taint's source once the session is tainted.
    pub(crate) taint: Mutex<Option<String>>,
    /// Refusals journaled for the session (shared with the cells of the tools it calls).
    refusals_journaled: Arc<AtomicUsize>,
    /// Refused egress uses of the request in flight, journaled when it returns.
    refused: Mutex<Vec<EgressDecision>>,
    /// The URL of the last use of the request in flight that reached upstream, or may have
    /// (allowed and sent, or refused only after it was sent): where untrusted content came
    /// from.
    last_sent: Mutex<Option<String>>,
    /// Uses the message in flight asked the person about (shared with the cells of the tools
    /// it calls).
    approvals_asked: Arc<AtomicUsize>,
}

impl SessionHost {
    pub(crate) fn new(
        service: KeepService,
        cells: Weak<Cells>,
        session_id: String,
        user: String,
        manifest: Manifest,
        ports: EgressPorts<'_>,
    ) -> SessionHost {
        let grant = grant_for(&manifest, ports);
        SessionHost {
            service,
            cells,
            session_id,
            user,
            agent: manifest.name.clone(),
            agent_version: manifest.version,
            memory_of: manifest.name.clone(),
            grant,
            manifest,
            credential_owner: "operator".to_owned(),
            tool: false,
            taint: Mutex::new(None),
            refusals_journaled: Arc::new(AtomicUsize::new(0)),
            refused: Mutex::new(Vec::new()),
            last_sent: Mutex::new(None),
            approvals_asked: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The host of a cell running the person's deployed tool `qualified` (`u/<user>/<name>`)
    /// for this session: the tool's own clamped manifest, the person's own connections, the
    /// session's taint, and egress in `ask` mode while the tool's taint is not cleared.
    pub(crate) fn for_tool(
        &self,
        qualified: String,
        manifest: Manifest,
        ask: bool,
        ports: EgressPorts<'_>,
    ) -> SessionHost {
        let mut grant = grant_for(&manifest, ports);
        if ask && let Some(grant) = grant.as_mut() {
            grant.mode = egress::EgressMode::Ask;
        }
        SessionHost {
            service: self.service.clone(),
            cells: self.cells.clone(),
            session_id: self.session_id.clone(),
            user: self.user.clone(),
            agent: qualified,
            agent_version: manifest.version,
            memory_of: self.memory_of.clone(),
            grant,
            manifest,
            credential_owner: format!("user:{}", self.user),
            tool: true,
            taint: Mutex::new(self.tainted_by()),
            refusals_journaled: Arc::clone(&self.refusals_journaled),
            refused: Mutex::new(Vec::new()),
            last_sent: Mutex::new(None),
            approvals_asked: Arc::clone(&self.approvals_asked),
        }
    }

    pub(crate) fn publish(&self, mut event: Value) {
        if let Some(fields) = event.as_object_mut() {
            fields.insert("session_id".into(), Value::from(self.session_id.clone()));
        }
        if let Some(cells) = self.cells.upgrade() {
            cells.publish(&self.user, event);
        }
    }

    /// A new message starts: its uses may ask the person again.
    pub(crate) fn new_message(&self) {
        self.approvals_asked.store(0, Ordering::Relaxed);
    }

    pub(crate) fn tainted_by(&self) -> Option<String> {
        lock(&self.taint).clone()
    }

    /// Marks the session tainted by `source` (once: the first source stays).
    pub(crate) async fn taint(&self, source: &str) -> Result<(), KeepError> {
        if lock(&self.taint).is_some() {
            return Ok(());
        }
        // The store decides which source was first; the session carries that one.
        let (newly, stored) = self
            .service
            .taint_session(&self.user, &self.session_id, source)
            .await?;
        *lock(&self.taint) = Some(stored.clone());
        if newly {
            self.publish(json!({"type": "session.tainted", "source": stored}));
        }
        Ok(())
    }

    /// Journals the refusal of a tool call by `rule` (within the session's bound) and gives
    /// back its reason, for the cell.
    pub(crate) async fn refused_call(&self, rule: &str, reason: String) -> String {
        self.journal_refusal("tool_call", rule, &reason).await;
        reason
    }

    /// Journals a refusal, up to [`REFUSALS_JOURNALED_PER_SESSION_MAX`] per session.
    async fn journal_refusal(&self, action: &str, rule: &str, reason: &str) {
        // The person's sessions together are bounded too: stopping and starting sessions
        // journals no more in a minute than one session would.
        let person = self.service.cell_refusal_bound(&self.user);
        let count = self.refusals_journaled.fetch_add(1, Ordering::Relaxed);
        let bound = |reason: &str| {
            json!({"action": action, "rule": "journal_bound", "session": self.session_id,
                   "reason": reason})
        };
        let detail = match person {
            Bound::EventsOnly => {
                self.publish(json!({"type": "refusal", "action": action, "rule": rule,
                                    "reason": cut_text(reason)}));
                return;
            }
            Bound::LastEntry => {
                bound("this person's sessions' further refusals this minute are events only")
            }
            Bound::Journal if count < REFUSALS_JOURNALED_PER_SESSION_MAX => {
                json!({"action": action, "rule": rule, "reason": cut_text(reason), "session": self.session_id})
            }
            Bound::Journal if count == REFUSALS_JOURNALED_PER_SESSION_MAX => {
                bound("this session's further refusals are events only")
            }
            Bound::Journal => return,
        };
        let subject = format!("session:{}", self.session_id);
        if let Err(error) = self
            .service
            .journal_as(
                &format!("agent:{}", self.agent),
                Some(&self.user),
                "refusal",
                &subject,
                detail,
            )
            .await
        {
            self.publish(json!({"type": "journal.failed", "reason": error.to_string()}));
        }
    }

    async fn journal_refused_egress(&self) {
        let refused = std::mem::take(&mut *lock(&self.refused));
        for decision in refused {
            if let Some(refusal) = &decision.refusal {
                let reason = format!(
                    "{} {}: {}",
                    decision.used.method, decision.used.url, refusal.reason
                );
                self.journal_refusal("egress", refusal.rule, &reason).await;
            }
        }
    }

    async fn propose(&self, kind: String, payload_json: String) -> Result<(), String> {
        if self.tool {
            return Err("a tool hands back its result; it proposes nothing".to_owned());
        }
        if kind == "tool.propose" {
            return self.propose_tool(&payload_json).await;
        }
        let grants = EmitGrants {
            memory: self.manifest.memory,
            card: self.manifest.card,
        };
        let refused = match proposals::validate(&kind, &payload_json, grants) {
            Ok(proposal) => {
                let taint = self.tainted_by();
                match self
                    .service
                    .store_proposal(self, &proposal, taint.as_deref())
                    .await
                {
                    Ok(view) => {
                        self.publish(json!({"type": "proposal.created", "proposal": view}));
                        return Ok(());
                    }
                    Err(error) => error,
                }
            }
            Err(error) => KeepError::from(error),
        };
        let reason = refused.to_string();
        self.publish(json!({
            "type": "proposal.refused", "kind": cut_text(&kind), "rule": refused.rule(),
            "reason": proposals::escape(&reason),
        }));
        self.journal_refusal("propose", refused.rule(), &reason)
            .await;
        Err(reason)
    }
}

impl SessionHost {
    async fn propose_tool(&self, payload_json: &str) -> Result<(), String> {
        let context = self
            .cells
            .upgrade()
            .map(|cells| crate::service::IntakeContext {
                loopback_ports: cells.loopback_ports.clone(),
                api_port: cells.api_port,
                host_tools: cells
                    .tools
                    .as_ref()
                    .map(|tools| tools.names())
                    .unwrap_or_default(),
            })
            .unwrap_or_default();
        let taint = self.tainted_by();
        let refused = match self
            .service
            .store_tool_proposal(self, payload_json, taint.as_deref(), &context)
            .await
        {
            Ok(review) => {
                self.publish(json!({"type": "proposal.created", "proposal": review}));
                return Ok(());
            }
            Err(error) => error,
        };
        let reason = refused.to_string();
        self.publish(json!({
            "type": "proposal.refused", "kind": "tool.propose", "rule": refused.rule(),
            "reason": proposals::escape(&cut_chars(&reason, 500)),
        }));
        self.journal_refusal("review", refused.rule(), &reason)
            .await;
        Err(reason)
    }
}

impl CellHost for SessionHost {
    fn generate(&self, messages: Vec<ChatMessage>) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let Some(cells) = self.cells.upgrade() else {
                return Err("the host is stopping".to_owned());
            };
            let Some(model) = (cells.model)() else {
                return Err("the model is not loaded on this host".to_owned());
            };
            let mut converted = Vec::with_capacity(messages.len());
            for message in messages {
                let role = match message.role.as_str() {
                    "system" => Role::System,
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    other => {
                        return Err(format!(
                            "a message's role is system, user or assistant, not {:?}",
                            cut_text(other)
                        ));
                    }
                };
                converted.push(Message::new(role, message.content));
            }
            let mut request = GenerateRequest::new(converted);
            request.max_tokens = Some(GENERATE_TOKENS_MAX);
            let mut ignore = |_: &str| {};
            model
                .generate(&request, &mut ignore)
                .await
                .map_err(|error| format!("the model failed: {error}"))
        })
    }

    fn send<'a>(
        &'a self,
        request: HttpRequest,
        clock: &'a WallClock,
    ) -> BoxFuture<'a, Result<HttpResponse, String>> {
        Box::pin(async move {
            let (Some(grant), Some(cells)) = (&self.grant, self.cells.upgrade()) else {
                return Err("this agent may not send requests".to_owned());
            };
            let tainted = self.tainted_by().is_some();
            *lock(&self.last_sent) = None;
            let sent = cells
                .broker
                .send(grant, tainted, request, self, clock)
                .await;
            self.journal_refused_egress().await;
            // Whatever came back from upstream — an answer, or a refusal made after a byte was
            // sent (a redirect refused, an answer too big) — taints the session before the
            // cell sees any of it.
            let contacted = lock(&self.last_sent).clone();
            if let Some(from) = contacted {
                let source = format!("an egress answer from {}", cut_text(&from));
                if let Err(error) = self.taint(&source).await {
                    return Err(format!("the session could not be marked tainted: {error}"));
                }
            }
            sent.map_err(|refusal| format!("refused ({}): {}", refusal.rule, refusal.reason))
        })
    }

    fn read_memory(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async move {
            if self.manifest.memory < MemoryAccess::Read {
                return Err("this agent may not read memory".to_owned());
            }
            let (texts, tainted) = self
                .service
                .memory_texts(&self.user, &self.memory_of)
                .await
                .map_err(|error| error.to_string())?;
            // An entry accepted from a tainted session carries what tainted it.
            if tainted {
                self.taint("a memory entry accepted from a tainted session")
                    .await
                    .map_err(|error| format!("the session could not be marked tainted: {error}"))?;
            }
            Ok(texts)
        })
    }

    fn call_tool(&self, name: String, args_json: String) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            if self.tool {
                return Err("a tool calls no other tools".to_owned());
            }
            let offered = self
                .cells
                .upgrade()
                .and_then(|cells| cells.tools.clone())
                .filter(|tools| tools.offers(&self.user, &self.agent));
            // A name the host gives agents is the host's tool; `u/<user>/<name>` and any
            // other name is the person's.
            let answer = match offered {
                Some(tools) if tools.names().contains(&name) => {
                    tools
                        .call(&self.user, &self.agent, &name, &args_json)
                        .await?
                }
                _ => self.service.call_user_tool(self, &name, &args_json).await?,
            };
            if answer.untrusted {
                let source = format!("an untrusted result from tool {}", cut_text(&name));
                self.taint(&source)
                    .await
                    .map_err(|error| format!("the session could not be marked tainted: {error}"))?;
            }
            Ok(answer.text)
        })
    }

    fn emit(&self, kind: String, payload_json: String) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(self.propose(kind, payload_json))
    }
}

impl EgressHost for SessionHost {
    fn approve<'a>(&'a self, used: &'a EgressUse, approval: Approval) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(cells) = self.cells.upgrade() else {
                return false;
            };
            if self.approvals_asked.fetch_add(1, Ordering::Relaxed) >= APPROVALS_PER_MESSAGE_MAX {
                self.publish(json!({
                    "type": "egress.not_asked", "method": cut_chars(&used.method, 16),
                    "url": cut_chars(&used.url, URL_CHARS_SHOWN),
                    "reason": format!(
                        "this message asked about {APPROVALS_PER_MESSAGE_MAX} uses already; \
                         the rest are refused without asking"
                    ),
                }));
                return false;
            }
            let Ok(id) = imurun_keep_rules::random::hex_id(self.service.random(), "ea-") else {
                return false;
            };
            let whole: Vec<[String; 2]> = used
                .headers
                .iter()
                .map(|header| [header.name.clone(), header.value.clone()])
                .collect();
            let hashes = BTreeMap::from([
                ("body".to_owned(), used.body_sha256.clone()),
                (
                    "request".to_owned(),
                    egress_request_hash(
                        &used.method,
                        &used.url,
                        &whole,
                        &used.body_sha256,
                        &used.credentials,
                    ),
                ),
            ]);
            let shown = whole
                .iter()
                .map(|[name, value]| {
                    let count = value.chars().count();
                    let mut shown = cut_chars(value, HEADER_VALUE_CHARS_SHOWN);
                    if count > HEADER_VALUE_CHARS_SHOWN {
                        shown.push_str(&format!("… ({count} characters)"));
                    }
                    [name.clone(), shown]
                })
                .collect();
            let view = WaitingView {
                session_id: self.session_id.clone(),
                agent: self.agent.clone(),
                agent_version: self.agent_version,
                method: used.method.clone(),
                url: used.url.clone(),
                headers: shown,
                tainted: self.tainted_by().is_some(),
                body_bytes: used.body_bytes,
                body_sha256: used.body_sha256.clone(),
                credentials: used.credentials.clone(),
                device_signature: approval == Approval::Device,
                hashes,
                asked_at_ms: crate::service::now_ms(),
            };
            // Whatever ends the wait (an answer, the timeout, a stop), the entry goes, here and
            // in the database. Made before the channel so that it is dropped after the
            // receiver: once it removes the entry, an answer being put back sees the wait
            // closed.
            let _forget = Forget {
                cells: &cells,
                id: &id,
                store: Some(self.service.store().clone()),
            };
            let (answer, answered) = oneshot::channel();
            lock(&cells.waiting).insert(
                id.clone(),
                Waiting {
                    user: self.user.clone(),
                    view: view.clone(),
                    answer,
                },
            );
            // Every host lists it and may take its person's answer (docs/keep/scaling.md).
            // Without the row only this host could: the use is refused rather than waiting
            // where an answer may never reach it.
            let row = imurun_store::EgressWaitRow {
                id: id.clone(),
                user_name: self.user.clone(),
                host: self.service.host_id().to_owned(),
                view: serde_json::to_string(&view).unwrap_or_default(),
                asked_at_ms: view.asked_at_ms,
                expires_at_ms: view.asked_at_ms.saturating_add(
                    self.grant.as_ref().map_or(0, |grant| {
                        i64::try_from(grant.approval_timeout.as_millis()).unwrap_or(i64::MAX)
                    }),
                ),
                state: "waiting".into(),
                answered_at_ms: None,
                decision: None,
                seal: None,
            };
            if let Err(error) = self.service.store().keep_egress_wait_insert(&row).await {
                tracing::warn!("an egress use could not be recorded as waiting: {error}");
                return false;
            }
            self.publish(json!({
                "type": "egress.approval_needed",
                "approval": waiting_json(&id, &view),
            }));
            answered.await.unwrap_or(false)
        })
    }

    fn credential<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            // An agent's credentials are the operator's, checked at deploy; a tool's are its
            // person's own connections.
            let secret = self
                .service
                .open_credential(&self.credential_owner, name)
                .await
                .ok()?;
            String::from_utf8(secret.expose().to_vec()).ok()
        })
    }

    fn decided(&self, decision: &EgressDecision) {
        let used = &decision.used;
        let approval = match decision.approval {
            Approval::None => "none",
            Approval::Person => "person",
            Approval::Device => "device",
        };
        let mut event = json!({
            "type": "egress.decided",
            "decision": if decision.refusal.is_none() { "allow" } else { "deny" },
            "method": cut_chars(&used.method, 16),
            "url": cut_chars(&used.url, URL_CHARS_SHOWN),
            "rule": used.rule,
            "credentials": used.credentials,
            "approval": approval,
        });
        let reached_upstream = decision
            .refusal
            .as_ref()
            .is_none_or(|refusal| !REFUSED_BEFORE_SENDING.contains(&refusal.rule));
        if reached_upstream {
            *lock(&self.last_sent) = Some(used.url.clone());
        }
        if let (Some(refusal), Some(fields)) = (&decision.refusal, event.as_object_mut()) {
            fields.insert("refused_by".into(), Value::from(refusal.rule));
            fields.insert("reason".into(), Value::from(cut_text(&refusal.reason)));
            lock(&self.refused).push(decision.clone());
        }
        self.publish(event);
    }
}

/// Removes a waiting approval when its wait ends, here and (in the background) from the
/// database.
struct Forget<'a> {
    cells: &'a Cells,
    id: &'a str,
    store: Option<imurun_store::Store>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.cells.waiting).remove(self.id);
        if let (Some(store), Ok(runtime)) =
            (self.store.take(), tokio::runtime::Handle::try_current())
        {
            let id = self.id.to_owned();
            runtime.spawn(async move {
                if let Err(error) = store.keep_egress_wait_delete(&id).await {
                    tracing::warn!("an ended egress wait stays listed until restart: {error}");
                }
            });
        }
    }
}

/// A waiting approval as events show it: its id and what the person is shown.
pub fn waiting_json(id: &str, view: &WaitingView) -> Value {
    let mut value = serde_json::to_value(view).unwrap_or_else(|_| json!({}));
    if let Some(fields) = value.as_object_mut() {
        fields.insert("id".into(), Value::from(id));
    }
    value
}

/// The imports a cell of `manifest` is linked with: the model with `model_socket`, HTTP unless
/// egress is `deny`, memory from `read` up, tools when the host offers the agent any.
pub fn imports_for(manifest: &Manifest, tools: bool) -> Imports {
    Imports {
        model: manifest.model_socket,
        http: manifest.egress.mode != EgressMode::Deny,
        memory: manifest.memory >= MemoryAccess::Read,
        tools,
    }
}

/// A cell's limits from its manifest's `resources`.
pub fn limits_for(manifest: &Manifest) -> Limits {
    let positive = |value: i64| u64::try_from(value).unwrap_or(0);
    Limits::from_resources(
        positive(manifest.resources.memory_mb),
        positive(manifest.resources.cpu_ms),
        positive(manifest.resources.timeout_ms),
    )
}

/// The broker's grant from a manifest; `None` when egress is `deny`.
pub fn grant_for(manifest: &Manifest, ports: EgressPorts<'_>) -> Option<EgressGrant> {
    let mode = match manifest.egress.mode {
        EgressMode::Deny => return None,
        EgressMode::Ask => egress::EgressMode::Ask,
        EgressMode::Allow => egress::EgressMode::Allow,
    };
    let rules = manifest
        .egress
        .rules
        .iter()
        .map(|rule| egress::EgressRule {
            scheme: rule.scheme.clone(),
            host: rule.host.clone(),
            port: rule.port,
            methods: rule.methods.clone(),
            path_prefix: rule.path_prefix.clone(),
            ask_when_tainted: rule.ask_when_tainted,
            device_signature: rule.device_signature,
        })
        .collect();
    let credentials = manifest
        .credentials
        .iter()
        .map(|credential| CredentialRule {
            name: credential.name.clone(),
            header: credential.header.clone(),
            host: credential.bind.host.clone(),
            port: credential.bind.port,
            methods: credential.bind.methods.clone(),
            path_prefix: credential.bind.path_prefix.clone(),
        })
        .collect();
    Some(EgressGrant {
        mode,
        rules,
        credentials,
        loopback_ports: ports.loopback.to_vec(),
        host_ports: ports.host.to_vec(),
        approval_timeout: Duration::from_secs(
            u64::try_from(manifest.approval_timeout_s).unwrap_or(0),
        ),
    })
}

/// A cell's error as Keep's.
pub(crate) fn cell_error(error: CellError) -> KeepError {
    KeepError::Cell {
        kind: error.kind(),
        message: error.to_string(),
    }
}

/// At most 200 characters of `text`, escaped as plain text, for events and the journal: what
/// a cell wrote never reaches them with a control or bidi character in it.
pub(crate) fn cut_text(text: &str) -> String {
    cut_chars(text, 200)
}

/// `text` escaped as plain text, then cut to at most `max` characters.
pub(crate) fn cut_chars(text: &str, max: usize) -> String {
    proposals::escape(text).chars().take(max).collect()
}

/// The most of a header value an approval shows; a longer one says how long it is.
const HEADER_VALUE_CHARS_SHOWN: usize = 1_000;

/// The longest URL an event shows (the broker refuses longer ones anyway).
const URL_CHARS_SHOWN: usize = 2_100;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the map whole, so a poisoned lock still holds a valid one.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
