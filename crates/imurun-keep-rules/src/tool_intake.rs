//! A cell's `tool.propose {name, description, bundle, manifest}`, read and bounded before
//! anything stores it. Nothing here deploys, approves or grants: a proposal is data for its
//! person to review.
//!
//! Bounds, each checked before the work it bounds: the payload's bytes before it is parsed,
//! the bundle's base64 length before it is decoded, a gzip-compressed bundle while it is read
//! (it stops one byte past the bound), the manifest's size and depth before it is typed, the
//! description's length before it is escaped. Unknown fields are refused, so no payload can
//! carry an `auto_approve` or any other instruction to the host.
//!
//! A tool's name has no path characters, is not the proposing agent's, and does not look like
//! a name in use: names compare by their Unicode confusable skeletons (UTS #39) after NFKC
//! normalisation, ignoring `-` and `_`, so `fetch`, `fеtch` (Cyrillic `е`), `f-etch` and
//! `fetсh` are one name.

use std::io::Read;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use crate::RuleError;
use crate::canonical::parse_strict;
use crate::host::HostAllowance;
use crate::manifest::{DESCRIPTION_CHARS_MAX, Manifest, check_name, from_value};
use crate::proposals::escape;

/// The largest tool bundle, in bytes (after any decompression).
pub const TOOL_BUNDLE_BYTES_MAX: usize = 4 << 20;
/// The largest manifest in a proposal, in bytes of JSON.
pub const TOOL_MANIFEST_BYTES_MAX: usize = 16 << 10;
/// The deepest nesting in a proposal's manifest (a credential's binding's methods is four).
pub const TOOL_MANIFEST_DEPTH_MAX: usize = 5;
/// Room in a payload for everything but the bundle, in bytes.
const PAYLOAD_OVERHEAD_BYTES_MAX: usize = 64 << 10;
/// The longest base64 text of a bundle.
pub const TOOL_BUNDLE_BASE64_CHARS_MAX: usize = TOOL_BUNDLE_BYTES_MAX.div_ceil(3) * 4;
/// The largest `tool.propose` payload, in bytes, checked before it is parsed.
pub const TOOL_PAYLOAD_BYTES_MAX: usize = TOOL_BUNDLE_BASE64_CHARS_MAX + PAYLOAD_OVERHEAD_BYTES_MAX;
/// Tool proposals waiting for one person; the next is refused until one is decided.
pub const PENDING_TOOL_PROPOSALS_MAX: i64 = 10;

/// gzip's first two bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    name: String,
    description: String,
    /// The component in base64, or its gzip compression in base64.
    bundle: String,
    manifest: Value,
}

/// A tool proposal as read: every field within its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolIntake {
    pub name: String,
    /// Plain text with control and bidi characters escaped.
    pub description: String,
    pub bundle: Vec<u8>,
    pub bundle_sha256: String,
    /// The proposed manifest, validated (hosts in normal form), its description the proposal's.
    pub manifest: Manifest,
}

/// The names a new tool's name is compared with.
#[derive(Debug, Clone, Default)]
pub struct NamesInUse {
    /// The proposing agent's own name.
    pub proposer: String,
    /// Names a tool may never take or look like: agents'.
    pub reserved: Vec<String>,
    /// The person's own tools (and tools proposed to them): the same name is a new version; a
    /// look-alike is refused.
    pub tools: Vec<String>,
}

/// Reads a `tool.propose` payload (see the module's comment).
pub fn read(payload_json: &str, names: &NamesInUse) -> Result<ToolIntake, RuleError> {
    if payload_json.len() > TOOL_PAYLOAD_BYTES_MAX {
        return Err(RuleError::invalid(
            "payload",
            format!(
                "{} bytes, more than the {TOOL_PAYLOAD_BYTES_MAX} a tool proposal may have",
                payload_json.len()
            ),
        ));
    }
    let value = parse_strict(payload_json.as_bytes(), TOOL_PAYLOAD_BYTES_MAX)
        .map_err(|error| RuleError::invalid("payload", error.to_string()))?;
    if !value.is_object() {
        return Err(RuleError::invalid("payload", "a JSON object is expected"));
    }
    let payload: Payload = from_value(&value, "payload")?;
    check_tool_name(&payload.name, names)?;
    let description_chars = payload.description.chars().count();
    if description_chars > DESCRIPTION_CHARS_MAX {
        return Err(RuleError::invalid(
            "payload.description",
            format!(
                "{description_chars} characters, more than the {DESCRIPTION_CHARS_MAX} allowed"
            ),
        ));
    }
    let description = escape(&payload.description);
    let bundle = read_bundle(&payload.bundle)?;
    let bundle_sha256 = crate::keys::sha256_hex(&bundle);
    let manifest = read_manifest(payload.manifest, &payload.name, &description)?;
    Ok(ToolIntake {
        name: payload.name,
        description,
        bundle,
        bundle_sha256,
        manifest,
    })
}

