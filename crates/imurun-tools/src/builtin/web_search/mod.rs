//! `web_search`: one tool over five providers, chosen once from the configuration.
//!
//! Precedence when several are configured: Brave, Tavily, Serper, SearXNG; with none, the
//! keyless DuckDuckGo HTML endpoint. A provider that refuses, rate-limits, times out, blocks
//! the request (DuckDuckGo's bot check) or answers with something unreadable gives a
//! `FAILED:` result, never an empty success: "no results" is said only when the provider
//! really answered with none, so a model never reads a blocked search as "nothing exists".

mod brave;
mod duckduckgo;
mod searxng;
mod serper;
mod tavily;

use std::fmt;
use std::time::Duration;

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_net::Door;
use imurun_net::http::{RequestBuilder, Url};
use serde_json::{Map, Value};

use super::http::{self, RESPONSE_BYTES_MAX};
use super::{optional_integer, required_string};

/// Results returned when the call does not say how many.
pub const SEARCH_RESULTS_DEFAULT: usize = 5;
/// The most results one call returns; a larger `max_results` is clamped to it.
pub const SEARCH_RESULTS_MAX: usize = 10;
/// How long one search request may take, body included, unless the config says otherwise.
pub const SEARCH_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);
/// The longest query sent; search engines cut far shorter ones anyway.
const QUERY_CHARS_MAX: usize = 400;
/// A title or a snippet longer than this is cut, so ten results stay a short read.
const TITLE_CHARS_MAX: usize = 200;
const SNIPPET_CHARS_MAX: usize = 400;

/// The variables that choose a provider, in precedence order.
pub const BRAVE_API_KEY_VAR: &str = "IMURUN_BRAVE_API_KEY";
pub const TAVILY_API_KEY_VAR: &str = "IMURUN_TAVILY_API_KEY";
pub const SERPER_API_KEY_VAR: &str = "IMURUN_SERPER_API_KEY";
pub const SEARXNG_URL_VAR: &str = "IMURUN_SEARXNG_URL";

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::web_search()
}

/// The search service behind the tool, with what it needs to be called.
#[derive(Clone, PartialEq, Eq)]
pub enum SearchProvider {
    Brave {
        api_key: String,
    },
    Tavily {
        api_key: String,
    },
    Serper {
        api_key: String,
    },
    /// A SearXNG instance; its address lives in [`SearchConfig::endpoint`].
    Searxng,
    /// The keyless HTML endpoint: no account, but it may answer with a bot check.
    DuckDuckGo,
}

impl SearchProvider {
    /// The provider's name as results and failures say it.
    pub fn name(&self) -> &'static str {
        match self {
            SearchProvider::Brave { .. } => "Brave Search",
            SearchProvider::Tavily { .. } => "Tavily",
            SearchProvider::Serper { .. } => "Serper",
            SearchProvider::Searxng => "SearXNG",
            SearchProvider::DuckDuckGo => "DuckDuckGo",
        }
    }

    /// The address the provider is called at, unless the config says otherwise.
    pub fn default_endpoint(&self) -> &'static str {
        match self {
            SearchProvider::Brave { .. } => "https://api.search.brave.com/res/v1/web/search",
            SearchProvider::Tavily { .. } => "https://api.tavily.com/search",
            SearchProvider::Serper { .. } => "https://google.serper.dev/search",
            SearchProvider::Searxng => "http://127.0.0.1:8888/search",
            SearchProvider::DuckDuckGo => "https://html.duckduckgo.com/html/",
        }
    }
}

/// Keys stay out of logs and `Debug` output.
impl fmt::Debug for SearchProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchProvider::Brave { .. }
            | SearchProvider::Tavily { .. }
            | SearchProvider::Serper { .. } => {
                write!(f, "{} {{ api_key: <redacted> }}", self.name())
            }
            SearchProvider::Searxng | SearchProvider::DuckDuckGo => f.write_str(self.name()),
        }
    }
}

/// Which provider `web_search` calls, where, and how long it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchConfig {
    pub provider: SearchProvider,
    /// The full address of the search request (for SearXNG, the instance's `/search`).
    pub endpoint: String,
    pub timeout: Duration,
}

