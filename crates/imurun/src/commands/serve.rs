//! `imurun serve`: the server with the configured model. It binds first, so the page and
//! `imurun chat` can connect while the model loads (prompts answer 503 until it is ready),
//! then loads the model in the background with a progress bar.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use imurun_agent::ModelSource;
use imurun_core::SystemClock;
use imurun_server::{EventHub, ModelSlot, ServerOptions, ServerParts, ServerState};
use tokio::net::TcpListener;

use crate::config::{ConfigFlags, Environment, ResolvedConfig, STORED_SETTINGS};
use crate::model_spec::{ModelSpec, load};
use crate::wiring::{Plan, Tools, Wiring};

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    flags: ConfigFlags,
    /// Serve Keep mode: every /api and /v1 route needs a Keep token (`imurun keep init` first).
    /// The same as `[keep] enabled = true`.
    #[arg(long)]
    keep: bool,
}

pub(crate) fn run(
    args: &ServeArgs,
    config_flag: Option<&std::path::Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let mut config = ResolvedConfig::load(config_flag, &args.flags, environment)?;
    if args.keep {
        config.keep.enabled = true;
    }
    config.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(config))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(config: ResolvedConfig) -> Result<()> {
    let hub = EventHub::default();
    let slot = ModelSlot::new();
    let helpers: ModelSource = {
        let slot = slot.clone();
        Arc::new(move || slot.model())
    };
    let wiring = Wiring::build(
        config,
        Plan {
            tools: Tools::Builtin,
            mcp: true,
            events: Arc::new(hub.clone()),
            helpers: Some(helpers),
            clock: Arc::new(SystemClock),
        },
    )
    .await?;
    let config = &wiring.config;
    // Bound first: Keep refuses its own API's port as any tool's egress target.
    let listener = TcpListener::bind(config.server.addr)
        .await
        .with_context(|| format!("binding {}", config.server.addr))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let keep_events = imurun_server::KeepHubs::default();
    let mut host_claim = None;
    let keep = if config.keep.enabled {
        // The API (and its deploy route) is never a cell's egress target: the broker refuses
        // it on loopback whatever is opened, and a configuration that opens it is a mistake
        // said at once rather than a rule that silently does nothing.
        if config.keep.egress_loopback_ports.contains(&addr.port()) {
            anyhow::bail!(
                "keep.egress_loopback_ports opens {}, the port this server's own API listens on: no cell may reach the API; remove it, or serve the API on another port",
                addr.port()
            );
        }
        let host_id = config
            .keep
            .host_id
            .clone()
            .unwrap_or_else(|| format!("{}:{}", machine_name(), addr.port()));
        let service = imurun_keep::init::open(
            &config.keep.dir,
            wiring.store.clone(),
            imurun_keep::service::system_clock(),
        )
        .await
        .with_context(|| {
            format!(
                "opening Keep mode from {} (run `imurun keep init` once first)",
                config.keep.dir.display()
            )
        })?
        .with_host_id(&host_id);
        // Held for as long as the server runs (taken again after a lost connection): a second
        // host under this name is refused.
        host_claim = wiring
            .store
            .claim_host(&host_id)
            .await
            .context("claiming this host's name among the hosts on the database")?;
        // At once: another host may answer a use of this name's last run until then.
        let forgotten = service
            .forget_waits_of_before()
            .await
            .context("forgetting the egress uses this host's cells waited on before it started")?;
        if forgotten > 0 {
            tracing::info!(
                forgotten,
                "egress uses left waiting by this host's last run were forgotten"
            );
        }
        // Hosts that share a PostgreSQL database tell each other their events (SQLite: one
        // host, the hubs alone).
        let events: Arc<dyn imurun_keep::cells::KeepEvents> =
            if wiring.store.backend() == imurun_store::Backend::Postgres {
                Arc::new(imurun_server::SharedKeepEvents::start(
                    &wiring.store,
                    keep_events.clone(),
                    &host_id,
                    service.notice_seal(),
                ))
            } else {
                Arc::new(keep_events.clone())
            };
        let service = with_cells(service, config, events, &slot, addr.port())?;
        if imurun_server::listen_to_other_hosts(&wiring.store, service.clone(), keep_events.clone())
            .await
            .context("listening to the other Keep hosts through the database")?
        {
            tracing::info!(%host_id, "Keep host sharing its database with other hosts");
        }
        let ports = &config.keep.egress_loopback_ports;
        if !ports.is_empty() {
            service
                .note_loopback_ports(ports)
                .await
                .context("journaling the opened loopback ports")?;
            tracing::warn!(?ports, "cells may reach these loopback ports");
        }
        Some(service)
    } else {
        None
    };
    let state = ServerState::new(ServerParts {
        store: wiring.store.clone(),
        executor: Arc::clone(&wiring.executor),
        hub,
        model: slot.clone(),
        skills: wiring.skills()?,
        mcp: Arc::clone(&wiring.mcp),
        agent_config: wiring.agent.clone(),
        options: ServerOptions {
            api_token: config
                .server
                .api_token
                .as_ref()
                .map(|token| token.expose().to_owned()),
            pinned_settings: pinned_settings(config),
            sandbox: imurun_tools::sandbox_status(),
            keep,
            keep_events,
            ..ServerOptions::default()
        },
    });
    // One write, whose failure is ignored: a reader that takes the first line and closes the
    // pipe (`imurun serve | head -1`, a supervisor) must not bring the server down.
    let keep_line = if config.keep.enabled {
        "\nKeep mode: every /api and /v1 route needs a Keep token"
    } else {
        ""
    };
    let _ = writeln!(
        std::io::stdout(),
        "imurun is listening on http://{addr}{keep_line}"
    );
    tracing::info!(%addr, "listening");

    slot.set_loading();
    let spec = ModelSpec::parse(&config.model);
    let grammar = config.agent.grammar;
    let loader = {
        let slot = slot.clone();
        let executor = Arc::clone(&wiring.executor);
        let variables = config.variables.clone();
        tokio::spawn(async move {
            match load(&spec, &variables).await {
                Ok(loaded) => {
                    let name = loaded.name();
                    slot.set_ready(
                        loaded.for_tools(&executor.registry().callable_index(), grammar),
                    );
                    tracing::info!(model = %name, "the model is ready");
                }
                Err(error) => {
                    tracing::error!("the model did not load: {error:#}");
                    slot.set_failed(format!("{error:#}"));
                }
            }
        })
    };
    // A host whose name another host took (while its claim was down) stops at once, cells
    // and all: its cells' waits are the other host's now, and a graceful shutdown would let
    // them run on beside it.
    if let Some(mut claim) = host_claim {
        tokio::spawn(async move {
            claim.lost().await;
            tracing::error!(
                "another Keep host took this host's name while its claim on the database was \
                 down (the database restarted or the connection was lost): two hosts must not \
                 share a name (keep.host_id); this host stops now"
            );
            std::process::exit(3);
        });
    }
    let shutdown = async {
        shutdown_signal().await;
        tracing::info!("shutting down");
    };
    let served = imurun_server::serve(listener, state, shutdown).await;
    loader.abort();
    wiring.close().await?;
    served.context("serving")
}

