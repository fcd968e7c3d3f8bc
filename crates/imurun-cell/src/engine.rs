//! The engine every cell runs on, and one running cell.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, InstancePre, Linker, TypedFunc};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreContextMut,
    Trap,
};

use crate::clock::WallClock;
use crate::error::CellError;
use crate::host::{ChatMessage, HttpRequest, Imports};
use crate::interface;
use crate::state::CellState;

/// Fuel per millisecond of a manifest's `cpu_ms`. Fuel counts WebAssembly instructions
/// (most cost 1), so CPU is measured in work done, not in time: the same guest gets the same
/// allowance whatever else the machine is doing, and time the cell spends waiting on the host
/// (the model, the network, a person) costs it nothing. Five million instructions is about a
/// millisecond of a tight compiled loop on a current x86-64 core (`benches/cell.rs` measures
/// it); code that waits on memory gets more time from the same fuel, never less work.
pub const FUEL_PER_CPU_MS: u64 = 5_000_000;

/// How much fuel a cell burns between yields to the host's scheduler (about 0.2 ms), so a busy
/// cell never holds a thread and its wall clock can end it.
const FUEL_YIELD_INTERVAL: u64 = 1_000_000;

/// Memory the pool reserves per linear memory: the most any manifest may ask for (4 GiB).
const POOL_MEMORY_BYTES_MAX: usize = 4 << 30;

/// Which world a component implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum World {
    /// `agent`: exports `handle(message) -> result<list<string>, string>`.
    Agent,
    /// `tool`: exports `call(args-json) -> result<string, string>`.
    Tool,
}

impl World {
    pub fn as_str(self) -> &'static str {
        match self {
            World::Agent => "agent",
            World::Tool => "tool",
        }
    }

    fn export(self) -> &'static str {
        match self {
            World::Agent => "handle",
            World::Tool => "call",
        }
    }
}

/// A cell's limits, from its manifest's `resources`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory, in bytes: no memory of the cell may grow past this.
    pub memory_bytes: usize,
    /// CPU per call, in milliseconds of fuel ([`FUEL_PER_CPU_MS`]).
    pub cpu_ms: u64,
    /// Wall time per call, not counting time waiting for a person.
    pub timeout: Duration,
}

impl Limits {
    /// The limits of a manifest's `resources` (`memory_mb`, `cpu_ms`, `timeout_ms`).
    pub fn from_resources(memory_mb: u64, cpu_ms: u64, timeout_ms: u64) -> Self {
        let memory_bytes = usize::try_from(memory_mb.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX)
            .min(POOL_MEMORY_BYTES_MAX);
        Self {
            memory_bytes,
            cpu_ms,
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    fn fuel(&self) -> u64 {
        self.cpu_ms.saturating_mul(FUEL_PER_CPU_MS)
    }
}

/// How the engine is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellConfig {
    /// Cells that may run at once (the pool's slots).
    pub slots: u32,
    /// Compiled components kept; the oldest is dropped past this.
    pub cached_components_max: usize,
}

impl Default for CellConfig {
    fn default() -> Self {
        Self {
            slots: 64,
            cached_components_max: 64,
        }
    }
}

/// One wasmtime engine with the pooling allocator, a cache of compiled components by bundle
/// hash, and a linker per set of granted imports.
pub struct CellEngine {
    engine: Engine,
    config: CellConfig,
    slots: Arc<Semaphore>,
    linkers: Mutex<HashMap<Imports, Arc<Linker<CellState>>>>,
    cache: Mutex<ComponentCache>,
}

impl std::fmt::Debug for CellEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellEngine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct ComponentCache {
    /// Bundle hash → the compiled component and its pre-instantiations per import set.
    entries: HashMap<String, Cached>,
    /// Hashes, oldest first.
    order: Vec<String>,
}

struct Cached {
    component: Component,
    pres: HashMap<(World, Imports), InstancePre<CellState>>,
}

impl CellEngine {
    /// An engine with `config`. Fails only when wasmtime cannot set up the pool (the
    /// process may not reserve the address space it needs).
    pub fn new(config: CellConfig) -> Result<Self, CellError> {
        let slots = config.slots.max(1);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(16))
            .max_core_instances_per_component(16)
            .total_memories(slots.saturating_mul(2))
            .max_memories_per_component(2)
            .total_tables(slots.saturating_mul(16))
            .total_stacks(slots)
            .max_memory_size(POOL_MEMORY_BYTES_MAX);
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .consume_fuel(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm).map_err(|error| CellError::Host {
            message: format!("the WebAssembly engine could not start: {error}"),
        })?;
        Ok(Self {
            engine,
            config: CellConfig { slots, ..config },
            slots: Arc::new(Semaphore::new(slots as usize)),
            linkers: Mutex::new(HashMap::new()),
            cache: Mutex::new(ComponentCache::default()),
        })
    }

