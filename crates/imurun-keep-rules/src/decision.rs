//! The one format for everything a person's device decides: approving or denying a proposal,
//! clearing taint, approving one egress use, enrolling another device. A decision is a
//! canonical-JSON document signed with one of the person's registered device keys, and
//! [`verify_decision`] is the one verifier: signature, key ownership and retirement, the
//! decision's kind, subject, hashes and the versions it was decided against, and its time window.
//! The nonce is checked last, by the caller, consuming it atomically in the store so that a
//! decision counts once on every host.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::RuleError;
use crate::canonical::SAFE_INTEGER_MAX;
use crate::documents::{DECISION_TYPE, Signed, check_type, check_user};
use crate::keys::{KeyPair, PublicKey};
use crate::manifest::{check_range, cut, from_value};
use crate::random::Random;

/// The longest a decision may be valid, in seconds: a decision is made for something waiting
/// now, not kept for later.
pub const DECISION_LIFETIME_S_MAX: i64 = 24 * 60 * 60;

/// How far a decision's `issued_at` may be ahead of the host's clock, in seconds: devices'
/// clocks drift.
pub const CLOCK_SKEW_S_MAX: i64 = 300;

/// Characters of a subject id.
pub const SUBJECT_CHARS_MAX: usize = 128;
/// Hashes one decision names.
pub const HASHES_MAX: usize = 8;
/// Shortest and longest nonce, in characters.
pub const NONCE_CHARS: std::ops::RangeInclusive<usize> = 16..=64;

/// What a device decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Deploy a proposed tool (clamped to the ceiling).
    ApproveProposal,
    /// Refuse a proposed tool.
    DenyProposal,
    /// Lift the taint mark of a deployed tool (its egress leaves ask mode).
    ClearTaint,
    /// Let one waiting egress use through.
    ApproveEgress,
    /// Register another device key for the same person.
    EnrolDevice,
    /// Retire one of the person's device keys (the signing key itself, or another of hers).
    RetireDevice,
}

impl DecisionKind {
    /// The name used in the document.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::ApproveProposal => "approve_proposal",
            DecisionKind::DenyProposal => "deny_proposal",
            DecisionKind::ClearTaint => "clear_taint",
            DecisionKind::ApproveEgress => "approve_egress",
            DecisionKind::EnrolDevice => "enrol_device",
            DecisionKind::RetireDevice => "retire_device",
        }
    }
}

/// A decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// [`DECISION_TYPE`].
    #[serde(rename = "type")]
    pub kind_of_document: String,
    /// What is decided.
    pub kind: DecisionKind,
    /// The id of what it is about: a proposal, a tool, a waiting egress use, a new device key.
    pub subject: String,
    /// The subject's hashes, by name (`bundle`, `manifest`, `public_key`): the decision holds
    /// for exactly these bytes.
    pub hashes: BTreeMap<String, String>,
    /// The version of the person's ceiling it was decided against (0: the empty ceiling).
    pub ceiling_version: i64,
    /// The version of the policy it was decided against (0 where no policy applies).
    pub policy_version: i64,
    /// Whose decision it is.
    pub user: String,
    /// The device key that signs it.
    pub device_key_id: String,
    /// Used once, ever.
    pub nonce: String,
    /// Seconds since the Unix epoch.
    pub issued_at: i64,
    /// Seconds since the Unix epoch; at most [`DECISION_LIFETIME_S_MAX`] after `issued_at`.
    pub expires_at: i64,
    /// The explicit confirm a tainted subject needs.
    #[serde(default)]
    pub confirm_tainted: bool,
}

/// What the host expects a decision to say, from its own state.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    pub kind: DecisionKind,
    pub subject: &'a str,
    pub hashes: &'a BTreeMap<String, String>,
    pub ceiling_version: i64,
    pub policy_version: i64,
    pub user: &'a str,
}

/// A registered device key.
#[derive(Debug, Clone)]
pub struct DeviceKey {
    pub key_id: String,
    pub public_key: PublicKey,
    pub user: String,
    pub retired: bool,
}

impl Decision {
    /// A new decision by `device` for `expected`, valid for `lifetime_s` from `now`, with a
    /// fresh nonce from `random`.
    pub fn new(
        random: &dyn Random,
        expected: &Expected<'_>,
        device: &KeyPair,
        now: i64,
        lifetime_s: i64,
        confirm_tainted: bool,
    ) -> Result<Decision, RuleError> {
        let mut nonce = [0_u8; 16];
        random.fill(&mut nonce)?;
        Ok(Decision {
            kind_of_document: DECISION_TYPE.to_owned(),
            kind: expected.kind,
            subject: expected.subject.to_owned(),
            hashes: expected.hashes.clone(),
            ceiling_version: expected.ceiling_version,
            policy_version: expected.policy_version,
            user: expected.user.to_owned(),
            device_key_id: device.key_id(),
            nonce: hex::encode(nonce),
            issued_at: now,
            expires_at: now.saturating_add(lifetime_s),
            confirm_tainted,
        })
    }

