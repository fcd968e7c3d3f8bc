//! The one error type of the crate: why a script could not be loaded or built.

use std::path::PathBuf;

/// Why a script could not be loaded or built. Errors that happen while a script is replayed
/// are `imurun_core::ModelError`s, as for any other back-end.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script file could not be opened or read, or is not UTF-8.
    #[error("cannot read the script {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The script is longer than `SCRIPT_BYTES_MAX`; it was not parsed.
    #[error("{origin} is {bytes} bytes long; a script may be at most {bytes_max} bytes")]
    TooLarge {
        /// The file's path, or `the script` for a string.
        origin: String,
        bytes: u64,
        bytes_max: u64,
    },
    /// The JSON is malformed, or a value in it is wrong: `line` and `column` (both from 1)
    /// point at or just after what is wrong.
    #[error("{origin}, line {line}, column {column}: {message}")]
    Invalid {
        /// The file's path, or `the script` for a string.
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A reply built in code breaks a rule; `index` counts from 0, as in `replies[index]`.
    #[error("replies[{index}]: {message}")]
    InvalidReply { index: usize, message: String },
    /// The fallback reply built in code breaks a rule.
    #[error("the fallback reply: {message}")]
    InvalidFallback { message: String },
    /// A script built in code has more than `SCRIPT_REPLIES_MAX` replies.
    #[error("the script has {replies} replies; a script may have at most {replies_max}")]
    TooManyReplies { replies: usize, replies_max: usize },
}
