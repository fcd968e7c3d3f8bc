//! imurun's tools: the built-in tools (one per file), the one place that spawns processes,
//! and [`ToolExecutor`], the single path every tool call takes — lookup → sub-agent
//! restriction → schema validation → policy → approval → run → event + audit — and the MCP
//! client, whose servers' tools take that same path.
//!
//! Decisions come from `imurun-policy`; events and audit records leave through the
//! [`imurun_core::EventSink`] and [`imurun_core::AuditSink`] traits, so this crate knows
//! nothing of SQL or the agent loop. The one HTTP it speaks is the connector tools' requests
//! to web services ([`connectors`]).

mod approval;
mod builtin;
mod catalog;
pub mod connectors;
mod error;
mod executor;
mod ids;
mod mcp;
mod panic;
mod process;
mod registry;
mod schema;

pub use approval::{
    APPROVAL_TIMEOUT_DEFAULT, ApprovalBroker, NO_CLIENT_MESSAGE, PENDING_APPROVALS_MAX,
    PendingApproval,
};
pub use builtin::{
    BRAVE_API_KEY_VAR, FETCH_BODY_BYTES_MAX, FETCH_REDIRECTS_MAX, FETCH_TEXT_CHARS_MAX,
    FETCH_TIMEOUT_DEFAULT, FILE_READ_BYTES_MAX, FILE_WRITE_BYTES_MAX, FetchConfig, FetchUrl,
    GetTime, GetWeather, LIST_ENTRIES_MAX, SEARCH_RESULTS_DEFAULT, SEARCH_RESULTS_MAX,
    SEARCH_TIMEOUT_DEFAULT, SEARXNG_URL_VAR, SERPER_API_KEY_VAR, SHELL_TIMEOUT_DEFAULT_S,
    SHELL_TIMEOUT_MAX_S, SearchConfig, SearchProvider, Shell, ShellConfig, TAVILY_API_KEY_VAR,
    UnconfiguredTool, WEATHER_TIMEOUT_DEFAULT, WeatherConfig, WebSearch, WorkspaceTool,
    delete_tool, fetch_url_tool, file_read_tool, file_write_tool, get_weather_tool, list_dir_tool,
    make_dir_tool, run_agent_tool, web_search_tool,
};
pub use catalog::{builtin_specs, builtin_tools};
pub use connectors::{ConnectorTool, Connectors, Offer};
pub use error::ToolsError;
pub use executor::{
    AGENT_DEPTH_MAX, AUDIT_MARK, Caller, Checked, Execution, OnAsk, Outcome, ToolExecutor,
};
pub use mcp::{
    MCP_SERVER_NAME_CHARS_MAX, MCP_TIMEOUT_DEFAULT_S, MCP_TIMEOUT_MAX_S, MCP_TOOL_NAME_CHARS_MAX,
    McpConfigError, McpHub, McpServerConfig, McpServerState, McpServerStatus, McpTool,
    McpToolStatus, McpTransport, validate_mcp_servers,
};
pub use process::OUTPUT_CHARS_MAX;
pub use registry::Registry;
pub use schema::{SCHEMA_DEPTH_MAX, validate_arguments};
