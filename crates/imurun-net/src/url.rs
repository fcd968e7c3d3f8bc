//! URLs and hosts as the door reads them: only `http` and `https`, a host always, no user
//! name or password, and hosts in one normal form (lower case, IDNA to punycode, no trailing
//! dot, IPv4 in dotted decimal whatever way it was written), so that two spellings of one
//! host are one string wherever hosts are stored or compared.

use url::{Host, Url};

use crate::error::NetError;

/// The longest URL read, in characters.
pub const URL_CHARS_MAX: usize = 2_048;

/// The longest host name (RFC 1035's 253, plus room for a trailing dot).
pub const HOST_CHARS_MAX: usize = 254;

/// `text` as an `http` or `https` URL with a host and no credentials.
pub fn parse_http_url(text: &str) -> Result<Url, NetError> {
    let text = text.trim();
    if text.chars().count() > URL_CHARS_MAX {
        return Err(NetError::BadUrl {
            url: text.chars().take(80).collect::<String>() + "…",
            why: format!("it is longer than {URL_CHARS_MAX} characters"),
        });
    }
    let url = Url::parse(text).map_err(|error| NetError::BadUrl {
        url: text.to_owned(),
        why: format!("{error}; give a full address such as https://example.org/"),
    })?;
    check_http_url(&url)?;
    Ok(url)
}

/// The rules [`parse_http_url`] applies, for a URL parsed elsewhere (a redirect's target).
pub fn check_http_url(url: &Url) -> Result<(), NetError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(NetError::Scheme {
            scheme: url.scheme().to_owned(),
        });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(NetError::BadUrl {
            url: url.to_string(),
            why: "it has no host".to_owned(),
        });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(NetError::BadUrl {
            url: redacted(url),
            why: "it carries a user name or password; credentials never travel in a URL".to_owned(),
        });
    }
    Ok(())
}

/// A host in its normal form: a domain lower-cased and in punycode without a trailing dot,
/// an IPv4 address in dotted decimal, an IPv6 address in brackets, compressed.
pub fn normalise_host(text: &str) -> Result<String, NetError> {
    let bad = |why: &str| NetError::BadHost {
        host: text.chars().take(HOST_CHARS_MAX).collect(),
        why: why.to_owned(),
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad("it is empty"));
    }
    if trimmed.chars().count() > HOST_CHARS_MAX {
        return Err(bad("it is too long"));
    }
    let bare = trimmed.strip_suffix('.').unwrap_or(trimmed);
    // One trailing dot is the root; a second is an empty label, which the IPv4 reading
    // would otherwise accept (`127.0.0.1..`).
    if bare.ends_with('.') {
        return Err(bad("it is not a host name"));
    }
    // WHATWG host parsing: IDNA, lower case, IPv6 in brackets, and IPv4 in any of the forms
    // browsers accept (`0x7f000001`, `127.1`).
    let host = Host::parse(bare).map_err(|error| bad(&error.to_string()))?;
    match host {
        // WHATWG parsing keeps empty labels (`a..b`, `example.com..`); DNS has none.
        Host::Domain(domain) if domain.split('.').any(str::is_empty) => {
            Err(bad("it is not a host name"))
        }
        Host::Domain(domain) => Ok(domain),
        Host::Ipv4(ip) => Ok(ip.to_string()),
        // One serialisation for every IPv6 host, the URL's own (`[::ffff:7f00:1]`), so a
        // normalised host equals the host of a parsed URL and a rule's host.
        Host::Ipv6(ip) => Ok(imurun_core::host::Host::Ipv6(ip).to_string()),
    }
}

/// `url` without its user name and password, for messages.
fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}
