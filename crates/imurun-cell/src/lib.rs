//! Keep mode's sealed cells: WebAssembly components run on wasmtime with no ambient
//! authority.
//!
//! - [`CellEngine`]: one wasmtime engine for the process — the pooling allocator (a fixed
//!   number of slots, each zeroed before its next tenant), compiled components cached by
//!   bundle hash, and a linker per set of granted imports;
//! - [`Cell`]: one instance (one session's agent, or one tool call) with its limits: linear
//!   memory, CPU as fuel, and wall time;
//! - [`CellHost`]: what the host does when a cell calls an import. The cell crate is
//!   mechanism only: which imports are linked ([`Imports`]) and what the host does for each
//!   call are decided by the caller from the pack's manifest.
//!
//! WASI preview 2 is linked with nothing behind it: no preopened folders, no environment, no
//! arguments, no sockets and no name lookups (a guest cannot resolve names at all), stdin
//! closed and stdout and stderr discarded. The clocks and random numbers WASI requires are
//! there. `wasi:http` is not linked: a cell's outgoing HTTP is `imurun:cell/http`, which goes
//! through the host's egress broker and nowhere else.

pub mod broker;
mod clock;
pub mod egress;
mod engine;
mod error;
mod host;
mod state;

pub use clock::{PauseGuard, WallClock};
pub use engine::{
    Cell, CellConfig, CellEngine, END_WAIT, FUEL_PER_CPU_MS, Limits, World, sha256_hex,
};
pub use error::CellError;
pub use host::{CellHost, ChatMessage, Header, HttpRequest, HttpResponse, Imports};
/// What a broker is built with: this machine's own addresses (refused by every door) and the
/// lookup seam, so that a host need not depend on the network crate itself.
pub use imurun_net::{Lookup, NetError, own_addresses};

/// The WIT package the cells' worlds come from (`wit/cell.wit`).
pub const WIT: &str = include_str!("../wit/cell.wit");

/// The interface names, as a component imports them.
pub mod interface {
    pub const MODEL: &str = "imurun:cell/model@0.1.0";
    pub const HTTP: &str = "imurun:cell/http@0.1.0";
    pub const MEMORY: &str = "imurun:cell/memory@0.1.0";
    pub const TOOLS: &str = "imurun:cell/tools@0.1.0";
    pub const EVENTS: &str = "imurun:cell/events@0.1.0";
    pub const TYPES: &str = "imurun:cell/types@0.1.0";
    /// The prefix every imurun interface shares.
    pub const PREFIX: &str = "imurun:cell/";
}
