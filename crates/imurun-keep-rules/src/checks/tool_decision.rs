//! A person's device-signed decision on a proposed tool: approve (it deploys) or deny.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Signer, ceiling_unchanged, signed};
use crate::RuleError;
use crate::decision::{Decision, DecisionKind, Expected};
use crate::documents::Signed;
use crate::keys::PublicKey;
use crate::seal::{ToolProposalFields, check_tool_proposal};

/// The review the person decided on, computed from the host's state before the lock.
#[derive(Debug, Clone, Copy)]
pub struct Reviewed<'a> {
    /// The proposal's state when it was read for the review (`pending`, `approved`, `denied`).
    pub state: &'a str,
    /// What the decision must name: `bundle`, `manifest` (the clamped one), `description`.
    pub hashes: &'a BTreeMap<String, String>,
    pub ceiling_version: i64,
    /// The proposing agent's version the diff was made against (0: against no authority).
    pub policy_version: i64,
    pub tainted: bool,
    pub taint_source: Option<&'a str>,
    /// Why the review cannot be approved as it stands (a row that does not hold, forbidden
    /// authority), if so.
    pub refused: Option<&'a str>,
}

/// The proposal's row as read again under the lock, with its seal.
#[derive(Debug, Clone, Copy)]
pub struct Locked<'a> {
    pub fields: ToolProposalFields<'a>,
    pub seal: &'a str,
}

/// Everything a tool decision depends on, read under the write lock that applies it.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    pub proposal_id: &'a str,
    pub reviewed: Reviewed<'a>,
    /// The row, still pending (`None`: it was decided meanwhile).
    pub locked: Option<Locked<'a>>,
    /// The host key whose seal the row must hold.
    pub host_key: &'a PublicKey,
    /// The person's ceiling version in force.
    pub ceiling_now: i64,
    /// The proposing agent's highest accepted version.
    pub agent_now: i64,
    /// The bundle hash already deployed at the proposed name and version, if any.
    pub deployed_same_version: Option<&'a str>,
    /// The highest version of the tool ever accepted (in the database and in the Keep folder).
    pub tool_highest: i64,
    pub signer: Signer<'a>,
}

/// What the host applies.
#[derive(Debug, Clone)]
pub struct Plan {
    pub approve: bool,
    /// The verified decision (its nonce is consumed with the plan).
    pub decision: Decision,
    /// The row's seal failed under the lock: a denial still clears it away, but the journal
    /// names nothing the row says.
    pub unsealed: Option<String>,
}

impl Plan {
    /// Whether the journal may name what was proposed: the row held its seal at the review and
    /// under the lock.
    pub fn trusted(&self, reviewed: &Reviewed<'_>) -> bool {
        reviewed.refused.is_none() && self.unsealed.is_none()
    }
}

/// Whether `envelope` approves (anything else is read as a denial and verified as one).
pub fn approves(envelope: &Signed) -> bool {
    envelope.signed.get("kind").and_then(Value::as_str)
        == Some(DecisionKind::ApproveProposal.as_str())
}

/// Checks a decision on a proposed tool against `snapshot`.
pub fn check(snapshot: &Snapshot<'_>, envelope: &Signed) -> Result<Plan, RuleError> {
    let reviewed = &snapshot.reviewed;
    if reviewed.state != "pending" {
        return Err(RuleError::Conflict(format!(
            "the proposal was {} already",
            reviewed.state
        )));
    }
    let approve = approves(envelope);
    // A proposal the host refuses (edited in the database, or asking for what no manifest
    // may) never deploys; denying it grants nothing, so the person can clear it away.
    if approve && let Some(refused) = reviewed.refused {
        return Err(RuleError::Untrusted(refused.to_owned()));
    }
    let Some(locked) = &snapshot.locked else {
        return Err(RuleError::Conflict(
            "the proposal was decided already".into(),
        ));
    };
    // What deploys is read from this row: its seal is checked again, so a row edited between
    // the review and the lock never deploys.
    let unsealed = match check_tool_proposal(snapshot.host_key, &locked.fields, locked.seal) {
        Err(error) if approve => return Err(error),
        sealed => sealed.err().map(|error| error.to_string()),
    };
    check_versions(snapshot, locked)?;
    let kind = if approve {
        DecisionKind::ApproveProposal
    } else {
        DecisionKind::DenyProposal
    };
    let expected = Expected {
        kind,
        subject: snapshot.proposal_id,
        hashes: reviewed.hashes,
        ceiling_version: reviewed.ceiling_version,
        policy_version: reviewed.policy_version,
        user: snapshot.signer.user,
    };
    let decision = signed(envelope, &expected, &snapshot.signer)?;
    if approve {
        check_taint_confirmed(reviewed, &decision)?;
        check_version_free(snapshot, locked)?;
    }
    Ok(Plan {
        approve,
        decision,
        unsealed,
    })
}

/// The ceiling and the proposing agent are still at the versions the review compared against.
fn check_versions(snapshot: &Snapshot<'_>, locked: &Locked<'_>) -> Result<(), RuleError> {
    let reviewed = &snapshot.reviewed;
    ceiling_unchanged(reviewed.ceiling_version, snapshot.ceiling_now)?;
    if reviewed.policy_version != 0 && snapshot.agent_now != reviewed.policy_version {
        return Err(RuleError::Decision(format!(
            "the agent {} is at version {} now, not the {} the review compared against; review \
             the proposal again",
            locked.fields.agent, snapshot.agent_now, reviewed.policy_version
        )));
    }
    Ok(())
}

/// A tool proposed after its session was tainted deploys only with the explicit confirm.
fn check_taint_confirmed(reviewed: &Reviewed<'_>, decision: &Decision) -> Result<(), RuleError> {
    if !reviewed.tainted || decision.confirm_tainted {
        return Ok(());
    }
    // What tainted it is in the review; not here: a refusal is journaled, and the source
    // names a file or a URL of the person's conversation.
    Err(RuleError::ConfirmTainted(
        "this tool was proposed after its session was tainted (its review says by what): the \
         signed decision must say `confirm_tainted: true`"
            .to_owned(),
    ))
}

/// Versions are immutable and only rise: the version a tool decision deploys.
fn check_version_free(snapshot: &Snapshot<'_>, locked: &Locked<'_>) -> Result<(), RuleError> {
    let fields = &locked.fields;
    version_free(
        (fields.user, fields.name, fields.version),
        fields.bundle_sha256,
        snapshot.deployed_same_version,
        snapshot.tool_highest,
    )
}

/// Refuses `u/<user>/<name>@<version>` (with `bundle_sha256`) where that version is deployed
/// already (`deployed`: its bundle's hash) or is not above `highest`, the highest accepted.
pub fn version_free(
    (user, name, version): (&str, &str, i64),
    bundle_sha256: &str,
    deployed: Option<&str>,
    highest: i64,
) -> Result<(), RuleError> {
    if let Some(existing) = deployed {
        let what = if existing == bundle_sha256 {
            "with these bytes"
        } else {
            "with other bytes; versions are immutable"
        };
        return Err(RuleError::Conflict(format!(
            "u/{user}/{name}@{version} is deployed already {what}: propose a higher version"
        )));
    }
    crate::trust::check_increases(&format!("tool u/{user}/{name}"), version, highest)
}
