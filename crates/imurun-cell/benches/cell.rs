//! What a Keep cell costs: starting one from a compiled component, cold (linking it to its
//! grants first) and warm (linking cached: an instantiation in a pooled slot), a call into the
//! cell with and without one host import, and how much fuel a millisecond of CPU burns.
//!
//! `cargo bench --workspace --bench cell`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use imurun_cell::{
    CellConfig, CellEngine, CellHost, ChatMessage, HttpRequest, HttpResponse, Imports, Limits,
    WallClock, World,
};
use imurun_core::BoxFuture;
use imurun_testkit::Guest;

struct QuietHost;

impl CellHost for QuietHost {
    fn generate(&self, _: Vec<ChatMessage>) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async { Ok(String::new()) })
    }
    fn send<'a>(
        &'a self,
        _: HttpRequest,
        _: &'a WallClock,
    ) -> BoxFuture<'a, Result<HttpResponse, String>> {
        Box::pin(async { Err("no".to_owned()) })
    }
    fn read_memory(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn call_tool(&self, _: String, _: String) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async { Ok(String::new()) })
    }
    fn emit(&self, _: String, _: String) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = <sha2::Sha256 as sha2::Digest>::digest(bytes);
    digest.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

fn cells(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let engine = CellEngine::new(CellConfig {
        slots: 8,
        ..CellConfig::default()
    })
    .expect("engine");
    let host: Arc<dyn CellHost> = Arc::new(QuietHost);
    let limits = Limits::from_resources(64, 1_000, 10_000);
    let bytes = Guest::Scripted.bytes();
    let hash = sha256_hex(&bytes);
    let start = || {
        runtime
            .block_on(engine.start(
                &hash,
                &bytes,
                World::Agent,
                Imports::default(),
                limits,
                Arc::clone(&host),
            ))
            .expect("start")
    };
    drop(start());

    let mut group = c.benchmark_group("cell");
    group.bench_function("start, cold (cached component, linked first)", |b| {
        b.iter(|| {
            engine.clear_prepared();
            drop(start());
        });
    });
    group.bench_function("start, warm (cached component and linking)", |b| {
        b.iter(|| drop(start()));
    });
    let mut cell = start();
    group.bench_function("call, no import (baseline)", |b| {
        b.iter(|| {
            runtime
                .block_on(cell.handle(r#"{"reply": "x"}"#))
                .expect("call")
        });
    });
    group.bench_function("call, one host import (events.emit)", |b| {
        b.iter(|| {
            runtime
                .block_on(cell.handle(r#"{"emit": {"type": "plan"}}"#))
                .expect("call")
        });
    });
    group.finish();
    drop(cell);

    // How long the fuel of one `cpu_ms` lasts here: spin until 200 ms of fuel runs out.
    let spin_limits = Limits::from_resources(64, 200, 60_000);
    let mut times = Vec::new();
    for _ in 0..5 {
        let mut cell = runtime
            .block_on(engine.start(
                &hash,
                &bytes,
                World::Agent,
                Imports::default(),
                spin_limits,
                Arc::clone(&host),
            ))
            .expect("start");
        let started = Instant::now();
        let _ = runtime.block_on(cell.handle(r#"{"spin": true}"#));
        times.push(started.elapsed());
    }
    times.sort();
    let median: Duration = times[times.len() / 2];
    println!(
        "fuel: 200 cpu_ms of fuel ({} units) lasted {:.1} ms of wall time (median of 5): \
         1 cpu_ms ≈ {:.2} ms here",
        200 * imurun_cell::FUEL_PER_CPU_MS,
        median.as_secs_f64() * 1_000.0,
        median.as_secs_f64() * 1_000.0 / 200.0,
    );
}

criterion_group!(benches, cells);
criterion_main!(benches);