    fn validate(&self) -> Result<(), RuleError> {
        check_type(&self.kind_of_document, DECISION_TYPE, "decision.type")?;
        if self.subject.is_empty() || self.subject.chars().count() > SUBJECT_CHARS_MAX {
            return Err(RuleError::invalid(
                "decision.subject",
                format!("1 to {SUBJECT_CHARS_MAX} characters"),
            ));
        }
        if self.hashes.len() > HASHES_MAX {
            return Err(RuleError::invalid(
                "decision.hashes",
                format!("more than the {HASHES_MAX} allowed"),
            ));
        }
        for (name, value) in &self.hashes {
            crate::keys::hex_exact::<32>(value, "hash").map_err(|error| {
                RuleError::invalid(format!("decision.hashes.{}", cut(name)), error.to_string())
            })?;
        }
        check_range(
            self.ceiling_version,
            0,
            SAFE_INTEGER_MAX,
            "decision.ceiling_version",
        )?;
        check_range(
            self.policy_version,
            0,
            SAFE_INTEGER_MAX,
            "decision.policy_version",
        )?;
        check_user(&self.user, "decision.user")?;
        let nonce_ok = NONCE_CHARS.contains(&self.nonce.len())
            && self
                .nonce
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
        if !nonce_ok {
            return Err(RuleError::invalid(
                "decision.nonce",
                "16 to 64 of letters, digits, `-` and `_`",
            ));
        }
        check_range(self.issued_at, 0, SAFE_INTEGER_MAX, "decision.issued_at")?;
        check_range(self.expires_at, 0, SAFE_INTEGER_MAX, "decision.expires_at")
    }
}

/// Checks a signed decision against what the host expects, with the device key `lookup` finds
/// for the signature's key id. Everything but the nonce: the caller consumes the returned
/// decision's nonce in the store, atomically, and refuses it if it was used.
pub fn verify_decision(
    envelope: &Signed,
    expected: &Expected<'_>,
    lookup: impl FnOnce(&str) -> Option<DeviceKey>,
    now: i64,
) -> Result<Decision, RuleError> {
    let decision: Decision = from_value(&envelope.signed, "decision")?;
    decision.validate()?;
    if decision.device_key_id != envelope.signature.key_id {
        return Err(RuleError::Decision(
            "the decision names one device key and is signed by another".into(),
        ));
    }
    // Another user's key reads exactly as a key that was never registered: a refusal must not
    // tell one user whether another user's device exists.
    let device = lookup(&envelope.signature.key_id)
        .filter(|device| device.user == expected.user)
        .ok_or_else(|| {
            RuleError::Untrusted(format!(
                "device key {} is not one of {}'s registered devices",
                cut(&envelope.signature.key_id),
                expected.user
            ))
        })?;
    if decision.user != expected.user {
        return Err(RuleError::Untrusted(format!(
            "the decision must be {}'s, made with one of their devices",
            expected.user
        )));
    }
    if device.retired {
        return Err(RuleError::Untrusted(format!(
            "device key {} is retired",
            device.key_id
        )));
    }
    envelope.verify_with(&device.public_key, DECISION_TYPE)?;
    check_matches(&decision, expected)?;
    check_window(&decision, now)?;
    Ok(decision)
}

fn check_matches(decision: &Decision, expected: &Expected<'_>) -> Result<(), RuleError> {
    if decision.kind != expected.kind {
        return Err(RuleError::Decision(format!(
            "it decides {}, and this needs {}",
            decision.kind.as_str(),
            expected.kind.as_str()
        )));
    }
    if decision.subject != expected.subject {
        return Err(RuleError::Decision(format!(
            "it is about {}, not {}",
            cut(&decision.subject),
            expected.subject
        )));
    }
    if &decision.hashes != expected.hashes {
        return Err(RuleError::Decision(
            "its hashes are not those of the subject as it is now".into(),
        ));
    }
    // A retirement depends on no ceiling or policy: both versions are 0 by definition.
    let independent = expected.kind == DecisionKind::RetireDevice;
    if decision.ceiling_version != expected.ceiling_version {
        return Err(RuleError::Decision(if independent {
            format!(
                "it names ceiling version {}; a {} decision names 0",
                decision.ceiling_version,
                expected.kind.as_str()
            )
        } else {
            format!(
                "it was decided against ceiling version {}; the ceiling in force is version {}",
                decision.ceiling_version, expected.ceiling_version
            )
        }));
    }
    if decision.policy_version != expected.policy_version {
        return Err(RuleError::Decision(if independent {
            format!(
                "it names policy version {}; a {} decision names 0",
                decision.policy_version,
                expected.kind.as_str()
            )
        } else {
            format!(
                "it was decided against policy version {}; the policy in force is version {}",
                decision.policy_version, expected.policy_version
            )
        }));
    }
    Ok(())
}

fn check_window(decision: &Decision, now: i64) -> Result<(), RuleError> {
    if decision.issued_at > now.saturating_add(CLOCK_SKEW_S_MAX) {
        return Err(RuleError::Decision(format!(
            "it was issued at {}, in the future (now {now})",
            decision.issued_at
        )));
    }
    if decision.expires_at.saturating_sub(decision.issued_at) > DECISION_LIFETIME_S_MAX {
        return Err(RuleError::Decision(format!(
            "it is valid for more than {DECISION_LIFETIME_S_MAX} seconds"
        )));
    }
    crate::trust::check_expiry("the decision", decision.expires_at, now)
}
