//! `fetch_url`: reads a web page as text.
//!
//! Deny by default: only `http` and `https`, and only public addresses. The host is resolved
//! first and every address it resolves to is checked; loopback, private, link-local,
//! unspecified, shared (CGNAT), multicast, broadcast and reserved addresses are refused, so a
//! page cannot steer the tool at the machine itself, the local network or a cloud metadata
//! service (`169.254.169.254`). The request then goes to exactly the addresses that were
//! checked (no second lookup a DNS answer could change in between), with no proxy, and each
//! redirect (at most [`FETCH_REDIRECTS_MAX`]) is checked again the same way.
//! IPv6 forms that carry an IPv4 address (IPv4-mapped and -compatible, SIIT, NAT64, 6to4) are
//! judged by that address; local-use NAT64, discard-only and documentation prefixes are refused.
//! [`FetchConfig::allow_private_hosts`] lifts the address rule, for a person who wants the tool
//! to read their own network; it is off by default.
//!
//! At most [`FETCH_BODY_BYTES_MAX`] bytes are read; HTML becomes readable text, and the text
//! is cut at [`FETCH_TEXT_CHARS_MAX`] characters, saying so. Only text is read: an image, a
//! PDF or an archive is refused naming its type. Every result is untrusted (text from the web).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use reqwest::{Client, Response, Url, redirect};
use serde_json::{Map, Value, json};

use super::html_text::html_to_text;
use super::http;
use super::required_string;

/// The most of a page read; the rest is not downloaded.
pub const FETCH_BODY_BYTES_MAX: usize = 2 * 1024 * 1024;
/// The most characters of text returned; a longer page is cut, saying so.
pub const FETCH_TEXT_CHARS_MAX: usize = 20_000;
/// Redirects followed before giving up.
pub const FETCH_REDIRECTS_MAX: usize = 5;
/// How long a whole fetch may take (lookups, redirects and body) unless the config says otherwise.
pub const FETCH_TIMEOUT_DEFAULT: Duration = Duration::from_secs(15);
/// The longest URL accepted.
const URL_CHARS_MAX: usize = 2_048;

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "fetch_url",
        "Read a web page (http or https) as text.",
        json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "the page's address, starting with http:// or https://"}
        }, "required": ["url"]}),
    )
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

/// The page reader.
#[derive(Debug)]
pub struct FetchUrl {
    spec: ToolSpec,
    config: FetchConfig,
}

impl FetchUrl {
    pub fn new(config: FetchConfig) -> Self {
        Self {
            spec: spec(),
            config,
        }
    }

