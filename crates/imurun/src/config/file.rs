//! The configuration file as written.

use std::net::SocketAddr;
use std::path::PathBuf;

use imurun_integrations::McpServerConfig;
use imurun_policy::Mode;
use serde::{Deserialize, Deserializer};

use super::CallPrefill;
use super::flags::{check_approval_timeout_s, check_max_steps, parse_addr};

// The file as written: every key optional, unknown keys refused. Values are checked while
// they are read, so that an error carries the file's line and column.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) server: FileServer,
    #[serde(default)]
    pub(super) agent: FileAgent,
    #[serde(default)]
    pub(super) permissions: FilePermissions,
    #[serde(default)]
    pub(super) mcp: FileMcp,
    #[serde(default)]
    pub(super) keep: FileKeep,
    #[serde(default)]
    pub(super) database: FileDatabase,
}

/// `[database]`: where the state lives.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDatabase {
    pub(super) url: Option<String>,
}

/// `[keep]`: Keep mode.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileKeep {
    pub(super) enabled: Option<bool>,
    pub(super) dir: Option<String>,
    pub(super) egress_loopback_ports: Option<Vec<u16>>,
    pub(super) host_id: Option<String>,
}

/// `[mcp]`: the MCP servers whose tools join the registry.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileMcp {
    #[serde(default)]
    pub(super) servers: Vec<McpServerConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileServer {
    #[serde(default, deserialize_with = "file_addr")]
    pub(super) addr: Option<SocketAddr>,
    pub(super) api_token: Option<String>,
    pub(super) tls_cert: Option<String>,
    pub(super) tls_key: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgent {
    #[serde(default, deserialize_with = "file_max_steps")]
    pub(super) max_steps: Option<usize>,
    pub(super) persona: Option<String>,
    pub(super) summarise_history: Option<bool>,
    pub(super) call_prefill: Option<CallPrefill>,
    pub(super) tool_examples: Option<bool>,
    pub(super) grammar: Option<bool>,
    pub(super) prefetch: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FilePermissions {
    pub(super) mode: Option<Mode>,
    pub(super) workspace_root: Option<PathBuf>,
    #[serde(default, deserialize_with = "file_approval_timeout_s")]
    pub(super) approval_timeout_s: Option<u64>,
    #[serde(default)]
    pub(super) toggles: FileToggles,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileToggles {
    pub(super) read_files: Option<bool>,
    pub(super) write_files: Option<bool>,
    pub(super) run_shell: Option<bool>,
    pub(super) network: Option<bool>,
}

fn file_addr<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_addr(&text)
        .map(Some)
        .map_err(|why| serde::de::Error::custom(format!("server.addr: {why}")))
}

fn file_max_steps<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    let steps = i64::deserialize(deserializer)?;
    check_max_steps(steps)
        .map(Some)
        .map_err(|why| serde::de::Error::custom(format!("agent.max_steps {why}")))
}

fn file_approval_timeout_s<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    let seconds = i64::deserialize(deserializer)?;
    check_approval_timeout_s(seconds)
        .map(Some)
        .map_err(|why| serde::de::Error::custom(format!("permissions.approval_timeout_s {why}")))
}
