//! What a journal entry's `detail` holds, typed: one variant per entry `kind`, each with the
//! shapes its writer writes. The host writes every entry through [`JournalDetail`], never
//! through JSON built by hand; the entry's `kind` comes from the variant.
//!
//! The detail is canonicalised and hashed into the chain, so these types serialize to exactly
//! the JSON the host wrote before they existed: an entry written then reads as a
//! [`JournalDetail`] ([`JournalDetail::read`]) and writes back as the same canonical text
//! (`crates/imurun-keep/tests/fixtures/journal-v1.jsonl` holds such a journal). A field that
//! was written as `null` is an `Option` written as `null`; one that was left out is an
//! `Option` left out.
//!
//! Names, versions, hashes, diffs and rules; never code, never secrets, never tokens.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::RuleError;
use crate::authority::{Change, Dropped};
use crate::documents::KeyRole;
use crate::manifest::{EgressMode, EgressRule, MemoryAccess, Resources};

pub use crate::journal_refusal::{
    Answerer, BoundRule, ClaimedDetail, DeviceAnswer, DoorAction, DoorRefused, EgressAnswer,
    EgressBy, EgressDetail, RefusalDetail, RefusalsBound, Refused, SessionRefused,
};

/// A journal entry's detail: what happened, by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JournalDetail {
    /// `trust_root`: installed by `keep init`, or rotated.
    TrustRoot(TrustRootDetail),
    /// `deploy`: an agent deployed.
    Deploy(Box<DeployDetail>),
    /// `ceiling`: a person's ceiling set.
    Ceiling(Box<CeilingDetail>),
    /// `token`: a token made or revoked (its id and role, never the token).
    Token(TokenDetail),
    /// `enrol_code`: an enrolment code issued (never the code).
    EnrolCode(EnrolCodeDetail),
    /// `device`: a device enrolled or retired.
    Device(DeviceDetail),
    /// `vault`: a credential added, replaced or deleted (its name, never its value).
    Vault(VaultDetail),
    /// `host`: a setting for every host on the database.
    Host(HostDetail),
    /// `config`: how this host started.
    Config(ConfigDetail),
    /// `session`: a session started, tainted or ended.
    Session(SessionDetail),
    /// `proposal`: a proposal made or decided.
    Proposal(Box<ProposalDetail>),
    /// `tool`: a person's tool deployed, its taint cleared, or revoked.
    Tool(ToolDetail),
    /// `egress`: a person's answer to an egress use.
    Egress(EgressDetail),
    /// `refusal`: anything refused to a signed-in identity or to a cell.
    Refusal(RefusalDetail),
}

/// Every kind of journal entry, as [`JournalDetail::kind`] names them.
pub const JOURNAL_KINDS: [&str; 14] = [
    "trust_root",
    "deploy",
    "ceiling",
    "token",
    "enrol_code",
    "device",
    "vault",
    "host",
    "config",
    "session",
    "proposal",
    "tool",
    "egress",
    "refusal",
];

impl JournalDetail {
    /// The entry's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            JournalDetail::TrustRoot(_) => "trust_root",
            JournalDetail::Deploy(_) => "deploy",
            JournalDetail::Ceiling(_) => "ceiling",
            JournalDetail::Token(_) => "token",
            JournalDetail::EnrolCode(_) => "enrol_code",
            JournalDetail::Device(_) => "device",
            JournalDetail::Vault(_) => "vault",
            JournalDetail::Host(_) => "host",
            JournalDetail::Config(_) => "config",
            JournalDetail::Session(_) => "session",
            JournalDetail::Proposal(_) => "proposal",
            JournalDetail::Tool(_) => "tool",
            JournalDetail::Egress(_) => "egress",
            JournalDetail::Refusal(_) => "refusal",
        }
    }

    /// Reads the detail of an entry of `kind`: every shape the host writes (and wrote) reads,
    /// and anything else is refused.
    pub fn read(kind: &str, detail: &Value) -> Result<JournalDetail, RuleError> {
        fn typed<T: for<'de> Deserialize<'de>>(kind: &str, detail: &Value) -> Result<T, RuleError> {
            T::deserialize(detail).map_err(|error| {
                RuleError::invalid("detail", format!("not a `{kind}` entry's detail: {error}"))
            })
        }
        Ok(match kind {
            "trust_root" => JournalDetail::TrustRoot(typed(kind, detail)?),
            "deploy" => JournalDetail::Deploy(typed(kind, detail)?),
            "ceiling" => JournalDetail::Ceiling(typed(kind, detail)?),
            "token" => JournalDetail::Token(typed(kind, detail)?),
            "enrol_code" => JournalDetail::EnrolCode(typed(kind, detail)?),
            "device" => JournalDetail::Device(typed(kind, detail)?),
            "vault" => JournalDetail::Vault(typed(kind, detail)?),
            "host" => JournalDetail::Host(typed(kind, detail)?),
            "config" => JournalDetail::Config(typed(kind, detail)?),
            "session" => JournalDetail::Session(typed(kind, detail)?),
            "proposal" => JournalDetail::Proposal(typed(kind, detail)?),
            "tool" => JournalDetail::Tool(typed(kind, detail)?),
            "egress" => JournalDetail::Egress(typed(kind, detail)?),
            "refusal" => JournalDetail::Refusal(typed(kind, detail)?),
            other => {
                return Err(RuleError::invalid(
                    "kind",
                    format!("no journal entry is of kind {other:?}"),
                ));
            }
        })
    }

    /// The detail as the JSON the entry holds (before it is canonicalised).
    pub fn to_value(&self) -> Result<Value, RuleError> {
        serde_json::to_value(self).map_err(|error| RuleError::Canonical(error.to_string()))
    }
}