    pub fn config(&self) -> CellConfig {
        self.config
    }

    /// Slots free right now.
    pub fn free_slots(&self) -> usize {
        self.slots.available_permits()
    }

    /// Whether the component with bundle hash `sha256` is compiled and cached.
    pub fn is_cached(&self, sha256: &str) -> bool {
        lock(&self.cache).entries.contains_key(sha256)
    }

    /// Drops every prepared instantiation (the linking of a component to a set of grants),
    /// keeping the compiled components: the next start of each is a cold one.
    pub fn clear_prepared(&self) {
        for cached in lock(&self.cache).entries.values_mut() {
            cached.pres.clear();
        }
    }

    /// Compiles `bytes` (whose SHA-256 must be `sha256`, in lower-case hex) unless it is
    /// cached already.
    pub async fn prepare(&self, sha256: &str, bytes: &[u8]) -> Result<(), CellError> {
        if self.is_cached(sha256) {
            return Ok(());
        }
        let actual = sha256_hex(bytes);
        if actual != sha256 {
            return Err(CellError::Compile {
                message: format!("the bundle's SHA-256 is {actual}, not {sha256}"),
            });
        }
        let engine = self.engine.clone();
        let owned = bytes.to_vec();
        let component = tokio::task::spawn_blocking(move || Component::new(&engine, &owned))
            .await
            .map_err(|error| CellError::Host {
                message: format!("compiling stopped: {error}"),
            })?
            .map_err(|error| CellError::Compile {
                message: first_line(&error),
            })?;
        let mut cache = lock(&self.cache);
        if !cache.entries.contains_key(sha256) {
            while cache.order.len() >= self.config.cached_components_max.max(1) {
                let oldest = cache.order.remove(0);
                cache.entries.remove(&oldest);
            }
            cache.order.push(sha256.to_owned());
            cache.entries.insert(
                sha256.to_owned(),
                Cached {
                    component,
                    pres: HashMap::new(),
                },
            );
        }
        Ok(())
    }

    /// Starts a cell: the component `sha256` (compiled from `bytes` if not cached),
    /// implementing `world`, linked with `imports`, within `limits`, its imports answered by
    /// `host`. Refused when the component imports anything it was not granted.
    pub async fn start(
        &self,
        sha256: &str,
        bytes: &[u8],
        world: World,
        imports: Imports,
        limits: Limits,
        host: Arc<dyn crate::CellHost>,
    ) -> Result<Cell, CellError> {
        let permit =
            Arc::clone(&self.slots)
                .try_acquire_owned()
                .map_err(|_| CellError::NoSlot {
                    slots: self.config.slots,
                })?;
        self.prepare(sha256, bytes).await?;
        let pre = self.instance_pre(sha256, world, imports)?;
        let clock = Arc::new(WallClock::starting(limits.timeout));
        let mut store = Store::new(
            &self.engine,
            CellState::new(host, limits.memory_bytes, Arc::clone(&clock)),
        );
        store.limiter(|state| &mut state.limiter);
        set_fuel(&mut store, limits)?;
        let instantiated = run_on_clock(&clock, pre.instantiate_async(&mut store)).await;
        let instance = match instantiated {
            None => {
                return Err(CellError::Timeout {
                    timeout: limits.timeout,
                });
            }
            Some(Err(error)) => return Err(ended(&store, &error, limits)),
            Some(Ok(instance)) => instance,
        };
        let export = world.export();
        let export_error = |message: String| CellError::Export {
            world: world.as_str(),
            export,
            message,
        };
        let entry = match world {
            World::Agent => Entry::Agent(
                instance
                    .get_typed_func::<(String,), (Result<Vec<String>, String>,)>(&mut store, export)
                    .map_err(|error| export_error(first_line(&error)))?,
            ),
            World::Tool => Entry::Tool(
                instance
                    .get_typed_func::<(String,), (Result<String, String>,)>(&mut store, export)
                    .map_err(|error| export_error(first_line(&error)))?,
            ),
        };
        Ok(Cell {
            store: Some(store),
            entry,
            limits,
            clock,
            ended: None,
            slot: Some(permit),
            running: None,
        })
    }

