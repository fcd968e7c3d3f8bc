//! Where imurun keeps its files. The binary is the only reader of environment variables, so
//! this is where `HOME`, `IMURUN_HOME` and `IMURUN_WORKSPACE` are read.

use std::path::PathBuf;

use std::sync::Arc;

use anyhow::{Result, bail};
use imurun_core::{AuditSink, NullEvents};
use imurun_policy::{Mode, Settings, Workspace, WorkspaceConfig};
use imurun_tools::{Connectors, Registry, ShellConfig, ToolExecutor};

/// imurun's folders: the data folder (`IMURUN_HOME`, default `~/.imurun`) and the
/// workspace (`IMURUN_WORKSPACE`, default `<data folder>/workspace`).
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub(crate) home: Option<PathBuf>,
    pub(crate) data_dir: PathBuf,
    pub(crate) workspace: PathBuf,
}

impl Paths {
    pub(crate) fn from_env() -> Result<Self> {
        let home = std::env::var_os("HOME")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        let data_dir = match (std::env::var_os("IMURUN_HOME"), &home) {
            (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
            (_, Some(home)) => home.join(".imurun"),
            (_, None) => bail!(
                "neither HOME nor IMURUN_HOME is set: imurun does not know where to keep its files"
            ),
        };
        let workspace = match std::env::var_os("IMURUN_WORKSPACE") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => data_dir.join("workspace"),
        };
        Ok(Self {
            home,
            data_dir,
            workspace,
        })
    }

    /// The database: settings, sessions and the audit.
    pub(crate) fn database(&self) -> PathBuf {
        self.data_dir.join("imurun.db")
    }

    /// Opens (and creates on first use) the workspace at `root`, or the default one. The
    /// data folder is guarded: no tool may reach imurun's own config and database.
    pub(crate) fn open_workspace(&self, root: Option<PathBuf>) -> Result<Workspace> {
        let config = WorkspaceConfig {
            root: root.unwrap_or_else(|| self.workspace.clone()),
            home: self.home.clone(),
            guarded: vec![self.data_dir.clone()],
        };
        Workspace::open(&config)
            .map_err(|error| anyhow::anyhow!("workspace {}: {error}", config.root.display()))
    }
}

/// The executor over the built-in tools in `workspace`, deciding in `mode`, auditing to
/// `audit`. The shell starts from this process's environment (credentials are removed per
/// run); the CLI has no event subscribers, so a call that asks is declined unless the caller
/// asks the person itself.
pub(crate) fn cli_executor(
    workspace: Workspace,
    mode: Mode,
    audit: Arc<dyn AuditSink>,
) -> ToolExecutor {
    let workspace = Arc::new(workspace);
    let registry = builtin_registry(&workspace);
    executor_over(registry, workspace, mode, audit)
}

/// The built-in tools in `workspace` and the connectors' tools (each available when its
/// credential variable is set). The shell starts from this process's environment.
pub(crate) fn builtin_registry(workspace: &Arc<Workspace>) -> Registry {
    let shell = ShellConfig {
        environment: std::env::vars_os().collect(),
    };
    let mut registry = Registry::builtin(workspace, shell);
    Connectors::from_env().register(&mut registry);
    registry
}

/// The executor over `registry`'s tools.
pub(crate) fn executor_over(
    registry: Registry,
    workspace: Arc<Workspace>,
    mode: Mode,
    audit: Arc<dyn AuditSink>,
) -> ToolExecutor {
    let settings = Settings {
        mode,
        ..Settings::default()
    };
    ToolExecutor::new(registry, workspace, settings, Arc::new(NullEvents), audit)
}

/// `IMURUN_MAX_STEPS`, the steps a turn may take, when set.
pub(crate) fn max_steps_from_env() -> Result<Option<usize>> {
    match std::env::var("IMURUN_MAX_STEPS") {
        Ok(value) if !value.trim().is_empty() => match value.trim().parse::<usize>() {
            Ok(steps) if steps >= 1 => Ok(Some(steps)),
            _ => bail!("IMURUN_MAX_STEPS must be a whole number from 1 to 20, not `{value}`"),
        },
        _ => Ok(None),
    }
}
