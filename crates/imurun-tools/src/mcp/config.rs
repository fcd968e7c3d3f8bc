//! What the configuration file says about MCP servers: one entry per server, how to reach it
//! (a command to start, speaking over stdio, or a streamable-HTTP URL), and the categories
//! the policy decides its tools on. Checked before anything connects, with errors that name
//! the server and the field.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use imurun_core::ToolCategory;
use serde::{Deserialize, Serialize};

/// The longest server name. Tool names are `<server>__<tool>` and must stay short.
pub const MCP_SERVER_NAME_CHARS_MAX: usize = 32;

/// Seconds a connection or a call may take when the configuration does not say.
pub const MCP_TIMEOUT_DEFAULT_S: u64 = 60;

/// The longest timeout a server may be given, in seconds.
pub const MCP_TIMEOUT_MAX_S: u64 = 3600;

/// One MCP server, as written in the configuration file.
///
/// ```toml
/// [[mcp.servers]]
/// name = "files"
/// transport = { type = "stdio", command = "npx", args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"] }
/// category = "read"                        # every tool of this server (default: "external")
/// tool_categories = { write_file = "write" } # one tool (wins over `category`)
/// timeout_s = 60                         # each call
/// startup_timeout_s = 60                 # starting, initializing, listing tools
/// enabled = true
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `[a-z0-9_-]`, 1 to [`MCP_SERVER_NAME_CHARS_MAX`] characters: the prefix of its tools.
    pub name: String,
    pub transport: McpTransport,
    /// The category of every tool of the server that `tool_categories` does not name. Without
    /// it, `external`: what an MCP tool does is known only to its server, so it asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<ToolCategory>,
    /// Categories of single tools, by the name the server gives them (without the prefix).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_categories: BTreeMap<String, ToolCategory>,
    /// Seconds each call may take.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
    /// Seconds to start (or reach) the server, initialize and list its tools. Apart from
    /// `timeout_s` because a server started with `npx` may first download itself.
    #[serde(default = "default_timeout_s")]
    pub startup_timeout_s: u64,
    /// A disabled server is listed but never started.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
}

/// How to reach a server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpTransport {
    /// Start `command` with `args` and speak JSON-RPC over its stdin and stdout. The child
    /// gets imurun's environment without credential-looking variables, plus `env`.
    Stdio {
        command: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Variables set for this server only, kept even when their names look like
        /// credentials: the person wrote them here for this server.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// The working folder; imurun's own when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint (`http://` or `https://`), with extra headers sent on every
    /// request (an `Authorization` header, for example).
    #[serde(alias = "streamable_http")]
    Http {
        url: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// Why a server's configuration cannot be used. Each names the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    /// The name is empty, too long, or has a character outside `[a-z0-9_-]`.
    #[error(
        "MCP server name `{name}` is invalid: use 1 to {MCP_SERVER_NAME_CHARS_MAX} characters from a-z, 0-9, `_` and `-`"
    )]
    BadName { name: String },
    /// Two servers share a name (or names that become the same tool prefix).
    #[error("MCP server name `{name}` is used twice (`-` and `_` count as the same)")]
    DuplicateName { name: String },
    /// A field has a value that cannot work.
    #[error("MCP server `{server}`: {problem}")]
    BadField { server: String, problem: String },
}

