//! The Keep host's error: a rule's refusal, or what the host itself refused or failed at.

use imurun_keep_rules::RuleError;

/// Why Keep refused a request or could not do it. Every message says what was wrong and where,
/// and never holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// One of the rules refused (a document, a key, a decision, a proposed tool).
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// A key or secret file could not be written or read, or may be read by others.
    #[error("key file {path}: {reason}")]
    KeyFile { path: String, reason: String },
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
    /// The store failed.
    #[error("the Keep store failed: {0}")]
    Store(#[from] imurun_store::StoreError),
}

impl KeepError {
    /// A stable name for the rule that refused: the API's error code and the journal's `rule`.
    pub fn rule(&self) -> &'static str {
        match self {
            KeepError::Rule(rule) => rule.rule(),
            KeepError::KeyFile { .. } => "key_file",
            KeepError::Unauthorized => "unauthorized",
            KeepError::Forbidden(_) => "forbidden",
            KeepError::NotFound(_) => "not_found",
            KeepError::Conflict(_) => "conflict",
            KeepError::NotInitialised => "keep_not_initialised",
            KeepError::Cell { kind, .. } => kind,
            KeepError::Unavailable(_) => "unavailable",
            KeepError::Store(_) => "store",
        }
    }

    /// A field error.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> KeepError {
        KeepError::Rule(RuleError::invalid(field, reason))
    }
}
