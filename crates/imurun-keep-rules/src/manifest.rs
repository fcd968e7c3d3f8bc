//! A pack's manifest: what the agent (or tool) in the bundle may reach. Read from JSON with
//! unknown fields refused and every error naming its field; then validated against the bounds
//! below, with every host in its normal form ([`crate::host`]). Nothing stores or compares a
//! manifest before [`Manifest::from_json`] or [`Manifest::validate`] accepted it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::RuleError;
use crate::host::{Host, HostAllowance, normalize_host};

/// Characters in an agent's or tool's name.
pub const NAME_CHARS_MAX: usize = 64;
/// Characters in a description.
pub const DESCRIPTION_CHARS_MAX: usize = 2_000;
/// Egress rules in one manifest or ceiling.
pub const EGRESS_RULES_MAX: usize = 32;
/// Methods in one rule or binding.
pub const METHODS_MAX: usize = 7;
/// Bytes of a path prefix.
pub const PATH_PREFIX_BYTES_MAX: usize = 256;
/// Credentials one manifest names.
pub const CREDENTIALS_MAX: usize = 16;
/// Characters of a credential's name.
pub const CREDENTIAL_NAME_CHARS_MAX: usize = 64;
/// Characters of the header a credential is sent in.
pub const HEADER_CHARS_MAX: usize = 64;
/// A cell's linear memory, in MiB.
pub const MEMORY_MB_MAX: i64 = 4_096;
/// A cell's CPU time per session, in milliseconds.
pub const CPU_MS_MAX: i64 = 600_000;
/// A cell's wall time per session, in milliseconds.
pub const TIMEOUT_MS_MAX: i64 = 3_600_000;
/// How long an egress use waits for a person's approval, in seconds.
pub const APPROVAL_TIMEOUT_S_MAX: i64 = 86_400;
/// The highest version number: the largest integer signed documents hold.
pub const VERSION_MAX: i64 = crate::canonical::SAFE_INTEGER_MAX;

/// The methods a rule may allow.
pub const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Headers a credential may never be sent in: they frame the request itself.
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// A pack's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The agent's or tool's name: 1 to 64 of `a-z`, `0-9` and `-`, starting with a letter or
    /// digit.
    pub name: String,
    /// A positive integer, strictly increasing per name.
    pub version: i64,
    /// Plain text shown to people; no control characters but newlines and tabs, no bidi
    /// controls.
    #[serde(default)]
    pub description: String,
    /// Where the cell may send requests. Absent: nowhere.
    #[serde(default)]
    pub egress: Egress,
    /// Credentials the broker may add to requests, each bound to the requests it may go with.
    #[serde(default)]
    pub credentials: Vec<Credential>,
    /// Memory access. Absent: none.
    #[serde(default)]
    pub memory: MemoryAccess,
    /// Whether the cell may call the model.
    #[serde(default)]
    pub model_socket: bool,
    /// Whether the agent may hand the host display-only cards.
    #[serde(default)]
    pub card: bool,
    /// The cell's limits.
    pub resources: Resources,
    /// How long an egress use waits for a person's approval before it is refused, in seconds.
    pub approval_timeout_s: i64,
}

/// Where a cell may send requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Egress {
    /// `deny`: no requests; `ask`: each use waits for a person; `allow`: the rules decide.
    pub mode: EgressMode,
    /// The requests that may be made at all.
    #[serde(default)]
    pub rules: Vec<EgressRule>,
}

/// How egress is granted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EgressMode {
    /// No requests.
    #[default]
    Deny,
    /// Each use waits for a person's approval.
    Ask,
    /// The rules decide.
    Allow,
}

/// One kind of request a cell may make.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressRule {
    /// `https` or `http`.
    pub scheme: String,
    /// A host in normal form (see [`crate::host`]).
    pub host: String,
    /// 1 to 65535.
    pub port: u16,
    /// Some of [`METHODS`], no repeats.
    pub methods: Vec<String>,
    /// The path every request must start with: `/` and printable ASCII, no `..`, `?` or `#`.
    pub path_prefix: String,
    /// While the session is tainted, a method other than `GET`, `HEAD` and `OPTIONS` is
    /// refused; with this, the person is asked each time instead.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ask_when_tainted: bool,
    /// Each use needs a decision signed on one of the person's devices.
    #[serde(default, skip_serializing_if = "is_false")]
    pub device_signature: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// A credential and the requests it may be injected into.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// The vault entry's name: 1 to 64 of `a-z`, `0-9`, `-` and `_`.
    pub name: String,
    /// The only requests the broker adds it to.
    pub bind: Binding,
    /// The request header it is sent in (`Authorization`, `X-Api-Key`).
    pub header: String,
}

