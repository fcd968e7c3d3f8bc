//! Why a cell could not start or a call into it ended.

use std::time::Duration;

/// Why a cell could not start, or why a call into it ended. Every variant but
/// [`CellError::Guest`] ends the cell: its instance is dropped and its slot freed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    /// The bundle is not a WebAssembly component wasmtime can compile.
    #[error("the bundle is not a component that can run: {message}")]
    Compile { message: String },
    /// The component imports an imurun interface its manifest does not grant.
    #[error("the component imports {import}, which its manifest does not grant")]
    NotGranted { import: String },
    /// The component imports something no cell is given (`wasi:http`, another package).
    #[error(
        "the component imports {import}, which cells are not given (outgoing HTTP is \
         imurun:cell/http, through the egress broker)"
    )]
    NotProvided { import: String },
    /// The component does not export the world's function.
    #[error("the component does not export `{export}` as the {world} world says: {message}")]
    Export {
        world: &'static str,
        export: &'static str,
        message: String,
    },
    /// Every slot of the pool is taken.
    #[error("every cell slot is in use ({slots}); try again when a session ends")]
    NoSlot { slots: u32 },
    /// The call used up its CPU allowance (fuel).
    #[error("the cell used up its CPU allowance ({cpu_ms} ms of fuel)")]
    CpuLimit { cpu_ms: u64 },
    /// The cell asked for more linear memory than its limit.
    #[error("the cell asked for more memory than its limit of {limit_bytes} bytes")]
    MemoryLimit { limit_bytes: usize },
    /// The call ran past its wall time.
    #[error("the cell ran past its time limit of {} ms", .timeout.as_millis())]
    Timeout { timeout: Duration },
    /// The guest trapped (a panic in the guest, an unreachable, a bad memory access).
    #[error("the cell stopped with a trap: {message}")]
    Trap { message: String },
    /// The cell already ended (after a trap or a limit); it takes no more calls.
    #[error("the cell has ended: {reason}")]
    Ended { reason: String },
    /// The guest itself answered with an error; the cell goes on.
    #[error("the cell answered with an error: {message}")]
    Guest { message: String },
    /// Something in the host failed (the engine, a host import panicking).
    #[error("the cell host failed: {message}")]
    Host { message: String },
}

impl CellError {
    /// A stable short name for events and logs: `cpu_limit`, `memory_limit`, `timeout`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            CellError::Compile { .. } => "compile",
            CellError::NotGranted { .. } => "not_granted",
            CellError::NotProvided { .. } => "not_provided",
            CellError::Export { .. } => "export",
            CellError::NoSlot { .. } => "no_slot",
            CellError::CpuLimit { .. } => "cpu_limit",
            CellError::MemoryLimit { .. } => "memory_limit",
            CellError::Timeout { .. } => "timeout",
            CellError::Trap { .. } => "trap",
            CellError::Ended { .. } => "ended",
            CellError::Guest { .. } => "guest",
            CellError::Host { .. } => "host",
        }
    }

    /// Whether the cell goes on after this error (only a guest's own error answer).
    pub fn ends_cell(&self) -> bool {
        !matches!(self, CellError::Guest { .. })
    }
}