    fn instance_pre(
        &self,
        sha256: &str,
        world: World,
        imports: Imports,
    ) -> Result<InstancePre<CellState>, CellError> {
        let component = {
            let cache = lock(&self.cache);
            let cached = cache.entries.get(sha256).ok_or_else(|| CellError::Host {
                message: "the compiled component left the cache while starting".to_owned(),
            })?;
            if let Some(pre) = cached.pres.get(&(world, imports)) {
                return Ok(pre.clone());
            }
            cached.component.clone()
        };
        check_imports(&self.engine, &component, imports)?;
        let linker = self.linker(imports)?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|error| CellError::NotProvided {
                import: first_line(&error),
            })?;
        if let Some(cached) = lock(&self.cache).entries.get_mut(sha256) {
            cached.pres.insert((world, imports), pre.clone());
        }
        Ok(pre)
    }

    fn linker(&self, imports: Imports) -> Result<Arc<Linker<CellState>>, CellError> {
        if let Some(linker) = lock(&self.linkers).get(&imports) {
            return Ok(Arc::clone(linker));
        }
        let linker =
            Arc::new(
                build_linker(&self.engine, imports).map_err(|error| CellError::Host {
                    message: format!("linking the host interface failed: {error}"),
                })?,
            );
        lock(&self.linkers).insert(imports, Arc::clone(&linker));
        Ok(linker)
    }
}

/// Refuses a component that imports an imurun interface it was not granted, or anything
/// outside WASI preview 2 and imurun's package, naming the import.
fn check_imports(
    engine: &Engine,
    component: &Component,
    imports: Imports,
) -> Result<(), CellError> {
    for (name, item) in component.component_type().imports(engine) {
        if !matches!(item.ty, ComponentItem::ComponentInstance(_)) {
            return Err(CellError::NotProvided {
                import: name.to_owned(),
            });
        }
        if name.starts_with(interface::PREFIX) {
            if !imports.grants(name) {
                return Err(CellError::NotGranted {
                    import: name.to_owned(),
                });
            }
        } else if !is_linked_wasi(name) {
            return Err(CellError::NotProvided {
                import: name.to_owned(),
            });
        }
    }
    Ok(())
}

/// WASI preview 2's interfaces a cell is linked with (all with nothing behind them).
fn is_linked_wasi(name: &str) -> bool {
    const LINKED: &[&str] = &[
        "wasi:io/",
        "wasi:clocks/",
        "wasi:random/",
        "wasi:cli/",
        "wasi:filesystem/",
        "wasi:sockets/",
    ];
    LINKED.iter().any(|prefix| name.starts_with(prefix)) && name.contains("@0.2.")
}