/// Each kind's detail is a [`JournalDetail`] of that kind.
macro_rules! kinds {
    ($($variant:ident($detail:ty)),* $(,)?) => {$(
        impl From<$detail> for JournalDetail {
            fn from(detail: $detail) -> JournalDetail {
                JournalDetail::$variant(detail.into())
            }
        }
    )*};
}

kinds!(
    TrustRoot(TrustRootDetail),
    Deploy(DeployDetail),
    Ceiling(CeilingDetail),
    Token(TokenDetail),
    EnrolCode(EnrolCodeDetail),
    Device(DeviceDetail),
    Vault(VaultDetail),
    Host(HostDetail),
    Config(ConfigDetail),
    Session(SessionDetail),
    Proposal(ProposalDetail),
    Tool(ToolDetail),
    Egress(EgressDetail),
    Refusal(RefusalDetail),
);

/// A trust root put in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TrustRootDetail {
    /// A new version, signed by a policy key of the one before.
    Rotated(TrustRootRotated),
    /// The first, by `keep init`.
    Installed(TrustRootInstalled),
}

/// `keep init`'s trust root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRootInstalled {
    pub version: i64,
    /// The SHA-256 of the root's canonical JSON.
    pub root_sha256: String,
    pub keys: Vec<KeySummary>,
    /// The host key that seals the rows the host accepts.
    pub host_key_id: String,
}

/// A rotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRootRotated {
    pub version: i64,
    pub previous_version: i64,
    pub root_sha256: String,
    /// The policy key of the previous root that signed it.
    pub signed_by: String,
    pub keys: Vec<KeySummary>,
}

/// A key a trust root lists: its id, role and retirement (never more of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySummary {
    pub key_id: String,
    pub role: KeyRole,
    pub retired: bool,
}

/// An agent deployed: names, versions, hashes and the authority granted; never the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeployDetail {
    pub agent: String,
    pub version: i64,
    pub bundle_sha256: String,
    pub bundle_size: u64,
    pub policy_sha256: String,
    pub signer_key_id: String,
    pub policy_key_id: String,
    pub egress_mode: EgressMode,
    /// The manifest's egress rules.
    pub egress: Vec<EgressRule>,
    /// The credentials' names.
    pub credentials: Vec<String>,
    pub memory: MemoryAccess,
    pub model_socket: bool,
    pub card: bool,
    pub resources: Resources,
}

/// A person's ceiling set: what it allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingDetail {
    pub user: String,
    pub version: i64,
    pub expires_at: i64,
    pub ceiling_sha256: String,
    pub policy_key_id: String,
    pub egress: Vec<EgressRule>,
    pub credentials: Vec<String>,
    pub memory: MemoryAccess,
    pub model_socket: bool,
    pub resources: Resources,
}

/// A token made or revoked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum TokenDetail {
    Create {
        token_id: String,
        /// `operator` or `user`.
        role: String,
    },
    Revoke {
        token_id: String,
        role: String,
    },
    /// A person revoked as a whole (subject `user:<name>`): how many of each were revoked,
    /// retired, voided or stopped (each also has its own entry, but for the sessions).
    RevokePerson {
        tokens: u64,
        devices: u64,
        enrol_codes: u64,
        sessions: u64,
        tools: u64,
        /// Her proposals still pending, closed (absent from entries written before it was
        /// counted).
        #[serde(default, skip_serializing_if = "is_zero")]
        proposals: u64,
    },
}

