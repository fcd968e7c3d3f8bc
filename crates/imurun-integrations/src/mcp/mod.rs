//! The MCP client: the configured MCP servers, each reached over stdio (a child process this
//! crate starts, like every process imurun starts) or streamable HTTP, and each of their tools
//! wrapped as an imurun [`Tool`](imurun_core::Tool) named `<server>__<tool>`.
//!
//! What a server's tool does is known only to the server, so its category is `external`
//! (asks in every mode but allow-all) unless the configuration declares one. Its results are
//! text from an outside program: capped, and marked untrusted.

mod config;
mod connection;
mod hub;
mod tool;

pub use config::{
    MCP_SERVER_NAME_CHARS_MAX, MCP_TIMEOUT_DEFAULT_S, MCP_TIMEOUT_MAX_S, McpConfigError,
    McpServerConfig, McpTransport, validate_mcp_servers,
};
pub use hub::{McpHub, McpServerState, McpServerStatus, McpToolStatus, StdioBase};
pub use tool::{MCP_TOOL_NAME_CHARS_MAX, McpTool};
