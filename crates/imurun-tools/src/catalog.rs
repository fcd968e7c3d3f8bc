//! The specs of imurun's built-in tools, as the prompt and the parser see them.

use imurun_core::ToolSpec;
use serde_json::json;

/// The built-in tool set, in the order the prompt lists it.
pub fn builtin_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "web_search",
            "Search the web. Use it for anything about the present or anything you are unsure of.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "what to search for"},
                "max_results": {"type": "integer", "description": "how many results (default 5)"}
            }, "required": ["query"]}),
        ),
        ToolSpec::new(
            "file_read",
            "Read a text file in the workspace.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "path relative to the workspace"}
            }, "required": ["path"]}),
        ),
        ToolSpec::new(
            "file_write",
            "Write a text file in the workspace, replacing it if it exists.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "path relative to the workspace"},
                "content": {"type": "string", "description": "the whole new file body"}
            }, "required": ["path", "content"]}),
        ),
        ToolSpec::new(
            "list_dir",
            "List a folder in the workspace.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "folder relative to the workspace (default: its root)"}
            }}),
        ),
        ToolSpec::new(
            "make_dir",
            "Create a folder (and its parents) in the workspace.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "folder relative to the workspace"}
            }, "required": ["path"]}),
        ),
        ToolSpec::new(
            "delete",
            "Delete a file or folder in the workspace.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "path relative to the workspace"}
            }, "required": ["path"]}),
        ),
        ToolSpec::new(
            "shell",
            "Run a shell command in the workspace.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "the command line"},
                "timeout": {"type": "integer", "description": "seconds before it is killed (default 60)"}
            }, "required": ["command"]}),
        ),
        ToolSpec::new(
            "get_time",
            "The current date and time, in a time zone.",
            json!({"type": "object", "properties": {
                "timezone": {"type": "string", "description": "an IANA time zone such as Europe/Paris (default: local)"}
            }}),
        ),
        ToolSpec::new(
            "get_weather",
            "The current weather and forecast for a place.",
            json!({"type": "object", "properties": {
                "location": {"type": "string", "description": "a city or place name"}
            }, "required": ["location"]}),
        ),
        ToolSpec::new(
            "run_agent",
            "Hand a self-contained task to a helper agent and get its summary back.",
            json!({"type": "object", "properties": {
                "task": {"type": "string", "description": "what the helper should do"},
                "tools": {"type": "array", "items": {"type": "string"}, "description": "tool names it may use"},
                "max_steps": {"type": "integer", "description": "its step budget (default 4, max 8)"}
            }, "required": ["task"]}),
        ),
    ]
}
