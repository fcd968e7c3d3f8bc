//! What a Keep cell costs: starting one from a compiled component, cold (linking it to its
//! grants first) and warm (linking cached: an instantiation in a pooled slot), a call into the
//! cell with and without one host import, how much fuel a millisecond of CPU burns, and the
//! egress broker's cost over a direct request to a loopback upstream.
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
    let hash = imurun_cell::sha256_hex(&bytes);
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

/// A keep-alive HTTP/1.1 server on loopback answering every request with a short body.
async fn loopback_upstream() -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 8192];
                let mut pending = Vec::new();
                loop {
                    let Ok(read) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buffer[..read]);
                    while let Some(end) =
                        pending.windows(4).position(|window| window == b"\r\n\r\n")
                    {
                        pending.drain(..end + 4);
                        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        if stream.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

struct AllowAll;

impl imurun_cell::broker::EgressHost for AllowAll {
    fn approve<'a>(
        &'a self,
        _: &'a imurun_cell::broker::EgressUse,
        _: imurun_cell::egress::Approval,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async { true })
    }
    fn credential<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }
    fn decided(&self, _: &imurun_cell::broker::EgressDecision) {}
}

/// The broker's cost over the same request sent directly: both over kept-alive connections to
/// one loopback upstream, so the difference is the rules, the checked lookup and the answer's
/// handling.
fn broker(c: &mut Criterion) {
    use imurun_cell::broker::{Broker, BrokerConfig};
    use imurun_cell::egress::{EgressGrant, EgressMode, EgressRule};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let port = runtime.block_on(loopback_upstream());
    let url = format!("http://localhost:{port}/api/items");
    let direct = reqwest_client();
    let broker = Broker::new(BrokerConfig::default(), &[]).expect("broker");
    let grant = EgressGrant {
        mode: EgressMode::Allow,
        rules: vec![EgressRule {
            scheme: "http".to_owned(),
            host: "localhost".to_owned(),
            port,
            methods: vec!["GET".to_owned()],
            path_prefix: "/api".to_owned(),
            ask_when_tainted: false,
            device_signature: false,
        }],
        credentials: Vec::new(),
        loopback_ports: vec![port],
        host_ports: Vec::new(),
        approval_timeout: Duration::from_secs(1),
    };
    let clock = WallClock::starting(Duration::from_secs(3_600));
    let request = || HttpRequest {
        method: "GET".to_owned(),
        url: url.clone(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let mut group = c.benchmark_group("egress");
    group.bench_function("direct loopback request (baseline)", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let response = direct.client().get(&url).send().await.expect("direct");
                response.bytes().await.expect("body")
            })
        });
    });
    group.bench_function("through the broker", |b| {
        b.iter(|| {
            runtime
                .block_on(broker.send(&grant, false, request(), &AllowAll, &clock))
                .expect("brokered")
        });
    });
    group.finish();
}

/// The same HTTP client a direct request would use, without the broker: a door that may reach
/// any address.
fn reqwest_client() -> imurun_net::Door {
    imurun_net::Door::new(imurun_net::DoorConfig {
        rule: imurun_net::AddressRule {
            allow_non_public: true,
            ..imurun_net::AddressRule::default()
        },
        timeout: Duration::from_secs(30),
        redirects_max: 0,
    })
    .expect("door")
}

criterion_group!(benches, cells, broker);
criterion_main!(benches);
