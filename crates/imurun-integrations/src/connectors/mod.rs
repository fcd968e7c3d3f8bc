//! Connector tools: web services (GitHub, Gmail, Cloudflare) described as data — a
//! [`Service`] with its credential, base URL, cues and [`ConnectorSpec`]s — and one generic
//! [`ConnectorTool`] that runs any declaration over HTTP.
//!
//! A service is declared once, in its own file, as a `static`: the tools, their HTTP shape,
//! their summarisers and the words that point at the service sit together, so adding a
//! service never touches the executor, the registry or the offering rule.
//!
//! Configuration (credentials, base URLs) comes in through a lookup closure
//! ([`Connectors::from_lookup`]), so this crate keeps the invariant that only the binary
//! reads environment variables; [`Connectors::from_env`] is the binary's one-line bridge.

mod cloudflare;
mod cues;
mod encode;
mod github;
mod gmail;
mod summary;
mod tool;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{Tool, ToolCategory, ToolGroup, ToolSpec};
use imurun_net::http::{Method, Url};
use serde_json::{Map, Value};

pub use cloudflare::CLOUDFLARE;
pub use cues::points_at;
pub use github::GITHUB;
pub use gmail::GMAIL;
pub use tool::{CONNECTOR_OUTPUT_CHARS_MAX, CONNECTOR_TIMEOUT_DEFAULT, ConnectorTool};

/// Every declared service, in the order the registry adds them.
pub static SERVICES: &[&Service] = &[&GITHUB, &GMAIL, &CLOUDFLARE];

/// A web service the connector tools talk to.
#[derive(Debug)]
pub struct Service {
    /// A short, stable id: `github`, `gmail`, `cloudflare`.
    pub id: &'static str,
    /// The name people know it by, used in prompts and failures: `GitHub`.
    pub display_name: &'static str,
    /// Phrases that point a question at this service (see [`points_at`] for how they match).
    pub cues: &'static [&'static str],
    /// Phrases that look like cues but are not (`email address` is about a format, not the
    /// mailbox); words they cover are not matched against [`Service::cues`].
    pub not_cues: &'static [&'static str],
    pub credential: Credential,
    /// The API root, without a trailing slash (`https://api.github.com`).
    pub base_url: &'static str,
    /// The variable that replaces `base_url`, for self-hosted instances and tests.
    pub base_url_var: &'static str,
    /// Headers every request carries besides the credential and the `User-Agent`.
    pub headers: &'static [(&'static str, &'static str)],
    /// Reads the service's own error message out of a JSON response body.
    pub error_message: fn(&Value) -> Option<String>,
    /// Some services answer 200 with a failure inside (Cloudflare's `"success": false`);
    /// this returns its message, or `None` for a real success.
    pub body_failure: fn(&Value) -> Option<String>,
    pub tools: &'static [ConnectorSpec],
}

/// The credential a service needs.
#[derive(Debug, Clone, Copy)]
pub struct Credential {
    /// The variable holding the token: `IMURUN_GITHUB_TOKEN`.
    pub token_var: &'static str,
    /// What kind of token it is, for the sentence that says how to get one.
    pub token_kind: &'static str,
}

/// One connector tool, declared: what the model reads and how a call becomes a request.
#[derive(Debug)]
pub struct ConnectorSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// The JSON-Schema `parameters` object (a function because `Value` cannot be `static`).
    pub parameters: fn() -> Value,
    pub method: HttpMethod,
    /// Appended to the base URL; `{name}` placeholders are filled from the arguments of that
    /// name, percent-encoded as one path segment.
    pub path: &'static str,
    /// `(argument, query key)`: arguments sent in the query string when present.
    pub query: &'static [(&'static str, &'static str)],
    /// Query pairs every request carries (`per_page`, to keep answers small).
    pub fixed_query: &'static [(&'static str, &'static str)],
    pub body: Body,
    /// `Network` for tools that only fetch; `External` for tools that send or change
    /// something on the person's behalf.
    pub category: ToolCategory,
    /// Other names the model may use for this tool.
    pub aliases: &'static [&'static str],
    /// Turns the JSON answer (and the call's arguments) into compact readable text.
    pub summarise: fn(&Value, &Map<String, Value>) -> String,
}

impl ConnectorSpec {
    /// The spec the model and the parser see.
    pub fn tool_spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, self.description, (self.parameters)())
    }
}

/// The HTTP methods connector tools use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
    Patch,
    Put,
    Delete,
}

impl HttpMethod {
    fn as_http(self) -> Method {
        match self {
            HttpMethod::Get => Method::GET,
            HttpMethod::Post => Method::POST,
            HttpMethod::Patch => Method::PATCH,
            HttpMethod::Put => Method::PUT,
            HttpMethod::Delete => Method::DELETE,
        }
    }
}

/// The JSON body of a request.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// No body.
    None,
    /// `(argument, JSON key)`: arguments copied as they are, when present.
    Fields(&'static [(&'static str, &'static str)]),
    /// A body built from the arguments (Gmail's `raw` message); `Err` is the reason the call
    /// fails before anything is sent.
    Build(fn(&Map<String, Value>) -> Result<Value, String>),
}

/// One service's configuration, read once at construction.
#[derive(Clone)]
pub struct ServiceConfig {
    /// The token, when it is set and not empty.
    token: Option<String>,
    /// The API root without a trailing slash, or why the configured one cannot be used.
    base_url: Result<String, String>,
}

