//! One wiring path: every command builds its store, audit writer, workspace, tools,
//! executor, MCP servers and agent settings here, from one [`ResolvedConfig`], so a call is
//! decided, run and audited the same way whichever command makes it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use imurun_agent::{AgentConfig, AgentLoop, ModelSource, RunAgentTool, SkillStore};
use imurun_core::{AuditSink, Clock, EventSink, Model, NullEvents, SystemClock, ToolSpec};
use imurun_exec::{Registry, ToolExecutor};
use imurun_integrations::{McpHub, StdioBase};
use imurun_keep::service::KeepService;
use imurun_policy::{Settings, Workspace, WorkspaceConfig};
use imurun_server::{KeepHubs, ModelSlot};
use imurun_store::{AuditWriter, HostClaim, Store};
use imurun_tools::{BuiltinConfig, ShellConfig, UnconfiguredTool, builtin_tools};

use crate::config::ResolvedConfig;

/// Which tools a command offers.
#[derive(Debug, Clone)]
pub(crate) enum Tools {
    /// The built-in tools and the connectors (each available when its token is set).
    Builtin,
    /// Tools known only by their specs, offered and never run (`--tools FILE`, BFCL cases).
    SpecsOnly(Vec<ToolSpec>),
}

/// What a command needs beyond the configuration.
pub(crate) struct Plan {
    pub(crate) tools: Tools,
    /// Connect the configured `[[mcp.servers]]` and register their tools.
    pub(crate) mcp: bool,
    /// Where the executor's own events go (calls made with no turn of their own: `POST
    /// /api/tools/run`); a turn's calls go to the turn's sink.
    pub(crate) events: Arc<dyn EventSink>,
    /// The model helpers run on (`run_agent`); `None` keeps its placeholder, which says
    /// sub-agents are not available.
    pub(crate) helpers: Option<ModelSource>,
    /// What `get_time` and the prompt's date read.
    pub(crate) clock: Arc<dyn Clock>,
}

