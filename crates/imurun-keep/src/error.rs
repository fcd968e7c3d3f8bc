//! The one error type of Keep's rules.

/// Why Keep refused a document, a key, a decision or a request. Every message says what was
/// wrong and where, and never holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
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
    /// A key or secret file could not be written or read, or may be read by others.
    #[error("key file {path}: {reason}")]
    KeyFile { path: String, reason: String },
    /// Sealing or opening a vault entry failed (a wrong key, or a changed ciphertext).
    #[error("vault: {0}")]
    Vault(String),
    /// The operating system's random numbers failed.
    #[error("{0}")]
    Random(String),
    /// No token, or one that is unknown or revoked.
    #[error("a valid Keep token is needed: `Authorization: Bearer <token>`")]
    Unauthorized,
    /// The identity may not do this (a user token on an operator route).
    #[error("{0}")]
    Forbidden(String),
    /// Nothing with this id is visible to the caller: it does not exist, or it is someone
    /// else's. The two read exactly the same, on purpose.
    #[error("no such {0} is visible to this token")]
    NotFound(&'static str),
    /// A pack names a credential its owner's vault does not hold.
    #[error("credential {name:?} is not in {owner}'s vault")]
    MissingCredential { owner: String, name: String },
    /// The request clashes with the host's state (a key already registered, a trust root
    /// already installed).
    #[error("{0}")]
    Conflict(String),
    /// Keep mode has not been set up: no trust root.
    #[error("Keep mode is not set up on this host: run `imurun keep init`")]
    NotInitialised,
    /// A cell could not start or ended: `kind` is the cell's own word (`cpu_limit`,
    /// `memory_limit`, `timeout`, `trap`, `not_granted`, ...).
    #[error("{message}")]
    Cell { kind: &'static str, message: String },
    /// Something the host needs for this is not running (cells, the model).
    #[error("{0}")]
    Unavailable(String),
    /// Accepting something a tainted session proposed needs the person's explicit confirm.
    #[error("{0}")]
    ConfirmTainted(String),

    /// A tool asked for authority no tool may have, whatever a ceiling says.
    #[error("forbidden authority: {0}")]
    ForbiddenAuthority(String),
    /// The store failed.
    #[error("the Keep store failed: {0}")]
    Store(#[from] imurun_store::StoreError),
}

impl KeepError {
    /// A stable name for the rule that refused: the API's error code and the journal's `rule`.
    pub fn rule(&self) -> &'static str {
        match self {
            KeepError::Canonical(_) => "not_canonical",
            KeepError::Invalid { .. } => "invalid",
            KeepError::Signature(_) => "bad_signature",
            KeepError::Untrusted(_) => "untrusted_key",
            KeepError::Expired { .. } => "expired",
            KeepError::RolledBack { .. } => "rolled_back",
            KeepError::Decision(_) => "decision_refused",
            KeepError::KeyFile { .. } => "key_file",
            KeepError::Vault(_) => "vault",
            KeepError::Random(_) => "random",
            KeepError::Unauthorized => "unauthorized",
            KeepError::Forbidden(_) => "forbidden",
            KeepError::NotFound(_) => "not_found",
            KeepError::MissingCredential { .. } => "missing_credential",
            KeepError::Conflict(_) => "conflict",
            KeepError::NotInitialised => "keep_not_initialised",
            KeepError::Cell { kind, .. } => kind,
            KeepError::Unavailable(_) => "unavailable",
            KeepError::ConfirmTainted(_) => "confirm_tainted",
            KeepError::ForbiddenAuthority(_) => "forbidden_authority",
            KeepError::Store(_) => "store",
        }
    }

    /// A field error.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> KeepError {
        KeepError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
