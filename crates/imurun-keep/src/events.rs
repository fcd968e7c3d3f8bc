//! Keep's live events, typed: everything the host tells a person on their event stream
//! (`GET /v1/events`), as the assistant's `ServerEvent` is for its own. Each event is built as
//! a [`KeepEvent`] and serialized once where it is published ([`crate::cells::KeepEvents`]);
//! nothing in Keep builds event JSON by hand, and the objects an event carries (a proposal, a
//! tool's review, a waiting egress use) are the views their routes answer, serialized alike.
//!
//! Every event of a session carries its `session_id`.

use serde::Serialize;

use crate::journal_detail::RefusalDetail;
use crate::service::{AnyProposal, ApprovalView};

/// One event on a person's stream; its JSON's `type` names it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum KeepEvent {
    /// A session started.
    #[serde(rename = "session.started")]
    SessionStarted {
        session_id: String,
        agent: String,
        agent_version: i64,
    },
    /// The agent answered a message: its replies, or past 64 KiB only their size (the whole
    /// answer is in the message's response).
    #[serde(rename = "session.reply")]
    SessionReply {
        session_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        replies: Option<Vec<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        replies_bytes: Option<usize>,
        /// `true` when only the size is given.
        #[serde(skip_serializing_if = "Option::is_none")]
        truncated: Option<bool>,
    },
    /// A call failed; `ended` when it ended the session.
    #[serde(rename = "session.error")]
    SessionError {
        session_id: String,
        /// The cell's kind of error: `cpu_limit`, `memory_limit`, `timeout`, `trap`, `host`,
        /// `guest`, ...
        kind: String,
        /// At most 2 000 characters, escaped.
        message: String,
        ended: bool,
    },
    /// A session ended: `stopped`, or the cell's kind of error.
    #[serde(rename = "session.ended")]
    SessionEnded { session_id: String, reason: String },
    /// A session received untrusted content: what it was (the first source stays).
    #[serde(rename = "session.tainted")]
    SessionTainted { session_id: String, source: String },
    /// An egress use waits for its person: the use as `GET /v1/approvals` lists it.
    #[serde(rename = "egress.approval_needed")]
    EgressApprovalNeeded {
        session_id: String,
        approval: ApprovalView,
    },
    /// The broker decided a use.
    #[serde(rename = "egress.decided")]
    EgressDecided {
        session_id: String,
        decision: EgressVerdict,
        /// At most 16 characters, escaped.
        method: String,
        /// At most 2 100 characters, escaped.
        url: String,
        /// The index of the grant's rule that allows it, if one does.
        rule: Option<usize>,
        /// The credentials the host adds, by name.
        credentials: Vec<String>,
        /// Who approved it, when someone had to.
        approval: EgressApproval,
        /// For a refused use: the rule that refused it, and why.
        #[serde(skip_serializing_if = "Option::is_none")]
        refused_by: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A use past the eight one message may ask about, refused without asking.
    #[serde(rename = "egress.not_asked")]
    EgressNotAsked {
        session_id: String,
        method: String,
        url: String,
        reason: String,
    },
    /// The agent proposed something: the proposal as `GET /v1/proposals/{id}` answers it.
    #[serde(rename = "proposal.created")]
    ProposalCreated {
        session_id: String,
        proposal: AnyProposal,
    },
    /// An emit was refused.
    #[serde(rename = "proposal.refused")]
    ProposalRefused {
        session_id: String,
        /// The kind the cell emitted (escaped, cut).
        kind: String,
        rule: String,
        reason: String,
    },
    /// The person decided a proposal.
    #[serde(rename = "proposal.decided")]
    ProposalDecided {
        id: String,
        /// The session that made it.
        session_id: String,
        /// `memory`, `suggestion`, `plan`, `card` or `tool`.
        kind: String,
        /// `accepted` or `rejected`; for a tool, `approved` or `denied`.
        state: String,
        /// For a tool: `u/<user>/<name>` and its version.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<i64>,
    },
    /// A refusal that was not journaled (past the journal's bound): the subject and detail its
    /// entry would have held.
    #[serde(rename = "refusal")]
    Refusal {
        /// For a session's cell's refusal.
        #[serde(skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        subject: String,
        detail: RefusalDetail,
    },
    /// A refusal of a session's cell could not be journaled.
    #[serde(rename = "journal.failed")]
    JournalFailed { session_id: String, reason: String },
    /// A person's tool was deployed.
    #[serde(rename = "tool.deployed")]
    ToolDeployed {
        /// `u/<user>/<name>`.
        name: String,
        version: i64,
        tainted: bool,
    },
    /// A person's tool's taint was cleared.
    #[serde(rename = "tool.taint_cleared")]
    ToolTaintCleared { name: String, version: i64 },
    /// A person's tool was revoked, every version up to `version`.
    #[serde(rename = "tool.revoked")]
    ToolRevoked { name: String, version: i64 },
}

