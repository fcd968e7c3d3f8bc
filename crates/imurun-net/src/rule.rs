//! Which addresses a [`crate::Door`] may connect to: public ones, and past that only what a
//! person allowed — exact addresses, hosts they configured, or every address.

use std::net::IpAddr;

use crate::address::{AddressClass, classify, is_listed, own_addresses};
use crate::error::NetError;
use crate::url::normalise_host;

/// The addresses a door may reach. The default is public addresses only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressRule {
    /// Every address is allowed (a person who wants a tool to read their own network).
    pub allow_non_public: bool,
    /// Non-public addresses allowed one by one; an IPv4 address and its IPv4-mapped IPv6
    /// form count as the same.
    pub allowed_addresses: Vec<IpAddr>,
    /// Hosts (normalised names or IP literals) a person configured as endpoints (a SearXNG
    /// on the local network, a self-hosted GitHub): whatever they resolve to is allowed.
    pub trusted_hosts: Vec<String>,
    /// This machine's own addresses ([`crate::own_addresses`]): refused even when public, so
    /// a name pointed at the host's public address cannot reach its services (unless
    /// `allow_non_public`, an allowed address or a trusted host says otherwise).
    pub own_addresses: Vec<IpAddr>,
}

impl AddressRule {
    /// Public addresses only, and none of this machine's own.
    pub fn public_only() -> Self {
        Self {
            own_addresses: own_addresses(),
            ..Self::default()
        }
    }

    /// Public addresses, and whatever the hosts of `endpoints` (URLs a person configured)
    /// resolve to. An endpoint that does not parse trusts nothing.
    pub fn public_and_endpoints<'a>(endpoints: impl IntoIterator<Item = &'a str>) -> Self {
        let trusted_hosts = endpoints
            .into_iter()
            .filter_map(|endpoint| url::Url::parse(endpoint).ok())
            .filter_map(|url| url.host_str().and_then(|host| normalise_host(host).ok()))
            .collect();
        Self {
            trusted_hosts,
            ..Self::public_only()
        }
    }

    /// Whether `host` (as the URL names it) may be reached at `ip`; the refusal names both.
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<(), NetError> {
        if self.allow_non_public || is_listed(&self.allowed_addresses, ip) || self.trusts(host) {
            return Ok(());
        }
        let class = classify(ip);
        if !class.is_public() {
            return Err(NetError::Refused {
                host: host.to_owned(),
                ip,
                class,
            });
        }
        if is_listed(&self.own_addresses, ip) {
            return Err(NetError::OwnAddress {
                host: host.to_owned(),
                ip,
            });
        }
        Ok(())
    }

    /// The class `ip` would be refused for, if any (the same decision as [`Self::check`]
    /// without a host).
    pub fn refuses(&self, ip: IpAddr) -> Option<AddressClass> {
        self.check("", ip).err().and_then(|error| match error {
            NetError::Refused { class, .. } => Some(class),
            _ => None,
        })
    }

    fn trusts(&self, host: &str) -> bool {
        !self.trusted_hosts.is_empty()
            && normalise_host(host).is_ok_and(|host| self.trusted_hosts.contains(&host))
    }
}