    async fn fetch(&self, start: Url) -> Result<String, String> {
        let mut url = start;
        for redirects in 0..=FETCH_REDIRECTS_MAX {
            let response = self.request(&url).await?;
            if !is_redirect(response.status().as_u16()) {
                return self.read_page(&url, response).await;
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    format!(
                        "{url} answered a redirect (HTTP {}) without a target",
                        response.status().as_u16()
                    )
                })?;
            let next = url.join(location).map_err(|error| {
                format!("{url} redirected to `{location}`, which is not a valid address: {error}")
            })?;
            if redirects == FETCH_REDIRECTS_MAX {
                return Err(format!(
                    "{url} redirected more than {FETCH_REDIRECTS_MAX} times; stopped at {next}"
                ));
            }
            url = next;
        }
        Err(format!("redirected more than {FETCH_REDIRECTS_MAX} times"))
    }

    /// One request, to addresses checked first, with redirects left to [`FetchUrl::fetch`].
    async fn request(&self, url: &Url) -> Result<Response, String> {
        let (domain, addresses) = self.checked_addresses(url).await?;
        let mut builder = http::builder(self.config.timeout)
            .redirect(redirect::Policy::none())
            // A proxy would connect wherever it likes; the address check must hold.
            .no_proxy();
        if let Some(domain) = &domain {
            builder = builder.resolve_to_addrs(domain, &addresses);
        }
        let client: Client = builder
            .build()
            .map_err(|error| format!("the HTTP client could not start: {error}"))?;
        client
            .get(url.clone())
            .send()
            .await
            .map_err(|error| http::transport_failure(url.as_ref(), &error, self.config.timeout))
    }

    /// The addresses `url` may be fetched from, every one of them allowed, and the domain
    /// they were resolved for (none for an IP address written in the URL).
    async fn checked_addresses(
        &self,
        url: &Url,
    ) -> Result<(Option<String>, Vec<SocketAddr>), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "`{}` URLs are not fetched; only http and https",
                url.scheme()
            ));
        }
        let host = url.host_str().ok_or_else(|| format!("{url} has no host"))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("{url} has no port"))?;
        let literal = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host)
            .parse::<IpAddr>();
        let (domain, addresses) = match literal {
            Ok(ip) => (None, vec![SocketAddr::new(ip, port)]),
            Err(_) => {
                let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
                    .await
                    .map_err(|error| format!("could not find the address of {host}: {error}"))?
                    .collect();
                (Some(host.to_owned()), resolved)
            }
        };
        if addresses.is_empty() {
            return Err(format!("{host} has no address"));
        }
        for address in &addresses {
            let ip = address.ip();
            if !self.config.allow_private_hosts
                && is_refused_address(ip)
                && !is_listed(&self.config.private_addresses_allowed, ip)
            {
                return Err(format!(
                    "refused: {host} is {ip}, a loopback, private, link-local or otherwise \
                     non-public address; fetch_url reads only public addresses"
                ));
            }
        }
        Ok((domain, addresses))
    }

    async fn read_page(&self, url: &Url, response: Response) -> Result<String, String> {
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{url} answered HTTP {status}"));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
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
        let body = http::read_body(response, self.config.body_bytes_max)
            .await
            .map_err(|error| http::transport_failure(url.as_ref(), &error, self.config.timeout))?;
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

/// The page reader with the default, deny-by-default configuration.
pub fn fetch_url_tool() -> FetchUrl {
    FetchUrl::new(FetchConfig::default())
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
                    http::describe_duration(timeout)
                )),
            };
            output.untrusted()
        })
    }
}

fn parse_url(args: &Map<String, Value>) -> Result<Url, ToolOutput> {
    let text = required_string(args, "url")?.trim();
    if text.chars().count() > URL_CHARS_MAX {
        return Err(ToolOutput::failed("`url` is too long"));
    }
    Url::parse(text).map_err(|error| {
        ToolOutput::failed(format!(
            "`{text}` is not a URL ({error}); give a full address such as https://example.org/"
        ))
    })
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

/// Whether `status` sends the client elsewhere with a `Location`. 300 (a choice to make) and
/// 304 (not modified) are 3xx too but name no target; they are read as any other answer.
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Whether `ip` is in `listed`, an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) and its
/// IPv4 address (`127.0.0.1`) counting as the same.
fn is_listed(listed: &[IpAddr], ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    listed.iter().any(|entry| entry.to_canonical() == ip)
}

/// Whether an address is one `fetch_url` refuses by default: anything not on the public
/// internet.
pub(crate) fn is_refused_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_refused_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_refused_v4(v4),
            None => is_refused_v6(v6),
        },
    }
}

fn is_refused_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0 // "this network", 0.0.0.0/8
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT), 100.64.0.0/10
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking, 198.18.0.0/15
        || a >= 240 // reserved
}