/// The bundle's bytes: base64 of a component, or of its gzip compression, never more than
/// [`TOOL_BUNDLE_BYTES_MAX`] whichever it is.
pub fn read_bundle(text: &str) -> Result<Vec<u8>, RuleError> {
    if text.len() > TOOL_BUNDLE_BASE64_CHARS_MAX {
        return Err(RuleError::invalid(
            "payload.bundle",
            format!(
                "{} characters of base64, more than the {TOOL_BUNDLE_BASE64_CHARS_MAX} a \
                 {TOOL_BUNDLE_BYTES_MAX}-byte bundle needs",
                text.len()
            ),
        ));
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| RuleError::invalid("payload.bundle", format!("not base64: {error}")))?;
    let bundle = if decoded.starts_with(&GZIP_MAGIC) {
        let inflated = inflate_bounded(&decoded)?;
        if inflated.starts_with(&GZIP_MAGIC) {
            return Err(RuleError::invalid(
                "payload.bundle",
                "a compressed bundle holds another compressed one; send the component once \
                 compressed at most",
            ));
        }
        inflated
    } else {
        decoded
    };
    if bundle.len() > TOOL_BUNDLE_BYTES_MAX {
        return Err(RuleError::invalid(
            "payload.bundle",
            format!(
                "{} bytes, more than the {TOOL_BUNDLE_BYTES_MAX} allowed",
                bundle.len()
            ),
        ));
    }
    crate::manifest::check_component(&bundle, "payload.bundle")?;
    Ok(bundle)
}

/// Decompresses gzip into at most [`TOOL_BUNDLE_BYTES_MAX`] bytes: reading stops one byte past
/// the bound, so a small payload that expands without end costs no more than the bound.
fn inflate_bounded(compressed: &[u8]) -> Result<Vec<u8>, RuleError> {
    let limit = u64::try_from(TOOL_BUNDLE_BYTES_MAX).unwrap_or(u64::MAX) + 1;
    let mut inflated = Vec::new();
    flate2::read::MultiGzDecoder::new(compressed)
        .take(limit)
        .read_to_end(&mut inflated)
        .map_err(|error| {
            RuleError::invalid("payload.bundle", format!("not valid gzip: {error}"))
        })?;
    if inflated.len() > TOOL_BUNDLE_BYTES_MAX {
        return Err(RuleError::invalid(
            "payload.bundle",
            format!(
                "it expands past the {TOOL_BUNDLE_BYTES_MAX} bytes a bundle may have; reading \
                 stopped there"
            ),
        ));
    }
    Ok(inflated)
}

fn read_manifest(value: Value, name: &str, description: &str) -> Result<Manifest, RuleError> {
    let bytes = value.to_string().len();
    if bytes > TOOL_MANIFEST_BYTES_MAX {
        return Err(RuleError::invalid(
            "payload.manifest",
            format!("{bytes} bytes, more than the {TOOL_MANIFEST_BYTES_MAX} allowed"),
        ));
    }
    let depth = depth_of(&value);
    if depth > TOOL_MANIFEST_DEPTH_MAX {
        return Err(RuleError::invalid(
            "payload.manifest",
            format!("it nests {depth} levels, more than the {TOOL_MANIFEST_DEPTH_MAX} allowed"),
        ));
    }
    let mut manifest: Manifest = from_value(&value, "payload.manifest")?;
    if manifest.name != name {
        return Err(RuleError::invalid(
            "payload.manifest.name",
            "the manifest names another tool than the proposal",
        ));
    }
    // What the person reads is the proposal's description, escaped.
    manifest.description = description.to_owned();
    manifest
        .validate(HostAllowance::Operator)
        .map_err(|error| match error {
            RuleError::Invalid { field, reason } => RuleError::Invalid {
                field: format!("payload.manifest.{field}"),
                reason,
            },
            other => other,
        })?;
    Ok(manifest)
}

fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

/// A tool's name: no path characters, not the proposer's, not a look-alike of a name in use,
/// then the shape every pack name has.
pub fn check_tool_name(name: &str, names: &NamesInUse) -> Result<(), RuleError> {
    const FIELD: &str = "payload.name";
    if name.is_empty() || name.chars().count() > crate::manifest::NAME_CHARS_MAX {
        return Err(RuleError::invalid(
            FIELD,
            format!(
                "a name is 1 to {} characters",
                crate::manifest::NAME_CHARS_MAX
            ),
        ));
    }
    if let Some(found) = name
        .chars()
        .find(|c| matches!(c, '/' | '\\' | '.' | ':' | '~' | '\0'))
    {
        return Err(RuleError::invalid(
            FIELD,
            format!("{found:?} is a path character; a tool's name has none"),
        ));
    }
    let shape = skeleton(name);
    if shape == skeleton(&names.proposer) {
        return Err(RuleError::invalid(
            FIELD,
            format!(
                "it is, or looks like, the proposing agent's own name ({}): an agent cannot \
                 propose itself",
                names.proposer
            ),
        ));
    }
    if let Some(taken) = names.reserved.iter().find(|taken| shape == skeleton(taken)) {
        return Err(RuleError::invalid(
            FIELD,
            format!("it is, or looks like, the agent {taken}'s name"),
        ));
    }
    if let Some(taken) = names
        .tools
        .iter()
        .find(|taken| taken.as_str() != name && shape == skeleton(taken))
    {
        return Err(RuleError::invalid(
            FIELD,
            format!(
                "it looks like your tool {taken}'s name; propose a new version of {taken}, or \
                 a name that reads differently"
            ),
        ));
    }
    check_name(name, FIELD)
}

/// What a name looks like: its NFKC form's confusable skeleton (UTS #39), lower case, without
/// `-` and `_`.
pub fn skeleton(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let lowered: String = name
        .nfkc()
        .collect::<String>()
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '\u{2010}'..='\u{2015}'))
        .collect();
    unicode_security::skeleton(&lowered)
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_share_a_skeleton() {
        for (a, b) in [
            ("fetch", "f\u{0435}tch"),
            ("fetch", "f-etch"),
            ("mail", "rnail"),
            ("tool1", "tooll"),
            ("fetch", "ＦＥＴＣＨ"),
            ("web-fetch", "web_fetch"),
        ] {
            assert_eq!(skeleton(a), skeleton(b), "{a} and {b}");
        }
        assert_ne!(skeleton("fetch"), skeleton("fetcher"));
    }
}