/// Ctrl-C, or SIGTERM (a service manager, `kill`): either ends the server cleanly, so MCP
/// servers are shut down and the audit is flushed.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// The server's settings that a flag or an environment variable set: the settings it stored
/// through its endpoints must not override them (flag > environment > stored > file).
fn pinned_settings(config: &ResolvedConfig) -> Vec<String> {
    STORED_SETTINGS
        .iter()
        .filter(|(key, _)| !config.origin(key).yields_to_stored_settings())
        .map(|(_, setting)| (*setting).to_owned())
        .collect()
}

/// Keep sessions' cells for `service`: the engine, the egress broker (refusing this machine's
/// own addresses), each person's events, and the model in `slot` for `model.generate`.
fn with_cells(
    service: imurun_keep::service::KeepService,
    config: &ResolvedConfig,
    events: Arc<dyn imurun_keep::cells::KeepEvents>,
    slot: &ModelSlot,
    api_port: u16,
) -> Result<imurun_keep::service::KeepService> {
    let broker = imurun_cell::broker::Broker::new(
        imurun_cell::broker::BrokerConfig::default(),
        &imurun_cell::own_addresses(),
    )
    .context("starting the egress broker")?;
    let model: imurun_keep::cells::ModelSource = {
        let slot = slot.clone();
        Arc::new(move || slot.model())
    };
    let cells = imurun_keep::cells::Cells::new(
        &imurun_keep::cells::CellsConfig {
            loopback_ports: config.keep.egress_loopback_ports.clone(),
            api_port: Some(api_port),
            ..imurun_keep::cells::CellsConfig::default()
        },
        broker,
        events,
        model,
    )
    .context("starting Keep's cells")?;
    Ok(service.with_cells(cells))
}

/// This machine's name (Linux's `/proc/sys/kernel/hostname`), or `host-` and this process's
/// id when it cannot be read: the first part of a Keep host's default name.
fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty() && name.len() <= 64)
        .unwrap_or_else(|| format!("host-{}", std::process::id()))
}