impl SearchConfig {
    /// `provider` at its usual address, with the default timeout.
    pub fn new(provider: SearchProvider) -> Self {
        let endpoint = provider.default_endpoint().to_owned();
        Self {
            provider,
            endpoint,
            timeout: SEARCH_TIMEOUT_DEFAULT,
        }
    }

    /// Chooses the provider from variables read through `lookup`, so the choice can be made
    /// from any source (the process environment, a test's map). The first one set wins:
    /// `IMURUN_BRAVE_API_KEY`, `IMURUN_TAVILY_API_KEY`, `IMURUN_SERPER_API_KEY`,
    /// `IMURUN_SEARXNG_URL`; with none, DuckDuckGo. Empty or blank values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let value = |name: &str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        if let Some(api_key) = value(BRAVE_API_KEY_VAR) {
            Self::new(SearchProvider::Brave { api_key })
        } else if let Some(api_key) = value(TAVILY_API_KEY_VAR) {
            Self::new(SearchProvider::Tavily { api_key })
        } else if let Some(api_key) = value(SERPER_API_KEY_VAR) {
            Self::new(SearchProvider::Serper { api_key })
        } else if let Some(base) = value(SEARXNG_URL_VAR) {
            Self {
                endpoint: searxng::search_endpoint(&base),
                ..Self::new(SearchProvider::Searxng)
            }
        } else {
            Self::new(SearchProvider::DuckDuckGo)
        }
    }
}

impl Default for SearchConfig {
    /// Keyless DuckDuckGo.
    fn default() -> Self {
        Self::new(SearchProvider::DuckDuckGo)
    }
}

/// One search result, before formatting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchHit {
    pub(crate) title: String,
    pub(crate) url: String,
    pub(crate) snippet: String,
}

/// Web search over the configured provider. Its results are marked untrusted: they are text
/// from the web.
#[derive(Debug)]
pub struct WebSearch {
    spec: ToolSpec,
    config: SearchConfig,
    door: Result<Door, String>,
}

impl WebSearch {
    /// The tool over `config`'s provider; its endpoint's host is trusted (the person or
    /// imurun's defaults named it), every other address public only.
    pub fn new(config: SearchConfig) -> Self {
        let door = http::service_door([config.endpoint.as_str()], config.timeout);
        Self {
            spec: spec(),
            config,
            door,
        }
    }

    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    async fn search(&self, query: &str, count: usize) -> ToolOutput {
        let door = match &self.door {
            Ok(door) => door,
            Err(reason) => return ToolOutput::failed(reason),
        };
        let provider_name = self.config.provider.name();
        let hits = match &self.config.provider {
            SearchProvider::Brave { api_key } => {
                brave::search(door, &self.config, api_key, query, count).await
            }
            SearchProvider::Tavily { api_key } => {
                tavily::search(door, &self.config, api_key, query, count).await
            }
            SearchProvider::Serper { api_key } => {
                serper::search(door, &self.config, api_key, query, count).await
            }
            SearchProvider::Searxng => searxng::search(door, &self.config, query).await,
            SearchProvider::DuckDuckGo => duckduckgo::search(door, &self.config, query).await,
        };
        match hits {
            Ok(hits) => format_hits(provider_name, query, hits, count).untrusted(),
            Err(reason) => ToolOutput::failed(format!(
                "{reason}. Do not guess what the search would have found."
            )),
        }
    }
}

impl Tool for WebSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn available(&self) -> Availability {
        http::availability(&self.door)
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (query, count) = match search_arguments(args) {
                Ok(arguments) => arguments,
                Err(failure) => return failure,
            };
            self.search(&query, count).await
        })
    }
}

fn search_arguments(args: &Map<String, Value>) -> Result<(String, usize), ToolOutput> {
    let query = required_string(args, "query")?.trim();
    if query.is_empty() {
        return Err(ToolOutput::failed(
            "`query` is empty; say what to search for",
        ));
    }
    let query: String = query.chars().take(QUERY_CHARS_MAX).collect();
    let count = optional_integer(args, "max_results")?.map_or(SEARCH_RESULTS_DEFAULT as i64, |n| {
        n.clamp(1, SEARCH_RESULTS_MAX as i64)
    });
    // The clamp keeps `count` in 1..=10, so the conversion cannot fail.
    let count = usize::try_from(count).unwrap_or(SEARCH_RESULTS_DEFAULT);
    Ok((query, count))
}

