//! The normal form of a host in an egress rule or a credential's binding, made before anything
//! stores or compares it.
//!
//! Names are lower-cased and mapped by IDNA (UTS 46) to their ASCII form, so `ＥＸＡＭＰＬＥ.com`
//! becomes `example.com` and a look-alike such as `exаmple.com` (with a Cyrillic `а`) becomes
//! `xn--exmple-4nf.com`, which matches no rule written for `example.com`. One trailing dot is
//! dropped. User information, schemes, ports, paths and spaces are refused: each has a field of
//! its own or no place at all. IPv4 literals must be four decimal numbers (the hexadecimal,
//! octal and single-integer forms browsers accept are refused); IPv6 literals are written in
//! brackets and stored compressed. An IP literal and a `*.` wildcard are accepted only where the
//! governing document allows them ([`HostAllowance`]).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::KeepError;

/// The longest host name in characters, as DNS allows.
pub const HOST_CHARS_MAX: usize = 253;

/// The longest label of a host name, as DNS allows.
const LABEL_CHARS_MAX: usize = 63;

/// A host in its normal form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name in ASCII (`example.com`, `xn--bcher-kva.example`).
    Name(String),
    /// `*.` and a suffix of at least two labels: any name strictly below the suffix.
    Wildcard(String),
    /// An IPv4 literal.
    Ipv4(Ipv4Addr),
    /// An IPv6 literal.
    Ipv6(Ipv6Addr),
}

impl Host {
    /// Whether a request to `name` (itself in normal form) is covered by this host.
    pub fn covers(&self, other: &Host) -> bool {
        match (self, other) {
            (Host::Wildcard(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Host::Wildcard(suffix), Host::Wildcard(inner)) => {
                inner == suffix
                    || inner
                        .strip_suffix(suffix.as_str())
                        .is_some_and(|head| head.ends_with('.'))
            }
            _ => self == other,
        }
    }

    /// Whether this is an IP literal.
    pub fn is_ip(&self) -> bool {
        matches!(self, Host::Ipv4(_) | Host::Ipv6(_))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => formatter.write_str(name),
            Host::Wildcard(suffix) => write!(formatter, "*.{suffix}"),
            Host::Ipv4(address) => write!(formatter, "{address}"),
            Host::Ipv6(address) => write!(formatter, "[{address}]"),
        }
    }
}

/// What the document that governs a host allows beyond plain names.
#[derive(Debug, Clone, Copy)]
pub enum HostAllowance<'a> {
    /// The operator's own documents (policies and ceilings): IP literals and wildcards are
    /// allowed, because the operator signs them and the egress broker still refuses private and
    /// loopback addresses.
    Operator,
    /// A document bounded by a ceiling's hosts: an IP literal only if the ceiling names that
    /// address, a wildcard only if one of the ceiling's wildcards covers it.
    Within(&'a [Host]),
}

/// The normal form of `text`, or why it has none. `field` names the field in errors.
pub fn normalize_host(
    text: &str,
    allowance: HostAllowance<'_>,
    field: &str,
) -> Result<Host, KeepError> {
    let host = parse_host(text).map_err(|reason| KeepError::invalid(field, reason))?;
    let allowed = match (&host, allowance) {
        (_, HostAllowance::Operator) | (Host::Name(_), _) => true,
        (Host::Ipv4(_) | Host::Ipv6(_), HostAllowance::Within(ceiling)) => ceiling.contains(&host),
        (Host::Wildcard(_), HostAllowance::Within(ceiling)) => ceiling
            .iter()
            .any(|bound| matches!(bound, Host::Wildcard(_)) && bound.covers(&host)),
    };
    if !allowed {
        let what = if host.is_ip() {
            "an IP literal the ceiling does not name"
        } else {
            "a wildcard the ceiling does not allow"
        };
        return Err(KeepError::invalid(field, format!("{host} is {what}")));
    }
    Ok(host)
}

fn parse_host(text: &str) -> Result<Host, String> {
    if text.is_empty() {
        return Err("the host is empty".into());
    }
    if text.chars().count() > HOST_CHARS_MAX + 1 {
        return Err(format!(
            "the host is longer than {HOST_CHARS_MAX} characters"
        ));
    }
    if let Some(reason) = refused_characters(text) {
        return Err(reason);
    }
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or("an IPv6 literal must be written in brackets, with nothing after them")?;
        return inner
            .parse::<Ipv6Addr>()
            .map(Host::Ipv6)
            .map_err(|_| format!("{text:?} is not an IPv6 address"));
    }
    if text.contains(':') {
        return Err(
            "a port or a bare IPv6 address is not a host: put the port in `port`, an IPv6 \
             address in brackets"
                .into(),
        );
    }
    let (wildcard, name) = match text.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if name.contains('*') {
        return Err("a wildcard is allowed only as a whole first label, `*.`".into());
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let ascii = idna::domain_to_ascii(name)
        .map_err(|_| format!("{text:?} is not a valid internationalised host name"))?;
    if let Some(address) = ipv4_like(&ascii)? {
        if wildcard {
            return Err("a wildcard cannot stand before an IP address".into());
        }
        return Ok(Host::Ipv4(address));
    }
    check_labels(&ascii)?;
    if wildcard {
        if ascii.split('.').count() < 2 {
            return Err("a wildcard needs at least two labels after `*.` (`*.example.com`)".into());
        }
        return Ok(Host::Wildcard(ascii));
    }
    Ok(Host::Name(ascii))
}

