//! The review of a proposed tool a person decides on: its manifest as proposed (or why the
//! stored one does not hold), the same manifest clamped by the person's ceiling and their
//! connections, the authority each has beyond the proposing agent, and the hashes a decision
//! names.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::authority::{self, Change, Clamped, Dropped};
use crate::documents::Ceiling;
use crate::host::HostAllowance;
use crate::keys::sha256_hex;
use crate::manifest::Manifest;

/// What a proposal is reviewed from.
#[derive(Debug, Clone, Copy)]
pub struct Proposed<'a> {
    /// The stored manifest's text.
    pub manifest: &'a str,
    pub bundle_sha256: &'a str,
    pub description: &'a str,
}

/// A proposal's review.
#[derive(Debug, Clone)]
pub struct Review {
    /// The manifest as proposed (no authority at all where the stored one does not hold).
    pub proposed: Manifest,
    /// Why the stored manifest does not hold, if it does not.
    pub refused: Option<String>,
    /// What deploys if approved now.
    pub clamped: Manifest,
    /// What the ceiling and the person's connections dropped or lowered, and why.
    pub dropped: Vec<Dropped>,
    /// The proposed manifest's authority beyond the agent's, and the clamped one's.
    pub authority_diff: Vec<Change>,
    pub granted_diff: Vec<Change>,
    /// `bundle`, `manifest` (the clamped one), `description` and `authority` (the review's
    /// diffs and drops).
    pub hashes: BTreeMap<String, String>,
}

/// Reviews `proposed` against `agent`, the proposing agent's manifest in force (or a manifest
/// with no authority where none is), the person's `ceiling` and `connections` (the names in
/// their vault).
pub fn review(
    proposed: &Proposed<'_>,
    agent: &Manifest,
    ceiling: &Ceiling,
    connections: &BTreeSet<String>,
) -> Review {
    let (manifest, refused) = match read_stored(proposed.manifest) {
        Ok(manifest) => (manifest, None),
        Err(error) => (
            authority::no_authority(),
            Some(format!("the stored proposal does not hold: {error}")),
        ),
    };
    let Clamped {
        manifest: mut clamped,
        mut dropped,
    } = authority::clamp(&manifest, ceiling);
    keep_connected(&mut clamped, &mut dropped, connections);
    let authority_diff = authority::diff(agent, &manifest);
    let granted_diff = authority::diff(agent, &clamped);
    let hashes = BTreeMap::from([
        ("bundle".to_owned(), proposed.bundle_sha256.to_owned()),
        ("manifest".to_owned(), authority::manifest_sha256(&clamped)),
        (
            "description".to_owned(),
            sha256_hex(proposed.description.as_bytes()),
        ),
        (
            "authority".to_owned(),
            authority::review_sha256(
                &serde_json::to_value(&authority_diff).unwrap_or(Value::Null),
                &serde_json::to_value(&dropped).unwrap_or(Value::Null),
                &serde_json::to_value(&granted_diff).unwrap_or(Value::Null),
            ),
        ),
    ]);
    Review {
        proposed: manifest,
        refused,
        clamped,
        dropped,
        authority_diff,
        granted_diff,
        hashes,
    }
}

/// A stored manifest read back and validated again.
fn read_stored(text: &str) -> Result<Manifest, String> {
    let mut manifest: Manifest = serde_json::from_str(text).map_err(|error| error.to_string())?;
    manifest
        .validate(HostAllowance::Operator)
        .map_err(|error| error.to_string())?;
    Ok(manifest)
}

/// Drops the credentials that are not the person's connections.
fn keep_connected(
    clamped: &mut Manifest,
    dropped: &mut Vec<Dropped>,
    connections: &BTreeSet<String>,
) {
    let mut kept = Vec::new();
    for (index, credential) in clamped.credentials.iter().enumerate() {
        if connections.contains(&credential.name) {
            kept.push(credential.clone());
        } else {
            dropped.push(Dropped {
                field: format!("credentials[{index}]"),
                entry: serde_json::to_value(credential).unwrap_or(Value::Null),
                reason: "it is not one of your connections (your vault holds no entry by this \
                         name)"
                    .into(),
            });
        }
    }
    clamped.credentials = kept;
}
