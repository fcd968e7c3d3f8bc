//! The shapes of Keep's `/v1` routes on the wire. Signed documents travel as
//! [`SignedDocument`]s and are read strictly (see `StrictJson`); manifests, ceilings and trust
//! roots are described in `docs/keep/` and appear here as JSON objects.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Who holds the token.
#[derive(Debug, Serialize, ToSchema)]
pub struct Whoami {
    /// `operator` or `user`.
    pub role: String,
    /// The user's name, for a user token.
    pub user: Option<String>,
    /// The token's id (never the token).
    pub token_id: String,
}

/// A signature and the id of the key that made it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignatureBody {
    /// The signing key's id: the first 16 bytes of the SHA-256 of its public key, in hexadecimal.
    pub key_id: String,
    /// The Ed25519 signature, 128 lower-case hexadecimal characters.
    pub sig: String,
}

/// A document and one signature over its RFC 8785 canonical text.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignedDocument {
    /// The document; its `type` names what it is (`imurun.policy`, `imurun.ceiling`,
    /// `imurun.trust_root`, `imurun.decision`).
    #[schema(value_type = Object)]
    pub signed: Value,
    pub signature: SignatureBody,
}

impl SignedDocument {
    pub(crate) fn into_signed(self) -> imurun_keep::documents::Signed {
        imurun_keep::documents::Signed {
            signed: self.signed,
            signature: imurun_keep::documents::Signature {
                key_id: self.signature.key_id,
                sig: self.signature.sig,
            },
        }
    }
}

/// `POST /v1/agents`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeployBody {
    /// The WebAssembly component, in standard base64 (with padding); at most 16 MiB decoded.
    pub bundle: String,
    /// A trusted signer key's signature over the bundle's SHA-256.
    pub bundle_signature: SignatureBody,
    /// The operator's signed policy (`imurun.policy`) holding the manifest.
    pub policy: SignedDocument,
}

/// A deployed agent, as the operator sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentInfo {
    pub name: String,
    pub version: i64,
    pub owner: String,
    pub bundle_sha256: String,
    pub bundle_size: i64,
    pub signer_key_id: String,
    pub policy_key_id: String,
    /// The validated manifest, hosts in normal form.
    #[schema(value_type = Object)]
    pub manifest: Value,
    pub deployed_at_ms: i64,
    /// Why the stored agent is not in force (its policy expired, its row does not hold); only
    /// the operator's list shows such agents.
    pub refused: Option<String>,
}

/// A deployed agent as anyone with a token sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicAgent {
    pub name: String,
    pub version: i64,
    pub description: String,
}

/// `GET /v1/agents`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentList {
    pub agents: Vec<PublicAgent>,
}

/// A user's ceiling in force.
#[derive(Debug, Serialize, ToSchema)]
pub struct CeilingInfo {
    /// The ceiling (`imurun.ceiling`); the empty ceiling (version 0) when none is in force.
    #[schema(value_type = Object)]
    pub ceiling: Value,
    /// Why the empty ceiling applies: `none set`, `expired`, `rolled back: ...`.
    pub empty_because: Option<String>,
}

/// `POST /v1/tokens`: a user's token (`user`) or an operator's (`operator: true`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenCreate {
    pub user: Option<String>,
    #[serde(default)]
    pub operator: bool,
}

/// A token just made: shown once, stored only as its hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenCreated {
    pub id: String,
    pub token: String,
}

/// `DELETE /v1/tokens/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenRevoked {
    pub id: String,
    pub revoked: bool,
}

/// `POST /v1/enrol-codes`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnrolCodeCreate {
    pub user: String,
    /// How long the code works, in seconds: 1 to 604800; 900 when left out.
    pub ttl_s: Option<i64>,
}

/// A one-time enrolment code: shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrolCodeCreated {
    pub user: String,
    pub code: String,
    pub expires_in_s: i64,
}

/// `POST /v1/devices`: the user's first device with `enrol_code`, any later one with a
/// `decision` (`kind: enrol_device`) signed by one of their devices.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceEnrol {
    /// The Ed25519 public key, 64 lower-case hexadecimal characters.
    pub public_key: String,
    #[serde(default)]
    pub label: String,
    pub enrol_code: Option<String>,
    pub decision: Option<SignedDocument>,
    /// The new key's Ed25519 signature (128 hexadecimal characters) over the RFC 8785 canonical
    /// JSON of `{"type": "imurun.device_possession", "user", "public_key"}`: proof that the
    /// caller holds the key.
    pub possession: String,
}

