//! Row seals: the host key's signature over a stored row exactly as the host accepted it.
//!
//! A signed document's own signature says who wrote it, not that this host accepted it at this
//! version: a document the host refused, or one signed with a policy key after that key was
//! retired (and leaked), would verify just as well if someone wrote it into the database. The
//! seal closes that: it is made only when the host accepts a row, with the host key, which lives
//! outside the database, and it covers every column that is served. A row whose seal does not
//! verify is treated as edited: refused, or the safe default in its place.

use serde_json::json;

use crate::RuleError;
use crate::canonical::canonicalize;
use crate::keys::{KeyPair, PublicKey, sha256_hex};

/// What a seal of a `keep_documents` row covers.
#[derive(Debug, Clone, Copy)]
pub struct DocumentFields<'a> {
    pub kind: &'a str,
    pub subject: &'a str,
    pub version: i64,
    pub envelope: &'a str,
}

/// What a seal of a `keep_agents` row covers.
#[derive(Debug, Clone, Copy)]
pub struct AgentFields<'a> {
    pub name: &'a str,
    pub version: i64,
    pub owner: &'a str,
    pub bundle_sha256: &'a str,
    pub bundle_size: i64,
    pub bundle_signature: &'a str,
    pub policy: &'a str,
}

fn document_message(fields: &DocumentFields<'_>) -> Vec<u8> {
    canonicalize(&json!({
        "type": "imurun.row_seal",
        "table": "keep_documents",
        "kind": fields.kind,
        "subject": fields.subject,
        "version": fields.version,
        "envelope_sha256": sha256_hex(fields.envelope.as_bytes()),
    }))
}

fn agent_message(fields: &AgentFields<'_>) -> Vec<u8> {
    canonicalize(&json!({
        "type": "imurun.row_seal",
        "table": "keep_agents",
        "name": fields.name,
        "version": fields.version,
        "owner": fields.owner,
        "bundle_sha256": fields.bundle_sha256,
        "bundle_size": fields.bundle_size,
        "bundle_signature_sha256": sha256_hex(fields.bundle_signature.as_bytes()),
        "policy_sha256": sha256_hex(fields.policy.as_bytes()),
    }))
}

/// The seal of a document row.
pub fn seal_document(host: &KeyPair, fields: &DocumentFields<'_>) -> String {
    host.sign(&document_message(fields))
}

/// The seal of an agent row.
pub fn seal_agent(host: &KeyPair, fields: &AgentFields<'_>) -> String {
    host.sign(&agent_message(fields))
}

/// Checks a document row's seal.
pub fn check_document(
    host: &PublicKey,
    fields: &DocumentFields<'_>,
    seal: &str,
) -> Result<(), RuleError> {
    host.verify(&document_message(fields), seal).map_err(|_| {
        RuleError::Untrusted(format!(
            "the stored {} of {:?} is not sealed by this host: it was edited in the database or \
             never accepted",
            fields.kind, fields.subject
        ))
    })
}

/// Checks an agent row's seal.
pub fn check_agent(
    host: &PublicKey,
    fields: &AgentFields<'_>,
    seal: &str,
) -> Result<(), RuleError> {
    host.verify(&agent_message(fields), seal).map_err(|_| {
        RuleError::Untrusted(format!(
            "the stored agent {}@{} is not sealed by this host: it was edited in the database or \
             never accepted",
            fields.name, fields.version
        ))
    })
}

/// What a seal of a `keep_tools` row covers: the host's signature over the approved bundle's
/// hash, the clamped manifest, the person's decision beside it, and the taint state.
#[derive(Debug, Clone, Copy)]
pub struct ToolFields<'a> {
    pub user: &'a str,
    pub name: &'a str,
    pub version: i64,
    pub bundle_sha256: &'a str,
    pub manifest: &'a str,
    pub decision: &'a str,
    pub tainted: bool,
    pub taint_cleared: Option<&'a str>,
}

fn tool_message(fields: &ToolFields<'_>) -> Vec<u8> {
    canonicalize(&json!({
        "type": "imurun.row_seal",
        "table": "keep_tools",
        "user": fields.user,
        "name": fields.name,
        "version": fields.version,
        "bundle_sha256": fields.bundle_sha256,
        "manifest_sha256": sha256_hex(fields.manifest.as_bytes()),
        "decision_sha256": sha256_hex(fields.decision.as_bytes()),
        "tainted": fields.tainted,
        "taint_cleared_sha256": fields.taint_cleared.map(|text| sha256_hex(text.as_bytes())),
    }))
}

/// The seal of a tool row.
pub fn seal_tool(host: &KeyPair, fields: &ToolFields<'_>) -> String {
    host.sign(&tool_message(fields))
}

