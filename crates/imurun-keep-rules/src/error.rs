//! The one error type of Keep's rules.

/// Why a rule refused a document, a key, a decision or a proposed tool. Every message says what
/// was wrong and where, and never holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// JSON that cannot be signed or verified: duplicate names, a non-integer, a lone
    /// surrogate, too big or too deep.
    #[error("{0}")]
    Canonical(String),
    /// A field of a manifest, policy, ceiling, trust root or decision is missing, unknown or out
    /// of bounds; `field` is its path (`egress.rules[2].port`).
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A signature is missing, malformed or does not match, or a key is malformed.
    #[error("signature refused: {0}")]
    Signature(String),
    /// The key is not trusted for this: unknown, retired, of the wrong role, or another user's.
    #[error("key refused: {0}")]
    Untrusted(String),
    /// A document's or decision's `expires_at` has passed.
    #[error("{what} expired at {expires_at} (now {now}, seconds since the Unix epoch)")]
    Expired {
        what: String,
        expires_at: i64,
        now: i64,
    },
    /// A version that is not above the highest this host has accepted: an old document replayed.
    #[error("{what} version {version} is refused: version {highest} was accepted already")]
    RolledBack {
        what: String,
        version: i64,
        highest: i64,
    },
    /// A decision that does not hold for what it is used for (wrong kind, subject, hash, user,
    /// versions, or a nonce already used).
    #[error("decision refused: {0}")]
    Decision(String),
    /// Sealing or opening a vault entry failed (a wrong key, or a changed ciphertext).
    #[error("vault: {0}")]
    Vault(String),
    /// The random generator passed in failed.
    #[error("{0}")]
    Random(String),
    /// Accepting something a tainted session proposed needs the person's explicit confirm.
    #[error("{0}")]
    ConfirmTainted(String),
    /// A tool asked for authority no tool may have, whatever a ceiling says.
    #[error("forbidden authority: {0}")]
    ForbiddenAuthority(String),
    /// A pack names a credential its owner's vault does not hold.
    #[error("credential {name:?} is not in {owner}'s vault")]
    MissingCredential { owner: String, name: String },
    /// The decision clashes with the state it was checked against: decided already, nothing
    /// left to decide, a version deployed already.
    #[error("{0}")]
    Conflict(String),
}

impl RuleError {
    /// A stable name for the rule that refused: the API's error code and the journal's `rule`.
    pub fn rule(&self) -> &'static str {
        match self {
            RuleError::Canonical(_) => "not_canonical",
            RuleError::Invalid { .. } => "invalid",
            RuleError::Signature(_) => "bad_signature",
            RuleError::Untrusted(_) => "untrusted_key",
            RuleError::Expired { .. } => "expired",
            RuleError::RolledBack { .. } => "rolled_back",
            RuleError::Decision(_) => "decision_refused",
            RuleError::Vault(_) => "vault",
            RuleError::Random(_) => "random",
            RuleError::ConfirmTainted(_) => "confirm_tainted",
            RuleError::ForbiddenAuthority(_) => "forbidden_authority",
            RuleError::Conflict(_) => "conflict",
            RuleError::MissingCredential { .. } => "missing_credential",
        }
    }

    /// A field error.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> RuleError {
        RuleError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