/// A device key.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceInfo {
    pub key_id: String,
    pub public_key: String,
    pub label: String,
    pub created_at_ms: i64,
    pub retired_at_ms: Option<i64>,
}

/// `GET /v1/devices`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceList {
    pub devices: Vec<DeviceInfo>,
}

/// `PUT /v1/vault/{name}`: the credential's value, which no route ever returns.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultPut {
    /// A string of at most 8 KiB.
    #[schema(value_type = String)]
    pub value: Value,
}

/// A vault entry: its name and when it was written, never its value.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultEntry {
    pub name: String,
    pub updated_at_ms: i64,
}

/// `GET /v1/vault`.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultList {
    pub entries: Vec<VaultEntry>,
}

/// `DELETE /v1/vault/{name}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultDeleted {
    pub name: String,
    pub deleted: bool,
}

/// A journal entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct JournalEntryInfo {
    pub seq: i64,
    pub at_ms: i64,
    pub actor: String,
    pub user: Option<String>,
    pub kind: String,
    pub subject: String,
    #[schema(value_type = Object)]
    pub detail: Value,
    pub prev_hash: String,
    pub hash: String,
}

/// `GET /v1/journal`: newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct JournalList {
    pub entries: Vec<JournalEntryInfo>,
}

/// `GET /v1/journal/verify`.
#[derive(Debug, Serialize, ToSchema)]
pub struct JournalCheck {
    /// Entries the check read: all of them for the operator, those about them for a user.
    pub entries: usize,
    /// Whether the whole chain holds.
    pub intact: bool,
    /// The first bad entry's sequence number; null for a user when it is not about them.
    pub first_bad_seq: Option<i64>,
    /// Why the chain breaks; for a user, when the first bad entry is not about them, "an
    /// entry that is not about you breaks the chain".
    pub reason: Option<String>,
}

/// `POST /v1/sessions`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = KeepSessionCreate)]
#[serde(deny_unknown_fields)]
pub struct SessionCreate {
    /// The name of an agent in force (`GET /v1/agents`).
    pub agent: String,
}

/// A Keep session, as its person sees it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepSessionInfo)]
pub struct SessionInfo {
    pub id: String,
    pub agent: String,
    pub agent_version: i64,
    pub created_at_ms: i64,
    /// Whether its cell runs on this host now.
    pub live: bool,
    /// Whether it received untrusted content, and what that was.
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub tainted_at_ms: Option<i64>,
    pub ended_at_ms: Option<i64>,
    /// `stopped`, or what ended its cell: `cpu_limit`, `memory_limit`, `timeout`, `trap`, `host`.
    pub end_reason: Option<String>,
}

/// `GET /v1/sessions`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepSessionList)]
pub struct SessionList {
    /// Newest first.
    pub sessions: Vec<SessionInfo>,
}

/// `POST /v1/sessions/{id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageBody {
    /// What the agent receives; at most 64 KiB.
    pub text: String,
}

/// `POST /v1/sessions/{id}/files`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FileBody {
    /// The file's name: 1 to 200 characters, no control or bidi characters.
    pub name: String,
    /// Its text; at most 128 KiB.
    pub text: String,
}

/// What the agent answered a message.
#[derive(Debug, Serialize, ToSchema)]
pub struct Replies {
    pub session_id: String,
    pub replies: Vec<String>,
}

/// A proposal that is not a tool: a memory entry, a suggestion, a plan or a card.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalInfo {
    pub id: String,
    pub session_id: String,
    pub agent: String,
    /// `memory`, `suggestion`, `plan` or `card`.
    pub kind: String,
    /// The validated payload; plain text, with control and bidi characters escaped as
    /// `\u{XXXX}`. See `docs/keep/proposals.md`.
    #[schema(value_type = Object)]
    pub payload: Value,
    /// Whether its session was tainted when it was made, and by what.
    pub tainted: bool,
    pub taint_source: Option<String>,
    /// `pending`, `accepted` or `rejected`.
    pub state: String,
    pub created_at_ms: i64,
    pub decided_at_ms: Option<i64>,
}

/// `GET /v1/proposals`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalList {
    /// Memory entries, suggestions, plans and cards, newest first.
    pub proposals: Vec<ProposalInfo>,
    /// Tool proposals with their reviews, newest first.
    pub tools: Vec<ToolReviewInfo>,
}