/// Checks a tool row's seal.
pub fn check_tool(host: &PublicKey, fields: &ToolFields<'_>, seal: &str) -> Result<(), RuleError> {
    host.verify(&tool_message(fields), seal).map_err(|_| {
        RuleError::Untrusted(format!(
            "the stored tool u/{}/{}@{} is not sealed by this host: it was edited in the \
             database or never approved",
            fields.user, fields.name, fields.version
        ))
    })
}

/// What a seal of a `keep_tool_proposals` row covers: every column but its state, its
/// decision time and the seal.
#[derive(Debug, Clone, Copy)]
pub struct ToolProposalFields<'a> {
    pub id: &'a str,
    pub user: &'a str,
    pub session_id: &'a str,
    pub agent: &'a str,
    pub agent_version: i64,
    pub signer_key_id: &'a str,
    pub name: &'a str,
    pub version: i64,
    pub description: &'a str,
    pub manifest: &'a str,
    pub bundle_sha256: &'a str,
    pub bundle_size: i64,
    pub tainted: bool,
    pub taint_source: Option<&'a str>,
    pub created_at_ms: i64,
}

/// The seal of a `keep_tool_proposals` row.
pub fn seal_tool_proposal(host: &KeyPair, fields: &ToolProposalFields<'_>) -> String {
    host.sign(&tool_proposal_message(fields))
}

/// Checks a tool proposal row's seal.
pub fn check_tool_proposal(
    host: &PublicKey,
    fields: &ToolProposalFields<'_>,
    seal: &str,
) -> Result<(), RuleError> {
    host.verify(&tool_proposal_message(fields), seal)
        .map_err(|_| {
            RuleError::Untrusted(format!(
                "the stored tool proposal {} is not sealed by this host: it was edited in the \
                 database",
                fields.id
            ))
        })
}

fn tool_proposal_message(fields: &ToolProposalFields<'_>) -> Vec<u8> {
    canonicalize(&json!({
        "type": "imurun.row_seal",
        "table": "keep_tool_proposals",
        "id": fields.id,
        "user": fields.user,
        "session_id": fields.session_id,
        "agent": fields.agent,
        "agent_version": fields.agent_version,
        "signer_key_id": fields.signer_key_id,
        "name": fields.name,
        "version": fields.version,
        "description_sha256": sha256_hex(fields.description.as_bytes()),
        "manifest_sha256": sha256_hex(fields.manifest.as_bytes()),
        "bundle_sha256": fields.bundle_sha256,
        "bundle_size": fields.bundle_size,
        "tainted": fields.tainted,
        "taint_source": fields.taint_source,
        "created_at_ms": fields.created_at_ms,
    }))
}

/// What the seal of an egress use's recorded answer covers.
#[derive(Debug, Clone, Copy)]
pub struct EgressAnswerFields<'a> {
    pub id: &'a str,
    pub user: &'a str,
    /// The host whose cell waits.
    pub host: &'a str,
    /// The SHA-256 of the use's view (what the person was shown) as its host recorded it.
    pub view_sha256: &'a str,
    pub approve: bool,
    /// The device-signed decision the answer came with, as stored.
    pub decision: Option<&'a str>,
}

fn egress_answer_message(fields: &EgressAnswerFields<'_>) -> Vec<u8> {
    canonicalize(&json!({
        "type": "imurun.row_seal",
        "table": "keep_egress_waits",
        "id": fields.id,
        "user": fields.user,
        "host": fields.host,
        "view_sha256": fields.view_sha256,
        "approve": fields.approve,
        "decision_sha256": fields.decision.map(|text| sha256_hex(text.as_bytes())),
    }))
}

/// The seal of an egress use's recorded answer.
pub fn seal_egress_answer(host: &KeyPair, fields: &EgressAnswerFields<'_>) -> String {
    host.sign(&egress_answer_message(fields))
}

/// Checks the seal of an egress use's recorded answer.
pub fn check_egress_answer(
    host: &PublicKey,
    fields: &EgressAnswerFields<'_>,
    seal: &str,
) -> Result<(), RuleError> {
    host.verify(&egress_answer_message(fields), seal)
        .map_err(|_| {
            RuleError::Untrusted(format!(
                "the recorded answer to egress use {:?} is not sealed by a host: it was edited in \
                 the database",
                fields.id
            ))
        })
}

/// How far a host notice's time may be from the hearing host's clock: older (or further
/// ahead) notices are dropped, so one copied off the database is not replayed later.
pub const NOTICE_AGE_MAX_MS: i64 = 60_000;