fn build_linker(engine: &Engine, imports: Imports) -> wasmtime::Result<Linker<CellState>> {
    let mut linker = Linker::<CellState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    {
        let mut events = linker.instance(interface::EVENTS)?;
        events.func_wrap_async(
            "emit",
            |store: StoreContextMut<'_, CellState>, (kind, payload): (String, String)| {
                let host = Arc::clone(&store.data().host);
                Box::new(async move { Ok((host.emit(kind, payload).await,)) })
            },
        )?;
    }
    if imports.model {
        let mut model = linker.instance(interface::MODEL)?;
        model.func_wrap_async(
            "generate",
            |store: StoreContextMut<'_, CellState>, (messages,): (Vec<ChatMessage>,)| {
                let host = Arc::clone(&store.data().host);
                Box::new(async move { Ok((host.generate(messages).await,)) })
            },
        )?;
    }
    if imports.http {
        let mut http = linker.instance(interface::HTTP)?;
        http.func_wrap_async(
            "send",
            |store: StoreContextMut<'_, CellState>, (request,): (HttpRequest,)| {
                let host = Arc::clone(&store.data().host);
                let clock = Arc::clone(&store.data().clock);
                Box::new(async move { Ok((host.send(request, &clock).await,)) })
            },
        )?;
    }
    if imports.memory {
        let mut memory = linker.instance(interface::MEMORY)?;
        memory.func_wrap_async("read", |store: StoreContextMut<'_, CellState>, (): ()| {
            let host = Arc::clone(&store.data().host);
            Box::new(async move { Ok((host.read_memory().await,)) })
        })?;
    }
    if imports.tools {
        let mut tools = linker.instance(interface::TOOLS)?;
        tools.func_wrap_async(
            "call",
            |store: StoreContextMut<'_, CellState>, (name, args): (String, String)| {
                let host = Arc::clone(&store.data().host);
                Box::new(async move { Ok((host.call_tool(name, args).await,)) })
            },
        )?;
    }
    Ok(linker)
}

enum Entry {
    Agent(TypedFunc<(String,), (Result<Vec<String>, String>,)>),
    Tool(TypedFunc<(String,), (Result<String, String>,)>),
}

/// One running cell: an instance in a pool slot. A trap, a limit or a panic ends it (its
/// store is dropped and its slot freed); a guest's own error answer does not.
pub struct Cell {
    store: Option<Store<CellState>>,
    entry: Entry,
    limits: Limits,
    clock: Arc<WallClock>,
    ended: Option<CellError>,
    /// Held while the instance lives; released when the cell ends or is dropped.
    slot: Option<OwnedSemaphorePermit>,
    /// The task of a call that was dropped before it answered: aborted, and ended (its store
    /// with it) by [`Cell::end`], or at the next yield once the cell is dropped.
    running: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cell")
            .field("limits", &self.limits)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Cell {
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Why the cell ended, if it did.
    pub fn ended(&self) -> Option<&CellError> {
        self.ended.as_ref()
    }

    /// Ends the cell and waits, up to [`END_WAIT`], until its instance is gone: a call dropped
    /// in flight was aborted, but its task (and the store in it) ends only at the guest's next
    /// yield. Only then is the slot free, so the next cell never finds the pool still full.
    /// False when the task was still running at the end of the wait (its slot is let go
    /// anyway: the caller says so).
    pub async fn end(mut self) -> bool {
        let Some(task) = self.running.take() else {
            return true;
        };
        task.abort();
        tokio::time::timeout(END_WAIT, task).await.is_ok()
    }

    /// An agent's `handle(message)`: its replies.
    pub async fn handle(&mut self, message: &str) -> Result<Vec<String>, CellError> {
        let Entry::Agent(func) = &self.entry else {
            return Err(CellError::Export {
                world: "tool",
                export: "handle",
                message: "a tool has no `handle`".to_owned(),
            });
        };
        let func = *func;
        let message = message.to_owned();
        self.run(move |mut store| async move {
            let result = func.call_async(&mut store, (message,)).await;
            (store, result.map(|(answer,)| answer))
        })
        .await
    }

    /// A tool's `call(args-json)`: its result.
    pub async fn call(&mut self, args_json: &str) -> Result<String, CellError> {
        let Entry::Tool(func) = &self.entry else {
            return Err(CellError::Export {
                world: "agent",
                export: "call",
                message: "an agent has no `call`".to_owned(),
            });
        };
        let func = *func;
        let args = args_json.to_owned();
        self.run(move |mut store| async move {
            let result = func.call_async(&mut store, (args,)).await;
            (store, result.map(|(answer,)| answer))
        })
        .await
    }

    /// Runs one call on its own task (so a panic in a host import ends only this cell), under
    /// the call's fuel and wall clock.
    async fn run<R, F, Fut>(&mut self, call: F) -> Result<R, CellError>
    where
        R: Send + 'static,
        F: FnOnce(Store<CellState>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = (Store<CellState>, wasmtime::Result<Result<R, String>>)>
            + Send
            + 'static,
    {
        if let Some(reason) = &self.ended {
            return Err(CellError::Ended {
                reason: reason.to_string(),
            });
        }
        let Some(mut store) = self.store.take() else {
            return Err(CellError::Ended {
                reason: "it is gone".to_owned(),
            });
        };
        let limits = self.limits;
        set_fuel(&mut store, limits)?;
        self.clock.restart(limits.timeout);
        let clock = Arc::clone(&self.clock);
        // The answer comes back over a channel, and the task stays the cell's: if this call is
        // dropped, the task is aborted (the guest stops at its next yield and its store goes
        // with it) and `end` can wait for it.
        let (answer, answered) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let _ = answer.send(run_on_clock(&clock, call(store)).await);
        });
        let abort = AbortOnDrop(task.abort_handle());
        self.running = Some(task);
        let joined = match answered.await {
            Ok(output) => Ok(output),
            // The task ended without answering: it panicked (or was cancelled).
            Err(_) => match self.running.take() {
                Some(task) => task.await.map(|()| None),
                None => Ok(None),
            },
        };
        self.running = None;
        drop(abort);
        let outcome = match joined {
            Err(join) => Err(CellError::Host {
                message: if join.is_panic() {
                    "a host import panicked; the cell was stopped".to_owned()
                } else {
                    "the cell's task was cancelled".to_owned()
                },
            }),
            Ok(None) => Err(CellError::Timeout {
                timeout: limits.timeout,
            }),
            Ok(Some((store, Err(error)))) => Err(ended(&store, &error, limits)),
            Ok(Some((store, Ok(answer)))) => {
                self.store = Some(store);
                answer.map_err(|message| CellError::Guest { message })
            }
        };
        if let Err(error) = &outcome
            && error.ends_cell()
        {
            self.ended = Some(error.clone());
            self.store = None;
            // The instance is gone: its slot is free for the next cell now.
            self.slot = None;
        }
        outcome
    }
}

