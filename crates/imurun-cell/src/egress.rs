//! The egress broker's rules: whether a cell's request may leave, decided before anything
//! resolves or connects ([`check_request`]), then for the addresses its host resolved to
//! ([`check_addresses`]). The broker decides the first with [`check_request`] itself and the
//! second through its door, whose resolver checks every answer with [`address_rule`] — the
//! rule `check_addresses` applies — so `imurun keep egress check` says what the broker would
//! (one difference: a name with no address is `address` to the command and `network` to the
//! broker, which cannot tell it from a failed lookup).

use std::net::IpAddr;

use imurun_core::host::{is_loopback_name, parse_rule_host};
use imurun_net::http::Url;
use imurun_net::{AddressRule, NetError, normalise_host, parse_http_url};

use crate::host::Header;

/// The methods a rule may name (case-sensitive: `get` is not `GET`).
pub const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// The methods a tainted session may still use without a person's approval.
pub const TAINTED_METHODS: &[&str] = &["GET", "HEAD", "OPTIONS"];

/// Headers a cell may never set: the destination, credentials and the message's framing are
/// the host's.
const REFUSED_HEADERS: &[&str] = &[
    "host",
    "authorization",
    "cookie",
    "connection",
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "keep-alive",
    "forwarded",
    // The answer comes back as the broker asks for it: unencoded and whole, so what the host
    // takes out of it (credentials) is there to be found.
    "accept-encoding",
    "range",
    "if-range",
    // Headers some servers read as another method, path or host than the one the rules saw.
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "x-original-url",
    "x-rewrite-url",
    "x-original-method",
];

/// One kind of request a cell may make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRule {
    /// `https` or `http`.
    pub scheme: String,
    /// A host in normal form, or `*.` and a suffix (any name strictly below it).
    pub host: String,
    pub port: u16,
    pub methods: Vec<String>,
    /// Requests' paths start here, on a segment boundary unless it ends in `/`.
    pub path_prefix: String,
    /// While the session is tainted, a method other than `GET`, `HEAD` and `OPTIONS` is
    /// refused, or (`true`) asks the person each time.
    pub ask_when_tainted: bool,
    /// Each use needs a decision signed on one of the person's devices.
    pub device_signature: bool,
}

/// A credential the broker adds to the requests its binding covers (only over `https`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRule {
    /// The vault entry.
    pub name: String,
    /// The header it is sent in.
    pub header: String,
    pub host: String,
    pub port: u16,
    pub methods: Vec<String>,
    pub path_prefix: String,
}

/// How egress is granted (`deny` links no HTTP at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressMode {
    /// Each use waits for the person.
    Ask,
    /// The rules decide.
    Allow,
}

/// Everything the broker decides with for one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressGrant {
    pub mode: EgressMode,
    pub rules: Vec<EgressRule>,
    pub credentials: Vec<CredentialRule>,
    /// Loopback ports the operator opened for tests and local services (off by default):
    /// a request to one of these ports may reach `127.0.0.1` or `::1`.
    pub loopback_ports: Vec<u16>,
    /// The host's own ports (its API, and with it the deploy route): never reached on a
    /// loopback address, even when `loopback_ports` names one (the public rule still refuses
    /// this machine's own addresses on every port).
    pub host_ports: Vec<u16>,
    /// How long a use waits for the person before it is refused (the manifest's
    /// `approval_timeout_s`).
    pub approval_timeout: std::time::Duration,
}

/// Who must approve a use before it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Approval {
    /// Nobody: the rules allow it.
    None,
    /// The person, in the page or from the command line.
    Person,
    /// The person, with a decision signed on one of their devices.
    Device,
}

/// A request that passed the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub url: Url,
    /// The URL's host in normal form.
    pub host: String,
    pub port: u16,
    pub method: String,
    /// The index of the rule that allowed it.
    pub rule: usize,
    /// Indexes of the credentials to add.
    pub credentials: Vec<usize>,
    pub approval: Approval,
    /// Whether loopback addresses may be reached (the port is one the operator opened).
    pub loopback: bool,
}