fn is_refused_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let first = segments[0];
    // The IPv4 address in the last 32 bits, for the forms that carry one there.
    let last_32_bits = Ipv4Addr::from_bits(ip.to_bits() as u32);
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (first & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        // Documentation, 2001:db8::/32: never a real host.
        || segments[..2] == [0x2001, 0x0db8]
        // Discard-only, 100::/64.
        || segments[..4] == [0x0100, 0, 0, 0]
        // Local-use NAT64, 64:ff9b:1::/48: translated by a gateway on the local network, and
        // where the IPv4 address sits depends on a prefix length only that network knows.
        || segments[..3] == [0x64, 0xff9b, 0x0001]
        // These carry an IPv4 address in their last 32 bits: IPv4-compatible (::/96, which
        // also holds `::` and `::1`), SIIT (::ffff:0:0/96) and NAT64 (64:ff9b::/96).
        || ((segments[..6] == [0, 0, 0, 0, 0, 0]
            || segments[..6] == [0, 0, 0, 0, 0xffff, 0]
            || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0])
            && is_refused_v4(last_32_bits))
        // 6to4, 2002::/16, carries its IPv4 address in bits 16..48.
        || (first == 0x2002
            && is_refused_v4(Ipv4Addr::from_bits(
                (u32::from(segments[1]) << 16) | u32::from(segments[2]),
            )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_addresses() {
        let cases = [
            ("127.0.0.1", true),
            ("127.8.9.10", true),
            ("10.1.2.3", true),
            ("172.16.0.1", true),
            ("172.32.0.1", false),
            ("192.168.1.1", true),
            ("169.254.169.254", true),
            ("0.0.0.0", true),
            ("100.64.0.1", true),
            ("255.255.255.255", true),
            ("224.0.0.1", true),
            ("93.184.215.14", false),
            ("8.8.8.8", false),
            ("::", true),
            ("::1", true),
            ("fd00::1", true),
            ("fe80::1", true),
            ("::ffff:127.0.0.1", true),
            ("::ffff:10.0.0.1", true),
            ("::ffff:8.8.8.8", false),
            ("64:ff9b::a00:1", true),
            ("64:ff9b::808:808", false),
            ("2606:4700:4700::1111", false),
            // IPv4-compatible, ::/96.
            ("::127.0.0.1", true),
            ("::10.0.0.1", true),
            ("::169.254.169.254", true),
            ("::8.8.8.8", false),
            // SIIT, ::ffff:0:0/96.
            ("::ffff:0:127.0.0.1", true),
            ("::ffff:0:192.168.0.1", true),
            ("::ffff:0:8.8.8.8", false),
            // Local-use NAT64, 64:ff9b:1::/48, whatever it embeds.
            ("64:ff9b:1::a00:1", true),
            ("64:ff9b:1::808:808", true),
            // 6to4, 2002::/16, with the IPv4 address in bits 16..48.
            ("2002:7f00:1::", true),
            ("2002:a9fe:a9fe::1", true),
            ("2002:c0a8:101::1", true),
            ("2002:808:808::1", false),
            // Discard-only and documentation.
            ("100::1", true),
            ("100::ffff:ffff:ffff:ffff", true),
            ("100:0:0:1::1", false),
            ("2001:db8::1", true),
            ("2001:db8:ffff::1", true),
        ];
        for (address, refused) in cases {
            let ip: IpAddr = address.parse().unwrap();
            assert_eq!(is_refused_address(ip), refused, "{address}");
        }
    }

    #[test]
    fn allowed_addresses_match_across_ipv4_mapping() {
        // Regression: `::ffff:127.0.0.1` in the list did not allow `127.0.0.1`, nor the
        // other way round.
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(is_listed(&[mapped], v4));
        assert!(is_listed(&[v4], mapped));
        assert!(is_listed(&[v4], v4));
        assert!(!is_listed(&[mapped], other));
        assert!(!is_listed(&[], v4));
    }

    #[test]
    fn only_statuses_with_a_target_are_redirects() {
        for status in [301, 302, 303, 307, 308] {
            assert!(is_redirect(status), "{status}");
        }
        for status in [200, 300, 304, 305, 306, 309, 404] {
            assert!(!is_redirect(status), "{status}");
        }
    }

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