impl Plan {
    /// A command that serves no one: no MCP servers, no event stream, no helpers, the
    /// system clock.
    pub(crate) fn quiet(tools: Tools) -> Self {
        Self {
            tools,
            mcp: false,
            events: Arc::new(NullEvents),
            helpers: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Opens the configured database (`database.url`), or the SQLite file in the data folder.
pub(crate) async fn open_store(config: &ResolvedConfig) -> Result<Store> {
    match &config.database_url {
        Some(url) => Store::open_url(url.secret())
            .await
            .with_context(|| format!("opening the database {}", url.shown())),
        None => {
            let database = config.paths.database();
            Store::open(&database)
                .await
                .with_context(|| format!("opening the database {}", database.display()))
        }
    }
}

/// Everything a command runs on.
pub(crate) struct Wiring {
    pub(crate) config: ResolvedConfig,
    pub(crate) store: Store,
    pub(crate) audit: Arc<AuditWriter>,
    pub(crate) executor: Arc<ToolExecutor>,
    pub(crate) mcp: Arc<McpHub>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The loop's settings from the configuration.
    pub(crate) agent: AgentConfig,
}

impl Wiring {
    /// Keep mode for a server listening at `addr`: the service over this wiring's store, this
    /// host's name claimed among the hosts on its database (the claim is held for as long as
    /// the server runs), the uses its last run left waiting forgotten, the other hosts'
    /// events, and the cells with their egress broker and the model in `slot`.
    pub(crate) async fn open_keep(
        &self,
        slot: &ModelSlot,
        addr: SocketAddr,
        keep_events: &KeepHubs,
    ) -> Result<(KeepService, Option<HostClaim>)> {
        let config = &self.config;
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
            self.store.clone(),
            Arc::clone(&self.clock),
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
        let host_claim = self
            .store
            .claim_host(&host_id)
            .await
            .context("claiming this host's name among the hosts on the database")?;
        // At once: another host may answer a use of this name's last run until then.
        let forgotten =
            service.approvals().forget_waits_of_before().await.context(
                "forgetting the egress uses this host's cells waited on before it started",
            )?;
        if forgotten > 0 {
            tracing::info!(
                forgotten,
                "egress uses left waiting by this host's last run were forgotten"
            );
        }
        let ended = service
            .sessions()
            .end_left_running()
            .await
            .context("ending the sessions this host's last run left running")?;
        if ended > 0 {
            tracing::info!(ended, "sessions left running by this host's last run ended");
        }
        let service = self
            .start_keep_cells(service, (slot, addr), &host_id, keep_events)
            .await?;
        Ok((service, host_claim))
    }

    /// Keep's cells for `service` (this host named `host_id`), its events shared with the
    /// other hosts on a PostgreSQL database, and the loopback ports opened to cells journaled.
    async fn start_keep_cells(
        &self,
        service: KeepService,
        (slot, addr): (&ModelSlot, SocketAddr),
        host_id: &str,
        keep_events: &KeepHubs,
    ) -> Result<KeepService> {
        let config = &self.config;
        // Hosts that share a PostgreSQL database tell each other their events (SQLite: one
        // host, the hubs alone).
        let events: Arc<dyn imurun_keep::cells::KeepEvents> =
            if self.store.backend() == imurun_store::Backend::Postgres {
                Arc::new(imurun_server::SharedKeepEvents::start(
                    &self.store,
                    keep_events.clone(),
                    host_id,
                    service.notice_seal(),
                ))
            } else {
                Arc::new(keep_events.clone())
            };
        let service = with_cells(service, config, events, slot, addr.port())?;
        if imurun_server::listen_to_other_hosts(&self.store, service.clone(), keep_events.clone())
            .await
            .context("listening to the other Keep hosts through the database")?
        {
            tracing::info!(%host_id, "Keep host sharing its database with other hosts");
        }
        let ports = &config.keep.egress_loopback_ports;
        if !ports.is_empty() {
            service
                .sessions()
                .note_loopback_ports(ports)
                .await
                .context("journaling the opened loopback ports")?;
            tracing::warn!(?ports, "cells may reach these loopback ports");
        }
        Ok(service)
    }

    /// Opens the store and its audit writer, the workspace, the tools of `plan`, and the
    /// executor over them with the configured permissions.
    pub(crate) async fn build(config: ResolvedConfig, plan: Plan) -> Result<Self> {
        let paths = &config.paths;
        imurun_store::create_private_dir_all(&paths.data_dir)
            .with_context(|| format!("creating {}", paths.data_dir.display()))?;
        let store = open_store(&config).await?;
        let audit = Arc::new(AuditWriter::spawn(&store).context("starting the audit writer")?);
        let workspace = Arc::new(open_workspace(&config)?);
        let agent = agent_config(&config);
        let mut registry = Registry::new();
        match &plan.tools {
            Tools::Builtin => {
                let builtin = BuiltinConfig {
                    shell: ShellConfig {
                        environment: config.variables.children.to_vec(),
                        temp_parent: config.variables.temp_dir.clone(),
                    },
                    search: config.variables.search.clone(),
                    clock: Arc::clone(&plan.clock),
                    ..BuiltinConfig::default()
                };
                for tool in builtin_tools(&workspace, builtin) {
                    registry.insert(tool, true);
                }
                for connector in config.variables.connectors.registrations() {
                    let name = connector.tool.spec().name.clone();
                    registry.insert_grouped(connector.tool, connector.group);
                    for alias in connector.aliases {
                        registry.add_alias(alias, &name);
                    }
                }
            }
            Tools::SpecsOnly(specs) => {
                for spec in specs {
                    registry.insert(Arc::new(UnconfiguredTool::spec_only(spec.clone())), true);
                }
            }
        }
        let mcp = if plan.mcp {
            // One that fails to start is listed with its error and the others still serve.
            let base = StdioBase {
                environment: config.variables.children.to_vec(),
                workspace: workspace.root().to_path_buf(),
                temp_parent: config.variables.temp_dir.clone(),
            };
            let hub = McpHub::connect_all(&config.mcp_servers, &base).await;
            for tool in hub.tools() {
                registry.insert(tool, true);
            }
            for server in hub.servers() {
                if let Some(error) = &server.error {
                    tracing::warn!(server = %server.name, "MCP server is not connected: {error}");
                }
            }
            Arc::new(hub)
        } else {
            Arc::new(McpHub::default())
        };
        let helpers = plan.helpers.map(|source| {
            RunAgentTool::with_model_source(source, &agent)
                .with_clock(Arc::clone(&plan.clock))
                .install(&mut registry)
        });
        let executor = executor(&config, registry, workspace, plan.events, &audit);
        if let Some(helpers) = helpers {
            helpers.bind(&executor);
        }
        Ok(Self {
            config,
            store,
            audit,
            executor,
            mcp,
            clock: plan.clock,
            agent,
        })
    }

    /// Another executor, over tools known only by `specs` (offered, never run), with this
    /// wiring's workspace, permissions and audit: an evaluation case's own tool set.
    pub(crate) fn executor_over_specs(&self, specs: &[ToolSpec]) -> Arc<ToolExecutor> {
        let mut registry = Registry::new();
        for spec in specs {
            registry.insert(Arc::new(UnconfiguredTool::spec_only(spec.clone())), true);
        }
        executor(
            &self.config,
            registry,
            Arc::clone(self.executor.workspace()),
            Arc::new(imurun_core::NullEvents),
            &self.audit,
        )
    }

    /// The skills `/<id>` tokens invoke, in `<data folder>/skills` (created when missing).
    pub(crate) fn skills(&self) -> Result<SkillStore> {
        let dir = self.config.paths.data_dir.join("skills");
        SkillStore::open(&dir)
            .with_context(|| format!("opening the skill directory {}", dir.display()))
    }

    /// A turn loop over `model` with the configured settings and clock, publishing to
    /// `events`.
    pub(crate) fn agent_loop(
        &self,
        model: Arc<dyn Model>,
        events: Arc<dyn EventSink>,
        agent: AgentConfig,
    ) -> AgentLoop {
        AgentLoop::new(model, Arc::clone(&self.executor), events)
            .with_config(agent)
            .with_clock(Arc::clone(&self.clock))
    }

    /// Shuts the MCP servers down, writes the audit records still queued, and closes the
    /// database.
    pub(crate) async fn close(self) -> Result<()> {
        self.mcp.shutdown().await;
        let flushed = self.audit.shutdown().await.context("writing the audit log");
        self.store.close().await;
        flushed
    }
}

/// The executor over `registry` with the configured permissions and approval timeout.
fn executor(
    config: &ResolvedConfig,
    registry: Registry,
    workspace: Arc<Workspace>,
    events: Arc<dyn EventSink>,
    audit: &Arc<AuditWriter>,
) -> Arc<ToolExecutor> {
    let settings = Settings {
        mode: config.permissions.mode,
        toggles: config.permissions.toggles,
    };
    Arc::new(
        ToolExecutor::new(
            registry,
            workspace,
            settings,
            events,
            Arc::clone(audit) as Arc<dyn AuditSink>,
        )
        .with_approval_timeout(Duration::from_secs(config.permissions.approval_timeout_s)),
    )
}

/// Opens (and creates on first use) the configured workspace. The data folder is guarded:
/// no tool may reach imurun's own config and database.
pub(crate) fn open_workspace(config: &ResolvedConfig) -> Result<Workspace> {
    let workspace = WorkspaceConfig {
        root: config.permissions.workspace_root.clone(),
        home: config.paths.home.clone(),
        // The data folder, and the configuration file wherever `--config` or `IMURUN_CONFIG`
        // put it: a tool that could rewrite either could change its own permissions.
        guarded: std::iter::once(config.paths.data_dir.clone())
            .chain(config.file.clone())
            .collect(),
    };
    Workspace::open(&workspace)
        .map_err(|error| anyhow::anyhow!("workspace {}: {error}", workspace.root.display()))
}

/// The loop's settings from the configuration.
pub(crate) fn agent_config(config: &ResolvedConfig) -> AgentConfig {
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
