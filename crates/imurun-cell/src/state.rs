//! What a cell's store holds: WASI with nothing behind it, the memory limiter, the host and
//! the wall clock.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Result};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::clock::WallClock;
use crate::host::CellHost;

/// Instances, tables and memories a cell's store may create (a Rust component has a few
/// core instances and one or two memories).
const INSTANCES_MAX: usize = 32;
const TABLES_MAX: usize = 32;
const MEMORIES_MAX: usize = 4;
/// Table elements any one table may hold.
const TABLE_ELEMENTS_MAX: usize = 100_000;

pub(crate) struct CellState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: CellLimiter,
    pub(crate) host: Arc<dyn CellHost>,
    pub(crate) clock: Arc<WallClock>,
}

impl CellState {
    pub(crate) fn new(host: Arc<dyn CellHost>, memory_bytes: usize, clock: Arc<WallClock>) -> Self {
        Self {
            wasi: sealed_wasi(),
            table: ResourceTable::new(),
            limiter: CellLimiter {
                memory_bytes,
                memory_used: 0,
                memory_refused: false,
            },
            host,
            clock,
        }
    }
}

impl WasiView for CellState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// WASI with nothing behind it: no preopened folders, no environment or arguments, stdin
/// closed, stdout and stderr discarded, no TCP, no UDP, no name lookups, and every socket
/// address refused.
fn sealed_wasi() -> WasiCtx {
    WasiCtx::builder()
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }))
        .build()
}

/// The cell's memory limit, over all its linear memories together. A refused growth traps at once (rather than letting the guest
/// see a failed `memory.grow`), and is remembered so the call ends as a memory limit, not a
/// generic trap.
pub(crate) struct CellLimiter {
    /// The limit for all of the cell's linear memories together.
    pub(crate) memory_bytes: usize,
    /// What its memories hold now, together.
    pub(crate) memory_used: usize,
    pub(crate) memory_refused: bool,
}

impl ResourceLimiter for CellLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        let total = self
            .memory_used
            .saturating_sub(current)
            .saturating_add(desired);
        if total > self.memory_bytes {
            self.memory_refused = true;
            wasmtime::bail!(
                "the cell's memory limit is {} bytes; its memories would hold {total}",
                self.memory_bytes
            );
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        Ok(desired <= TABLE_ELEMENTS_MAX)
    }

    fn instances(&self) -> usize {
        INSTANCES_MAX
    }

    fn tables(&self) -> usize {
        TABLES_MAX
    }

    fn memories(&self) -> usize {
        MEMORIES_MAX
    }
}
