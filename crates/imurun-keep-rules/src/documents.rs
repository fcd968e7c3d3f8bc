//! Signed envelopes and the documents the operator signs: policies (a manifest and the bundle it
//! governs), ceilings (the most a user may ever grant a tool) and trust roots (which keys sign
//! what).
//!
//! An envelope is `{"signed": DOCUMENT, "signature": {"key_id", "sig"}}`; the signature covers
//! the RFC 8785 canonical text of `DOCUMENT` exactly. Every document names its own `type`, so a
//! signature over one kind of document can never be presented as another. Versions are integers
//! that must increase; `expires_at` is in seconds since the Unix epoch.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::RuleError;
use crate::canonical::{canonical_document, parse_document};
use crate::host::{Host, HostAllowance};
use crate::keys::{KeyPair, PublicKey, hex_exact};
use crate::manifest::{
    EgressRule, Manifest, MemoryAccess, Resources, check_credential_name, check_range, check_rules,
    check_version, from_value,
};

/// The `type` of a policy.
pub const POLICY_TYPE: &str = "imurun.policy";
/// The `type` of a ceiling.
pub const CEILING_TYPE: &str = "imurun.ceiling";
/// The `type` of a trust root.
pub const TRUST_ROOT_TYPE: &str = "imurun.trust_root";
/// The `type` of a decision.
pub const DECISION_TYPE: &str = "imurun.decision";

/// Characters of a user's name.
pub const USER_CHARS_MAX: usize = 32;
/// Credentials one ceiling lets a user grant.
pub const CEILING_CREDENTIALS_MAX: usize = 32;
/// Keys in one trust root.
pub const TRUST_ROOT_KEYS_MAX: usize = 64;

/// A document and one signature over its canonical text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signed {
    /// The document.
    pub signed: Value,
    /// Who signed it, and the signature.
    pub signature: Signature,
}

/// A signature and the id of the key that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// The signing key's id ([`PublicKey::key_id`]).
    pub key_id: String,
    /// The Ed25519 signature in 128 lower-case hexadecimal characters.
    pub sig: String,
}

impl Signed {
    /// Signs `document` (a value of a type that names itself) with `key`.
    pub fn sign(document: &impl Serialize, key: &KeyPair) -> Result<Signed, RuleError> {
        let value = serde_json::to_value(document)
            .map_err(|error| RuleError::Canonical(error.to_string()))?;
        let bytes = canonical_document(&value)?;
        Ok(Signed {
            signed: value,
            signature: Signature {
                key_id: key.key_id(),
                sig: key.sign(&bytes),
            },
        })
    }

    /// Reads an envelope from its text: strictly (see [`parse_document`]), so duplicate names
    /// and floats are refused before any signature is checked.
    pub fn from_text(text: &[u8]) -> Result<Signed, RuleError> {
        let value = parse_document(text)?;
        from_value(&value, "")
    }

    /// Reads an envelope from a JSON value that came from elsewhere (a request body): it is
    /// checked as strictly as text would be.
    pub fn from_value(value: &Value) -> Result<Signed, RuleError> {
        crate::canonical::check_document(value)?;
        from_value(value, "")
    }

    /// The canonical bytes the signature covers.
    pub fn signed_bytes(&self) -> Result<Vec<u8>, RuleError> {
        canonical_document(&self.signed)
    }

    /// Checks the signature with `key` (whose id must be the one named) and that the document's
    /// `type` is `kind`.
    pub fn verify_with(&self, key: &PublicKey, kind: &str) -> Result<(), RuleError> {
        if key.key_id() != self.signature.key_id {
            return Err(RuleError::Signature(format!(
                "signed by key {}, not by {}",
                self.signature.key_id,
                key.key_id()
            )));
        }
        let named = self.signed.get("type").and_then(Value::as_str);
        if named != Some(kind) {
            return Err(RuleError::Signature(format!(
                "the document's type is {named:?}, not {kind:?}"
            )));
        }
        key.verify(&self.signed_bytes()?, &self.signature.sig)
    }

    /// The document's canonical text's SHA-256, in hexadecimal: how journal entries and
    /// decisions name a document.
    pub fn document_sha256(&self) -> Result<String, RuleError> {
        Ok(crate::keys::sha256_hex(&self.signed_bytes()?))
    }
}

