//! The address deny matrix: what kind of address an IP is, and whether it is on the public
//! internet. Every check of "may imurun connect there" starts here, so the rule is written
//! once (`docs/tools.md` has the table).
//!
//! IPv6 forms that carry an IPv4 address (IPv4-mapped and -compatible, SIIT, NAT64, 6to4)
//! are judged by that address; local-use NAT64, discard-only and documentation prefixes are
//! never public.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// This machine's loopback addresses, `127.0.0.1` and `::1`: what `localhost` and every name
/// below it stand for (RFC 6761 §6.3), without asking a resolver.
pub const LOOPBACK: [IpAddr; 2] = [
    IpAddr::V4(Ipv4Addr::LOCALHOST),
    IpAddr::V6(Ipv6Addr::LOCALHOST),
];

/// What kind of address an IP is. Only [`AddressClass::Public`] is on the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// A routable address on the public internet.
    Public,
    /// `0.0.0.0`, `::`: no host at all.
    Unspecified,
    /// `0.0.0.0/8`: "this network".
    ThisNetwork,
    /// `127.0.0.0/8`, `::1`: this machine.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`: a local network (RFC 1918).
    Private,
    /// `100.64.0.0/10`: shared address space behind a carrier's NAT.
    SharedAddressSpace,
    /// `169.254/16`, `fe80::/10`: the link (and cloud metadata services).
    LinkLocal,
    /// `fc00::/7`: an IPv6 local network.
    UniqueLocal,
    /// `fec0::/10`: deprecated IPv6 site-local.
    SiteLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.0.0/24`: IETF protocol assignments.
    ProtocolAssignments,
    /// `198.18.0.0/15`, `2001:2::/48`: benchmarking.
    Benchmarking,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`:
    /// documentation, never a real host.
    Documentation,
    /// `100::/64`: discard-only.
    DiscardOnly,
    /// `64:ff9b:1::/48`: local-use NAT64, translated by a gateway on the local network.
    LocalNat64,
    /// `240.0.0.0/4`, ORCHID (`2001:10::/28`, `2001:20::/28`), SRv6 segment ids
    /// (`5f00::/16`): reserved, never a host.
    Reserved,
}

impl AddressClass {
    /// Whether connecting there reaches the public internet.
    pub fn is_public(self) -> bool {
        self == AddressClass::Public
    }

    /// A stable name: `public`, `loopback`, `private`, `link-local`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            AddressClass::Public => "public",
            AddressClass::Unspecified => "unspecified",
            AddressClass::ThisNetwork => "this-network",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::SharedAddressSpace => "shared",
            AddressClass::LinkLocal => "link-local",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::SiteLocal => "site-local",
            AddressClass::Multicast => "multicast",
            AddressClass::Broadcast => "broadcast",
            AddressClass::ProtocolAssignments => "protocol-assignments",
            AddressClass::Benchmarking => "benchmarking",
            AddressClass::Documentation => "documentation",
            AddressClass::DiscardOnly => "discard-only",
            AddressClass::LocalNat64 => "local-nat64",
            AddressClass::Reserved => "reserved",
        }
    }

    /// The class as a person reads it, for refusals: "a loopback address (this machine)".
    pub fn describe(self) -> &'static str {
        match self {
            AddressClass::Public => "a public address",
            AddressClass::Unspecified => "the unspecified address",
            AddressClass::ThisNetwork => "a \"this network\" address",
            AddressClass::Loopback => "a loopback address (this machine)",
            AddressClass::Private => "a private address (a local network)",
            AddressClass::SharedAddressSpace => "a shared (carrier NAT) address",
            AddressClass::LinkLocal => {
                "a link-local address (the link, or a cloud metadata service)"
            }
            AddressClass::UniqueLocal => "a unique-local IPv6 address (a local network)",
            AddressClass::SiteLocal => "a site-local IPv6 address (a local network)",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "the broadcast address",
            AddressClass::ProtocolAssignments => "an IETF protocol-assignment address",
            AddressClass::Benchmarking => "a benchmarking address",
            AddressClass::Documentation => "a documentation address",
            AddressClass::DiscardOnly => "a discard-only address",
            AddressClass::LocalNat64 => "a local-use NAT64 address (a local network)",
            AddressClass::Reserved => "a reserved address",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of `ip`. An IPv6 address that carries an IPv4 one is judged by the IPv4 one
/// when that is not public.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

/// Whether `ip` is on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    classify(ip).is_public()
}

