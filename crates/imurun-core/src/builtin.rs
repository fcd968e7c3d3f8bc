//! The built-in tool set's specs: names, descriptions and parameters. They are vocabulary
//! the parser's default tool set (`imurun parse`), the prompt's worked examples and the tools
//! themselves share, pinned by the parser's sample corpus; `imurun-tools` implements them.

use serde_json::json;

use crate::ToolSpec;

/// The built-in tool set's specs, in the order the prompt lists it.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        web_search(),
        file_read(),
        file_write(),
        list_dir(),
        make_dir(),
        delete(),
        shell(),
        get_time(),
        get_weather(),
        calculate(),
        crate::run_agent_spec(),
        fetch_url(),
    ]
}

/// The built-in tools' names, in `specs`'s order (a test holds the two together).
pub const NAMES: &[&str] = &[
    "web_search",
    "file_read",
    "file_write",
    "list_dir",
    "make_dir",
    "delete",
    "shell",
    "get_time",
    "get_weather",
    "calculate",
    "run_agent",
    "fetch_url",
];

/// Whether `name` is one of the built-in tools'.
pub fn is_builtin(name: &str) -> bool {
    NAMES.contains(&name)
}

/// `web_search`.
pub fn web_search() -> ToolSpec {
    ToolSpec::new(
        "web_search",
        "Search the web. Use it for anything about the present or anything you are unsure of.",
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "what to search for"},
            "max_results": {"type": "integer", "description": "how many results (default 5)"}
        }, "required": ["query"]}),
    )
}

/// `file_read`.
pub fn file_read() -> ToolSpec {
    ToolSpec::new(
        "file_read",
        "Read a text file in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"}
        }, "required": ["path"]}),
    )
}

/// `file_write`.
pub fn file_write() -> ToolSpec {
    ToolSpec::new(
        "file_write",
        "Write a text file in the workspace, replacing it if it exists.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"},
            "content": {"type": "string", "description": "the whole new file body"}
        }, "required": ["path", "content"]}),
    )
}

/// `list_dir`.
pub fn list_dir() -> ToolSpec {
    ToolSpec::new(
        "list_dir",
        "List a folder in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "folder relative to the workspace (default: its root)"}
        }}),
    )
}

/// `make_dir`.
pub fn make_dir() -> ToolSpec {
    ToolSpec::new(
        "make_dir",
        "Create a folder (and its parents) in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "folder relative to the workspace"}
        }, "required": ["path"]}),
    )
}

/// `delete`.
pub fn delete() -> ToolSpec {
    ToolSpec::new(
        "delete",
        "Delete a file or folder in the workspace.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"}
        }, "required": ["path"]}),
    )
}

/// `shell`.
pub fn shell() -> ToolSpec {
    ToolSpec::new(
        "shell",
        "Run a shell command (sh -c) in the workspace root, or in the workspace folder `cwd`. stdin \
         is closed; stdout and stderr come back together, at most 20000 characters (head and tail). \
         The command and everything it started is killed after `timeout` seconds.",
        json!({"type": "object", "properties": {
            "command": {"type": "string", "description": "the command line"},
            "timeout": {"type": "integer", "description": "seconds before it is killed (default 60, at most 600)"},
            "cwd": {"type": "string", "description": "the folder to run in, relative to the workspace (default: its root)"}
        }, "required": ["command"]}),
    )
}

/// `get_time`.
pub fn get_time() -> ToolSpec {
    ToolSpec::new(
        "get_time",
        "The current date and time, in a time zone.",
        json!({"type": "object", "properties": {
            "timezone": {"type": "string", "description": "an IANA time zone such as Europe/Paris (default: local)"}
        }}),
    )
}

/// `get_weather`.
pub fn get_weather() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "The current weather and forecast for a place.",
        json!({"type": "object", "properties": {
            "location": {"type": "string", "description": "a city or place name"}
        }, "required": ["location"]}),
    )
}

/// `fetch_url`.
pub fn fetch_url() -> ToolSpec {
    ToolSpec::new(
        "fetch_url",
        "Read a web page (http or https) as text.",
        json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "the page's address, starting with http:// or https://"}
        }, "required": ["url"]}),
    )
}

/// `calculate`.
/// The longest expression `calculate` reads. In its schema too, so that a call grammar built
/// from it closes the call there: a small model that never ends the expression would
/// otherwise write until its token budget runs out.
pub const CALCULATE_EXPRESSION_CHARS_MAX: usize = 256;

pub fn calculate() -> ToolSpec {
    ToolSpec::new(
        "calculate",
        "Work out arithmetic exactly: + - * / % ^, parentheses, sqrt, round, min, max, pi.",
        json!({"type": "object", "properties": {
            "expression": {"type": "string", "maxLength": CALCULATE_EXPRESSION_CHARS_MAX,
                           "description": "the arithmetic, such as 17 * 23 or sqrt(2) / 4"}
        }, "required": ["expression"]}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_the_specs_names() {
        let names: Vec<String> = specs().into_iter().map(|spec| spec.name).collect();
        assert_eq!(names, NAMES);
        assert!(is_builtin("calculate") && !is_builtin("calculator"));
    }
}
