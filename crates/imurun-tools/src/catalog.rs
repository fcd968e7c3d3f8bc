//! The built-in tool set: the specs the prompt and the parser see, and the tools behind them.
//!
//! Both lists come from the same per-tool `spec()` functions, so a spec and its tool cannot
//! drift apart. The names and parameters are pinned by the parser's sample corpus.

use std::sync::Arc;

use imurun_core::{Tool, ToolSpec};
use imurun_policy::Workspace;

use crate::builtin::{
    self, GetTime, Shell, ShellConfig, delete_tool, fetch_url_tool, file_read_tool,
    file_write_tool, get_weather_tool, list_dir_tool, make_dir_tool, run_agent_tool,
    web_search_tool,
};

/// The built-in tool set's specs, in the order the prompt lists it.
pub fn builtin_specs() -> Vec<ToolSpec> {
    vec![
        builtin::web_search_spec(),
        builtin::file_read_spec(),
        builtin::file_write_spec(),
        builtin::list_dir_spec(),
        builtin::make_dir_spec(),
        builtin::delete_spec(),
        builtin::shell_spec(),
        builtin::get_time_spec(),
        builtin::get_weather_spec(),
        builtin::run_agent_spec(),
        builtin::fetch_url_spec(),
    ]
}

/// The built-in tools, in the same order as [`builtin_specs`]. File tools work in
/// `workspace`; the shell starts from `shell`'s environment. `web_search` chooses its provider
/// from the process environment ([`crate::SearchConfig::from_env`]); a caller that wants
/// another provider replaces it with [`crate::Registry::insert`].
pub fn builtin_tools(workspace: &Arc<Workspace>, shell: ShellConfig) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(web_search_tool()),
        Arc::new(file_read_tool(Arc::clone(workspace))),
        Arc::new(file_write_tool(Arc::clone(workspace))),
        Arc::new(list_dir_tool(Arc::clone(workspace))),
        Arc::new(make_dir_tool(Arc::clone(workspace))),
        Arc::new(delete_tool(Arc::clone(workspace))),
        Arc::new(Shell::new(shell)),
        Arc::new(GetTime::new()),
        Arc::new(get_weather_tool()),
        Arc::new(run_agent_tool()),
        Arc::new(fetch_url_tool()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The parser's corpus pins these names and parameters; a change here breaks it.
    #[test]
    fn names_and_parameters_are_the_pinned_ones() {
        /// Name, (parameter, type) in order, required parameters.
        type Pinned = (
            &'static str,
            &'static [(&'static str, &'static str)],
            &'static [&'static str],
        );
        let expected: &[Pinned] = &[
            (
                "web_search",
                &[("query", "string"), ("max_results", "integer")],
                &["query"],
            ),
            ("file_read", &[("path", "string")], &["path"]),
            (
                "file_write",
                &[("path", "string"), ("content", "string")],
                &["path", "content"],
            ),
            ("list_dir", &[("path", "string")], &[]),
            ("make_dir", &[("path", "string")], &["path"]),
            ("delete", &[("path", "string")], &["path"]),
            (
                "shell",
                &[("command", "string"), ("timeout", "integer")],
                &["command"],
            ),
            ("get_time", &[("timezone", "string")], &[]),
            ("get_weather", &[("location", "string")], &["location"]),
            (
                "run_agent",
                &[
                    ("task", "string"),
                    ("tools", "array"),
                    ("max_steps", "integer"),
                ],
                &["task"],
            ),
            ("fetch_url", &[("url", "string")], &["url"]),
        ];
        let specs = builtin_specs();
        assert_eq!(specs.len(), expected.len());
        for (spec, (name, parameters, required)) in specs.iter().zip(expected) {
            assert_eq!(spec.name, *name);
            assert_eq!(spec.required(), *required, "{name}");
            let properties = spec.properties().unwrap();
            let got: Vec<(&str, &str)> = properties
                .iter()
                .map(|(key, schema)| (key.as_str(), schema["type"].as_str().unwrap()))
                .collect();
            assert_eq!(got, *parameters, "{name}");
        }
        let tools = &specs[9].parameters["properties"]["tools"]["items"]["type"];
        assert_eq!(tools, &Value::from("string"));
        assert!(specs[6].description.contains("workspace root"));
        assert!(specs[6].description.contains("no cwd"));
    }
}