/// Why a request may not leave: the rule that fired (a stable word) and a sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    /// `url`, `scheme`, `host`, `port`, `method`, `path`, `header`, `tainted` or `address`.
    pub rule: &'static str,
    pub reason: String,
}

impl Refusal {
    fn new(rule: &'static str, reason: impl Into<String>) -> Self {
        Self {
            rule,
            reason: reason.into(),
        }
    }
}

/// Whether `method url` with `headers` may leave under `grant`, before any lookup.
pub fn check_request(
    grant: &EgressGrant,
    tainted: bool,
    method: &str,
    url: &str,
    headers: &[Header],
) -> Result<Checked, Refusal> {
    let mut url = parse_http_url(url).map_err(|error| Refusal::new("url", error.to_string()))?;
    let host = url
        .host_str()
        .and_then(|host| normalise_host(host).ok())
        .ok_or_else(|| Refusal::new("url", format!("{url} has no usable host")))?;
    // What leaves is what was matched: `Example.com.` is sent (and looked up) as
    // `example.com`, `localhost.` as `localhost`.
    if url.host_str() != Some(host.as_str()) {
        url.set_host(Some(&host))
            .map_err(|error| Refusal::new("url", format!("{url}: {error}")))?;
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| Refusal::new("url", format!("{url} has no port")))?;
    if url.fragment().is_some() {
        return Err(Refusal::new(
            "url",
            "a URL's fragment is never sent; leave it out so that what is approved is what leaves",
        ));
    }
    check_path(url.path())?;
    // A path in normal form (checked above) is what every upstream reads; rules and
    // credentials match it as written.
    let path = url.path().to_owned();
    if url
        .query()
        .is_some_and(|query| names_method_override(query.as_bytes()))
    {
        return Err(Refusal::new(
            "method",
            "a `_method` query parameter asks some servers for another method than the rules saw",
        ));
    }
    if !METHODS.contains(&method) {
        return Err(Refusal::new(
            "method",
            format!(
                "{method:?} is not one of {} (methods are case-sensitive)",
                METHODS.join(", ")
            ),
        ));
    }
    check_headers(grant, headers)?;
    // Where several rules match, the strictest applies: a device signature if any demands
    // one, a tainted write asked about only if every one allows that.
    let allowing = matching_rules(grant, &url, &host, &path, port, method)?;
    let rule = allowing[0];
    // Stricter rules apply also where the path differs only in case: some servers route
    // without it.
    let folded = path.to_ascii_lowercase();
    let matching: Vec<usize> = (0..grant.rules.len())
        .filter(|&index| {
            let candidate = &grant.rules[index];
            candidate.scheme == url.scheme()
                && host_covers(&candidate.host, &host)
                && candidate.port == port
                && candidate.methods.iter().any(|allowed| allowed == method)
                && path_within(&folded, &candidate.path_prefix.to_ascii_lowercase())
        })
        .collect();
    let mut approval = match grant.mode {
        EgressMode::Allow => Approval::None,
        EgressMode::Ask => Approval::Person,
    };
    if tainted && !TAINTED_METHODS.contains(&method) {
        if !matching
            .iter()
            .all(|&index| grant.rules[index].ask_when_tainted)
        {
            return Err(Refusal::new(
                "tainted",
                format!(
                    "the session is tainted (it read untrusted content), so only {} may be \
                     sent; this rule does not let the person approve {method}",
                    TAINTED_METHODS.join(", ")
                ),
            ));
        }
        approval = approval.max(Approval::Person);
    }
    if matching
        .iter()
        .any(|&index| grant.rules[index].device_signature)
    {
        approval = Approval::Device;
    }
    let credentials = grant
        .credentials
        .iter()
        .enumerate()
        .filter(|(_, credential)| {
            url.scheme() == "https"
                && host_covers(&credential.host, &host)
                && credential.port == port
                && credential.methods.iter().any(|allowed| allowed == method)
                && path_within(&path, &credential.path_prefix)
        })
        .map(|(index, _)| index)
        .collect();
    Ok(Checked {
        loopback: grant.loopback_ports.contains(&port) && !grant.host_ports.contains(&port),
        url,
        host,
        port,
        method: method.to_owned(),
        rule,
        credentials,
        approval,
    })
}