/// Whether `ip` is in `listed`, an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) and its
/// IPv4 address (`127.0.0.1`) counting as the same.
pub fn is_listed(listed: &[IpAddr], ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    listed.iter().any(|entry| entry.to_canonical() == ip)
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if a == 0 {
        AddressClass::ThisNetwork
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_private() {
        AddressClass::Private
    } else if a == 100 && (64..128).contains(&b) {
        AddressClass::SharedAddressSpace
    } else if ip.is_link_local() {
        AddressClass::LinkLocal
    } else if ip.is_broadcast() {
        AddressClass::Broadcast
    } else if ip.is_multicast() {
        AddressClass::Multicast
    } else if a == 192 && b == 0 && c == 0 {
        AddressClass::ProtocolAssignments
    } else if a == 198 && (18..20).contains(&b) {
        AddressClass::Benchmarking
    } else if matches!((a, b, c), (192, 0, 2) | (198, 51, 100) | (203, 0, 113)) {
        AddressClass::Documentation
    } else if a >= 240 {
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

/// The parts of 2001::/23 that IANA's registry marks globally reachable: 2001:1::1 to ::3
/// (anycast services), 2001:3::/32 (AMT), 2001:4:112::/48 (AS112) and 2001:30::/28 (DRIP).
fn is_global_protocol_assignment(segments: [u16; 8]) -> bool {
    (segments[1] == 1 && segments[2..7] == [0; 5] && (1..=3).contains(&segments[7]))
        || segments[1] == 3
        || segments[1..3] == [4, 0x0112]
        || (0x0030..0x0040).contains(&segments[1])
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let segments = ip.segments();
    let first = segments[0];
    // The IPv4 address in the last 32 bits, for the forms that carry one there.
    let last_32_bits = Ipv4Addr::from_bits(ip.to_bits() as u32);
    if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_multicast() {
        AddressClass::Multicast
    } else if (first & 0xfe00) == 0xfc00 {
        AddressClass::UniqueLocal
    } else if (first & 0xffc0) == 0xfe80 {
        AddressClass::LinkLocal
    } else if (first & 0xffc0) == 0xfec0 {
        AddressClass::SiteLocal
    } else if segments[..2] == [0x2001, 0x0db8] || (first == 0x3fff && segments[1] & 0xf000 == 0) {
        // 2001:db8::/32 and 3fff::/20.
        AddressClass::Documentation
    } else if segments[..3] == [0x2001, 0x0002, 0] {
        AddressClass::Benchmarking
    } else if (first == 0x2001 && (0x0010..0x0030).contains(&segments[1])) || first == 0x5f00 {
        // ORCHID (2001:10::/28, 2001:20::/28) and SRv6 segment ids (5f00::/16): never a host.
        AddressClass::Reserved
    } else if segments[..2] == [0x2001, 0] {
        // Teredo carries its server's IPv4 address in bits 32..64 and its client's,
        // inverted, in the last 32 bits: both must be public.
        let server = classify_v4(Ipv4Addr::from_bits((ip.to_bits() >> 64) as u32));
        let client = classify_v4(Ipv4Addr::from_bits(!(ip.to_bits() as u32)));
        if client == AddressClass::Public {
            server
        } else {
            client
        }
    } else if first == 0x2001 && segments[1] < 0x0200 && !is_global_protocol_assignment(segments) {
        // The rest of 2001::/23 (IETF protocol assignments) is not globally reachable.
        AddressClass::Reserved
    } else if segments[..4] == [0x0100, 0, 0, 0] {
        AddressClass::DiscardOnly
    } else if segments[..4] == [0x0100, 0, 0, 1] {
        // 100:0:0:1::/64, the dummy IPv6 prefix: never routed.
        AddressClass::Reserved
    } else if segments[..3] == [0x64, 0xff9b, 0x0001] {
        // Where the IPv4 address sits depends on a prefix length only that network knows.
        AddressClass::LocalNat64
    } else if segments[..6] == [0, 0, 0, 0, 0, 0]
        || segments[..6] == [0, 0, 0, 0, 0xffff, 0]
        || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
    {
        // IPv4-compatible (::/96), SIIT (::ffff:0:0/96) and NAT64 (64:ff9b::/96).
        classify_v4(last_32_bits)
    } else if first == 0x2002 {
        // 6to4 carries its IPv4 address in bits 16..48.
        classify_v4(Ipv4Addr::from_bits(
            (u32::from(segments[1]) << 16) | u32::from(segments[2]),
        ))
    } else {
        AddressClass::Public
    }
}

/// This machine's own addresses, from its network interfaces (loopback included). Empty when
/// the interfaces cannot be listed: the deny matrix still refuses every non-public address.
pub fn own_addresses() -> Vec<IpAddr> {
    let mut addresses: Vec<IpAddr> = if_addrs::get_if_addrs()
        .map(|interfaces| {
            interfaces
                .into_iter()
                .map(|interface| interface.ip())
                .collect()
        })
        .unwrap_or_default();
    addresses.sort();
    addresses.dedup();
    addresses
}
