//! A person's device-signed decision to clear a deployed tool's taint: its egress stops asking
//! for every use.

use std::collections::BTreeMap;

use super::{Signer, ceiling_unchanged, signed};
use crate::RuleError;
use crate::authority::manifest_sha256;
use crate::decision::{Decision, DecisionKind, Expected};
use crate::documents::Signed;
use crate::keys::PublicKey;
use crate::manifest::{Manifest, cut};
use crate::seal::{ToolFields, check_tool};

/// What the person was shown: the basis a `clear_taint` decision must name, or why there is
/// none.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// Why the host refuses the tool's row, if it does.
    pub refused: Option<&'a str>,
    /// `u/<user>/<name>@<version>`, the hashes and the ceiling version to name (`None`: the
    /// tool carries no taint to clear).
    pub basis: Option<(&'a str, &'a BTreeMap<String, String>, i64)>,
}

/// The tool's row as read under the lock.
#[derive(Debug, Clone, Copy)]
pub struct Locked<'a> {
    pub fields: ToolFields<'a>,
    pub seal: &'a str,
    /// Revoked by the row or by either high-water mark.
    pub revoked: bool,
}

/// Everything clearing a taint depends on, read under the write lock that applies it.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// The tool's name as the person wrote it (shown in refusals, cut).
    pub name: &'a str,
    pub shown: Shown<'a>,
    pub locked: Locked<'a>,
    pub host_key: &'a PublicKey,
    pub ceiling_now: i64,
    pub signer: Signer<'a>,
}

/// Checks a `clear_taint` decision against `snapshot`; the verified decision is the plan.
pub fn check(snapshot: &Snapshot<'_>, envelope: &Signed) -> Result<Decision, RuleError> {
    if let Some(refused) = snapshot.shown.refused {
        return Err(RuleError::Untrusted(refused.to_owned()));
    }
    let Some((subject, hashes, ceiling_version)) = snapshot.shown.basis else {
        return Err(RuleError::Conflict(format!(
            "{} carries no taint to clear",
            cut(snapshot.name)
        )));
    };
    check_row(snapshot, subject)?;
    check_names_the_row(&snapshot.locked.fields, hashes)?;
    ceiling_unchanged(ceiling_version, snapshot.ceiling_now)?;
    let expected = Expected {
        kind: DecisionKind::ClearTaint,
        subject,
        hashes,
        ceiling_version,
        policy_version: 0,
        user: snapshot.signer.user,
    };
    signed(envelope, &expected, &snapshot.signer)
}

/// The row is live, tainted, the version shown, and sealed by this host.
fn check_row(snapshot: &Snapshot<'_>, subject: &str) -> Result<(), RuleError> {
    let locked = &snapshot.locked;
    let fields = &locked.fields;
    let (user, name) = (fields.user, fields.name);
    if locked.revoked {
        return Err(RuleError::Conflict(format!("u/{user}/{name} is revoked")));
    }
    if !fields.tainted || fields.taint_cleared.is_some() {
        return Err(RuleError::Conflict(format!(
            "u/{user}/{name} carries no taint to clear"
        )));
    }
    if format!("u/{user}/{name}@{}", fields.version) != subject {
        return Err(RuleError::Conflict(
            "a newer version was deployed while the decision was checked".into(),
        ));
    }
    check_tool(snapshot.host_key, fields, locked.seal)
}

/// The decision's hashes are those of the row's code and manifest.
fn check_names_the_row(
    fields: &ToolFields<'_>,
    hashes: &BTreeMap<String, String>,
) -> Result<(), RuleError> {
    let manifest: Manifest = serde_json::from_str(fields.manifest)
        .map_err(|error| RuleError::Canonical(format!("a stored tool: {error}")))?;
    let named = |key: &str| hashes.get(key).map(String::as_str);
    if named("bundle") != Some(fields.bundle_sha256)
        || named("manifest") != Some(manifest_sha256(&manifest).as_str())
    {
        return Err(RuleError::Decision(
            "the tool changed while the decision was checked; review it again".into(),
        ));
    }
    Ok(())
}