/// "1. Title — url\n   snippet", numbered from 1, at most `count`.
fn format_hits(provider: &str, query: &str, hits: Vec<SearchHit>, count: usize) -> ToolOutput {
    let hits: Vec<SearchHit> = hits
        .into_iter()
        .filter(|hit| !hit.url.trim().is_empty())
        .take(count)
        .collect();
    if hits.is_empty() {
        return ToolOutput::ok(format!(
            "No results were found for \"{query}\" ({provider} answered with none)."
        ));
    }
    let mut text = format!("Results for \"{query}\" from {provider}:\n");
    for (number, hit) in hits.iter().enumerate() {
        let title = match http::clip(hit.title.trim(), TITLE_CHARS_MAX) {
            title if title.is_empty() => hit.url.clone(),
            title => title,
        };
        text.push_str(&format!("{}. {title} — {}\n", number + 1, hit.url.trim()));
        let snippet = http::clip(hit.snippet.trim(), SNIPPET_CHARS_MAX);
        if !snippet.is_empty() {
            text.push_str(&format!("   {snippet}\n"));
        }
    }
    ToolOutput::ok(text.trim_end().to_owned())
}

/// The configured search address as a URL.
fn endpoint(config: &SearchConfig) -> Result<Url, String> {
    Url::parse(&config.endpoint).map_err(|error| {
        format!(
            "the {} address `{}` is not valid: {error}",
            config.provider.name(),
            config.endpoint
        )
    })
}

/// Sends a request and reads a bounded body, turning transport trouble into words.
async fn send(
    door: &Door,
    request: RequestBuilder,
    config: &SearchConfig,
) -> Result<(u16, String, Vec<u8>), String> {
    let provider = config.provider.name();
    let answer = http::exchange(door, request, provider)
        .await
        .map_err(|error| error.to_string())?;
    if answer.cut {
        return Err(format!(
            "{provider} answered with more than {RESPONSE_BYTES_MAX} bytes, far more than any \
             results page; the answer was not read"
        ));
    }
    Ok((answer.status, answer.retry_after, answer.bytes))
}

/// The failure for a keyed provider's error status, or `None` on success.
fn keyed_status_failure(
    provider: &str,
    key_var: &str,
    status: u16,
    retry_after: &str,
) -> Option<String> {
    match status {
        200..=299 => None,
        401 | 403 => Some(format!(
            "{provider} refused the API key in {key_var} (HTTP {status}); check that the key is \
             right and active"
        )),
        code => Some(common_status_failure(provider, code, retry_after)),
    }
}

/// Words for a status every provider can answer with.
fn common_status_failure(provider: &str, code: u16, retry_after: &str) -> String {
    match code {
        429 => {
            format!("{provider} rate-limited the search (HTTP 429){retry_after}; try again later")
        }
        500..=599 => {
            format!("{provider} had a server error (HTTP {code}); try again later")
        }
        _ => format!("{provider} answered HTTP {code} instead of results"),
    }
}

/// Parses a JSON object body, or says the answer was unreadable.
fn json_object(provider: &str, body: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) | Err(_) => Err(format!(
            "{provider} answered with something that is not its JSON results (the response \
             was malformed)"
        )),
    }
}

/// The string at `key` of a result object, or empty.
fn text_field(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .map(super::html_text::inline_text)
        .unwrap_or_default()
}

/// The result list at `key`: `Ok(None)` when absent, a failure when it is not a list.
fn result_list<'a>(
    provider: &str,
    object: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Vec<Value>>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(_) => Err(format!(
            "{provider} answered with `{key}` that is not a list (the response was malformed)"
        )),
    }
}

/// Hits from a list of result objects, reading the given fields.
fn hits_from(items: &[Value], title: &str, url: &str, snippet: &str) -> Vec<SearchHit> {
    items
        .iter()
        .map(|item| SearchHit {
            title: text_field(item, title),
            url: item
                .get(url)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_owned(),
            snippet: text_field(item, snippet),
        })
        .collect()
}
