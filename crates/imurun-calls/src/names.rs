//! Tool names as models write them, mapped onto the tools that exist.
//!
//! Small models invent plausible names (`read_file`, `bash`, `google`). Each alias here maps
//! onto a built-in tool, and applies only when that tool is in the index of runnable tools,
//! so an alias can never make a tool run that was not offered to this step. The table is
//! documented in `docs/tool-calls.md`.

use imurun_core::{IndexedTool, ToolIndex};

/// Invented names and the tool each one means.
pub const ALIASES: &[(&str, &[&str])] = &[
    (
        "calculate",
        &[
            "calculator",
            "calc",
            "compute",
            "math",
            "evaluate",
            "arithmetic",
        ],
    ),
    (
        "file_read",
        &[
            "read_file",
            "readfile",
            "read",
            "cat",
            "open_file",
            "view_file",
            "get_file",
            "file_get",
            "read_text",
            "read_text_file",
            "show_file",
            "file_open",
            "file_view",
            "get_file_contents",
            "read_file_content",
        ],
    ),
    (
        "file_write",
        &[
            "write_file",
            "writefile",
            "write",
            "save_file",
            "create_file",
            "file_create",
            "file_save",
            "write_to_file",
            "save",
            "put_file",
            "write_text_file",
        ],
    ),
    (
        "list_dir",
        &[
            "ls",
            "list_files",
            "list_directory",
            "listdir",
            "dir",
            "list",
            "file_list",
            "list_folder",
            "list_dir_contents",
            "directory_list",
            "read_dir",
            "list_files_in_dir",
            "get_files",
            "show_files",
        ],
    ),
    (
        "make_dir",
        &[
            "mkdir",
            "create_dir",
            "create_directory",
            "make_directory",
            "makedirs",
            "mkdirs",
            "new_folder",
            "create_folder",
            "make_folder",
            "dir_create",
        ],
    ),
    (
        "delete",
        &[
            "rm",
            "remove",
            "delete_file",
            "remove_file",
            "del",
            "unlink",
            "rmdir",
            "remove_dir",
            "delete_dir",
            "delete_directory",
            "file_delete",
            "delete_folder",
            "remove_directory",
        ],
    ),
    (
        "shell",
        &[
            "bash",
            "sh",
            "zsh",
            "run_shell",
            "shell_exec",
            "exec",
            "execute",
            "run_command",
            "terminal",
            "cmd",
            "command",
            "execute_command",
            "run_bash",
            "bash_command",
            "powershell",
            "run",
            "shell_command",
            "run_shell_command",
            "run_terminal_cmd",
            "execute_shell",
            "subprocess",
        ],
    ),
    (
        "web_search",
        &[
            "google",
            "search",
            "search_web",
            "web",
            "bing",
            "duckduckgo",
            "internet_search",
            "brave_search",
            "websearch",
            "google_search",
            "search_internet",
            "search_online",
            "online_search",
            "lookup",
            "search_the_web",
            "browse",
            "browser_search",
            "wikipedia",
        ],
    ),
    (
        "get_time",
        &[
            "time",
            "now",
            "current_time",
            "get_current_time",
            "clock",
            "datetime",
            "get_date",
            "date",
            "get_datetime",
            "current_date",
            "get_current_date",
            "time_now",
        ],
    ),
    (
        "get_weather",
        &[
            "weather",
            "get_current_weather",
            "forecast",
            "current_weather",
            "get_forecast",
            "weather_forecast",
            "check_weather",
            "weather_search",
            "get_weather_forecast",
        ],
    ),
    (
        "run_agent",
        &[
            "agent",
            "subagent",
            "sub_agent",
            "spawn_agent",
            "delegate",
            "run_subagent",
            "helper",
        ],
    ),
    (
        "gmail_send",
        &[
            "send_email",
            "email_send",
            "send_mail",
            "email",
            "mail_send",
        ],
    ),
    (
        "gmail_search",
        &["search_email", "search_inbox", "email_search", "find_email"],
    ),
];

/// Prefixes models put before a tool name (`functions.web_search`, `default_api.get_time`).
const PREFIXES: &[&str] = &[
    "functions.",
    "function.",
    "tools.",
    "tool.",
    "default_api.",
    "api.",
];

/// The runnable tool a model meant by `written`, if any.
///
/// Order: the exact name or an index alias; the alias table; then the same after
/// normalising case, separators and known prefixes; finally without a leading `get_` or a
/// trailing `_tool` (`get_web_search` → `web_search`).
pub fn resolve<'i>(index: &'i ToolIndex, written: &str) -> Option<&'i IndexedTool> {
    let written = written.trim();
    if let Some(tool) = lookup(index, written) {
        return Some(tool);
    }
    let normal = normalise(written);
    if let Some(tool) = lookup(index, &normal) {
        return Some(tool);
    }
    let trimmed = normal
        .strip_prefix("get_")
        .or_else(|| normal.strip_suffix("_tool"))?;
    lookup(index, trimmed)
}

fn lookup<'i>(index: &'i ToolIndex, name: &str) -> Option<&'i IndexedTool> {
    if let Some(tool) = index.get(name) {
        return Some(tool);
    }
    ALIASES
        .iter()
        .find(|(_, aliases)| aliases.contains(&name))
        .and_then(|(target, _)| index.get(target))
}

fn normalise(written: &str) -> String {
    let mut name = written.to_lowercase();
    for prefix in PREFIXES {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest.to_owned();
            break;
        }
    }
    name.trim_end_matches(".call")
        .chars()
        .map(|ch| {
            if ch == '-' || ch == ' ' || ch == '.' {
                '_'
            } else {
                ch
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use imurun_core::ToolSpec;
    use serde_json::json;

    fn index(names: &[&str]) -> ToolIndex {
        ToolIndex::offering(names.iter().map(|name| ToolSpec::new(*name, "", json!({}))))
    }

    fn check(written: &str, expect: Option<&str>) {
        let index = index(&["file_read", "shell", "web_search", "get_time", "list_dir"]);
        let got = resolve(&index, written).map(|tool| tool.spec.name.as_str());
        assert_eq!(got, expect, "{written:?}");
    }

    #[test]
    fn invented_names_map_onto_runnable_tools() {
        check("file_read", Some("file_read"));
        check("read_file", Some("file_read"));
        check("Read-File", Some("file_read"));
        check("bash", Some("shell"));
        check("google", Some("web_search"));
        check("functions.web_search", Some("web_search"));
        check("get_web_search", Some("web_search"));
        check("web_search.call", Some("web_search"));
        check("list_files", Some("list_dir"));
        check(" get_time ", Some("get_time"));
    }

    #[test]
    fn an_alias_never_reaches_a_tool_outside_the_index() {
        check("mkdir", None);
        check("send_email", None);
        check("translate_text", None);
        check("", None);
    }

    #[test]
    fn no_alias_is_listed_twice() {
        let mut seen = std::collections::HashSet::new();
        for (target, aliases) in ALIASES {
            for alias in *aliases {
                assert!(seen.insert(*alias), "{alias} is listed twice");
                assert_ne!(alias, target);
            }
        }
    }
}
