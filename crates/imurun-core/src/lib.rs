//! imurun's shared vocabulary and the traits at the seams between crates.
//!
//! Everything here is plain data or a trait: no I/O, no async runtime, no HTTP, no SQL.
//! Mechanisms live in the crates above this one and meet through these types.

mod audit;
mod event;
mod index;
mod message;
mod model;
mod tool;

pub use audit::{AuditRecord, AuditSink, NullAudit};
pub use event::{
    CompactionMode, DenyReason, EVENT_STRING_CHARS_MAX, Event, EventSink, NullEvents,
    PrefetchResult, StepKind, TurnStatus, cut_long_strings,
};
pub use index::{IndexedTool, ToolIndex};
pub use message::{Message, Role};
pub use model::{
    ESTIMATE_CHARS_PER_TOKEN, ESTIMATE_TOKENS_PER_MESSAGE, GenerateRequest, Model, ModelError,
    estimate_text_tokens, estimate_tokens,
};
pub use tool::{
    Availability, BoxFuture, CallSource, Decision, StopFlag, Tool, ToolCall, ToolCategory,
    ToolContext, ToolOutput, ToolSpec,
};
