//! The built-in tool set: the specs the prompt and the parser see (`imurun_core::builtin`),
//! and the tools behind them, each built from the one spec function of its name, so a spec and
//! its tool cannot drift apart. The names and parameters are pinned by the parser's sample
//! corpus.

use std::sync::Arc;

use imurun_core::{Clock, SystemClock, Tool, ToolSpec};
use imurun_policy::Workspace;

use crate::builtin::{
    Calculate, FetchConfig, FetchUrl, GetTime, GetWeather, SearchConfig, Shell, ShellConfig,
    WeatherConfig, WebSearch, delete_tool, file_read_tool, file_write_tool, list_dir_tool,
    make_dir_tool, run_agent_tool,
};

/// The built-in tool set's specs, in the order the prompt lists it.
pub fn builtin_specs() -> Vec<ToolSpec> {
    imurun_core::builtin::specs()
}

/// How the built-in tools are set up: what the binary resolved from the configuration.
#[derive(Debug, Clone)]
pub struct BuiltinConfig {
    /// The environment the shell starts from.
    pub shell: ShellConfig,
    /// `web_search`'s provider.
    pub search: SearchConfig,
    pub weather: WeatherConfig,
    pub fetch: FetchConfig,
    /// What `get_time` reads.
    pub clock: Arc<dyn Clock>,
}

impl Default for BuiltinConfig {
    /// An empty shell environment, keyless DuckDuckGo, Open-Meteo, public pages only, the
    /// machine clock.
    fn default() -> Self {
        Self {
            shell: ShellConfig::default(),
            search: SearchConfig::default(),
            weather: WeatherConfig::default(),
            fetch: FetchConfig::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

/// The built-in tools, in the same order as [`builtin_specs`]. File tools work in
/// `workspace`; `run_agent` is a placeholder the agent loop's own tool replaces.
pub fn builtin_tools(workspace: &Arc<Workspace>, config: BuiltinConfig) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(WebSearch::new(config.search)),
        Arc::new(file_read_tool(Arc::clone(workspace))),
        Arc::new(file_write_tool(Arc::clone(workspace))),
        Arc::new(list_dir_tool(Arc::clone(workspace))),
        Arc::new(make_dir_tool(Arc::clone(workspace))),
        Arc::new(delete_tool(Arc::clone(workspace))),
        Arc::new(Shell::new(Arc::clone(workspace), config.shell)),
        Arc::new(GetTime::with_clock(config.clock)),
        Arc::new(GetWeather::new(config.weather)),
        Arc::new(Calculate::new()),
        Arc::new(run_agent_tool()),
        Arc::new(FetchUrl::new(config.fetch)),
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
                &[
                    ("command", "string"),
                    ("timeout", "integer"),
                    ("cwd", "string"),
                ],
                &["command"],
            ),
            ("get_time", &[("timezone", "string")], &[]),
            ("get_weather", &[("location", "string")], &["location"]),
            ("calculate", &[("expression", "string")], &["expression"]),
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
        let tools = &specs[10].parameters["properties"]["tools"]["items"]["type"];
        assert_eq!(tools, &Value::from("string"));
        assert!(specs[6].description.contains("workspace root"));
        assert!(specs[6].description.contains("`cwd`"));
    }
}