/// An enrolment code issued for `user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrolCodeDetail {
    pub user: String,
    pub expires_at_ms: i64,
}

/// A device enrolled, with how it was proven, or retired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum DeviceDetail {
    Enrol {
        key_id: String,
        label: String,
        proof: DeviceProof,
        /// For a decision: the deciding device.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<String>,
        /// For a decision: its nonce.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce: Option<String>,
    },
    Retire {
        key_id: String,
        /// For the person's own retirement: the device whose decision retired it (absent when
        /// the operator revoked the person).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<String>,
        /// For the person's own retirement: the decision's nonce.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce: Option<String>,
        /// Her last device retired: her proposals still pending, closed.
        #[serde(default, skip_serializing_if = "is_zero")]
        proposals_closed: u64,
        /// Her last device retired: her sessions that had not ended, ended (each journaled).
        #[serde(default, skip_serializing_if = "is_zero")]
        sessions_ended: u64,
    },
}

impl DeviceDetail {
    /// The person's first device, enrolled with a code.
    pub fn enrolled_by_code(key_id: &str, label: &str) -> DeviceDetail {
        DeviceDetail::Enrol {
            key_id: key_id.to_owned(),
            label: label.to_owned(),
            proof: DeviceProof::EnrolCode,
            decided_by: None,
            nonce: None,
        }
    }

    /// A later device, enrolled by a decision of `decided_by` with `nonce`.
    pub fn enrolled_by_decision(
        key_id: &str,
        label: &str,
        decided_by: &str,
        nonce: &str,
    ) -> DeviceDetail {
        DeviceDetail::Enrol {
            key_id: key_id.to_owned(),
            label: label.to_owned(),
            proof: DeviceProof::Decision,
            decided_by: Some(decided_by.to_owned()),
            nonce: Some(nonce.to_owned()),
        }
    }
}

/// How a new device was proven to be its person's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceProof {
    /// A one-time code the operator issued.
    EnrolCode,
    /// A decision signed by one of the person's devices.
    Decision,
}

/// A credential of the vault, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum VaultDetail {
    Add { name: String },
    Replace { name: String },
    Delete { name: String },
}

/// A setting for every host on the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum HostDetail {
    /// The `tool.propose` switch, at its new version.
    ToolPropose { enabled: bool, version: i64 },
}

/// How this host started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConfigDetail {
    /// The loopback ports the operator opened to cells' egress.
    EgressLoopbackPorts { ports: Vec<u16> },
}

/// A session's life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum SessionDetail {
    /// Started by its person, with the agent in force.
    Start {
        agent: String,
        version: i64,
        bundle_sha256: String,
    },
    /// Tainted (by the host), by the first source: its SHA-256 (entries written before held the
    /// source's text, which names a file or a URL of the person's conversation).
    Taint {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source_sha256: Option<String>,
    },
    /// Ended (by the host): `stopped`, `host_restarted`, or the cell's kind, and the message
    /// (escaped, cut).
    End { reason: String, message: String },
    /// Its conversation deleted by its person: its messages and title are gone.
    Delete {},
}

/// A proposal made by a session's agent, or decided by its person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProposalDetail {
    Propose(Proposed),
    Accept(ProposalDecided),
    Reject(ProposalDecided),
    /// A tool proposal approved on a device (and deployed).
    Approve(ToolProposalDecided),
    /// A tool proposal denied on a device.
    Deny(ToolProposalDecided),
}

/// What a session's agent proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Proposed {
    /// A tool: its hashes and authority diff, never its code.
    Tool(ToolProposed),
    /// A memory entry, suggestion, plan or card: its payload's hash.
    Other(OtherProposed),
}

/// The kind of a tool proposal: always `tool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Tool,
}

/// A tool proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolProposed {
    pub kind: ToolKind,
    pub session: String,
    pub name: String,
    pub version: i64,
    pub bundle_sha256: String,
    pub bundle_size: u64,
    pub manifest_sha256: String,
    pub description_sha256: String,
    pub tainted: bool,
    pub authority_diff: Vec<Change>,
}

/// A memory entry, suggestion, plan or card proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherProposed {
    /// `memory`, `suggestion`, `plan` or `card`.
    pub kind: String,
    pub session: String,
    pub tainted: bool,
    pub payload_sha256: String,
}

/// A memory entry, suggestion, plan or card accepted or rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposalDecided {
    pub kind: String,
    pub tainted: bool,
    pub confirm_tainted: bool,
}