/// The requests a credential may go with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    pub host: String,
    pub port: u16,
    pub methods: Vec<String>,
    pub path_prefix: String,
}

/// Memory access, in increasing authority.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryAccess {
    #[default]
    None,
    Read,
    Write,
}

/// A cell's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// Linear memory, 1 to [`MEMORY_MB_MAX`] MiB.
    pub memory_mb: i64,
    /// CPU time per session, 1 to [`CPU_MS_MAX`] ms.
    pub cpu_ms: i64,
    /// Wall time per session, 1 to [`TIMEOUT_MS_MAX`] ms.
    pub timeout_ms: i64,
}

impl Manifest {
    /// Reads and validates a manifest from JSON (see [`Manifest::validate`]).
    pub fn from_json(value: &Value, hosts: HostAllowance<'_>) -> Result<Manifest, RuleError> {
        let mut manifest: Manifest = from_value(value, "")?;
        manifest.validate(hosts)?;
        Ok(manifest)
    }

    /// Checks every field against its bounds and puts every host in normal form.
    pub fn validate(&mut self, hosts: HostAllowance<'_>) -> Result<(), RuleError> {
        check_name(&self.name, "name")?;
        check_version(self.version, "version")?;
        check_description(&self.description, "description")?;
        check_rules(&mut self.egress.rules, hosts, "egress.rules")?;
        if self.egress.mode == EgressMode::Deny && !self.egress.rules.is_empty() {
            return Err(RuleError::invalid(
                "egress.mode",
                "`deny` with rules is contradictory: drop the rules, or use `ask` or `allow`",
            ));
        }
        if self.credentials.len() > CREDENTIALS_MAX {
            return Err(too_many(
                "credentials",
                self.credentials.len(),
                CREDENTIALS_MAX,
            ));
        }
        let mut names = BTreeSet::new();
        for (index, credential) in self.credentials.iter_mut().enumerate() {
            let field = format!("credentials[{index}]");
            check_credential(credential, hosts, &field)?;
            if !names.insert(credential.name.clone()) {
                return Err(RuleError::invalid(
                    format!("{field}.name"),
                    format!("{:?} is named twice", credential.name),
                ));
            }
            let reached = self
                .egress
                .rules
                .iter()
                .any(|rule| rule_covers(rule, &credential.bind));
            if !reached {
                return Err(RuleError::invalid(
                    format!("{field}.bind"),
                    "no https egress rule reaches the requests this credential is bound to \
                     (credentials never travel over http)",
                ));
            }
        }
        self.resources.validate("resources")?;
        check_range(
            self.approval_timeout_s,
            1,
            APPROVAL_TIMEOUT_S_MAX,
            "approval_timeout_s",
        )
    }

    /// The hosts the manifest's rules name.
    pub fn hosts(&self) -> BTreeSet<&str> {
        self.egress
            .rules
            .iter()
            .map(|rule| rule.host.as_str())
            .collect()
    }
}

impl Resources {
    /// Checks each limit's range; `field` is this object's path.
    pub fn validate(&self, field: &str) -> Result<(), RuleError> {
        check_range(
            self.memory_mb,
            1,
            MEMORY_MB_MAX,
            &format!("{field}.memory_mb"),
        )?;
        check_range(self.cpu_ms, 1, CPU_MS_MAX, &format!("{field}.cpu_ms"))?;
        check_range(
            self.timeout_ms,
            1,
            TIMEOUT_MS_MAX,
            &format!("{field}.timeout_ms"),
        )
    }
}

