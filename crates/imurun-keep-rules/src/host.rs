//! The normal form of a host in an egress rule or a credential's binding, made before anything
//! stores or compares it, by the one implementation the broker also uses
//! ([`imurun_core::host`]); what Keep adds is which hosts a document may name.
//!
//! Names are lower-cased and mapped by IDNA (UTS 46) to their ASCII form, so `ＥＸＡＭＰＬＥ.com`
//! becomes `example.com` and a look-alike such as `exаmple.com` (with a Cyrillic `а`) becomes
//! `xn--exmple-4nf.com`, which matches no rule written for `example.com`. One trailing dot is
//! dropped. User information, schemes, ports, paths and spaces are refused: each has a field of
//! its own or no place at all. IPv4 literals must be four decimal numbers (the hexadecimal,
//! octal and single-integer forms browsers accept are refused); IPv6 literals are written in
//! brackets and stored compressed. An IP literal and a `*.` wildcard are accepted only where the
//! governing document allows them ([`HostAllowance`]).

use imurun_core::host::parse_rule_host;
pub use imurun_core::host::{HOST_CHARS_MAX, Host};

use crate::RuleError;

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
) -> Result<Host, RuleError> {
    let host = parse_rule_host(text).map_err(|reason| RuleError::invalid(field, reason))?;
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
        return Err(RuleError::invalid(field, format!("{host} is {what}")));
    }
    Ok(host)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

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
