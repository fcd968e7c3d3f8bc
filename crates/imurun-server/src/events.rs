//! The server's own events, typed: what it publishes beside the agent layer's
//! `imurun_core::Event`s, and the stamp a turn's events carry.
//!
//! Every event reaches the hub as a typed value serialized once ([`crate::EventHub::publish_event`]);
//! nothing builds event JSON by hand, so the wire shape is the type's and `docs/api.md`
//! describes these types.

use imurun_core::Event;
use serde::Serialize;
use utoipa::ToSchema;

use crate::wire::{Permissions, SessionInfo};

/// Events the server publishes itself.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum ServerEvent {
    /// A turn started for a prompt (before the loop runs).
    #[serde(rename = "turn.start")]
    TurnStart {
        session_id: String,
        /// The turn's id, which every event of the turn carries.
        turn_id: String,
        /// The prompt as typed (`/<id>` skill tokens kept).
        prompt: String,
    },
    /// A turn whose task failed inside the server ended; the loop's own `turn.end` never came.
    #[serde(rename = "turn.end")]
    TurnFailed {
        session_id: String,
        turn_id: String,
        /// Always `error`.
        #[schema(pattern = "^error$")]
        status: String,
        /// Calls the model made in the turn, as far as the server saw them.
        tool_calls: usize,
        /// Of those, the calls that ran.
        calls_ran: usize,
        /// Always 0: a repeat answered from the loop's cache never reaches the server.
        calls_cached: usize,
        /// Of those, the calls the permissions or a person refused.
        calls_refused: usize,
        /// The skills invoked for the turn, by id.
        skills: Vec<String>,
        /// The steps the turn took.
        steps: usize,
        /// What went wrong inside the server.
        error: String,
    },
    /// A session was created (global: a page's session list hears of every session).
    #[serde(rename = "session.created")]
    SessionCreated {
        session_id: String,
        session: SessionInfo,
    },
    /// A session was renamed.
    #[serde(rename = "session.updated")]
    SessionUpdated {
        session_id: String,
        session: SessionInfo,
    },
    /// A session was deleted.
    #[serde(rename = "session.deleted")]
    SessionDeleted { session_id: String },
    /// The permissions changed; the same body as `GET /api/permissions`.
    #[serde(rename = "permissions")]
    Permissions {
        #[serde(flatten)]
        permissions: Permissions,
    },
    /// Remembered approvals were forgotten.
    #[serde(rename = "grants.revoked")]
    GrantsRevoked {
        /// The sessions whose remembered approvals are gone: they ask again.
        session_ids: Vec<String>,
    },
    /// The kill switch: every turn stopped, every waiting approval denied.
    #[serde(rename = "stop.all")]
    StopAll {
        /// Running turns told to stop.
        stopped: usize,
        /// Pending approvals denied.
        approvals_denied: usize,
    },
}

impl ServerEvent {
    /// The session the event belongs to, for the hub's per-session streams; `None` for the
    /// global ones.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            ServerEvent::TurnStart { session_id, .. }
            | ServerEvent::TurnFailed { session_id, .. } => Some(session_id),
            _ => None,
        }
    }
}

/// An agent-layer event of a turn, with the turn's id added: the loop's events, and the tool
/// and sub-agent events of the calls the turn made.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TurnEvent<'a> {
    #[serde(flatten)]
    pub(crate) event: &'a Event,
    /// The turn the event belongs to (`turn.start`'s `turn_id`).
    pub(crate) turn_id: &'a str,
}
