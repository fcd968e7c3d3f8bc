//! The crate's one error type: why a call was refused before it could reach the policy, and
//! why an approval decision could not be applied.

/// What went wrong. `Display` is a sentence a person or a model can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// No runnable tool has this name or alias.
    #[error("there is no tool called `{name}`")]
    UnknownTool { name: String },
    /// The caller may not use this tool (a sub-agent's allow-list, or the depth limit).
    #[error("`{tool}` is not allowed here: {why}")]
    NotAllowed { tool: String, why: String },
    /// The arguments do not fit the tool's schema.
    #[error("invalid arguments for `{tool}`: {problem}")]
    InvalidArguments { tool: String, problem: String },
    /// No approval with this id is waiting: it never existed, was already decided, or timed out.
    #[error("no approval `{approval_id}` is waiting (it was decided, timed out, or never existed)")]
    UnknownApproval { approval_id: String },
}