impl McpServerConfig {
    /// A server started with `command` and `args`, with every default.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: &[&str]) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: args.iter().map(|arg| (*arg).to_owned()).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A streamable-HTTP server at `url`, with every default.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            category: None,
            tool_categories: BTreeMap::new(),
            timeout_s: MCP_TIMEOUT_DEFAULT_S,
            startup_timeout_s: MCP_TIMEOUT_DEFAULT_S,
            enabled: true,
        }
    }

    /// The category of the server's tool called `tool` (its own name, without the prefix).
    pub fn category_of(&self, tool: &str) -> ToolCategory {
        self.tool_categories
            .get(tool)
            .copied()
            .or(self.category)
            .unwrap_or(ToolCategory::External)
    }

    /// Checks one server's fields: its name, its transport, its categories, its timeout.
    pub fn validate(&self) -> Result<(), McpConfigError> {
        if !is_valid_name(&self.name) {
            return Err(McpConfigError::BadName {
                name: self
                    .name
                    .chars()
                    .take(MCP_SERVER_NAME_CHARS_MAX * 2)
                    .collect(),
            });
        }
        let bad = |problem: String| McpConfigError::BadField {
            server: self.name.clone(),
            problem,
        };
        for (field, value) in [
            ("timeout_s", self.timeout_s),
            ("startup_timeout_s", self.startup_timeout_s),
        ] {
            if !(1..=MCP_TIMEOUT_MAX_S).contains(&value) {
                return Err(bad(format!(
                    "{field} must be between 1 and {MCP_TIMEOUT_MAX_S}, not {value}"
                )));
            }
        }
        // `agent` always runs because a sub-agent's own calls are checked one by one; an MCP
        // tool's effects are not, so it may not borrow that category.
        let categories = self.category.iter().chain(self.tool_categories.values());
        if categories.into_iter().any(|c| *c == ToolCategory::Agent) {
            return Err(bad(
                "the `agent` category is imurun's own sub-agent tool's; an MCP tool cannot have it"
                    .to_owned(),
            ));
        }
        match &self.transport {
            McpTransport::Stdio { command, .. } => {
                if command.trim().is_empty() {
                    return Err(bad("transport.command is empty".to_owned()));
                }
            }
            McpTransport::Http { url, headers } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(bad(format!(
                        "transport.url must start with http:// or https://, not `{}`",
                        url.chars().take(64).collect::<String>()
                    )));
                }
                for (name, value) in headers {
                    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(bad(format!(
                            "transport.headers: `{name}` is not a header name"
                        )));
                    }
                    if reqwest::header::HeaderValue::from_str(value).is_err() {
                        // The value may be a secret: only the header's name is shown.
                        return Err(bad(format!(
                            "transport.headers: the value of `{name}` is not a valid header value"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// `stdio` or `http`.
    pub fn transport_kind(&self) -> &'static str {
        match self.transport {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
        }
    }

    /// What the server is, for a person: the command line or the URL. Never a variable or a
    /// header value, which may be secrets.
    pub fn target(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// Checks every server, and that no two share a tool prefix.
pub fn validate_mcp_servers(configs: &[McpServerConfig]) -> Result<(), McpConfigError> {
    let mut seen = std::collections::HashSet::new();
    for config in configs {
        config.validate()?;
        if !seen.insert(tool_prefix(&config.name)) {
            return Err(McpConfigError::DuplicateName {
                name: config.name.clone(),
            });
        }
    }
    Ok(())
}

/// The prefix of a server's tool names: its name with `-` as `_`.
pub(crate) fn tool_prefix(server: &str) -> String {
    server.replace('-', "_")
}

fn is_valid_name(name: &str) -> bool {
    (1..=MCP_SERVER_NAME_CHARS_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn default_timeout_s() -> u64 {
    MCP_TIMEOUT_DEFAULT_S
}

fn default_enabled() -> bool {
    true
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("category", &self.category)
            .field("tool_categories", &self.tool_categories)
            .field("timeout_s", &self.timeout_s)
            .field("startup_timeout_s", &self.startup_timeout_s)
            .field("enabled", &self.enabled)
            .finish()
    }
}

/// Variable and header values are left out: they are where tokens live.
impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(toml_text: &str) -> Result<McpServerConfig, String> {
        toml::from_str(toml_text).map_err(|error| error.to_string())
    }

    #[test]
    fn defaults_and_categories() {
        let config = parse(
            r#"
            name = "files"
            transport = { type = "stdio", command = "mcp-files", args = ["/srv"] }
            tool_categories = { read_file = "read" }
            "#,
        )
        .unwrap();
        assert_eq!(config.timeout_s, MCP_TIMEOUT_DEFAULT_S);
        assert_eq!(config.startup_timeout_s, MCP_TIMEOUT_DEFAULT_S);
        assert!(config.enabled);
        assert_eq!(config.category_of("read_file"), ToolCategory::Read);
        assert_eq!(config.category_of("write_file"), ToolCategory::External);
        config.validate().unwrap();
        let http = parse(
            r#"
            name = "remote"
            category = "network"
            timeout_s = 5
            [transport]
            type = "http"
            url = "https://example.invalid/mcp"
            headers = { Authorization = "Bearer secret-123" }
            "#,
        )
        .unwrap();
        assert_eq!(http.category_of("anything"), ToolCategory::Network);
        assert!(!format!("{http:?}").contains("secret-123"));
    }

    #[test]
    fn typos_are_errors() {
        let error = parse(
            r#"name = "x"
            transport = { type = "stdio", comand = "y" }"#,
        )
        .unwrap_err();
        assert!(error.contains("comand"), "{error}");
        let error = parse(
            r#"name = "x"
            transport = { type = "ws", url = "y" }"#,
        )
        .unwrap_err();
        assert!(error.contains("ws"), "{error}");
    }

    #[test]
    fn validation_names_the_problem() {
        let cases: [(McpServerConfig, &str); 6] = [
            (
                McpServerConfig::stdio("Bad Name", "x", &[]),
                "MCP server name `Bad Name` is invalid",
            ),
            (
                McpServerConfig::stdio("a".repeat(33), "x", &[]),
                "is invalid: use 1 to 32 characters",
            ),
            (
                McpServerConfig::stdio("ok", " ", &[]),
                "transport.command is empty",
            ),
            (
                McpServerConfig::http("ok", "ftp://x"),
                "transport.url must start with http:// or https://",
            ),
            (
                McpServerConfig {
                    timeout_s: 0,
                    ..McpServerConfig::stdio("ok", "x", &[])
                },
                "timeout_s must be between 1 and 3600",
            ),
            (
                McpServerConfig {
                    category: Some(ToolCategory::Agent),
                    ..McpServerConfig::stdio("ok", "x", &[])
                },
                "the `agent` category",
            ),
        ];
        for (config, expected) in cases {
            let error = config.validate().unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
        let twins = [
            McpServerConfig::stdio("my-server", "x", &[]),
            McpServerConfig::stdio("my_server", "x", &[]),
        ];
        assert_eq!(
            validate_mcp_servers(&twins).unwrap_err(),
            McpConfigError::DuplicateName {
                name: "my_server".into()
            }
        );
    }
}