/// Reads a typed document from JSON; an error names the field's path under `prefix`.
pub(crate) fn from_value<T: serde::de::DeserializeOwned>(
    value: &Value,
    prefix: &str,
) -> Result<T, RuleError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let field = match (prefix.is_empty(), path.as_str()) {
            (true, ".") => "(document)".to_owned(),
            (true, _) => path,
            (false, ".") => prefix.to_owned(),
            (false, _) => format!("{prefix}.{path}"),
        };
        RuleError::invalid(field, error.into_inner().to_string())
    })
}

/// Checks and normalises a list of egress rules; `field` is the list's path.
pub fn check_rules(
    rules: &mut [EgressRule],
    hosts: HostAllowance<'_>,
    field: &str,
) -> Result<(), RuleError> {
    if rules.len() > EGRESS_RULES_MAX {
        return Err(too_many(field, rules.len(), EGRESS_RULES_MAX));
    }
    for (index, rule) in rules.iter_mut().enumerate() {
        let field = format!("{field}[{index}]");
        if !matches!(rule.scheme.as_str(), "https" | "http") {
            return Err(RuleError::invalid(
                format!("{field}.scheme"),
                format!("{:?} is not `https` or `http`", rule.scheme),
            ));
        }
        rule.host = normalize_host(&rule.host, hosts, &format!("{field}.host"))?.to_string();
        check_port(rule.port, &format!("{field}.port"))?;
        check_methods(&mut rule.methods, &format!("{field}.methods"))?;
        check_path_prefix(&rule.path_prefix, &format!("{field}.path_prefix"))?;
    }
    Ok(())
}

fn check_credential(
    credential: &mut Credential,
    hosts: HostAllowance<'_>,
    field: &str,
) -> Result<(), RuleError> {
    check_credential_name(&credential.name, &format!("{field}.name"))?;
    let bind = &mut credential.bind;
    bind.host = normalize_host(&bind.host, hosts, &format!("{field}.bind.host"))?.to_string();
    check_port(bind.port, &format!("{field}.bind.port"))?;
    check_methods(&mut bind.methods, &format!("{field}.bind.methods"))?;
    check_path_prefix(&bind.path_prefix, &format!("{field}.bind.path_prefix"))?;
    check_header(&credential.header, &format!("{field}.header"))
}

/// Whether `rule` allows every request `bind` describes.
///
/// Only an `https` rule covers a binding: a credential never travels in clear text.
pub fn rule_covers(rule: &EgressRule, bind: &Binding) -> bool {
    if rule.scheme != "https" {
        return false;
    }
    let same_host = match (host_of(&rule.host), host_of(&bind.host)) {
        (Some(outer), Some(inner)) => outer.covers(&inner),
        _ => false,
    };
    same_host
        && rule.port == bind.port
        && bind
            .methods
            .iter()
            .all(|method| rule.methods.contains(method))
        && path_within(&bind.path_prefix, &rule.path_prefix)
}

/// Whether every path under `inner` is under `outer`: the egress broker's own rule (prefixes
/// compare by whole segments when `outer` does not end in `/`: `/api` covers `/api` and
/// `/api/v1`, not `/apix`).
pub use imurun_core::host::path_within;

/// A stored host (already in normal form) read back.
pub fn host_of(text: &str) -> Option<Host> {
    imurun_core::host::parse_rule_host(text).ok()
}

/// Names of agents and tools: 1 to 64 of `a-z`, `0-9` and `-`, starting with a letter or digit.
pub fn check_name(name: &str, field: &str) -> Result<(), RuleError> {
    check_word(
        name,
        field,
        &Word {
            chars_max: NAME_CHARS_MAX,
            underscore: false,
            first: |byte| byte.is_ascii_lowercase() || byte.is_ascii_digit(),
            shape: "`a-z`, `0-9` and `-`, starting with a letter or digit",
        },
    )
}

/// The shape of a plain identifier: lower-case ASCII letters, digits, `-` (and `_` where
/// allowed), with a rule for the first character.
pub(crate) struct Word {
    pub(crate) chars_max: usize,
    pub(crate) underscore: bool,
    pub(crate) first: fn(u8) -> bool,
    /// How the shape reads in an error: "`a-z`, `0-9` and `-`".
    pub(crate) shape: &'static str,
}