/// Whether the addresses `checked`'s host resolved to (`resolved`; for an IP literal, the
/// address itself) may be reached, given this machine's own addresses.
pub fn check_addresses(
    checked: &Checked,
    own: &[IpAddr],
    resolved: &[IpAddr],
) -> Result<(), Refusal> {
    let rule = address_rule(checked, own);
    let literal = literal_ip(&checked.url);
    let addresses: Vec<IpAddr> = match literal {
        Some(ip) => vec![ip],
        // `localhost` and the names below it are this machine, whatever a resolver says.
        None if is_loopback_name(&checked.host) => imurun_net::LOOPBACK.to_vec(),
        None => resolved.to_vec(),
    };
    if addresses.is_empty() {
        return Err(Refusal::new(
            "address",
            format!("{} has no address", checked.host),
        ));
    }
    for ip in addresses {
        rule.check(&checked.host, ip)
            .map_err(|error| Refusal::new("address", error.to_string()))?;
    }
    Ok(())
}

/// The address rule a request is connected under: public addresses that are not this
/// machine's, and loopback only on a port the operator opened.
pub fn address_rule(checked: &Checked, own: &[IpAddr]) -> AddressRule {
    address_rule_for(checked.loopback, own)
}

/// [`address_rule`] for a request that may (`loopback`) or may not reach loopback.
pub fn address_rule_for(loopback: bool, own: &[IpAddr]) -> AddressRule {
    let loopback: Vec<IpAddr> = if loopback {
        imurun_net::LOOPBACK.to_vec()
    } else {
        Vec::new()
    };
    AddressRule {
        allow_non_public: false,
        allowed_addresses: loopback,
        trusted_hosts: Vec::new(),
        own_addresses: own.to_vec(),
    }
}

