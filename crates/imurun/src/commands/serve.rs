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
    // HTTPS when the operator gave a certificate: read before anything is served, so a bad
    // file stops the start with its reason.
    let tls = match &config.server.tls {
        Some(files) => Some(
            imurun_server::tls::acceptor(&files.cert, &files.key)
                .context("serving HTTPS (server.tls_cert, server.tls_key)")?,
        ),
        None => None,
    };
    // Bound first: Keep refuses its own API's port as any tool's egress target.
    let listener = TcpListener::bind(config.server.addr)
        .await
        .with_context(|| format!("binding {}", config.server.addr))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let keep_events = imurun_server::KeepHubs::default();
    let (keep, host_claim) = if config.keep.enabled {
        let (service, claim) = wiring.open_keep(&slot, addr, &keep_events).await?;
        (Some(service), claim)
    } else {
        (None, None)
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
    let scheme = if tls.is_some() { "https" } else { "http" };
    let _ = writeln!(
        std::io::stdout(),
        "imurun is listening on {scheme}://{addr}{keep_line}"
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
    let served = match tls {
        Some(acceptor) => {
            let listener = imurun_server::tls::TlsListener::new(listener, acceptor)
                .context("listening for HTTPS")?;
            imurun_server::serve(listener, state, shutdown).await
        }
        None => imurun_server::serve(listener, state, shutdown).await,
    };
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
