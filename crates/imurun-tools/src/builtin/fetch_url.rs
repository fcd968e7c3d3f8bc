//! `fetch_url`: reads a web page as text.
//!
//! Deny by default, through `imurun-net`'s door: only `http` and `https`, no credentials in
//! the URL, and only public addresses — the door resolves the host itself, checks every
//! address it resolves to against the deny matrix (`docs/tools.md`), connects to exactly those
//! addresses, uses no proxy, and checks every redirect (at most [`FETCH_REDIRECTS_MAX`]) the
//! same way. So a page cannot steer the tool at the machine itself (loopback, or any address
//! of its own), the local network or a cloud metadata service (`169.254.169.254`). [`FetchConfig::allow_private_hosts`] lifts the
//! address rule, for a person who wants the tool to read their own network; it is off by
//! default.
//!
//! At most [`FETCH_BODY_BYTES_MAX`] bytes are read; HTML becomes readable text, and the text
//! is cut at [`FETCH_TEXT_CHARS_MAX`] characters, saying so. Only text is read: an image, a
//! PDF or an archive is refused naming its type. Every result is untrusted (text from the web).

use std::net::IpAddr;
use std::time::Duration;

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_net::http::{Response, Url, header};
use imurun_net::{AddressRule, Door, DoorConfig, describe_duration, parse_http_url};
use serde_json::{Map, Value};

use super::html_text::html_to_text;
use super::required_string;

/// The most of a page read; the rest is not downloaded.
pub const FETCH_BODY_BYTES_MAX: usize = 2 * 1024 * 1024;
/// The most characters of text returned; a longer page is cut, saying so.
pub const FETCH_TEXT_CHARS_MAX: usize = 20_000;
/// Redirects followed before giving up.
pub const FETCH_REDIRECTS_MAX: usize = 5;
/// How long a whole fetch may take (lookups, redirects and body) unless the config says otherwise.
pub const FETCH_TIMEOUT_DEFAULT: Duration = Duration::from_secs(15);

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::fetch_url()
}

/// What `fetch_url` may reach and how much it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchConfig {
    /// Allows loopback, private and link-local addresses. Off by default: see the module docs.
    pub allow_private_hosts: bool,
    /// Addresses allowed even while `allow_private_hosts` is off (one machine on the local
    /// network, say), each one exactly; an IPv4 address and its IPv4-mapped IPv6 form
    /// (`::ffff:a.b.c.d`) count as the same.
    pub private_addresses_allowed: Vec<IpAddr>,
    pub timeout: Duration,
    pub body_bytes_max: usize,
    pub text_chars_max: usize,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            allow_private_hosts: false,
            private_addresses_allowed: Vec::new(),
            timeout: FETCH_TIMEOUT_DEFAULT,
            body_bytes_max: FETCH_BODY_BYTES_MAX,
            text_chars_max: FETCH_TEXT_CHARS_MAX,
        }
    }
}

impl FetchConfig {
    /// The addresses this configuration lets the tool reach.
    pub fn address_rule(&self) -> AddressRule {
        AddressRule {
            allow_non_public: self.allow_private_hosts,
            allowed_addresses: self.private_addresses_allowed.clone(),
            trusted_hosts: Vec::new(),
            own_addresses: imurun_net::own_addresses(),
        }
    }
}

/// The page reader.
#[derive(Debug)]
pub struct FetchUrl {
    spec: ToolSpec,
    config: FetchConfig,
    door: Result<Door, String>,
}

impl FetchUrl {
    pub fn new(config: FetchConfig) -> Self {
        let door = Door::new(DoorConfig {
            rule: config.address_rule(),
            timeout: config.timeout,
            redirects_max: FETCH_REDIRECTS_MAX,
        })
        .map_err(|error| error.to_string());
        Self {
            spec: spec(),
            config,
            door,
        }
    }

    async fn fetch(&self, url: Url) -> Result<String, String> {
        let door = self.door.as_ref().map_err(Clone::clone)?;
        let request = door.get(url.clone()).map_err(|error| error.to_string())?;
        let response = door
            .send(request, url.as_str())
            .await
            .map_err(|error| error.to_string())?;
        // The door followed the redirects; the page is read as the address it ended at.
        let landed = response.url().clone();
        self.read_page(door, &landed, response).await
    }

