//! Hosts in one normal form, wherever a host is stored, compared or sent: egress rules and
//! credential bindings (Keep's intake and clamp), the egress broker matching a request, and
//! the door that sends it. One implementation, so two spellings of one host are never two
//! hosts on one side and one on the other.
//!
//! Names are lower-cased and mapped by IDNA (UTS 46) to their ASCII form, so `ＥＸＡＭＰＬＥ.com`
//! becomes `example.com` and a look-alike such as `exаmple.com` (with a Cyrillic `а`) becomes
//! `xn--exmple-4nf.com`, which matches no rule written for `example.com`. One trailing dot is
//! dropped. User information, schemes, ports, paths and spaces are refused: each has a field of
//! its own or no place at all. IPv4 literals must be four decimal numbers (the hexadecimal,
//! octal and single-integer forms browsers accept are refused); IPv6 literals are written in
//! brackets and shown as URLs show them (RFC 5952 compression, hexadecimal groups even for an
//! IPv4-mapped address: `[::ffff:7f00:1]`), and compared by value, never by spelling.
//!
//! `localhost` and every name below it are this machine (RFC 6761 §6.3): [`is_loopback_name`]
//! says so without asking a resolver.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The longest host name in characters, as DNS allows.
pub const HOST_CHARS_MAX: usize = 253;

/// The longest label of a host name, as DNS allows.
const LABEL_CHARS_MAX: usize = 63;

/// A host in its normal form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name in ASCII (`example.com`, `xn--bcher-kva.example`), without a trailing dot.
    Name(String),
    /// `*.` and a suffix of at least two labels: any name strictly below the suffix.
    Wildcard(String),
    /// An IPv4 literal.
    Ipv4(Ipv4Addr),
    /// An IPv6 literal.
    Ipv6(Ipv6Addr),
}

impl Host {
    /// Whether a request to `other` is covered by this host: the same host, or for a
    /// wildcard, a name (or a narrower wildcard) strictly below its suffix.
    pub fn covers(&self, other: &Host) -> bool {
        match (self, other) {
            (Host::Wildcard(suffix), Host::Name(name)) => strictly_below(name, suffix),
            (Host::Wildcard(suffix), Host::Wildcard(inner)) => {
                inner == suffix || strictly_below(inner, suffix)
            }
            _ => self == other,
        }
    }

    /// Whether this is an IP literal.
    pub fn is_ip(&self) -> bool {
        matches!(self, Host::Ipv4(_) | Host::Ipv6(_))
    }

    /// Whether this host is this machine by its name alone: `localhost` or a name (or a
    /// wildcard) below it.
    pub fn is_loopback_name(&self) -> bool {
        match self {
            Host::Name(name) | Host::Wildcard(name) => is_loopback_name(name),
            Host::Ipv4(_) | Host::Ipv6(_) => false,
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => formatter.write_str(name),
            Host::Wildcard(suffix) => write!(formatter, "*.{suffix}"),
            Host::Ipv4(address) => write!(formatter, "{address}"),
            Host::Ipv6(address) => write!(formatter, "[{}]", ipv6_text(*address)),
        }
    }
}

/// Whether `pattern` (a rule's host as stored: a host in normal form or `*.suffix`) covers
/// `host` (a request's host). Both are read as hosts first, so `[::ffff:127.0.0.1]` and
/// `[::ffff:7f00:1]` are one address and `Example.com.` is `example.com`; a text that is not
/// a host covers nothing and is covered by nothing.
pub fn host_covers(pattern: &str, host: &str) -> bool {
    match (parse_rule_host(pattern), parse_rule_host(host)) {
        (Ok(pattern), Ok(host)) => pattern.covers(&host),
        _ => false,
    }
}

fn strictly_below(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix)
        .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
}

/// Whether `name` (ASCII, lower case, with or without one trailing dot) is `localhost` or a
/// name below it, which RFC 6761 reserves for this machine: never looked up.
pub fn is_loopback_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
        || name
            .len()
            .checked_sub(".localhost".len())
            .and_then(|at| name.get(at..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case(".localhost"))
}

/// Whether `path` is under `prefix`: on a segment boundary unless the prefix ends in `/`.
pub fn path_within(path: &str, prefix: &str) -> bool {
    if prefix.ends_with('/') || path == prefix {
        return path.starts_with(prefix);
    }
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// An IPv6 address as a URL shows it (WHATWG's IPv6 serializer, which is RFC 5952's
/// compression without its dotted form for IPv4-mapped addresses): lower-case hexadecimal
/// groups, the first longest run of two or more zero groups as `::`.
pub fn ipv6_text(address: Ipv6Addr) -> String {
    let groups = address.segments();
    let mut best: Option<(usize, usize)> = None;
    let mut at = 0;
    while at < groups.len() {
        if groups[at] != 0 {
            at += 1;
            continue;
        }
        let start = at;
        while at < groups.len() && groups[at] == 0 {
            at += 1;
        }
        let length = at - start;
        if length >= 2 && best.is_none_or(|(_, longest)| length > longest) {
            best = Some((start, length));
        }
    }
    let hex = |slice: &[u16]| {
        slice
            .iter()
            .map(|group| format!("{group:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    match best {
        Some((start, length)) => format!(
            "{}::{}",
            hex(&groups[..start]),
            hex(&groups[start + length..])
        ),
        None => hex(&groups),
    }
}

/// The normal form of `text` written as a rule's host, or why it has none: names, `*.`
/// wildcards, four-decimal IPv4 literals and bracketed IPv6 literals.
pub fn parse_rule_host(text: &str) -> Result<Host, String> {
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
mod tests;
