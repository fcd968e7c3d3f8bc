//! `McpHub`: every configured MCP server, connected at once, each one's tools as imurun
//! tools, and each one's status — including the servers that are disabled or failed, so a
//! person can see why a tool is missing.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use imurun_core::{Availability, Tool, ToolCategory};
use serde::Serialize;

use super::config::{McpConfigError, McpServerConfig, tool_prefix};
use super::connection::{Connection, SERVER_TOOLS_MAX};
use super::tool::{McpTool, spec, tool_name};

/// The MCP servers of one imurun process.
/// What every stdio server starts from.
#[derive(Debug, Clone, Default)]
pub struct StdioBase {
    /// The environment it inherits (the binary passes its own); credential-looking variables
    /// are removed from it.
    pub environment: Vec<(OsString, OsString)>,
    /// The workspace: every stdio server may write there, as well as in its private temporary
    /// folder, its `cwd` and the folders its configuration lists as `writable`.
    pub workspace: PathBuf,
    /// Where each server's private temporary folder is made (the system's temporary folder).
    pub temp_parent: PathBuf,
}

#[derive(Debug, Default)]
pub struct McpHub {
    servers: Vec<Server>,
}

/// A server as a route lists it: what it is, whether it is connected, and its tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerStatus {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command line or the URL (never an environment or header value).
    pub target: String,
    pub state: McpServerState,
    /// Why the server is not connected, when it is not.
    pub error: Option<String>,
    /// The server's process, for a stdio server that started.
    pub pid: Option<u32>,
    /// `name version`, as the server introduced itself.
    pub server_info: Option<String>,
    pub tools: Vec<McpToolStatus>,
    /// Tools left out, and configuration that names tools the server does not have.
    pub notes: Vec<String>,
}

/// Where a server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpServerState {
    /// Connected; its tools can run.
    Connected,
    /// It was connected, and the connection ended (the process died, the server went away,
    /// or imurun shut it down).
    Closed,
    /// It never connected: a bad configuration, a command that does not start, a failed
    /// handshake.
    Failed,
    /// `enabled = false`: never started.
    Disabled,
}

impl McpServerState {
    /// `connected`, `closed`, `failed` or `disabled`, as it is serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connected => "connected",
            Self::Closed => "closed",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
        }
    }
}

/// One tool of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpToolStatus {
    /// The name imurun knows it by: `<server>__<tool>`.
    pub name: String,
    /// The name the server gives it.
    pub remote_name: String,
    pub category: ToolCategory,
    pub availability: Availability,
}

#[derive(Debug)]
struct Server {
    config: McpServerConfig,
    state: ServerState,
    tools: Vec<Arc<McpTool>>,
    notes: Vec<String>,
}

#[derive(Debug)]
enum ServerState {
    /// Only inside `connect_all`, while its connection task runs.
    Starting,
    Disabled,
    Failed(String),
    Connected(Arc<Connection>),
}

impl McpHub {
    /// Connects every enabled server at the same time, each within its own timeout. A server
    /// that is misconfigured, does not start or does not answer is kept with its error and
    /// does not stop the others. Stdio servers start from `base`'s environment (the binary
    /// passes its own) without credential-looking variables, plus their configured `env`, in
    /// the OS sandbox with writes allowed in `base`'s workspace.
    pub async fn connect_all(configs: &[McpServerConfig], base: &StdioBase) -> McpHub {
        let mut pending = tokio::task::JoinSet::new();
        let mut servers: Vec<Server> = Vec::with_capacity(configs.len());
        let mut prefixes = HashSet::new();
        for (index, config) in configs.iter().enumerate() {
            let mut state = ServerState::Disabled;
            if let Err(error) = config.validate() {
                state = ServerState::Failed(error.to_string());
            } else if !prefixes.insert(tool_prefix(&config.name)) {
                let error = McpConfigError::DuplicateName {
                    name: config.name.clone(),
                };
                state = ServerState::Failed(error.to_string());
            } else if config.enabled {
                let config = config.clone();
                let base = base.clone();
                pending.spawn(async move { (index, Connection::open(&config, &base).await) });
                state = ServerState::Starting;
            }
            servers.push(Server {
                config: config.clone(),
                state,
                tools: Vec::new(),
                notes: Vec::new(),
            });
        }
        let mut taken = HashSet::new();
        while let Some(joined) = pending.join_next().await {
            let Ok((index, opened)) = joined else {
                // A panic inside a connection task: its server stays `Starting`, fixed below.
                continue;
            };
            let Some(server) = servers.get_mut(index) else {
                continue;
            };
            match opened {
                Ok((connection, remote_tools)) => {
                    let connection = Arc::new(connection);
                    server.adopt(&connection, &remote_tools, &mut taken);
                    server.state = ServerState::Connected(connection);
                }
                Err(error) => server.state = ServerState::Failed(error),
            }
        }
        for server in &mut servers {
            if matches!(server.state, ServerState::Starting) {
                server.state =
                    ServerState::Failed("connecting crashed (a bug in imurun)".to_owned());
            }
        }
        McpHub { servers }
    }

