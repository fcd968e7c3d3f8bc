//! Reading what a model wrote: its thought, its tool calls in every dialect small and large
//! models use, repaired and fitted to the tools' schemas, and a guard that keeps call syntax
//! out of a streamed answer.
//!
//! Pure functions over text: no I/O, no async, no model. The loop calls `parse_tool_calls`
//! once per step on the whole output and feeds the stream through `StreamGuard`.

mod coerce;
mod guard;
mod json;
mod names;
mod parse;
mod pythonic;
mod render;
mod scan;
mod shape;
mod think;
mod work;

pub use coerce::ARGUMENT_ALIASES;
pub use guard::{CALL_MARKERS, RESULT_MARKER, StreamGuard};
pub use names::{ALIASES, resolve};
pub use parse::{
    ParseKind, Parsed, RetryReason, parse_tool_calls, parse_tool_calls_counting, retry_message,
};
pub use render::{render_call, spaced_json};
pub use scan::CALLS_MAX;
pub use shape::ARGUMENT_KEYS;
pub use think::{Split, split_think};
pub use work::Work;