/// A tool proposal's review: where it came from, its authority diff against the proposing
/// agent, and the manifest clamped by the caller's ceiling, which is what an approval deploys.
/// See `docs/keep/tools.md`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolReviewInfo {
    pub id: String,
    /// Always `tool`.
    pub kind: String,
    pub name: String,
    /// `u/<user>/<name>`: where it deploys.
    pub qualified_name: String,
    pub version: i64,
    /// Plain text; control and bidi characters shown as `\u{XXXX}` escapes.
    pub description: String,
    pub bundle_sha256: String,
    pub bundle_size: i64,
    /// `{agent, agent_version, signer_key_id, session_id, created_at_ms, taint_source}`.
    #[schema(value_type = Object)]
    pub origin: Value,
    pub tainted: bool,
    /// `pending`, `approved` or `denied`.
    pub state: String,
    pub decided_at_ms: Option<i64>,
    #[schema(value_type = Object)]
    pub proposed_manifest: Value,
    /// Each change `{class, field, from, to, summary}`; `class` is `new_host`, `egress`,
    /// `credential_reach`, `memory`, `model`, `resources` or `timeouts`.
    #[schema(value_type = Vec<Object>)]
    pub authority_diff: Value,
    /// True exactly when `authority_diff` is empty.
    pub no_new_authority: bool,
    /// What an approval now deploys.
    #[schema(value_type = Object)]
    pub clamped_manifest: Value,
    /// Each entry the ceiling dropped or lowered: `{field, entry, reason}`.
    #[schema(value_type = Vec<Object>)]
    pub dropped: Value,
    /// The authority the clamped manifest has beyond the agent.
    #[schema(value_type = Vec<Object>)]
    pub granted_diff: Value,
    /// What a decision names in `hashes`: `bundle`, `manifest` (clamped), `description`.
    pub hashes: std::collections::BTreeMap<String, String>,
    /// The versions a decision names: the caller's ceiling, and the proposing agent in force.
    pub ceiling_version: i64,
    pub policy_version: i64,
    pub needs_confirm_tainted: bool,
    /// Why it cannot be approved as it stands, if so.
    pub refused: Option<String>,
}

impl From<imurun_keep::service::ToolReview> for ToolReviewInfo {
    fn from(review: imurun_keep::service::ToolReview) -> Self {
        ToolReviewInfo {
            origin: to_json(&review.origin),
            authority_diff: to_json(&review.authority_diff),
            dropped: to_json(&review.dropped),
            granted_diff: to_json(&review.granted_diff),
            id: review.id,
            kind: review.kind.to_owned(),
            name: review.name,
            qualified_name: review.qualified_name,
            version: review.version,
            description: review.description,
            bundle_sha256: review.bundle_sha256,
            bundle_size: review.bundle_size,
            tainted: review.tainted,
            state: review.state,
            decided_at_ms: review.decided_at_ms,
            proposed_manifest: review.proposed_manifest,
            no_new_authority: review.no_new_authority,
            clamped_manifest: review.clamped_manifest,
            hashes: review.hashes,
            ceiling_version: review.ceiling_version,
            policy_version: review.policy_version,
            needs_confirm_tainted: review.needs_confirm_tainted,
            refused: review.refused,
        }
    }
}

/// A value as JSON, for the fields the API document shows as objects.
fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// One of the caller's proposals: a tool's review, or another kind.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum AnyProposal {
    Tool(Box<ToolReviewInfo>),
    Other(Box<ProposalInfo>),
}

/// `POST /v1/proposals/{id}/decision`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDecisionBody {
    /// An `approve_proposal` or `deny_proposal` decision signed on one of the caller's devices,
    /// naming the review's `hashes`, `ceiling_version` and `policy_version`.
    pub decision: SignedDocument,
}

