//! Retiring one of a person's device keys: a decision signed by one of her live devices, the
//! key being retired included. A token alone retires nothing: whoever can make her a token (the
//! operator) cannot take her devices away and then enrol one of his own with a code.

use super::{Signer, signed};
use crate::RuleError;
use crate::decision::{Decision, DecisionKind, DeviceKey, Expected};
use crate::documents::Signed;

/// Everything a `retire_device` decision depends on, read under the write lock.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// The device to retire, as registered (the host answers a key that is not the person's
    /// as one that does not exist before it checks).
    pub device: &'a DeviceKey,
    pub signer: Signer<'a>,
}

/// Checks a person's decision to retire one of her devices; the verified decision is the plan.
/// It names no ceiling or policy version (both 0): a retirement depends on neither.
pub fn check(snapshot: &Snapshot<'_>, envelope: &Signed) -> Result<Decision, RuleError> {
    let device = snapshot.device;
    if device.user != snapshot.signer.user {
        return Err(RuleError::Untrusted(
            "the device is another person's".into(),
        ));
    }
    if device.retired {
        return Err(RuleError::Conflict(format!(
            "device {} is retired already",
            device.key_id
        )));
    }
    let hashes = super::device_hashes(&device.public_key);
    let expected = Expected {
        kind: DecisionKind::RetireDevice,
        subject: &device.key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user: snapshot.signer.user,
    };
    signed(envelope, &expected, &snapshot.signer)
}