fn literal_ip(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

/// The rules that allow the request, in the grant's order (never empty), or a refusal naming
/// the first part no rule matched: scheme, then host, port, method and path.
fn matching_rules(
    grant: &EgressGrant,
    url: &Url,
    host: &str,
    path: &str,
    port: u16,
    method: &str,
) -> Result<Vec<usize>, Refusal> {
    let rules = &grant.rules;
    let by_scheme: Vec<usize> = (0..rules.len())
        .filter(|&index| rules[index].scheme == url.scheme())
        .collect();
    if by_scheme.is_empty() {
        return Err(Refusal::new(
            "scheme",
            format!("no egress rule allows {} requests", url.scheme()),
        ));
    }
    let by_host: Vec<usize> = by_scheme
        .into_iter()
        .filter(|&index| host_covers(&rules[index].host, host))
        .collect();
    if by_host.is_empty() {
        return Err(Refusal::new(
            "host",
            format!("no egress rule allows the host {host}"),
        ));
    }
    let by_port: Vec<usize> = by_host
        .into_iter()
        .filter(|&index| rules[index].port == port)
        .collect();
    if by_port.is_empty() {
        return Err(Refusal::new(
            "port",
            format!("no egress rule allows {host} on port {port}"),
        ));
    }
    let by_method: Vec<usize> = by_port
        .into_iter()
        .filter(|&index| rules[index].methods.iter().any(|allowed| allowed == method))
        .collect();
    if by_method.is_empty() {
        return Err(Refusal::new(
            "method",
            format!("no egress rule allows {method} to {host}:{port}"),
        ));
    }
    let by_path: Vec<usize> = by_method
        .into_iter()
        .filter(|&index| path_within(path, &rules[index].path_prefix))
        .collect();
    if by_path.is_empty() {
        return Err(Refusal::new(
            "path",
            format!(
                "no egress rule allows the path {} on {host}:{port}",
                url.path()
            ),
        ));
    }
    Ok(by_path)
}

pub use imurun_core::host::{host_covers, path_within};

/// `path` in normal form, as servers commonly read it: escapes of characters that never need
/// one (letters, digits, `-`, `.`, `_`, `~`) decoded, `;` parameters dropped from each
/// segment, and runs of slashes merged. A path that differs from its normal form is refused.
pub fn matching_path(path: &str) -> String {
    let mut decoded = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(at) = rest.find('%') {
        decoded.push_str(&rest[..at]);
        let escape = &rest[at..];
        let plain = escape
            .get(1..3)
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .filter(|byte| byte.is_ascii_alphanumeric() || b"-._~".contains(byte));
        match plain {
            Some(byte) => {
                decoded.push(char::from(byte));
                rest = &escape[3..];
            }
            None => {
                decoded.push('%');
                rest = &escape[1..];
            }
        }
    }
    decoded.push_str(rest);
    let segments: Vec<&str> = decoded.split('/').collect();
    let last = segments.len().saturating_sub(1);
    let mut matched = String::with_capacity(decoded.len());
    for (index, segment) in segments.iter().enumerate() {
        let bare = segment.split(';').next().unwrap_or_default();
        if index == 0 {
            matched.push_str(bare);
            continue;
        }
        // An empty segment inside the path is a doubled slash; at the end, a trailing one.
        if bare.is_empty() && (index != last || matched.ends_with('/')) {
            continue;
        }
        matched.push('/');
        matched.push_str(bare);
    }
    if matched.is_empty() {
        matched.push('/');
    }
    matched
}

/// A path the URL parser left alone but an upstream might read as leaving a prefix: an
/// encoded slash or backslash, or a segment that decodes to `.` or `..` (with or without
/// `;` parameters, which some servers drop).
fn check_path(path: &str) -> Result<(), Refusal> {
    let lower = path.to_ascii_lowercase();
    let bytes = path.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        let escaped = bytes.get(index + 1..index + 3);
        if *byte == b'%' && !escaped.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
            return Err(Refusal::new(
                "path",
                format!(
                    "the path {path} has a `%` that is not an escape, which a server decoding \
                     again could read as one"
                ),
            ));
        }
    }
    if std::str::from_utf8(&imurun_core::percent_decoded_bytes(path)).is_err() {
        return Err(Refusal::new(
            "path",
            format!("the path {path} does not decode to UTF-8 (an overlong or broken escape)"),
        ));
    }
    if matching_path(path) != path {
        return Err(Refusal::new(
            "path",
            format!(
                "the path {path} is not in normal form (an escaped letter, digit or `-._~`, a \
                 `;` parameter or a doubled slash): servers read such paths differently, so \
                 write it as {}",
                matching_path(path)
            ),
        ));
    }
    if lower.contains("%2f") || lower.contains("%5c") {
        return Err(Refusal::new(
            "path",
            format!("the path {path} has an encoded slash, which could leave a path prefix"),
        ));
    }
    // A doubly encoded character (`%252e`), an encoded NUL or `;`, and overlong UTF-8 dots
    // (`%c0%ae`) are what servers that decode twice, or leniently, turn into `..` or `/`.
    for encoded in ["%25", "%00", "%3b", "%c0", "%c1"] {
        if lower.contains(encoded) {
            return Err(Refusal::new(
                "path",
                format!(
                    "the path {path} has {encoded}, which a server decoding again could read \
                     as leaving a path prefix"
                ),
            ));
        }
    }
    for segment in path.split('/') {
        let plain = segment.to_ascii_lowercase().replace("%2e", ".");
        let bare = plain.split(';').next().unwrap_or_default();
        if bare == "." || bare == ".." {
            return Err(Refusal::new(
                "path",
                format!(
                    "the path {path} has a `{segment}` segment, which could leave a path prefix"
                ),
            ));
        }
    }
    Ok(())
}

/// The most headers a cell may set on one request, and their names and values together.
pub const HEADERS_MAX: usize = 64;
pub const HEADER_BYTES_MAX: usize = 16 << 10;