/// How long [`Cell::end`] waits for a stopped call's task to end.
pub const END_WAIT: Duration = Duration::from_secs(5);

/// Aborts a task when dropped (a call dropped before it answered).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        if let Some(task) = &self.running {
            task.abort();
        }
    }
}

/// Awaits `future` until `clock` runs out; `None` when it did.
async fn run_on_clock<F: std::future::Future>(clock: &WallClock, future: F) -> Option<F::Output> {
    tokio::pin!(future);
    loop {
        let check = tokio::time::Instant::from_std(clock.next_check());
        tokio::select! {
            biased;
            output = &mut future => return Some(output),
            () = tokio::time::sleep_until(check) => {
                if clock.expired() {
                    return None;
                }
            }
        }
    }
}

fn set_fuel(store: &mut Store<CellState>, limits: Limits) -> Result<(), CellError> {
    store
        .set_fuel(limits.fuel())
        .and_then(|()| store.fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL)))
        .map_err(|error| CellError::Host {
            message: format!("setting the cell's fuel failed: {error}"),
        })
}

/// The error a failed call into the cell ends it with.
fn ended(store: &Store<CellState>, error: &wasmtime::Error, limits: Limits) -> CellError {
    if store.data().limiter.memory_refused {
        return CellError::MemoryLimit {
            limit_bytes: limits.memory_bytes,
        };
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CellError::CpuLimit {
            cpu_ms: limits.cpu_ms,
        },
        Some(trap) => CellError::Trap {
            message: trap.to_string(),
        },
        None => CellError::Trap {
            message: first_line(error),
        },
    }
}

fn first_line(error: &wasmtime::Error) -> String {
    error
        .to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The SHA-256 of `bytes` in lower-case hex: how bundles are named, and how an approval names
/// a request's body.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
