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

mod grants;
mod port;
mod session_host;
mod waiting;

pub use grants::{grant_for, imports_for, limits_for};
pub use port::IntakeContext;
pub(crate) use port::{Bound, SessionPort};
pub(crate) use session_host::SessionHost;

pub use waiting::{WaitingView, egress_request_hash};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use imurun_cell::broker::Broker;
use imurun_cell::{Cell, CellConfig, CellEngine, CellError};
use imurun_core::{BoxFuture, Model};
use tokio::sync::{oneshot, watch};

use crate::KeepError;
use crate::events::KeepEvent;
use crate::proposals::{self};

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
/// streams only, serialized once there.
pub trait KeepEvents: Send + Sync {
    /// Hands `event` to `user`'s streams.
    fn publish(&self, user: &str, event: KeepEvent);
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

    /// Where the cells' events go.
    pub(crate) fn events(&self) -> Arc<dyn KeepEvents> {
        Arc::clone(&self.events)
    }

    pub(crate) fn publish(&self, user: &str, event: KeepEvent) {
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

    /// The ids of `user`'s live sessions.
    pub(crate) fn sessions_of(&self, user: &str) -> Vec<String> {
        lock(&self.live)
            .values()
            .filter(|live| live.host.user == user)
            .map(|live| live.host.session_id.clone())
            .collect()
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