fn check_headers(grant: &EgressGrant, headers: &[Header]) -> Result<(), Refusal> {
    let bytes: usize = headers
        .iter()
        .map(|header| header.name.len() + header.value.len())
        .sum();
    if headers.len() > HEADERS_MAX || bytes > HEADER_BYTES_MAX {
        return Err(Refusal::new(
            "header",
            format!(
                "{} headers of {bytes} bytes; a request carries at most {HEADERS_MAX} headers of \
                 {HEADER_BYTES_MAX} bytes together",
                headers.len()
            ),
        ));
    }
    for header in headers {
        // Some servers (CGI-style ones) read `_` in a header's name as `-`: the refused names
        // are matched in both spellings.
        let name = header.name.to_ascii_lowercase().replace('_', "-");
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte));
        if !valid_name {
            return Err(Refusal::new(
                "header",
                format!("{:?} is not a header name", header.name),
            ));
        }
        if header
            .value
            .bytes()
            .any(|byte| matches!(byte, b'\r' | b'\n' | 0))
        {
            return Err(Refusal::new(
                "header",
                format!("the value of {} has a line break or NUL", header.name),
            ));
        }
        let injected = grant
            .credentials
            .iter()
            .any(|credential| credential.header.eq_ignore_ascii_case(&name));
        if REFUSED_HEADERS.contains(&name.as_str())
            || name.starts_with("proxy-")
            || name.starts_with("x-forwarded-")
            || injected
        {
            return Err(Refusal::new(
                "header",
                format!(
                    "a cell may not set {}: the destination, credentials and framing are the host's",
                    header.name
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `text` (a query or a body) names a `_method` field, in any spelling a server's
/// decoder reads as that name: percent-encoded (once or more), with JSON's `\u` escapes, in any
/// letter case, or mangled as PHP mangles field names (`.method`, `[method`, ` method` and
/// `+method` where a name starts). Rails, Laravel and Symfony run a request with such a field
/// as the method it names.
pub fn names_method_override(text: &[u8]) -> bool {
    let mut decoded = text.to_ascii_lowercase();
    // Each round undoes one layer of percent-encoding and JSON escapes; a few layers are all a
    // server's decoders ever undo.
    for _ in 0..4 {
        if mentions_method_field(&decoded) {
            return true;
        }
        let next = unescape_json(&percent_decode(&decoded)).to_ascii_lowercase();
        if next == decoded {
            return false;
        }
        decoded = next;
    }
    mentions_method_field(&decoded)
}

/// `_method` anywhere, or `method` after a character PHP reads as `_` where a field's name
/// starts (the start, `&`, `?`, `;`, a quote, `{` or `,`).
fn mentions_method_field(text: &[u8]) -> bool {
    const NAME: &[u8] = b"method";
    text.windows(NAME.len() + 1)
        .enumerate()
        .any(|(at, window)| {
            let (first, rest) = (window[0], &window[1..]);
            if rest != NAME {
                return false;
            }
            match first {
                b'_' => true,
                b'.' | b'[' | b' ' | b'+' => at == 0 || b"&?;\"'{,".contains(&text[at - 1]),
                _ => false,
            }
        })
}

/// `text` with each `%XX` decoded (other bytes as they are).
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let hex = text.get(at + 1..at + 3).and_then(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        });
        match (text[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    out
}

/// `text` with each JSON `\uXXXX` escape of an ASCII character decoded.
fn unescape_json(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let escaped = (text[at] == b'\\' && text.get(at + 1) == Some(&b'u'))
            .then(|| text.get(at + 2..at + 6))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok().filter(u8::is_ascii));
        match escaped {
            Some(byte) => {
                out.push(byte);
                at += 6;
            }
            None => {
                out.push(text[at]);
                at += 1;
            }
        }
    }
    out
}

/// The refusal for an error the door returned while connecting (an address refused at
/// connection time, a redirect), in the broker's words.
pub fn refusal_from_net(error: &NetError) -> Refusal {
    let rule = match error {
        NetError::Refused { .. } | NetError::OwnAddress { .. } => "address",
        NetError::Redirect { .. } | NetError::TooManyRedirects { .. } => "redirect",
        _ => "network",
    };
    Refusal::new(rule, error.to_string())
}

/// One question for [`decide`]: the JSON line `imurun keep egress check` reads.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub rules: Vec<RuleLine>,
    pub method: String,
    pub url: String,
    /// What DNS answered for the URL's host; empty for an IP literal.
    #[serde(default)]
    pub resolved: Vec<IpAddr>,
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Whether the session is tainted.
    #[serde(default)]
    pub tainted: bool,
    /// `allow` (the default) or `ask`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Loopback ports the operator opened.
    #[serde(default)]
    pub loopback_ports: Vec<u16>,
    /// The host's own ports (its API's): never reached on loopback.
    #[serde(default)]
    pub host_ports: Vec<u16>,
}

/// A rule as a question writes it: the manifest's fields.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleLine {
    pub scheme: String,
    pub host: String,
    pub port: u16,
    pub methods: Vec<String>,
    pub path_prefix: String,
    #[serde(default)]
    pub ask_when_tainted: bool,
    #[serde(default)]
    pub device_signature: bool,
}

