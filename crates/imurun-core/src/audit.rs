//! The audit seam: every tool decision and outcome, recorded without argument values.

use serde::Serialize;

use crate::{CallSource, Decision};

/// One audited tool decision and its outcome. There is deliberately no field for argument
/// values: commands, file bodies and URLs may hold secrets, so they never reach the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The guardrail that produced the record; tool calls are `G3-tool`.
    pub mark: &'static str,
    pub tool: String,
    pub source: CallSource,
    pub decision: Decision,
    /// What happened: `ok`, `failed`, `denied: <reason>`, `unknown tool`, ...
    pub outcome: String,
    pub session_id: Option<String>,
}

/// Where audit records go. `imurun-store` writes them to SQLite; the binary wires it in.
/// Implementations must not block the caller for long: batch and write off the hot path.
pub trait AuditSink: Send + Sync {
    fn record(&self, record: AuditRecord);
}

/// An audit sink that drops everything, for tools run where no audit exists.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullAudit;

impl AuditSink for NullAudit {
    fn record(&self, _record: AuditRecord) {}
}