    /// Every tool of every connected server, in configuration order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers
            .iter()
            .flat_map(|server| server.tools.iter())
            .map(|tool| Arc::clone(tool) as Arc<dyn Tool>)
            .collect()
    }

    /// Every configured server, in configuration order, as it stands now.
    pub fn servers(&self) -> Vec<McpServerStatus> {
        self.servers.iter().map(Server::status).collect()
    }

    /// Closes every connection: stdio servers get their stdin closed and a few seconds to
    /// exit before they are killed. Their tools report themselves unavailable afterwards.
    pub async fn shutdown(&self) {
        let mut closing = tokio::task::JoinSet::new();
        for server in &self.servers {
            if let ServerState::Connected(connection) = &server.state {
                let connection = Arc::clone(connection);
                closing.spawn(async move { connection.close().await });
            }
        }
        while closing.join_next().await.is_some() {}
    }
}

impl Server {
    /// Wraps the server's tools, at most [`SERVER_TOOLS_MAX`], noting the ones left out.
    fn adopt(
        &mut self,
        connection: &Arc<Connection>,
        remote_tools: &[rmcp::model::Tool],
        taken: &mut HashSet<String>,
    ) {
        let prefix = tool_prefix(&self.config.name);
        if remote_tools.len() > SERVER_TOOLS_MAX {
            self.notes.push(format!(
                "only the first {SERVER_TOOLS_MAX} of its tools are used"
            ));
        }
        for remote in remote_tools.iter().take(SERVER_TOOLS_MAX) {
            let name = tool_name(&prefix, &remote.name, taken);
            match spec(name.clone(), remote) {
                Ok(spec) => {
                    taken.insert(name);
                    let category = self.config.category_of(&remote.name);
                    self.tools.push(Arc::new(McpTool::new(
                        spec,
                        category,
                        &self.config.name,
                        remote.name.to_string(),
                        Arc::clone(connection),
                    )));
                }
                Err(why) => self
                    .notes
                    .push(format!("the tool `{}` is left out: {why}", remote.name)),
            }
        }
        for configured in self.config.tool_categories.keys() {
            if !remote_tools
                .iter()
                .any(|remote| remote.name == configured.as_str())
            {
                self.notes.push(format!(
                    "tool_categories names `{configured}`, which the server does not list"
                ));
            }
        }
    }

    fn status(&self) -> McpServerStatus {
        let (state, error, pid, server_info) = match &self.state {
            ServerState::Disabled => (McpServerState::Disabled, None, None, None),
            ServerState::Starting => (
                McpServerState::Failed,
                Some("still connecting".to_owned()),
                None,
                None,
            ),
            ServerState::Failed(error) => (McpServerState::Failed, Some(error.clone()), None, None),
            ServerState::Connected(connection) => {
                let (state, error) = match connection.health() {
                    Ok(()) => (McpServerState::Connected, None),
                    Err(reason) => (McpServerState::Closed, Some(reason)),
                };
                (
                    state,
                    error,
                    connection.pid(),
                    connection.server_info.clone(),
                )
            }
        };
        McpServerStatus {
            name: self.config.name.clone(),
            transport: self.config.transport_kind(),
            target: self.config.target(),
            state,
            error,
            pid,
            server_info,
            tools: self
                .tools
                .iter()
                .map(|tool| McpToolStatus {
                    name: tool.spec().name.clone(),
                    remote_name: tool.remote_name().to_owned(),
                    category: tool.category(),
                    availability: tool.available(),
                })
                .collect(),
            notes: self.notes.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::McpServerState;

    #[test]
    fn a_state_reads_as_it_is_serialised() {
        for state in [
            McpServerState::Connected,
            McpServerState::Closed,
            McpServerState::Failed,
            McpServerState::Disabled,
        ] {
            assert_eq!(
                serde_json::to_value(state).unwrap_or_default(),
                serde_json::Value::from(state.as_str())
            );
        }
    }
}