/// The operator's statement "deploy this manifest with this bundle, until then".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// [`POLICY_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The agent it deploys: the manifest's `name`.
    pub agent: String,
    /// The manifest's `version`: one version for both, strictly increasing per agent.
    pub version: i64,
    /// Seconds since the Unix epoch after which the policy is refused.
    pub expires_at: i64,
    /// The SHA-256 of the bundle it governs, in hexadecimal.
    pub bundle_sha256: String,
    /// The manifest.
    pub manifest: Value,
}

impl Policy {
    /// Reads a policy from a verified envelope's document and validates the manifest inside.
    pub fn from_document(document: &Value) -> Result<(Policy, Manifest), RuleError> {
        let policy: Policy = from_value(document, "policy")?;
        check_type(&policy.kind, POLICY_TYPE, "policy.type")?;
        check_version(policy.version, "policy.version")?;
        check_range(
            policy.expires_at,
            0,
            crate::canonical::SAFE_INTEGER_MAX,
            "policy.expires_at",
        )?;
        hex_exact::<32>(&policy.bundle_sha256, "bundle_sha256")
            .map_err(|error| RuleError::invalid("policy.bundle_sha256", error.to_string()))?;
        let manifest = Manifest::from_json(&policy.manifest, HostAllowance::Operator)
            .map_err(|error| prefix_field(error, "policy.manifest"))?;
        if manifest.name != policy.agent || manifest.version != policy.version {
            return Err(RuleError::invalid(
                "policy.manifest",
                format!(
                    "the manifest is {}@{}, the policy is for {}@{}",
                    manifest.name, manifest.version, policy.agent, policy.version
                ),
            ));
        }
        Ok((policy, manifest))
    }
}

/// The most authority a user may ever grant a tool, signed by the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    /// [`CEILING_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The user it bounds.
    pub user: String,
    /// Strictly increasing per user.
    pub version: i64,
    /// Seconds since the Unix epoch after which the ceiling is refused (and the empty ceiling
    /// applies).
    pub expires_at: i64,
    /// The requests a tool may ever be allowed; hosts may be IP literals and `*.` wildcards.
    #[serde(default)]
    pub egress: Vec<EgressRule>,
    /// Names of the user's own connections (vault entries) a tool may be bound to.
    #[serde(default)]
    pub credentials: Vec<String>,
    /// The most memory access.
    #[serde(default)]
    pub memory: MemoryAccess,
    /// Whether a tool may have the model socket.
    #[serde(default)]
    pub model_socket: bool,
    /// The highest limits.
    pub resources: Resources,
}

impl Ceiling {
    /// The ceiling of a user the operator set none for: no egress, no credentials, no memory,
    /// no model socket, and the smallest resources. Version 0, so any signed ceiling replaces it.
    pub fn empty(user: &str) -> Ceiling {
        Ceiling {
            kind: CEILING_TYPE.to_owned(),
            user: user.to_owned(),
            version: 0,
            expires_at: crate::canonical::SAFE_INTEGER_MAX,
            egress: Vec::new(),
            credentials: Vec::new(),
            memory: MemoryAccess::None,
            model_socket: false,
            resources: EMPTY_CEILING_RESOURCES,
        }
    }

    /// Reads and validates a ceiling from a verified envelope's document.
    pub fn from_document(document: &Value) -> Result<Ceiling, RuleError> {
        let mut ceiling: Ceiling = from_value(document, "ceiling")?;
        check_type(&ceiling.kind, CEILING_TYPE, "ceiling.type")?;
        check_user(&ceiling.user, "ceiling.user")?;
        check_version(ceiling.version, "ceiling.version")?;
        check_range(
            ceiling.expires_at,
            0,
            crate::canonical::SAFE_INTEGER_MAX,
            "ceiling.expires_at",
        )?;
        check_rules(
            &mut ceiling.egress,
            HostAllowance::Operator,
            "ceiling.egress",
        )?;
        if ceiling.credentials.len() > CEILING_CREDENTIALS_MAX {
            return Err(RuleError::invalid(
                "ceiling.credentials",
                format!("more than the {CEILING_CREDENTIALS_MAX} allowed"),
            ));
        }
        for (index, name) in ceiling.credentials.iter().enumerate() {
            check_credential_name(name, &format!("ceiling.credentials[{index}]"))?;
        }
        ceiling.resources.validate("ceiling.resources")?;
        Ok(ceiling)
    }