/// A deployed tool.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepToolInfo)]
pub struct ToolInfo {
    pub name: String,
    pub qualified_name: String,
    pub version: i64,
    pub bundle_sha256: String,
    /// The clamped manifest the person approved.
    #[schema(value_type = Object)]
    pub manifest: Value,
    /// `ask` while a tainted tool's taint is not cleared, else the manifest's.
    pub egress_mode: String,
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub taint_cleared: bool,
    /// The device key that approved it.
    pub approved_by: String,
    pub proposal_id: String,
    /// The host key's signature over the bundle's hash, manifest, decision and taint.
    pub host_signature: String,
    pub deployed_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    /// While the taint is not cleared: what a `clear_taint` decision names
    /// (`{kind, subject, hashes, ceiling_version, policy_version}`).
    #[schema(value_type = Option<Object>)]
    pub clear_taint: Option<Value>,
    /// Why the host refuses this tool's row (it does not hold the host's seal: edited in the
    /// database); such a tool is never called and its taint never cleared.
    pub refused: Option<String>,
}

impl From<imurun_keep::service::ToolView> for ToolInfo {
    fn from(view: imurun_keep::service::ToolView) -> Self {
        ToolInfo {
            egress_mode: to_json(&view.egress_mode)
                .as_str()
                .unwrap_or("deny")
                .to_owned(),
            clear_taint: view.clear_taint.as_ref().map(to_json),
            name: view.name,
            qualified_name: view.qualified_name,
            version: view.version,
            bundle_sha256: view.bundle_sha256,
            manifest: view.manifest,
            tainted: view.tainted,
            taint_source: view.taint_source,
            taint_cleared: view.taint_cleared,
            approved_by: view.approved_by,
            proposal_id: view.proposal_id,
            host_signature: view.host_signature,
            deployed_at_ms: view.deployed_at_ms,
            revoked_at_ms: view.revoked_at_ms,
            refused: view.refused,
        }
    }
}

/// `GET /v1/tools`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepToolList)]
pub struct ToolList {
    /// Each tool at its highest version, by name.
    pub tools: Vec<ToolInfo>,
}

/// `POST /v1/tools/{name}/clear-taint`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClearTaintBody {
    /// A `clear_taint` decision signed on one of the caller's devices, naming the tool's
    /// `clear_taint` subject, hashes and ceiling version.
    pub decision: SignedDocument,
}

/// `POST /v1/proposals/{id}/accept`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposalAccept {
    /// Needed to accept a proposal made after its session was tainted.
    #[serde(default)]
    pub confirm_tainted: bool,
}

/// An egress use waiting for its person.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepApprovalInfo)]
pub struct ApprovalInfo {
    pub id: String,
    pub session_id: String,
    pub agent: String,
    pub agent_version: i64,
    pub method: String,
    pub url: String,
    /// The headers the cell set, as `[name, value]` (values cut at 1 000 characters and
    /// escaped; the `request` hash covers them whole).
    pub headers: Vec<Vec<String>>,
    pub body_bytes: usize,
    pub body_sha256: String,
    /// The credentials the host would add, by name.
    pub credentials: Vec<String>,
    /// Whether the session is tainted: what it read may be steering this request.
    pub tainted: bool,
    /// Only an `approve_egress` decision signed on one of the person's devices approves it.
    pub device_signature: bool,
    /// What such a decision names in `hashes`: `request` and `body`.
    pub hashes: std::collections::BTreeMap<String, String>,
    pub asked_at_ms: i64,
}

/// `GET /v1/approvals`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepApprovalList)]
pub struct ApprovalList {
    /// Oldest first.
    pub approvals: Vec<ApprovalInfo>,
}

/// `POST /v1/approvals/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    pub approve: bool,
    /// An `approve_egress` decision signed on one of the caller's devices: needed to approve a
    /// use whose rule demands a device signature, checked whenever it is given.
    pub decision: Option<SignedDocument>,
}

/// The answer was handed to the waiting request.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalAnswered {
    pub id: String,
    /// The answer recorded: false when the use's tool was revoked meanwhile, whatever was
    /// asked.
    pub approved: bool,
}

/// The body of `PUT /v1/settings/tool-propose`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolProposeBody {
    /// Whether agents may propose tools.
    pub(crate) enabled: bool,
}

/// The `tool.propose` switch in force.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ToolProposeInfo {
    /// Whether agents may propose tools on every host of this database.
    pub(crate) enabled: bool,
    /// How many times it was set (0: never; on by default).
    pub(crate) version: i64,
    /// Why it is off without the operator having said so (a setting edited in the database).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) refused: Option<String>,
}

impl From<imurun_keep::service::ToolProposeView> for ToolProposeInfo {
    fn from(view: imurun_keep::service::ToolProposeView) -> Self {
        Self {
            enabled: view.enabled,
            version: view.version,
            refused: view.refused,
        }
    }
}
