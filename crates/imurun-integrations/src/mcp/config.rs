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

/// Parts of an argument's name (compared case-insensitively) that make its value a secret in
/// [`McpServerConfig::target`] and `Debug`: `--api-key=...`, `TOKEN=...`, `--password ...`.
const SECRET_ARG_WORDS: &[&str] = &["token", "key", "secret", "password", "passwd", "auth"];

/// What a secret argument value is shown as.
const REDACTED: &str = "<redacted>";

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
        /// Absolute folders the server may write in besides the workspace, its `cwd` and its
        /// private temporary folder, where the OS sandbox confines writes (a package cache
        /// such as `~/.npm` for a server started with `npx`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        writable: Vec<PathBuf>,
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
                writable: Vec::new(),
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
            McpTransport::Stdio {
                command, writable, ..
            } => {
                if command.trim().is_empty() {
                    return Err(bad("transport.command is empty".to_owned()));
                }
                if let Some(relative) = writable.iter().find(|folder| !folder.is_absolute()) {
                    return Err(bad(format!(
                        "transport.writable must hold absolute folders, not `{}`",
                        relative.display()
                    )));
                }
            }
            McpTransport::Http { url, headers } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(bad(format!(
                        "transport.url must start with http:// or https://, not `{}`",
                        redacted_url(url).chars().take(64).collect::<String>()
                    )));
                }
                // Headers carry tokens: like a connector's, they cross a network only
                // encrypted.
                if !headers.is_empty() && !url.starts_with("https://") && !is_loopback_url(url) {
                    return Err(bad(format!(
                        "transport.url must be https:// (http:// only to this machine) when \
                         transport.headers are set, because they are sent with every request, \
                         not `{}`",
                        redacted_url(url).chars().take(64).collect::<String>()
                    )));
                }
                for (name, value) in headers {
                    if imurun_net::http::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(bad(format!(
                            "transport.headers: `{name}` is not a header name"
                        )));
                    }
                    if imurun_net::http::header::HeaderValue::from_str(value).is_err() {
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
    /// header value, which may be secrets; nor an argument's value that looks like one
    /// (`--api-key=<redacted>`, `--token <redacted>`), nor a URL's user, password or query.
    pub fn target(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command.clone())
                .chain(redacted_args(args))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => redacted_url(url),
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

/// Whether an `http://` URL goes to this machine: `127.0.0.1`, `localhost` or `::1`.
fn is_loopback_url(url: &str) -> bool {
    imurun_net::http::Url::parse(url).is_ok_and(|parsed| {
        matches!(
            parsed.host_str(),
            Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
        )
    })
}

/// Whether an argument's name (`--api-key`, `TOKEN`) says its value is a secret.
fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_ARG_WORDS.iter().any(|word| lower.contains(word))
}

/// `args` with secret-looking values masked: `name=value` whose name looks secret becomes
/// `name=<redacted>`, and the argument after a secret-looking flag (`--api-key VALUE`) becomes
/// `<redacted>`.
fn redacted_args(args: &[String]) -> Vec<String> {
    let mut shown = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for arg in args {
        if std::mem::take(&mut hide_next) {
            shown.push(REDACTED.to_owned());
            continue;
        }
        if let Some((name, _value)) = arg.split_once('=') {
            if is_secret_name(name) {
                shown.push(format!("{name}={REDACTED}"));
            } else {
                shown.push(arg.clone());
            }
            continue;
        }
        hide_next = arg.starts_with('-') && is_secret_name(arg);
        shown.push(arg.clone());
    }
    shown
}

/// `url` without its userinfo (`user:password@`), query and fragment, which may hold
/// credentials (`?api_key=...`). Written by hand rather than through `Url` so the rest reads
/// exactly as configured, even when it does not parse.
fn redacted_url(url: &str) -> String {
    let without_query = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = without_query.split_once("://") else {
        return without_query.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}{path}")
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

/// Variable and header values are left out: they are where tokens live. Arguments and the URL
/// are shown as [`McpServerConfig::target`] shows them.
impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                writable,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &redacted_args(args))
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .field("writable", writable)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &redacted_url(url))
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
    fn targets_and_debug_hide_secrets() {
        // Regression: `target()` and `Debug` showed tokens in arguments and URLs.
        let stdio = McpServerConfig::stdio(
            "s",
            "server",
            &[
                "--api-key",
                "sk-111",
                "--API_KEY=sk-222",
                "TOKEN=tok-333",
                "--password",
                "pw-444",
                "--db-passwd=pw-555",
                "--auth",
                "au-666",
                "--client-secret=cs-777",
                "--port",
                "8080",
                "/srv/notes",
            ],
        );
        assert_eq!(
            stdio.target(),
            "server --api-key <redacted> --API_KEY=<redacted> TOKEN=<redacted> --password \
             <redacted> --db-passwd=<redacted> --auth <redacted> --client-secret=<redacted> \
             --port 8080 /srv/notes"
        );
        let http = McpServerConfig::http(
            "h",
            "https://user:pw-888@mcp.example.com:8443/mcp?api_key=k-999#frag",
        );
        assert_eq!(http.target(), "https://mcp.example.com:8443/mcp");
        for config in [stdio, http] {
            let debug = format!("{config:?}");
            for secret in [
                "sk-111", "sk-222", "tok-333", "pw-444", "pw-555", "au-666", "cs-777", "pw-888",
                "k-999",
            ] {
                assert!(!debug.contains(secret), "{secret} in {debug}");
            }
        }
        let cases = [
            ("http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"),
            ("https://host/a/b?x=1", "https://host/a/b"),
            ("https://a@b@host/", "https://host/"),
            ("no scheme?x", "no scheme"),
        ];
        for (url, expected) in cases {
            assert_eq!(redacted_url(url), expected, "{url}");
        }
    }

    #[test]
    fn headers_need_https_except_to_this_machine() {
        // Regression: an `Authorization` header could be sent over plain http to any host.
        let with_headers = |url: &str| McpServerConfig {
            transport: McpTransport::Http {
                url: url.to_owned(),
                headers: BTreeMap::from([("Authorization".to_owned(), "Bearer t".to_owned())]),
            },
            ..McpServerConfig::http("remote", url)
        };
        for url in [
            "https://mcp.example.com/mcp",
            "http://127.0.0.1:3000/mcp",
            "http://localhost:3000/mcp",
            "http://[::1]:3000/mcp",
        ] {
            with_headers(url).validate().unwrap();
        }
        for url in [
            "http://mcp.example.com/mcp",
            "http://192.168.1.5/mcp",
            "http://localhost.example.com/mcp",
        ] {
            let error = with_headers(url).validate().unwrap_err().to_string();
            assert!(
                error.contains("must be https:// (http:// only to this machine)"),
                "{error}"
            );
        }
        McpServerConfig::http("plain", "http://mcp.example.com/mcp")
            .validate()
            .unwrap();
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
