//! imurun's built-in tools (one per file) and the one place that spawns processes: the
//! shell, and stdio servers (MCP) for `imurun-integrations`.
//!
//! Every tool meets `imurun_core::Tool` and is registered by the binary into the executor
//! (`imurun-exec`), which decides whether a call may run; file tools still check their paths
//! themselves, and the shell its deny-list, so a direct `run` cannot skip the rules. The
//! network tools go out only through `imurun-net`'s door.

mod builtin;
mod catalog;
mod process;

pub use builtin::{
    BRAVE_API_KEY_VAR, Calculate, EXPRESSION_CHARS_MAX, FETCH_BODY_BYTES_MAX, FETCH_REDIRECTS_MAX,
    FETCH_TEXT_CHARS_MAX, FETCH_TIMEOUT_DEFAULT, FILE_READ_BYTES_MAX, FILE_WRITE_BYTES_MAX,
    FetchConfig, FetchUrl, GetTime, GetWeather, LIST_ENTRIES_MAX, SEARCH_RESULTS_DEFAULT,
    SEARCH_RESULTS_MAX, SEARCH_TIMEOUT_DEFAULT, SEARXNG_URL_VAR, SERPER_API_KEY_VAR,
    SHELL_TIMEOUT_DEFAULT_S, SHELL_TIMEOUT_MAX_S, SearchConfig, SearchProvider, Shell, ShellConfig,
    TAVILY_API_KEY_VAR, UnconfiguredTool, WEATHER_TIMEOUT_DEFAULT, WeatherConfig, WebSearch,
    WorkspaceTool, delete_tool, file_read_tool, file_write_tool, list_dir_tool, make_dir_tool,
    run_agent_tool,
};
pub use catalog::{BuiltinConfig, builtin_specs, builtin_tools};
pub use process::{
    Confinement, OUTPUT_CHARS_MAX, OutputCollector, StdioCommand, StdioServer, sandbox_status,
    spawn_confined, spawn_stdio_server,
};
