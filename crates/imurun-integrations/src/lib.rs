//! imurun's integrations: connector tools for web services declared as data (GitHub, Gmail,
//! Cloudflare) and the MCP client (servers over stdio or streamable HTTP).
//!
//! Both hand the binary tools (`imurun_core::Tool`) to register; connector tools come with
//! their service as an `imurun_core::ToolGroup`, so the executor's per-turn offer can list
//! only the services a question points at. Every request leaves through `imurun-net`'s door;
//! a stdio server is started by `imurun-tools`. Configuration (tokens, base URLs, servers)
//! comes in from the binary: nothing here reads the environment.

pub mod connectors;
mod mcp;

pub use connectors::{ConnectorTool, Connectors};
pub use mcp::{
    MCP_SERVER_NAME_CHARS_MAX, MCP_TIMEOUT_DEFAULT_S, MCP_TIMEOUT_MAX_S, MCP_TOOL_NAME_CHARS_MAX,
    McpConfigError, McpHub, McpServerConfig, McpServerState, McpServerStatus, McpTool,
    McpToolStatus, McpTransport, StdioBase, validate_mcp_servers,
};
