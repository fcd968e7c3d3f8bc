//! Keep's device-signed decisions as pure checks. The host reads a snapshot of everything a
//! decision depends on under the write lock that will apply it, calls the decision's `check`,
//! and applies the plan it returns (or journals the refusal): the host holds no rule of its
//! own, and a test can give a check any state without a database.
//!
//! Every check verifies the signed decision the same way ([`signed`]): the device that signed
//! it is the person's, live, and the decision names exactly the subject, hashes and versions
//! the snapshot holds now. The nonce is consumed by the host when it applies the plan, in the
//! same transaction.

pub mod clear_taint;
pub mod documents;
pub mod egress_answer;
pub mod enrol;
pub mod retire_device;
pub mod revoke;
pub mod tool_decision;
pub mod tool_review;

use crate::RuleError;
use crate::decision::{Decision, DeviceKey, Expected, verify_decision};
use crate::documents::Signed;

/// What a refused request claimed: the version and the key id it names, and whether its
/// signature holds (else they are only claimed). A refusal's journal entry records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    pub version: Option<i64>,
    pub key_id: String,
    pub verified: bool,
}

/// The attempt a device-signed decision made: its key id, verified when `device` (the one
/// registered under it) is `user`'s and signed it.
pub fn decision_attempt(envelope: &Signed, device: Option<&DeviceKey>, user: &str) -> Attempt {
    let verified = device.is_some_and(|device| {
        device.user == user
            && envelope
                .verify_with(&device.public_key, crate::documents::DECISION_TYPE)
                .is_ok()
    });
    Attempt {
        version: None,
        key_id: envelope.signature.key_id.clone(),
        verified,
    }
}

/// The hashes a decision about a device key names (`enrol_device`, `retire_device`): the
/// SHA-256 of its 32 bytes, as `public_key`.
pub fn device_hashes(key: &crate::keys::PublicKey) -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::from([("public_key".to_owned(), key.sha256())])
}

/// What every device-signed decision is checked against: who decides, the signing device as
/// registered (if it is), and the time.
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    /// The person whose decision it must be.
    pub user: &'a str,
    /// The device registered under the envelope's key id, read under the lock.
    pub device: Option<&'a DeviceKey>,
    /// Seconds since the Unix epoch.
    pub now_s: i64,
}

/// The signed decision in `envelope`, verified against `expected` (its `user` is the
/// signer's) and the device registered under its key id now.
pub fn signed(
    envelope: &Signed,
    expected: &Expected<'_>,
    signer: &Signer<'_>,
) -> Result<Decision, RuleError> {
    verify_decision(envelope, expected, |_| signer.device.cloned(), signer.now_s)
}

/// Refuses a decision made against a ceiling version that is no longer in force.
pub(crate) fn ceiling_unchanged(decided: i64, now: i64) -> Result<(), RuleError> {
    if decided == now {
        return Ok(());
    }
    Err(RuleError::Decision(format!(
        "the ceiling changed to version {now} while the decision was checked; review it again"
    )))
}