    async fn read_page(
        &self,
        door: &Door,
        url: &Url,
        response: Response,
    ) -> Result<String, String> {
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{url} answered HTTP {status}"));
        }
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| {
                value
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            })
            .filter(|value| !value.is_empty());
        let declared = match content_type.as_deref() {
            Some(mime) => Some(text_kind(mime).ok_or_else(|| {
                format!("{url} is {mime}, not text; fetch_url reads only text and HTML pages")
            })?),
            None => None,
        };
        let body = imurun_net::read_body(door, response, self.config.body_bytes_max, url.as_str())
            .await
            .map_err(|error| error.to_string())?;
        let kind = match declared {
            Some(kind) => kind,
            None => sniff(&body.bytes).ok_or_else(|| {
                format!("{url} has no content type and is not text; fetch_url reads only text")
            })?,
        };
        let raw = String::from_utf8_lossy(&body.bytes);
        let text = match kind {
            TextKind::Html => html_to_text(&raw),
            TextKind::Plain => raw.trim().to_owned(),
        };
        let mut page = format!(
            "{url} ({}):\n\n",
            content_type.as_deref().unwrap_or("no content type")
        );
        let total_chars = text.chars().count();
        match text.char_indices().nth(self.config.text_chars_max) {
            Some((end, _)) => {
                page.push_str(&text[..end]);
                page.push_str(&format!(
                    "\n\n[cut: the text is {total_chars} characters; only the first {} are shown]",
                    self.config.text_chars_max
                ));
            }
            None if text.is_empty() => page.push_str("[the page has no text]"),
            None => page.push_str(&text),
        }
        if body.cut {
            page.push_str(&format!(
                "\n[the page is larger than {} bytes; only that much was read]",
                self.config.body_bytes_max
            ));
        }
        Ok(page)
    }
}

impl Tool for FetchUrl {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let url = match parse_url(args) {
                Ok(url) => url,
                Err(failure) => return failure.untrusted(),
            };
            let timeout = self.config.timeout;
            let output = match tokio::time::timeout(timeout, self.fetch(url.clone())).await {
                Ok(Ok(page)) => ToolOutput::ok(page),
                Ok(Err(reason)) => ToolOutput::failed(reason),
                Err(_) => ToolOutput::failed(format!(
                    "{url} did not finish within {}",
                    describe_duration(timeout)
                )),
            };
            output.untrusted()
        })
    }
}

fn parse_url(args: &Map<String, Value>) -> Result<Url, ToolOutput> {
    let text = required_string(args, "url")?;
    parse_http_url(text).map_err(|error| ToolOutput::failed(error.to_string()))
}

#[derive(Debug, Clone, Copy)]
enum TextKind {
    Html,
    Plain,
}

/// How a content type is read, or `None` when it is not text.
fn text_kind(mime: &str) -> Option<TextKind> {
    match mime {
        "text/html" | "application/xhtml+xml" => Some(TextKind::Html),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-javascript"
        | "application/ecmascript" => Some(TextKind::Plain),
        _ if mime.starts_with("text/") => Some(TextKind::Plain),
        _ if mime.ends_with("+json") || mime.ends_with("+xml") => Some(TextKind::Plain),
        _ => None,
    }
}

/// A body without a content type: text unless it has NUL bytes, HTML if it looks like it.
fn sniff(bytes: &[u8]) -> Option<TextKind> {
    let start = &bytes[..bytes.len().min(1024)];
    if start.contains(&0) {
        return None;
    }
    let start = String::from_utf8_lossy(start).to_ascii_lowercase();
    let start = start.trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Some(TextKind::Html)
    } else {
        Some(TextKind::Plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert!(matches!(text_kind("text/html"), Some(TextKind::Html)));
        assert!(matches!(text_kind("text/plain"), Some(TextKind::Plain)));
        assert!(matches!(
            text_kind("application/ld+json"),
            Some(TextKind::Plain)
        ));
        assert!(text_kind("image/png").is_none());
        assert!(text_kind("application/pdf").is_none());
        assert!(sniff(b"\x89PNG\r\n\x1a\n\0\0").is_none());
        assert!(matches!(
            sniff(b"  <!DOCTYPE html><p>x"),
            Some(TextKind::Html)
        ));
    }
}