/// Characters that never belong in a host: they mean a URL, user information or a path was
/// pasted, or they hide what is there.
fn refused_characters(text: &str) -> Option<String> {
    if text.contains('@') {
        return Some("user information (`user@`) is not allowed in a host".into());
    }
    if text.contains("://") {
        return Some("a host has no scheme: put it in `scheme`".into());
    }
    if let Some(found) = text.chars().find(|c| matches!(c, '/' | '?' | '#' | '\\')) {
        return Some(format!(
            "{found:?} is not allowed in a host: paths go in `path_prefix`"
        ));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("spaces and control characters are not allowed in a host".into());
    }
    None
}

/// A name whose last label is numeric (or hexadecimal) is an IPv4 address to URL parsers.
/// Only the four-decimal form is accepted; the others are refused rather than guessed.
fn ipv4_like(ascii: &str) -> Result<Option<Ipv4Addr>, String> {
    let last = ascii.rsplit('.').next().unwrap_or(ascii);
    let numeric = !last.is_empty()
        && (last.bytes().all(|byte| byte.is_ascii_digit())
            || last.starts_with("0x")
            || last.starts_with("0X"));
    if !numeric {
        return Ok(None);
    }
    match ascii.parse::<Ipv4Addr>() {
        Ok(address) if address.to_string() == ascii => Ok(Some(address)),
        _ => Err(format!(
            "{ascii:?} reads as an IPv4 address in a form other than four decimal numbers \
             without leading zeros"
        )),
    }
}

fn check_labels(ascii: &str) -> Result<(), String> {
    if ascii.len() > HOST_CHARS_MAX {
        return Err(format!(
            "the host is longer than {HOST_CHARS_MAX} characters"
        ));
    }
    for label in ascii.split('.') {
        if label.is_empty() {
            return Err("the host has an empty label (two dots in a row)".into());
        }
        if label.len() > LABEL_CHARS_MAX {
            return Err(format!(
                "a label is longer than {LABEL_CHARS_MAX} characters"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("the label {label:?} starts or ends with `-`"));
        }
        if let Some(found) = label
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(format!("{found:?} is not allowed in a host name"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: Result<&str, &str>) {
        let got = normalize_host(text, HostAllowance::Operator, "host");
        match (got, expect) {
            (Ok(host), Ok(want)) => assert_eq!(host.to_string(), want, "{text}"),
            (Err(error), Err(want)) => {
                let message = error.to_string();
                assert!(message.contains(want), "{text}: {message}");
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn hosts_are_normalised_or_refused() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("Example.COM", Ok("example.com")),
            ("example.com.", Ok("example.com")),
            ("example.com..", Err("empty label")),
            ("ＥＸＡＭＰＬＥ.com", Ok("example.com")),
            ("exаmple.com", Ok("xn--exmple-4nf.com")),
            ("bücher.example", Ok("xn--bcher-kva.example")),
            ("user@example.com", Err("user information")),
            ("https://example.com", Err("no scheme")),
            ("example.com:443", Err("port")),
            ("example.com/path", Err("paths go in")),
            ("exa mple.com", Err("spaces")),
            ("", Err("empty")),
            ("127.0.0.1", Ok("127.0.0.1")),
            ("0x7f.0.0.1", Err("four decimal numbers")),
            ("2130706433", Err("four decimal numbers")),
            ("127.000.0.1", Err("four decimal numbers")),
            ("[::1]", Ok("[::1]")),
            ("[0:0:0:0:0:0:0:1]", Ok("[::1]")),
            ("[::1]:80", Err("brackets")),
            ("::1", Err("IPv6 address in brackets")),
            ("*.example.com", Ok("*.example.com")),
            ("*.com", Err("two labels")),
            ("a.*.example.com", Err("whole first label")),
            ("*", Err("whole first label")),
            ("*.*.example.com", Err("whole first label")),
            ("*.10.0.0.1", Err("IP address")),
            ("-bad.example", Err("starts or ends")),
            ("under_score.example", Err("not allowed")),
        ];
        for (text, expect) in cases {
            check(text, *expect);
        }
    }

    #[test]
    fn a_ceiling_decides_ip_literals_and_wildcards() {
        let ceiling = [
            Host::Ipv4(Ipv4Addr::new(203, 0, 113, 7)),
            Host::Wildcard("example.com".into()),
        ];
        let within = HostAllowance::Within(&ceiling);
        assert!(normalize_host("203.0.113.7", within, "h").is_ok());
        assert!(normalize_host("203.0.113.8", within, "h").is_err());
        assert!(normalize_host("*.example.com", within, "h").is_ok());
        assert!(normalize_host("*.api.example.com", within, "h").is_ok());
        assert!(normalize_host("*.example.org", within, "h").is_err());
        assert!(normalize_host("[::1]", within, "h").is_err());
        assert!(normalize_host("api.example.org", within, "h").is_ok());
    }

    #[test]
    fn wildcards_cover_names_strictly_below_them() {
        let wildcard = Host::Wildcard("example.com".into());
        assert!(wildcard.covers(&Host::Name("api.example.com".into())));
        assert!(wildcard.covers(&Host::Name("a.b.example.com".into())));
        assert!(!wildcard.covers(&Host::Name("example.com".into())));
        assert!(!wildcard.covers(&Host::Name("badexample.com".into())));
        assert!(!wildcard.covers(&Host::Name("example.com.evil".into())));
    }
}
