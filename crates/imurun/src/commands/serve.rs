//! `imurun serve`: the server with the configured model. It binds first, so the page and
//! `imurun chat` can connect while the model loads (prompts answer 503 until it is ready),
//! then loads the model in the background with a progress bar.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use imurun_agent::{AgentConfig, ModelSource, RunAgentTool, SkillStore};
use imurun_server::{EventHub, ModelSlot, ServerOptions, ServerParts, ServerState};
use imurun_store::{AuditWriter, Store};
use imurun_tools::{McpHub, ToolExecutor};
use tokio::net::TcpListener;

use crate::config::{ConfigFlags, ResolvedConfig, STORED_SETTINGS};
use crate::model_spec::{ModelSpec, load};
use crate::paths::{Paths, builtin_registry};

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    flags: ConfigFlags,
}

pub(crate) fn run(
    args: &ServeArgs,
    config_flag: Option<&std::path::Path>,
    paths: &Paths,
) -> Result<ExitCode> {
    let config = ResolvedConfig::load(config_flag, &args.flags, paths)?;
    config.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(config, paths))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(config: ResolvedConfig, paths: &Paths) -> Result<()> {
    std::fs::create_dir_all(&paths.data_dir)
        .with_context(|| format!("creating {}", paths.data_dir.display()))?;
    let database = paths.database();
    let store = Store::open(&database)
        .await
        .with_context(|| format!("opening the database {}", database.display()))?;
    let audit = Arc::new(AuditWriter::spawn(&store).context("starting the audit writer")?);
    let hub = EventHub::default();
    let workspace =
        Arc::new(paths.open_workspace(Some(config.permissions.workspace_root.clone()))?);
    let agent = agent_config(&config);
    let slot = ModelSlot::new();
    let mut registry = builtin_registry(&workspace);
    // MCP servers from the file: one that fails to start is listed with its error and the
    // others still serve their tools.
    let environment: Vec<_> = std::env::vars_os().collect();
    let mcp = Arc::new(McpHub::connect_all(&config.mcp_servers, &environment).await);
    mcp.register(&mut registry);
    for server in mcp.servers() {
        if let Some(error) = &server.error {
            eprintln!(
                "imurun: MCP server {} is not connected: {error}",
                server.name
            );
        }
    }
    // The real `run_agent`, over the model the slot will hold once it has loaded.
    let sub_agents = {
        let slot = slot.clone();
        let source: ModelSource = Arc::new(move || slot.model());
        RunAgentTool::with_model_source(source, Arc::new(hub.clone()), &agent)
            .install(&mut registry)
    };
    let settings = imurun_policy::Settings {
        mode: config.permissions.mode,
        toggles: config.permissions.toggles,
    };
    let executor = ToolExecutor::new(
        registry,
        workspace,
        settings,
        Arc::new(hub.clone()),
        Arc::clone(&audit) as Arc<dyn imurun_core::AuditSink>,
    )
    .with_approval_timeout(std::time::Duration::from_secs(
        config.permissions.approval_timeout_s,
    ));
    let executor = Arc::new(executor);
    sub_agents.bind(&executor);
    let skills_dir = paths.data_dir.join("skills");
    let skills = SkillStore::open(&skills_dir)
        .with_context(|| format!("opening the skill directory {}", skills_dir.display()))?;
    let state = ServerState::new(ServerParts {
        store: store.clone(),
        executor: Arc::clone(&executor),
        hub,
        model: slot.clone(),
        skills,
        mcp: Arc::clone(&mcp),
        agent_config: agent,
        options: ServerOptions {
            api_token: config
                .server
                .api_token
                .as_ref()
                .map(|token| token.expose().to_owned()),
            pinned_settings: pinned_settings(&config),
            ..ServerOptions::default()
        },
    });
    let listener = TcpListener::bind(config.server.addr)
        .await
        .with_context(|| format!("binding {}", config.server.addr))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    println!("imurun is listening on http://{addr}");

    slot.set_loading();
    let spec = ModelSpec::resolve(Some(&config.model), paths);
    let grammar = config.agent.grammar;
    let loader = {
        let slot = slot.clone();
        let executor = Arc::clone(&executor);
        tokio::spawn(async move {
            match load(&spec).await {
                Ok(loaded) => {
                    let name = loaded.name();
                    slot.set_ready(
                        loaded.for_tools(&executor.registry().callable_index(), grammar),
                    );
                    eprintln!("imurun: model {name} is ready");
                }
                Err(error) => {
                    eprintln!("imurun: the model did not load: {error:#}");
                    slot.set_failed(format!("{error:#}"));
                }
            }
        })
    };
    let shutdown = async {
        shutdown_signal().await;
        eprintln!("imurun: shutting down");
    };
    let served = imurun_server::serve(listener, state, shutdown).await;
    loader.abort();
    mcp.shutdown().await;
    audit.shutdown().await.context("flushing the audit log")?;
    store.close().await;
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

/// The loop's settings from the configuration.
fn agent_config(config: &ResolvedConfig) -> AgentConfig {
    let agent = AgentConfig::default()
        .with_max_steps(config.agent.max_steps)
        .with_summarise_history(config.agent.summarise_history)
        .with_call_prefill(config.agent.call_prefill)
        .with_tool_examples(config.agent.tool_examples)
        .with_prefetch(config.agent.prefetch);
    match &config.agent.persona {
        Some(persona) => agent.with_persona(persona.clone()),
        None => agent,
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