impl ServiceConfig {
    /// Reads `service`'s variables through `lookup`.
    pub fn read(service: &Service, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let token = lookup(service.credential.token_var)
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty());
        let base_url = match lookup(service.base_url_var).filter(|url| !url.trim().is_empty()) {
            Some(url) => check_base_url(service.base_url_var, &url),
            None => Ok(service.base_url.to_owned()),
        };
        Self { token, base_url }
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The API root in use, or why the configured one was refused.
    pub fn base_url(&self) -> Result<&str, &str> {
        self.base_url.as_deref().map_err(String::as_str)
    }
}

// The token never reaches a log through `{:?}`.
impl fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url)
            .finish()
    }
}

/// A base URL from a variable: `https://`, or `http://` to this machine only, because the
/// token travels with every request and must not cross a network in the clear.
fn check_base_url(var: &str, url: &str) -> Result<String, String> {
    let parsed =
        Url::parse(url.trim()).map_err(|error| format!("{var} (`{url}`) is not a URL: {error}"))?;
    let loopback = matches!(
        parsed.host_str(),
        Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
    );
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(format!(
                "{var} (`{url}`) must be an https:// URL (http:// only to this machine), \
                 because the token is sent with every request"
            ));
        }
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// Every declared service with its configuration: the source of the connector tools.
#[derive(Debug, Clone)]
pub struct Connectors {
    services: Vec<(&'static Service, Arc<ServiceConfig>)>,
    timeout: Duration,
}

impl Connectors {
    /// Reads every service's variables through `lookup` (tests pass their own values).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let services = SERVICES
            .iter()
            .map(|&service| (service, Arc::new(ServiceConfig::read(service, &lookup))))
            .collect();
        Self {
            services,
            timeout: CONNECTOR_TIMEOUT_DEFAULT,
        }
    }

    /// How long one request may take, connecting included.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Every connector tool, with its service, in declaration order.
    pub fn tools(&self) -> Vec<(Arc<ConnectorTool>, &'static Service)> {
        let mut tools = Vec::new();
        for (service, config) in &self.services {
            let door = tool::service_door(config.base_url().ok(), self.timeout);
            for spec in service.tools {
                let tool = ConnectorTool::new(service, spec, Arc::clone(config), door.clone());
                tools.push((Arc::new(tool), *service));
            }
        }
        tools
    }

    /// What the binary registers: every connector tool with its service as the tool's group
    /// (so the per-turn offer lists only the services a question points at) and its aliases.
    pub fn registrations(&self) -> Vec<ConnectorRegistration> {
        self.tools()
            .into_iter()
            .map(|(tool, service)| ConnectorRegistration {
                aliases: tool.declaration().aliases,
                tool: tool as Arc<dyn Tool>,
                group: Arc::new(ServiceGroup(service)),
            })
            .collect()
    }
}

/// One connector tool as the binary registers it.
pub struct ConnectorRegistration {
    pub tool: Arc<dyn Tool>,
    pub group: Arc<dyn ToolGroup>,
    /// Other names the model may use for it.
    pub aliases: &'static [&'static str],
}

impl fmt::Debug for ConnectorRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectorRegistration")
            .field("tool", &self.tool.spec().name)
            .field("group", &self.group.id())
            .field("aliases", &self.aliases)
            .finish()
    }
}

/// A service as a tool group: its cues decide whether a question points at it.
#[derive(Debug, Clone, Copy)]
pub struct ServiceGroup(pub &'static Service);

impl ToolGroup for ServiceGroup {
    fn id(&self) -> &str {
        self.0.id
    }

    fn display_name(&self) -> &str {
        self.0.display_name
    }

    fn points_at(&self, text: &str) -> bool {
        points_at(self.0, text)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Names and aliases share one namespace; a clash would make a call run the wrong tool.
    #[test]
    fn names_and_aliases_are_unique_and_categories_match_the_method() {
        let mut seen = HashSet::new();
        for service in SERVICES {
            for spec in service.tools {
                assert!(spec.name.starts_with(service.id), "{}", spec.name);
                assert!(seen.insert(spec.name), "{}", spec.name);
                for alias in spec.aliases {
                    assert!(seen.insert(alias), "{alias}");
                }
                let expected = match spec.method {
                    HttpMethod::Get => ToolCategory::Network,
                    _ => ToolCategory::External,
                };
                assert_eq!(spec.category, expected, "{}", spec.name);
                let schema = spec.tool_spec();
                for placeholder in placeholders(spec.path) {
                    assert!(schema.required().contains(&placeholder), "{}", spec.name);
                }
            }
        }
        assert!(seen.len() > 8);
    }

    fn placeholders(path: &str) -> Vec<&str> {
        path.split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect()
    }

    #[test]
    fn base_urls_from_variables_are_checked() {
        let config = |url: &str| {
            let url = url.to_owned();
            ServiceConfig::read(&GITHUB, &move |name| {
                (name == "IMURUN_GITHUB_API_URL").then(|| url.clone())
            })
        };
        assert_eq!(
            config("https://ghe.example.com/api/v3/").base_url(),
            Ok("https://ghe.example.com/api/v3")
        );
        assert_eq!(
            config("http://127.0.0.1:8080").base_url(),
            Ok("http://127.0.0.1:8080")
        );
        assert!(config("http://ghe.example.com").base_url().is_err());
        assert!(config("not a url").base_url().is_err());
        assert_eq!(config("").base_url(), Ok("https://api.github.com"));
    }

    #[test]
    fn the_token_is_not_printed() {
        let config = ServiceConfig::read(&GITHUB, &|name| {
            (name == "IMURUN_GITHUB_TOKEN").then(|| "ghp_secret".into())
        });
        assert!(!format!("{config:?}").contains("ghp_secret"));
        assert!(config.has_token());
    }
}