/// A tool proposal decided on a device. What it says of the proposal (`name` to
/// `granted_diff`, each `null` otherwise) is what was proposed only when its row held the
/// host's seal; `refused` says why the host refused the row, when it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolProposalDecided {
    pub kind: ToolKind,
    pub name: Option<String>,
    pub version: Option<i64>,
    pub bundle_sha256: Option<String>,
    pub manifest_sha256: Option<String>,
    pub ceiling_version: i64,
    pub policy_version: i64,
    pub decided_by: String,
    pub nonce: String,
    pub tainted: Option<bool>,
    pub confirm_tainted: bool,
    pub dropped: Option<Vec<Dropped>>,
    pub granted_diff: Option<Vec<Change>>,
    pub refused: Option<String>,
}

/// A person's tool (`u/<user>/<name>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolDetail {
    /// Deployed on approval: the clamped manifest's hash and the egress mode in force.
    Deploy {
        tool: String,
        version: i64,
        bundle_sha256: String,
        manifest_sha256: Option<String>,
        egress_mode: EgressMode,
        tainted: bool,
        host_key_id: String,
    },
    /// Its taint cleared by a device's decision.
    ClearTaint {
        tool: String,
        version: i64,
        decided_by: String,
        nonce: String,
    },
    /// Revoked, every version: the row's version and hash when there was one, the version the
    /// revocation mark covers, and what the database said.
    Revoke {
        tool: String,
        version: Option<i64>,
        revoked_version: i64,
        bundle_sha256: Option<String>,
        database: RevokedInDatabase,
    },
}

/// What the database said of a tool a revoke named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RevokedInDatabase {
    /// In force until this revoke.
    #[serde(rename = "revoked")]
    Revoked,
    /// Marked revoked already.
    #[serde(rename = "revoked already")]
    RevokedAlready,
    /// No row: the mark is raised all the same.
    #[serde(rename = "no row")]
    NoRow,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// The list of kinds is the list `read` knows: every kind in it reaches its own shape's
    /// check, and a kind outside it is refused as unknown.
    #[test]
    fn the_list_of_kinds_is_the_kinds_read_knows() {
        let unknown = |kind: &str| {
            JournalDetail::read(kind, &json!(null))
                .expect_err("null is no detail")
                .to_string()
                .contains("no journal entry is of kind")
        };
        for kind in JOURNAL_KINDS {
            assert!(!unknown(kind), "{kind} is not read");
        }
        assert!(unknown("tools"));
        assert!(unknown(""));
    }

    /// Each detail writes the JSON the host wrote before details were typed (field for field,
    /// `null`s included), and reads back as itself.
    pub(crate) fn check(detail: JournalDetail, written: Value) {
        assert_eq!(detail.to_value().expect("serializes"), written);
        assert_eq!(
            JournalDetail::read(detail.kind(), &written).expect("reads"),
            detail
        );
    }

    #[test]
    fn the_detail_of_each_kind_is_the_json_written_before() {
        check(
            JournalDetail::Device(DeviceDetail::enrolled_by_code("k", "phone")),
            json!({"key_id": "k", "label": "phone", "action": "enrol", "proof": "enrol_code"}),
        );
        check(
            JournalDetail::Device(DeviceDetail::enrolled_by_decision("k", "", "d", "n")),
            json!({"key_id": "k", "label": "", "action": "enrol", "proof": "decision",
                   "decided_by": "d", "nonce": "n"}),
        );
        check(
            JournalDetail::Tool(ToolDetail::Revoke {
                tool: "u/alice/gone".into(),
                version: None,
                revoked_version: 3,
                bundle_sha256: None,
                database: RevokedInDatabase::NoRow,
            }),
            json!({"action": "revoke", "tool": "u/alice/gone", "version": null,
                   "revoked_version": 3, "bundle_sha256": null, "database": "no row"}),
        );
        check(
            JournalDetail::Config(ConfigDetail::EgressLoopbackPorts { ports: vec![8080] }),
            json!({"action": "egress_loopback_ports", "ports": [8080]}),
        );
    }

    #[test]
    fn a_detail_of_another_shape_or_kind_is_refused() {
        let vault = json!({"name": "github", "action": "add"});
        assert!(JournalDetail::read("vault", &vault).is_ok());
        assert!(JournalDetail::read("token", &vault).is_err());
        assert!(JournalDetail::read("nothing", &vault).is_err());
        let mut extra = vault.clone();
        extra["value"] = json!("secret");
        assert!(JournalDetail::read("vault", &extra).is_err());
    }
}
