//! The built-in tools, one per file, and the small helpers they share for reading arguments
//! and for running blocking file operations off the async workers.
//!
//! The network tools (`web_search`, `get_weather`, `fetch_url`) go out through `imurun-net`'s
//! door; they share `http` (their doors, bounded answers, `Retry-After` in words) and
//! `html_text` (HTML as readable text).
//!
//! File tools hold the shared [`Workspace`] and check every path again inside `run`
//! (confinement and protection), so a direct `run` cannot skip what the executor's policy
//! step checks; then they open through the workspace's capability handle.

mod calculate;
mod delete;
mod fetch_url;
mod file_read;
mod file_write;
mod get_time;
mod get_weather;
mod html_text;
mod http;
mod list_dir;
mod make_dir;
mod run_agent;
mod shell;
mod unconfigured;
mod web_search;
mod workspace_tool;

use imurun_core::ToolOutput;
use serde_json::{Map, Value};

pub use calculate::{Calculate, EXPRESSION_CHARS_MAX};
pub use delete::delete_tool;
pub use fetch_url::{
    FETCH_BODY_BYTES_MAX, FETCH_REDIRECTS_MAX, FETCH_TEXT_CHARS_MAX, FETCH_TIMEOUT_DEFAULT,
    FetchConfig, FetchUrl,
};
pub use file_read::{FILE_READ_BYTES_MAX, file_read_tool};
pub use file_write::{FILE_WRITE_BYTES_MAX, file_write_tool};
pub use get_time::GetTime;
pub use get_weather::{GetWeather, WEATHER_TIMEOUT_DEFAULT, WeatherConfig};
pub use list_dir::{LIST_ENTRIES_MAX, list_dir_tool};
pub use make_dir::make_dir_tool;
pub use run_agent::run_agent_tool;
pub use shell::{SHELL_TIMEOUT_DEFAULT_S, SHELL_TIMEOUT_MAX_S, Shell, ShellConfig};
pub use unconfigured::UnconfiguredTool;
pub use web_search::{
    BRAVE_API_KEY_VAR, SEARCH_RESULTS_DEFAULT, SEARCH_RESULTS_MAX, SEARCH_TIMEOUT_DEFAULT,
    SEARXNG_URL_VAR, SERPER_API_KEY_VAR, SearchConfig, SearchProvider, TAVILY_API_KEY_VAR,
    WebSearch,
};
pub use workspace_tool::WorkspaceTool;

/// A required string argument, or the failure that says it is missing. The executor has
/// validated the schema already; this keeps a direct `run` from panicking on bad input.
fn required_string<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ToolOutput> {
    match args.get(name) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(ToolOutput::failed(format!("`{name}` must be a string"))),
        None => Err(ToolOutput::failed(format!("`{name}` is required"))),
    }
}

/// An optional string argument; `null` counts as absent.
fn optional_string<'a>(
    args: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, ToolOutput> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolOutput::failed(format!("`{name}` must be a string"))),
    }
}

/// An optional integer argument; `null` counts as absent.
fn optional_integer(args: &Map<String, Value>, name: &str) -> Result<Option<i64>, ToolOutput> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64() {
            Some(number) => Ok(Some(number)),
            None => Err(ToolOutput::failed(format!("`{name}` must be an integer"))),
        },
    }
}

/// Runs a blocking file operation on tokio's blocking pool, so a slow disk or a large
/// folder never stalls the async workers that carry other sessions' turns.
async fn blocking<F>(tool: &str, operation: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(operation).await {
        Ok(output) => output,
        Err(error) if error.is_panic() => ToolOutput::failed(format!(
            "`{tool}` crashed while working on the file (a bug in imurun, not in the call)"
        )),
        Err(_) => ToolOutput::failed(format!("`{tool}` was cancelled before it finished")),
    }
}
