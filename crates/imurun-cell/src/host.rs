//! What the host does for a cell: the [`CellHost`] trait, the records that cross the
//! boundary, and which imports a cell is given.

use imurun_core::BoxFuture;
use wasmtime::component::{ComponentType, Lift, Lower};

use crate::clock::WallClock;

/// An HTTP header, as `imurun:cell/types.header`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Lower)]
#[component(record)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// A cell's outgoing request, as `imurun:cell/types.request`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Lower)]
#[component(record)]
pub struct HttpRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
}

/// An upstream's answer, as `imurun:cell/types.response`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Lower)]
#[component(record)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
}

/// A chat message for the model socket, as `imurun:cell/types.message`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Lower)]
#[component(record)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// Which of imurun's interfaces a cell is linked with. `events` is always linked; the rest
/// only when the manifest grants them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Imports {
    /// `imurun:cell/model` (`model_socket: true`).
    pub model: bool,
    /// `imurun:cell/http` (egress `ask` or `allow`).
    pub http: bool,
    /// `imurun:cell/memory` (`memory: read` or `write`).
    pub memory: bool,
    /// `imurun:cell/tools` (the agent has tools).
    pub tools: bool,
}

impl Imports {
    /// Whether the interface `name` (with its version) is granted. `types` carries only
    /// records and goes with any of the others.
    pub fn grants(&self, name: &str) -> bool {
        use crate::interface::{EVENTS, HTTP, MEMORY, MODEL, TOOLS, TYPES};
        match name {
            MODEL => self.model,
            HTTP => self.http,
            MEMORY => self.memory,
            TOOLS => self.tools,
            EVENTS | TYPES => true,
            _ => false,
        }
    }
}

/// What the host does when a cell calls one of its imports. Every method answers the
/// guest: an `Err` is handed to the guest as its error value, never a trap. The methods of
/// imports a cell was not granted are never called (they are not linked).
pub trait CellHost: Send + Sync + 'static {
    /// `model.generate`.
    fn generate(&self, messages: Vec<ChatMessage>) -> BoxFuture<'_, Result<String, String>>;

    /// `http.send`: the egress broker's decision, and the request if it allows it. `clock`
    /// is the call's wall clock: hold [`WallClock::pause`] while waiting for a person.
    fn send<'a>(
        &'a self,
        request: HttpRequest,
        clock: &'a WallClock,
    ) -> BoxFuture<'a, Result<HttpResponse, String>>;

    /// `memory.read`.
    fn read_memory(&self) -> BoxFuture<'_, Result<Vec<String>, String>>;

    /// `tools.call`.
    fn call_tool(&self, name: String, args_json: String) -> BoxFuture<'_, Result<String, String>>;

    /// `events.emit`.
    fn emit(&self, kind: String, payload_json: String) -> BoxFuture<'_, Result<(), String>>;
}
