//! The operator's signed documents a host accepts: a person's ceiling and an agent's deploy
//! (its bundle, the signer's signature over it, and the policy that governs it). Each is
//! verified against the trust root in force, then checked again under the write lock: the
//! trust root unchanged, the version above every one accepted.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Attempt;
use crate::RuleError;
use crate::documents::{Ceiling, KeyRole, Policy, Signature, Signed};
use crate::manifest::Manifest;
use crate::trust::{Trust, check_increases};

/// Largest agent bundle a deploy may send, in bytes.
pub const BUNDLE_BYTES_MAX: usize = 16 << 20;

/// The attempt a signed document of type `kind` (signed by a policy key) made, for its
/// refusal's entry.
pub fn attempt(trust: Option<&Trust>, envelope: &Signed, kind: &str) -> Attempt {
    Attempt {
        version: envelope.signed.get("version").and_then(Value::as_i64),
        key_id: envelope.signature.key_id.clone(),
        verified: trust.is_some_and(|trust| trust.signature_holds(envelope, KeyRole::Policy, kind)),
    }
}

/// What the write lock shows of the host's state.
#[derive(Debug, Clone, Copy)]
pub struct Locked {
    /// The trust root version the document was verified against, and the one in force now.
    pub root_checked: i64,
    pub root_now: i64,
    /// The highest version of this document (or agent) ever accepted.
    pub highest: i64,
}

/// Refuses a document checked against a trust root that changed since.
fn root_unchanged(locked: &Locked) -> Result<(), RuleError> {
    if locked.root_now == locked.root_checked {
        return Ok(());
    }
    Err(RuleError::Conflict(format!(
        "the trust root changed to version {} while this was checked against version {}: send \
         it again",
        locked.root_now, locked.root_checked
    )))
}

/// A ceiling for `user`, verified: signed by an active policy key, for that user, not expired.
pub fn verify_ceiling(
    trust: &Trust,
    user: &str,
    envelope: &Signed,
    now_s: i64,
) -> Result<Ceiling, RuleError> {
    let ceiling = trust.verify_ceiling(envelope, now_s)?;
    if ceiling.user != user {
        return Err(RuleError::invalid(
            "ceiling.user",
            format!("the ceiling is for {}, not {user}", ceiling.user),
        ));
    }
    Ok(ceiling)
}

/// A verified ceiling, under the lock.
pub fn check_ceiling(ceiling: &Ceiling, locked: &Locked) -> Result<(), RuleError> {
    root_unchanged(locked)?;
    check_increases(
        &format!("the ceiling for {}", ceiling.user),
        ceiling.version,
        locked.highest,
    )
}

/// What a deploy sends.
#[derive(Debug, Clone, Copy)]
pub struct Deploy<'a> {
    pub bundle: &'a [u8],
    pub bundle_signature: &'a Signature,
    pub policy: &'a Signed,
}

/// A deploy that verified: the bundle's hash, the policy and its manifest.
#[derive(Debug, Clone)]
pub struct Verified {
    pub bundle_sha256: String,
    pub policy: Policy,
    pub manifest: Manifest,
}

/// A deploy, verified: the bundle a component signed by an active signer key, the policy by an
/// active policy key and for this bundle, every credential it names in the operator's vault
/// (`operator_credentials`, by name).
pub fn verify_deploy(
    trust: &Trust,
    deploy: &Deploy<'_>,
    operator_credentials: &BTreeSet<String>,
    now_s: i64,
) -> Result<Verified, RuleError> {
    if deploy.bundle.len() > BUNDLE_BYTES_MAX {
        return Err(RuleError::invalid(
            "bundle",
            format!(
                "{} bytes, more than the {BUNDLE_BYTES_MAX} allowed",
                deploy.bundle.len()
            ),
        ));
    }
    crate::manifest::check_component(deploy.bundle, "bundle")?;
    let bundle_sha256 = trust.verify_bundle(deploy.bundle, deploy.bundle_signature)?;
    let (policy, manifest) = trust.verify_policy(deploy.policy, now_s)?;
    if policy.bundle_sha256 != bundle_sha256 {
        return Err(RuleError::invalid(
            "policy.bundle_sha256",
            "the policy governs another bundle than the one sent",
        ));
    }
    if let Some(missing) = manifest
        .credentials
        .iter()
        .find(|credential| !operator_credentials.contains(&credential.name))
    {
        return Err(RuleError::MissingCredential {
            owner: "operator".into(),
            name: missing.name.clone(),
        });
    }
    Ok(Verified {
        bundle_sha256,
        policy,
        manifest,
    })
}

/// A verified deploy, under the lock.
pub fn check_deploy(verified: &Verified, locked: &Locked) -> Result<(), RuleError> {
    root_unchanged(locked)?;
    check_increases(
        &format!("agent {}", verified.manifest.name),
        verified.manifest.version,
        locked.highest,
    )
}

/// A verified rotation to trust root version `next`, under the lock: the root it was checked
/// against is still the one in force (a rotation accepted meanwhile refuses this one, which a
/// key that rotation retired may have signed), and `next` is above it.
pub fn check_rotation(next: i64, locked: &Locked) -> Result<(), RuleError> {
    root_unchanged(locked)?;
    check_increases("the trust root", next, locked.root_checked)
}