/// The broker's answer to a [`Question`], as `imurun keep egress check` prints it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Answer {
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// Why, in a sentence.
    pub reason: String,
    /// The rule that fired when denied (`host`, `address`, ...); for an allowed use, who must
    /// approve it (`none`, `person`, `device`).
    pub rule: String,
}

/// What the broker decides for `question` before connecting, with this machine's addresses
/// `own`: the same two checks, [`check_request`] and [`check_addresses`].
pub fn decide(question: &Question, own: &[IpAddr]) -> Answer {
    let mode = match question.mode.as_deref() {
        None | Some("allow") => EgressMode::Allow,
        Some("ask") => EgressMode::Ask,
        Some(other) => {
            return Answer {
                decision: "deny",
                reason: format!("{other:?} is not an egress mode (`allow` or `ask`)"),
                rule: "mode".to_owned(),
            };
        }
    };
    let mut rules = Vec::with_capacity(question.rules.len());
    for (index, rule) in question.rules.iter().enumerate() {
        // Read as intake reads a manifest's rule: a host the broker could never hold is
        // refused here too.
        let host = match parse_rule_host(&rule.host) {
            Ok(host) => host.to_string(),
            Err(why) => {
                return Answer {
                    decision: "deny",
                    reason: format!("rules[{index}].host: {why}"),
                    rule: "rule".to_owned(),
                };
            }
        };
        rules.push(EgressRule {
            scheme: rule.scheme.clone(),
            host,
            port: rule.port,
            methods: rule.methods.clone(),
            path_prefix: rule.path_prefix.clone(),
            ask_when_tainted: rule.ask_when_tainted,
            device_signature: rule.device_signature,
        });
    }
    let grant = EgressGrant {
        mode,
        rules,
        credentials: Vec::new(),
        loopback_ports: question.loopback_ports.clone(),
        host_ports: question.host_ports.clone(),
        approval_timeout: std::time::Duration::ZERO,
    };
    let headers: Vec<Header> = question
        .headers
        .iter()
        .map(|(name, value)| Header {
            name: name.clone(),
            value: value.clone(),
        })
        .collect();
    let outcome = check_request(
        &grant,
        question.tainted,
        &question.method,
        &question.url,
        &headers,
    )
    .and_then(|checked| check_addresses(&checked, own, &question.resolved).map(|()| checked));
    match outcome {
        Ok(checked) => Answer {
            decision: "allow",
            reason: format!(
                "egress rule {} allows {} {}",
                checked.rule, checked.method, checked.url
            ),
            rule: match checked.approval {
                Approval::None => "none",
                Approval::Person => "person",
                Approval::Device => "device",
            }
            .to_owned(),
        },
        Err(refusal) => Answer {
            decision: "deny",
            reason: refusal.reason,
            rule: refusal.rule.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::matching_path;

    #[test]
    fn a_path_is_matched_as_servers_read_it() {
        for (path, matched) in [
            ("/", "/"),
            ("/api/pay/x", "/api/pay/x"),
            ("/api/pay/", "/api/pay/"),
            ("/api//pay/x", "/api/pay/x"),
            ("//", "/"),
            ("/api/%70ay/x", "/api/pay/x"),
            ("/api/p%61y/x", "/api/pay/x"),
            ("/api/pay;v=1/x", "/api/pay/x"),
            ("/api/pay%20now", "/api/pay%20now"),
            ("/api/%e2%82%ac", "/api/%e2%82%ac"),
            ("/api/%7e/%2d%5f", "/api/~/-_"),
            ("/100%", "/100%"),
            ("/api/%4", "/api/%4"),
        ] {
            assert_eq!(matching_path(path), matched, "{path}");
        }
    }
}