/// Checks `text` has the shape `word` describes; the error names `field` and the shape.
pub(crate) fn check_word(text: &str, field: &str, word: &Word) -> Result<(), RuleError> {
    let valid = !text.is_empty()
        && text.len() <= word.chars_max
        && text.bytes().next().is_some_and(word.first)
        && text.bytes().all(|byte| {
            byte.is_ascii_lowercase()
                || byte.is_ascii_digit()
                || byte == b'-'
                || (word.underscore && byte == b'_')
        });
    if valid {
        return Ok(());
    }
    Err(RuleError::invalid(
        field,
        format!(
            "{:?} is not 1 to {} of {}",
            cut(text),
            word.chars_max,
            word.shape
        ),
    ))
}

/// A positive version number.
pub fn check_version(version: i64, field: &str) -> Result<(), RuleError> {
    check_range(version, 1, VERSION_MAX, field)
}

/// Plain text: no control characters but newline and tab, no bidi controls (they make text read
/// differently from what it is), at most [`DESCRIPTION_CHARS_MAX`] characters.
pub fn check_description(text: &str, field: &str) -> Result<(), RuleError> {
    let count = text.chars().count();
    if count > DESCRIPTION_CHARS_MAX {
        return Err(RuleError::invalid(
            field,
            format!("{count} characters, more than the {DESCRIPTION_CHARS_MAX} allowed"),
        ));
    }
    if let Some(found) = text.chars().find(|c| is_hidden_control(*c)) {
        return Err(RuleError::invalid(
            field,
            format!(
                "{} is a control, bidi or invisible formatting character; descriptions are \
                 plain text",
                code_point(found)
            ),
        ));
    }
    Ok(())
}

