//! Enrolling a new device key: the request (the key, its label, and the new key's signature
//! proving it is held), and the existing device's signed decision that lets it in. A person's
//! first device comes in with an enrolment code instead.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Signer, signed};
use crate::RuleError;
use crate::decision::{Decision, DecisionKind, Expected};
use crate::documents::Signed;
use crate::keys::PublicKey;
use crate::manifest::{code_point, is_hidden_control};

/// Characters of a device's label.
pub const DEVICE_LABEL_CHARS_MAX: usize = 64;

/// What a new device sends about itself.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub user: &'a str,
    pub public_key: &'a str,
    pub label: &'a str,
    /// The new key's signature over [`possession_message`].
    pub possession: &'a str,
}

/// A request that holds: the key, its id, and the hashes a decision must name.
#[derive(Debug, Clone)]
pub struct NewDevice {
    pub key: PublicKey,
    pub key_id: String,
    pub hashes: BTreeMap<String, String>,
}

/// The bytes a new device key signs to prove it is held by whoever enrols it: the canonical
/// JSON of `{"type": "imurun.device_possession", "user", "public_key"}`.
pub fn possession_message(user: &str, key: &PublicKey) -> Vec<u8> {
    crate::canonical::canonicalize(&json!({
        "type": "imurun.device_possession",
        "user": user,
        "public_key": key.to_hex(),
    }))
}

/// Reads a request: the key is a strict Ed25519 key, the label plain text within bounds, and
/// the possession signature the new key's own.
pub fn read(request: &Request<'_>) -> Result<NewDevice, RuleError> {
    let key = PublicKey::from_hex(request.public_key)
        .map_err(|error| RuleError::invalid("public_key", error.to_string()))?;
    let label = request.label;
    if label.chars().count() > DEVICE_LABEL_CHARS_MAX {
        return Err(RuleError::invalid(
            "label",
            format!("at most {DEVICE_LABEL_CHARS_MAX} characters of plain text"),
        ));
    }
    if let Some(found) = label.chars().find(|c| is_hidden_control(*c)) {
        return Err(RuleError::invalid(
            "label",
            format!(
                "{} is a control, bidi or invisible formatting character; a label is plain text",
                code_point(found)
            ),
        ));
    }
    key.verify(&possession_message(request.user, &key), request.possession)
        .map_err(|_| {
            RuleError::Signature(
                "`possession` is not the new key's signature over this user and key".into(),
            )
        })?;
    Ok(NewDevice {
        key_id: key.key_id(),
        hashes: super::device_hashes(&key),
        key,
    })
}

/// Everything an `enrol_device` decision depends on, read under the write lock.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    pub device: &'a NewDevice,
    /// The ceiling version read before the lock, which the decision names.
    pub ceiling_version: i64,
    /// The ceiling version in force under the lock.
    pub ceiling_now: i64,
    pub signer: Signer<'a>,
}

/// Checks an existing device's decision to enrol the new one.
pub fn check(snapshot: &Snapshot<'_>, envelope: &Signed) -> Result<Decision, RuleError> {
    if snapshot.ceiling_now != snapshot.ceiling_version {
        return Err(RuleError::Conflict(
            "the ceiling changed while the decision was checked; try again".into(),
        ));
    }
    let expected = Expected {
        kind: DecisionKind::EnrolDevice,
        subject: &snapshot.device.key_id,
        hashes: &snapshot.device.hashes,
        ceiling_version: snapshot.ceiling_version,
        policy_version: 0,
        user: snapshot.signer.user,
    };
    signed(envelope, &expected, &snapshot.signer)
}