    /// The ceiling's hosts, for [`HostAllowance::Within`].
    pub fn hosts(&self) -> Vec<Host> {
        self.egress
            .iter()
            .filter_map(|rule| crate::manifest::host_of(&rule.host))
            .collect()
    }
}

/// The empty ceiling's resources: enough for a small pure computation, nothing more.
pub const EMPTY_CEILING_RESOURCES: Resources = Resources {
    memory_mb: 16,
    cpu_ms: 100,
    timeout_ms: 1_000,
};

/// A trust root: the keys this host trusts, each for one role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRoot {
    /// [`TRUST_ROOT_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
    /// Strictly increasing.
    pub version: i64,
    /// Seconds since the Unix epoch after which the root is refused: the operator must sign a
    /// new version before then (freeze protection).
    pub expires_at: i64,
    /// The keys.
    pub keys: Vec<TrustedKey>,
}

/// A key in a trust root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedKey {
    /// [`PublicKey::key_id`] of `public_key`.
    pub key_id: String,
    /// 64 hexadecimal characters.
    pub public_key: String,
    /// What the key may sign.
    pub role: KeyRole,
    /// A retired key's signature is refused for anything new; it stays listed so the refusal
    /// can say so.
    #[serde(default)]
    pub retired: bool,
}

impl TrustedKey {
    /// The trust root's listing of `pair`'s public key.
    pub fn listing(pair: &KeyPair, role: KeyRole, retired: bool) -> TrustedKey {
        TrustedKey {
            key_id: pair.key_id(),
            public_key: pair.public().to_hex(),
            role,
            retired,
        }
    }
}

/// What a trusted key may sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyRole {
    /// Bundles.
    Signer,
    /// Policies, ceilings and the next trust root.
    Policy,
}

impl TrustRoot {
    /// Reads and validates a trust root from a document.
    pub fn from_document(document: &Value) -> Result<TrustRoot, RuleError> {
        let root: TrustRoot = from_value(document, "trust_root")?;
        check_type(&root.kind, TRUST_ROOT_TYPE, "trust_root.type")?;
        check_version(root.version, "trust_root.version")?;
        check_range(
            root.expires_at,
            0,
            crate::canonical::SAFE_INTEGER_MAX,
            "trust_root.expires_at",
        )?;
        if root.keys.len() > TRUST_ROOT_KEYS_MAX {
            return Err(RuleError::invalid(
                "trust_root.keys",
                format!("more than the {TRUST_ROOT_KEYS_MAX} allowed"),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (index, key) in root.keys.iter().enumerate() {
            let field = format!("trust_root.keys[{index}]");
            let public = PublicKey::from_hex(&key.public_key).map_err(|error| {
                RuleError::invalid(format!("{field}.public_key"), error.to_string())
            })?;
            if public.key_id() != key.key_id {
                return Err(RuleError::invalid(
                    format!("{field}.key_id"),
                    format!("the key's id is {}, not {}", public.key_id(), key.key_id),
                ));
            }
            if !seen.insert(key.key_id.clone()) {
                return Err(RuleError::invalid(field, "the key is listed twice"));
            }
        }
        if !root
            .keys
            .iter()
            .any(|key| key.role == KeyRole::Policy && !key.retired)
        {
            return Err(RuleError::invalid(
                "trust_root.keys",
                "no policy key is left active: nobody could sign the next root",
            ));
        }
        Ok(root)
    }
}

/// Users' names: 1 to 32 of `a-z`, `0-9`, `-` and `_`, starting with a letter.
pub fn check_user(user: &str, field: &str) -> Result<(), RuleError> {
    crate::manifest::check_word(
        user,
        field,
        &crate::manifest::Word {
            chars_max: USER_CHARS_MAX,
            underscore: true,
            first: |byte| byte.is_ascii_lowercase(),
            shape: "`a-z`, `0-9`, `-` and `_`, starting with a letter",
        },
    )
}

pub(crate) fn check_type(found: &str, want: &str, field: &str) -> Result<(), RuleError> {
    if found == want {
        Ok(())
    } else {
        Err(RuleError::invalid(
            field,
            format!("{:?} is not {want:?}", crate::manifest::cut(found)),
        ))
    }
}

/// Puts `prefix` before a field error's path.
pub(crate) fn prefix_field(error: RuleError, prefix: &str) -> RuleError {
    match error {
        RuleError::Invalid { field, reason } => RuleError::Invalid {
            field: format!("{prefix}.{field}"),
            reason,
        },
        other => other,
    }
}