/// Characters that act rather than show, or show nothing: controls (but newline and tab),
/// Unicode's invisible formatting characters (`Cf`: the bidi controls, zero-width characters,
/// tags), the line and paragraph separators, every default-ignorable code point (assigned or
/// not: the whole tag block, the variation selectors that hide bytes behind a visible
/// character, Hangul fillers) but the two that choose text or emoji presentation, and the
/// noncharacters.
pub fn is_hidden_control(character: char) -> bool {
    use unicode_general_category::{GeneralCategory, get_general_category};
    if character.is_ascii() {
        // No ASCII character is a formatting character or a separator: only its controls act.
        return character.is_ascii_control() && !matches!(character, '\n' | '\t');
    }
    character.is_control()
        || is_default_ignorable(character)
        || is_noncharacter(character)
        || matches!(
            get_general_category(character),
            // Invisible formatting (bidi controls and isolates, zero-width characters, the
            // soft hyphen, tag characters), and the line and paragraph separators.
            GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

/// Unicode's `Default_Ignorable_Code_Point` ranges (DerivedCoreProperties.txt; the reserved
/// code points in them are default-ignorable too, so a later Unicode assigns nothing visible
/// there), less U+FE0E and U+FE0F, which pick text or emoji presentation for the character
/// before them.
const DEFAULT_IGNORABLE: [(u32, u32); 17] = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0D),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

fn is_default_ignorable(character: char) -> bool {
    let code = u32::from(character);
    DEFAULT_IGNORABLE
        .iter()
        .any(|(first, last)| (*first..=*last).contains(&code))
}

/// The code points Unicode keeps for no character: U+FDD0 to U+FDEF, and the last two of
/// every plane.
fn is_noncharacter(character: char) -> bool {
    let code = u32::from(character);
    (0xFDD0..=0xFDEF).contains(&code) || code & 0xFFFE == 0xFFFE
}

/// How a refusal names a character: `U+202E`.
pub fn code_point(character: char) -> String {
    format!("U+{:04X}", u32::from(character))
}

/// A vault entry's name: 1 to 64 of `a-z`, `0-9`, `-` and `_`.
pub fn check_credential_name(name: &str, field: &str) -> Result<(), RuleError> {
    check_word(
        name,
        field,
        &Word {
            chars_max: CREDENTIAL_NAME_CHARS_MAX,
            underscore: true,
            first: |_| true,
            shape: "`a-z`, `0-9`, `-` and `_`",
        },
    )
}

fn check_port(port: u16, field: &str) -> Result<(), RuleError> {
    if port == 0 {
        return Err(RuleError::invalid(field, "0 is not a port (1 to 65535)"));
    }
    Ok(())
}

/// Methods from [`METHODS`], upper case, no repeats, at least one; sorted so that equal sets
/// compare equal.
fn check_methods(methods: &mut Vec<String>, field: &str) -> Result<(), RuleError> {
    if methods.is_empty() {
        return Err(RuleError::invalid(field, "at least one method is needed"));
    }
    if methods.len() > METHODS_MAX {
        return Err(too_many(field, methods.len(), METHODS_MAX));
    }
    for method in methods.iter() {
        if !METHODS.contains(&method.as_str()) {
            return Err(RuleError::invalid(
                field,
                format!("{:?} is not one of {}", cut(method), METHODS.join(", ")),
            ));
        }
    }
    let unique: BTreeSet<String> = methods.iter().cloned().collect();
    if unique.len() != methods.len() {
        return Err(RuleError::invalid(field, "a method is listed twice"));
    }
    *methods = unique.into_iter().collect();
    Ok(())
}

fn check_path_prefix(prefix: &str, field: &str) -> Result<(), RuleError> {
    if prefix.len() > PATH_PREFIX_BYTES_MAX {
        return Err(RuleError::invalid(
            field,
            format!(
                "{} bytes, more than the {PATH_PREFIX_BYTES_MAX} allowed",
                prefix.len()
            ),
        ));
    }
    if !prefix.starts_with('/') {
        return Err(RuleError::invalid(field, "a path prefix starts with `/`"));
    }
    if let Some(found) = prefix.chars().find(|c| {
        !c.is_ascii_graphic()
            || matches!(
                c,
                '?' | '#' | '\\' | '%' | ';' | '"' | '<' | '>' | '`' | '{' | '}'
            )
    }) {
        return Err(RuleError::invalid(
            field,
            format!(
                "{found:?} is not allowed in a path prefix (printable ASCII without `?`, `#`, \
                 `\\`, `%` and `;`, which some servers read as `..` or a parameter, and \
                 without `\"`, `<`, `>`, `` ` ``, `{{` and `}}`, which a URL always escapes, so \
                 such a rule would match nothing)"
            ),
        ));
    }
    if prefix
        .split('/')
        .any(|segment| segment == ".." || segment == ".")
        || prefix.contains("//")
    {
        return Err(RuleError::invalid(
            field,
            "a path prefix has no `.` or `..` segments and no `//`",
        ));
    }
    Ok(())
}

fn check_header(header: &str, field: &str) -> Result<(), RuleError> {
    let token = !header.is_empty()
        && header.len() <= HEADER_CHARS_MAX
        && header
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
    if !token {
        return Err(RuleError::invalid(
            field,
            format!(
                "{:?} is not a header name (1 to {HEADER_CHARS_MAX} of letters, digits and `-`)",
                cut(header)
            ),
        ));
    }
    if FORBIDDEN_HEADERS.contains(&header.to_ascii_lowercase().as_str()) {
        return Err(RuleError::invalid(
            field,
            format!("{header} frames the request itself; a credential cannot be sent in it"),
        ));
    }
    Ok(())
}

/// Checks `value` lies in `low..=high`.
pub fn check_range(value: i64, low: i64, high: i64, field: &str) -> Result<(), RuleError> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(RuleError::invalid(
            field,
            format!("{value} is outside {low} to {high}"),
        ))
    }
}

fn too_many(field: &str, count: usize, max: usize) -> RuleError {
    RuleError::invalid(
        field,
        format!("{count} entries, more than the {max} allowed"),
    )
}

/// The first 64 characters of a refused value, so a huge input makes no huge message.
pub fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

/// The first eight bytes of a WebAssembly component (the magic and the component layer's
/// version); a core module has `01 00 00 00` after the magic instead.
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Refuses bytes that are not a WebAssembly component; `field` names them in the error.
pub fn check_component(bundle: &[u8], field: &str) -> Result<(), RuleError> {
    if !bundle.starts_with(&COMPONENT_HEADER) {
        return Err(RuleError::invalid(
            field,
            "not a WebAssembly component (it must start with `\\0asm` and the component layer's \
             version)",
        ));
    }
    Ok(())
}
