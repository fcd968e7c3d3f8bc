//! A person's device-signed approval of one waiting egress use (where the agent's manifest
//! asks for a device signature). A denial needs no decision: refusing grants nothing.

use std::collections::BTreeMap;

use super::{Signer, signed};
use crate::RuleError;
use crate::decision::{Decision, DecisionKind, Expected};
use crate::documents::Signed;

/// The use as the host showed it.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// The waiting use's id.
    pub use_id: &'a str,
    /// `request` and `body`, as shown.
    pub hashes: &'a BTreeMap<String, String>,
    /// The agent's version that asked.
    pub agent_version: i64,
    pub signer: Signer<'a>,
}

/// Checks an `approve_egress` decision for the use in `snapshot`; `approve` is what the
/// person's answer says (a decision that denies is refused: deny without one).
pub fn check(
    snapshot: &Snapshot<'_>,
    envelope: &Signed,
    approve: bool,
) -> Result<Decision, RuleError> {
    if !approve {
        return Err(RuleError::Decision(
            "an approve_egress decision approves; deny without one".into(),
        ));
    }
    signed(envelope, &expected(snapshot), &snapshot.signer)
}

/// Checks an approval another host recorded, again, where the use waits: it holds for the use
/// as this host showed it. Its nonce was consumed where it was recorded.
pub fn check_recorded(snapshot: &Snapshot<'_>, envelope: &Signed) -> Result<Decision, RuleError> {
    signed(envelope, &expected(snapshot), &snapshot.signer)
}

fn expected<'a>(snapshot: &Snapshot<'a>) -> Expected<'a> {
    Expected {
        kind: DecisionKind::ApproveEgress,
        subject: snapshot.use_id,
        hashes: snapshot.hashes,
        ceiling_version: 0,
        policy_version: snapshot.agent_version,
        user: snapshot.signer.user,
    }
}
