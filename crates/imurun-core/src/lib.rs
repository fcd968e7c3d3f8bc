//! imurun's shared vocabulary and the traits at the seams between crates.
//!
//! Everything here is plain data or a trait: no I/O, no async runtime, no HTTP, no SQL.
//! Mechanisms live in the crates above this one and meet through these types.

mod audit;
pub mod builtin;
mod clock;
mod event;
mod facts;
mod group;
pub mod host;
mod index;
mod message;
mod model;
mod percent;
mod run_agent;
mod sandbox;
mod stop;
mod tool;
mod url_secrets;

pub use audit::{AuditRecord, AuditSink, NullAudit};
pub use clock::{Clock, FixedClock, SystemClock, now_unix_ms, now_unix_s, unix_ms, unix_s};
pub use event::{
    CompactionMode, DenyReason, EVENT_STRING_CHARS_MAX, Event, EventSink, GroundingAction,
    NullEvents, PrefetchResult, StepKind, TurnStatus, cut_long_strings,
};
pub use facts::{ClaimKind, Claims, Fact, Facts, MONTHS, clock_time_forms, date_forms};
pub use group::ToolGroup;
pub use index::{IndexedTool, ToolIndex};
pub use message::{Message, Role};
pub use model::{
    CallShape, ESTIMATE_CHARS_PER_TOKEN, ESTIMATE_TOKENS_PER_MESSAGE, GenerateRequest, Model,
    ModelError, ScoreRequest, Scored, TokenUsage, estimate_text_tokens, estimate_tokens,
};
pub use percent::{percent_decoded_bytes, percent_encoded};
pub use run_agent::{RUN_AGENT, run_agent_spec};
pub use sandbox::SandboxStatus;
pub use stop::{StopFlag, Stopped};
pub use tool::{
    Availability, BoxFuture, CallSource, Decision, Tool, ToolCall, ToolCategory, ToolContext,
    ToolOutput, ToolSpec,
};
pub use url_secrets::{url_has_password, url_password_spans, url_without_passwords};
