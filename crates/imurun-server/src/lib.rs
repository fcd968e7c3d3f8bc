//! imurun's HTTP server: the only crate that knows HTTP.
//!
//! For now it holds the live event hub ([`hub`]), which numbers the events of the agent layer,
//! keeps the latest for replay and fans them out without waiting for slow clients, and the SSE
//! endpoint ([`sse`]) that streams them to the page. The router, wire types and the one
//! `ApiError` join them here.

pub mod hub;
pub mod sse;

pub use hub::{
    BUFFER_EVENTS_MAX_DEFAULT, EventHub, EventRecord, HubConfig, HubError,
    QUEUE_EVENTS_MAX_DEFAULT, Subscription,
};
pub use sse::{HEARTBEAT_INTERVAL_DEFAULT, StreamQuery, last_event_id, sse_message, sse_response};