/// The bytes a sealed host notice adds to its payload: the seal (128 hexadecimal
/// characters), the time in milliseconds (at most 20 digits) and two separators.
pub const NOTICE_SEAL_BYTES: usize = 128 + 20 + 2;

/// Why a notice was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeRefused {
    /// Not sealed by a host for this channel (or edited since).
    Forged,
    /// A host sealed it, more than [`NOTICE_AGE_MAX_MS`] from this host's clock: it came late
    /// (this host was stalled or its clock is off), or it is a copy sent again.
    Stale,
}

/// Seals and opens the notices hosts that share a PostgreSQL database send each other
/// (`NOTIFY`): any role that can connect to the database can send one, so a host acts only on
/// notices sealed with the host key every host holds (docs/keep/scaling.md).
#[derive(Clone)]
pub struct NoticeSeal {
    host: std::sync::Arc<KeyPair>,
}

impl std::fmt::Debug for NoticeSeal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("NoticeSeal").finish_non_exhaustive()
    }
}

fn notice_message(channel: &str, at_ms: i64, payload: &str) -> Vec<u8> {
    format!("imurun.host_notice\n{channel}\n{at_ms}\n{payload}").into_bytes()
}

impl NoticeSeal {
    pub fn new(host: std::sync::Arc<KeyPair>) -> NoticeSeal {
        NoticeSeal { host }
    }

    /// `payload` for `channel`, sealed at `now_ms`: `<seal>.<time>.<payload>`.
    pub fn seal(&self, channel: &str, payload: &str, now_ms: i64) -> String {
        let seal = self.host.sign(&notice_message(channel, now_ms, payload));
        format!("{seal}.{now_ms}.{payload}")
    }

    /// The payload of a notice heard on `channel` at `now_ms`, if a host sealed it for this
    /// channel within [`NOTICE_AGE_MAX_MS`].
    pub fn open<'a>(
        &self,
        channel: &str,
        notice: &'a str,
        now_ms: i64,
    ) -> Result<&'a str, NoticeRefused> {
        let (seal, rest) = notice.split_once('.').ok_or(NoticeRefused::Forged)?;
        let (at, payload) = rest.split_once('.').ok_or(NoticeRefused::Forged)?;
        // The time exactly as sealed: digits, no sign, no leading zeros.
        let at_ms: i64 = at.parse().map_err(|_| NoticeRefused::Forged)?;
        if at != at_ms.to_string() || seal.len() != 128 {
            return Err(NoticeRefused::Forged);
        }
        self.host
            .public()
            .verify(&notice_message(channel, at_ms, payload), seal)
            .map_err(|_| NoticeRefused::Forged)?;
        if now_ms.abs_diff(at_ms) > NOTICE_AGE_MAX_MS.unsigned_abs() {
            return Err(NoticeRefused::Stale);
        }
        Ok(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_opens_only_as_a_host_sealed_it_for_its_channel_and_while_fresh() {
        let seal = NoticeSeal::new(std::sync::Arc::new(KeyPair::from_seed(&[3; 32])));
        let now = 1_800_000_000_000;
        let payload = "{\"u\":\"alice\"}";
        let notice = seal.seal("events", payload, now);
        assert!(notice.len() <= payload.len() + NOTICE_SEAL_BYTES);
        assert_eq!(seal.open("events", &notice, now + 1_000), Ok(payload));
        // Another channel, an edited payload or time (or its spelling): forged.
        let forged = Err(NoticeRefused::Forged);
        assert_eq!(seal.open("answers", &notice, now), forged);
        let edited = notice.replace("alice", "bob");
        assert_eq!(seal.open("events", &edited, now), forged);
        let (signature, _) = notice.split_once('.').unwrap();
        for time in [format!("{}", now + 1), format!("0{now}"), format!("+{now}")] {
            let retimed = format!("{signature}.{time}.{payload}");
            assert_eq!(seal.open("events", &retimed, now), forged, "{time}");
        }
        // Sealed, but too old or too far ahead: stale.
        let stale = Err(NoticeRefused::Stale);
        let late = now + NOTICE_AGE_MAX_MS + 1;
        assert_eq!(seal.open("events", &notice, late), stale);
        let early = now - NOTICE_AGE_MAX_MS - 1;
        assert_eq!(seal.open("events", &notice, early), stale);
        // Not a sealed notice at all, or sealed with another key.
        for text in [payload, "", "..", "x.1.y"] {
            assert_eq!(seal.open("events", text, now), forged, "{text}");
        }
        let other = NoticeSeal::new(std::sync::Arc::new(KeyPair::from_seed(&[4; 32])));
        assert_eq!(other.open("events", &notice, now), forged);
    }
}
