//! The chokepoint: [`ToolExecutor::execute`] is the single path every tool call takes —
//! from the model, a sub-agent, the pre-fetch or a person through the API — in a fixed order:
//! lookup → sub-agent restriction → schema validation → policy → approval → run (panics
//! caught) → event + audit.
//!
//! Decisions come from `imurun-policy`; events and audit records leave through the
//! [`imurun_core::EventSink`] and [`imurun_core::AuditSink`] traits (a call's events through
//! its caller's sink when it has one, so they reach the turn that caused them). The
//! [`Registry`] holds the tools and the index the parser reads, [`ApprovalBroker`] the calls
//! waiting for a person, and the executor the remembered grants. This crate has no HTTP
//! client, no MCP, spawns no process and knows no SQL: tools are trait objects the binary
//! registers.

mod approval;
mod error;
mod executor;
mod ids;
mod offer;
mod panic;
mod registry;
mod schema;

pub use approval::{
    APPROVAL_TIMEOUT_DEFAULT, ApprovalBroker, NO_CLIENT_MESSAGE, PENDING_APPROVALS_MAX,
    PendingApproval,
};
pub use error::ExecError;
pub use executor::{
    AGENT_DEPTH_MAX, AUDIT_MARK, Caller, Checked, Execution, OnAsk, Outcome, TAINTED_SESSIONS_MAX,
    ToolExecutor,
};
pub use offer::{CONNECTOR_TOOLS_OFFERED_MAX, Offer, RECENT_MESSAGES_CUED, others_line};
pub use registry::Registry;
pub use schema::{SCHEMA_DEPTH_MAX, validate_arguments};
