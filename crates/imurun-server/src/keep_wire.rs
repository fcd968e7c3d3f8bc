//! The shapes of Keep's `/v1` routes on the wire. Signed documents travel as
//! [`SignedDocument`]s and are read strictly (see `StrictJson`); manifests, ceilings and trust
//! roots are described in `docs/keep/` and appear here as JSON objects. The objects Keep's
//! events carry too (sessions, proposals and reviews, tools, waiting egress uses) are
//! `imurun_keep`'s own views, answered as they are, so a route and the event stream show each
//! object in one shape.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub use imurun_keep::service::{
    AnyProposal, ApprovalView, ConversationView, HostView, PersonAdded, PersonDetail,
    PersonRevoked, PersonView, ProposalView, SessionView, ToolReview, ToolView,
};

/// `GET /v1/people`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepPeopleList)]
pub struct PeopleList {
    pub people: Vec<PersonView>,
}

/// `POST /v1/people`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = KeepPersonAdd)]
pub struct PersonAdd {
    /// The person's name (1 to 32 of `a-z`, `0-9`, `-` and `_`, starting with a letter).
    pub user: String,
    /// Seconds her enrolment code works (default 900, at most 604800).
    pub enrol_code_ttl_s: Option<i64>,
}

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
    /// What its manifest grants (docs/keep/packs.md): what a person reads before talking to it.
    pub reach: imurun_keep::service::AgentReach,
}

/// `GET /v1/agents`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentList {
    /// The agents in force.
    pub agents: Vec<PublicAgent>,
    /// The operator's answer only: every stored agent, in force (with how it is signed and
    /// when it was deployed) or refused with why (an expired policy, a row that does not
    /// hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed: Option<Vec<AgentInfo>>,
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

/// `GET /v1/sessions`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepSessionList)]
pub struct SessionList {
    /// Newest first.
    pub sessions: Vec<SessionView>,
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

/// `GET /v1/proposals`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalList {
    /// Memory entries, suggestions, plans and cards, newest first.
    pub proposals: Vec<ProposalView>,
    /// Tool proposals with their reviews, newest first.
    pub tools: Vec<ToolReview>,
}

/// `POST /v1/proposals/{id}/decision`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDecisionBody {
    /// An `approve_proposal` or `deny_proposal` decision signed on one of the caller's devices,
    /// naming the review's `hashes`, `ceiling_version` and `policy_version`.
    pub decision: SignedDocument,
}

/// `GET /v1/tools`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepToolList)]
pub struct ToolList {
    /// Each tool at its highest version, by name.
    pub tools: Vec<ToolView>,
}

/// `POST /v1/devices/{key_id}/retire`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetireDeviceBody {
    /// A `retire_device` decision signed on one of the caller's devices (the one retired
    /// included): its subject the key id, its `public_key` hash the key's, both versions 0.
    pub decision: SignedDocument,
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

/// `GET /v1/approvals`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeepApprovalList)]
pub struct ApprovalList {
    /// Oldest first.
    pub approvals: Vec<ApprovalView>,
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