/// The broker's verdict on a use.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EgressVerdict {
    Allow,
    Deny,
}

/// Who approved a use: nobody had to, the person, or one of their devices.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EgressApproval {
    None,
    Person,
    Device,
}

impl KeepEvent {
    /// The event's `type`.
    pub fn event_type(&self) -> &'static str {
        match self {
            KeepEvent::SessionStarted { .. } => "session.started",
            KeepEvent::SessionReply { .. } => "session.reply",
            KeepEvent::SessionError { .. } => "session.error",
            KeepEvent::SessionEnded { .. } => "session.ended",
            KeepEvent::SessionTainted { .. } => "session.tainted",
            KeepEvent::EgressApprovalNeeded { .. } => "egress.approval_needed",
            KeepEvent::EgressDecided { .. } => "egress.decided",
            KeepEvent::EgressNotAsked { .. } => "egress.not_asked",
            KeepEvent::ProposalCreated { .. } => "proposal.created",
            KeepEvent::ProposalRefused { .. } => "proposal.refused",
            KeepEvent::ProposalDecided { .. } => "proposal.decided",
            KeepEvent::Refusal { .. } => "refusal",
            KeepEvent::JournalFailed { .. } => "journal.failed",
            KeepEvent::ToolDeployed { .. } => "tool.deployed",
            KeepEvent::ToolTaintCleared { .. } => "tool.taint_cleared",
            KeepEvent::ToolRevoked { .. } => "tool.revoked",
        }
    }

    /// The session the event is about, if it is about one.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            KeepEvent::SessionStarted { session_id, .. }
            | KeepEvent::SessionReply { session_id, .. }
            | KeepEvent::SessionError { session_id, .. }
            | KeepEvent::SessionEnded { session_id, .. }
            | KeepEvent::SessionTainted { session_id, .. }
            | KeepEvent::EgressApprovalNeeded { session_id, .. }
            | KeepEvent::EgressDecided { session_id, .. }
            | KeepEvent::EgressNotAsked { session_id, .. }
            | KeepEvent::ProposalCreated { session_id, .. }
            | KeepEvent::ProposalRefused { session_id, .. }
            | KeepEvent::ProposalDecided { session_id, .. }
            | KeepEvent::JournalFailed { session_id, .. } => Some(session_id),
            KeepEvent::Refusal { session_id, .. } => session_id.as_deref(),
            KeepEvent::ToolDeployed { .. }
            | KeepEvent::ToolTaintCleared { .. }
            | KeepEvent::ToolRevoked { .. } => None,
        }
    }

    /// The agent's replies to a message, whole up to `max_bytes` together, else only their size.
    pub fn reply(session_id: &str, replies: &[String], max_bytes: usize) -> KeepEvent {
        let bytes: usize = replies.iter().map(String::len).sum();
        let whole = bytes <= max_bytes;
        KeepEvent::SessionReply {
            session_id: session_id.to_owned(),
            replies: whole.then(|| replies.to_vec()),
            replies_bytes: (!whole).then_some(bytes),
            truncated: (!whole).then_some(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_type_is_its_variants_and_a_reply_past_its_bound_gives_its_size() {
        let reply = KeepEvent::reply("ks-1", &["ab".to_owned(), "c".to_owned()], 3);
        assert_eq!(
            serde_json::to_value(&reply).unwrap(),
            json!({"type": "session.reply", "session_id": "ks-1", "replies": ["ab", "c"]})
        );
        let cut = KeepEvent::reply("ks-1", &["ab".to_owned(), "cd".to_owned()], 3);
        assert_eq!(
            serde_json::to_value(&cut).unwrap(),
            json!({"type": "session.reply", "session_id": "ks-1", "replies_bytes": 4,
                   "truncated": true})
        );
        for event in [
            reply,
            KeepEvent::ToolRevoked {
                name: "u/alice/x".into(),
                version: 1,
            },
        ] {
            let value = serde_json::to_value(&event).unwrap();
            assert_eq!(value["type"], event.event_type());
            assert_eq!(value["session_id"].as_str(), event.session_id());
        }
    }
}
