//! Agent-proposed tools: a cell's `tool.propose` stored for its person, the review (the
//! authority diff against the proposing agent and the manifest clamped by the person's
//! ceiling), the device-signed decision that approves or denies it, the deploy into the
//! person's namespace (`u/<user>/<name>@<version>`), clearing a deployed tool's taint, and
//! revoking it.
//!
//! Nothing an agent does reaches past the proposal: no route or host function lets it approve,
//! deploy, sign, widen a manifest or clear a taint. Every decision is the person's, signed on
//! one of their devices, and the host re-checks everything it depends on under the write lock
//! that applies it: the proposal still pending, the ceiling and the agent's version unchanged,
//! the clamped manifest's hash the same, the nonce unused.

use imurun_keep_rules::RuleError;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::sessions::session_user;
use super::{Agents, Identity, ToolProposals, Tools};
use crate::KeepError;
use crate::authority::{self, Change, Dropped};
use crate::decision::DecisionKind;
use crate::documents::{Ceiling, Signed};
use crate::manifest::{EgressMode, Manifest};
use imurun_keep_rules::checks::{tool_decision, tool_review};

/// How tool proposals' ids start (other proposals' start `kp-`).
pub const TOOL_PROPOSAL_ID_PREFIX: &str = "kt-";

/// The `kind` of tools' high-water marks (subject `<user>/<name>`).
pub(crate) const TOOL_KIND: &str = "tool";
/// The `kind` of revocations' high-water marks (subject `<user>/<name>`, the highest version
/// revoked): kept outside the database too, so a revoke undone in the database does not hold.
pub(crate) const TOOL_REVOKED_KIND: &str = "tool_revoked";

/// Where a proposed tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolOrigin {
    /// The proposing agent, the version that proposed it, and the key that signed its bundle.
    pub agent: String,
    pub agent_version: i64,
    pub signer_key_id: String,
    pub session_id: String,
    pub created_at_ms: i64,
    /// What had tainted the session when it proposed the tool.
    pub taint_source: Option<String>,
}

/// A tool proposal's review, as its person reads it: where it came from, its authority diff
/// against the proposing agent, and the manifest clamped by their ceiling, which is what an
/// approval deploys. See `docs/keep/tools.md`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ToolReviewInfo))]
pub struct ToolReview {
    pub id: String,
    /// Always `tool`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^tool$"))]
    pub kind: &'static str,
    pub name: String,
    /// `u/<user>/<name>`: where it deploys.
    pub qualified_name: String,
    pub version: i64,
    /// Plain text; control and bidi characters are shown as `\u{XXXX}` escapes.
    pub description: String,
    pub bundle_sha256: String,
    pub bundle_size: i64,
    pub origin: ToolOrigin,
    pub tainted: bool,
    /// `pending`, `approved` or `denied`.
    pub state: String,
    pub decided_at_ms: Option<i64>,
    /// The manifest as proposed (hosts in normal form).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub proposed_manifest: Value,
    /// The authority the proposed manifest has beyond the proposing agent in force.
    pub authority_diff: Vec<Change>,
    /// True exactly when `authority_diff` is empty.
    pub no_new_authority: bool,
    /// What deploys if approved now: the proposed manifest clamped by the ceiling in force.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub clamped_manifest: Value,
    /// What the ceiling (and the person's connections) dropped or lowered, and why.
    pub dropped: Vec<Dropped>,
    /// The authority the clamped manifest has beyond the agent.
    pub granted_diff: Vec<Change>,
    /// What a decision must name: `bundle`, `manifest` (the clamped one) and `description`.
    pub hashes: BTreeMap<String, String>,
    /// The versions a decision must have been made against: the person's ceiling, and the
    /// proposing agent in force (0 when none is: then the diff is against no authority at all).
    pub ceiling_version: i64,
    pub policy_version: i64,
    /// An approval needs `confirm_tainted: true` in the signed decision.
    pub needs_confirm_tainted: bool,
    /// Why the review cannot be approved as it stands (a stored row that does not hold), if so.
    pub refused: Option<String>,
}

/// A deployed tool as its person sees it (`GET /v1/tools/{name}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepToolInfo))]
pub struct ToolView {
    pub name: String,
    pub qualified_name: String,
    pub version: i64,
    pub bundle_sha256: String,
    /// The clamped manifest the person approved.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub manifest: Value,
    /// The egress mode in force: `ask` while a tainted tool's taint is not cleared.
    pub egress_mode: EgressMode,
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub taint_cleared: bool,
    /// The device key that approved it.
    pub approved_by: String,
    pub proposal_id: String,
    /// The host key's signature over the row (bundle hash, manifest, decision, taint).
    pub host_signature: String,
    pub deployed_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    /// What a `clear_taint` decision must name, while the taint is not cleared (never for a
    /// row the host refuses).
    pub clear_taint: Option<DecisionBasis>,
    /// Why the host refuses this row (it does not hold this host's seal: edited in the
    /// database); such a tool is never called and its taint is never cleared.
    pub refused: Option<String>,
}

impl ToolView {
    /// The tool as the operator may see it: what tainted it names a file or an address of its
    /// person's conversation, which the operator never reads, and what clearing it must sign
    /// is for her device alone.
    pub fn for_operator(self) -> ToolView {
        ToolView {
            taint_source: None,
            clear_taint: None,
            ..self
        }
    }
}

/// What a device decision must name to be accepted now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecisionBasis {
    pub kind: DecisionKind,
    pub subject: String,
    pub hashes: BTreeMap<String, String>,
    pub ceiling_version: i64,
    pub policy_version: i64,
}

/// What a decision about a proposal is checked against, computed from the host's state.
pub(super) struct Basis {
    pub(super) review: ToolReview,
    pub(super) clamped: Manifest,
    pub(super) bundle_sha256: String,
}

impl Agents<'_> {
    /// The proposing agent in force: its manifest, version and bundle signer; `None` when none
    /// is (then a review compares against no authority at all).
    pub(super) async fn in_force(
        self,
        name: &str,
    ) -> Result<Option<(Manifest, i64, String)>, KeepError> {
        let Some(trust) = self.core.trust_if_any().await? else {
            return Ok(None);
        };
        let Some(row) = self.core.store().keep_agent(name).await? else {
            return Ok(None);
        };
        let view = match self.verified(row, &trust).await {
            Ok(view) => view,
            Err(error @ KeepError::Store(_)) => return Err(error),
            Err(_) => return Ok(None),
        };
        let manifest: Option<Manifest> = serde_json::from_value(view.manifest).ok();
        Ok(manifest.map(|manifest| (manifest, view.version, view.signer_key_id)))
    }
}

impl ToolProposals<'_> {
    /// A stored proposal's review against the host's state now.
    pub(super) async fn basis(
        self,
        row: imurun_store::ToolProposalRow,
    ) -> Result<Basis, KeepError> {
        let user = row.user_name.clone();
        let ceiling = self.keep.ceilings().in_force(&user).await?.ceiling;
        let connections: BTreeSet<String> = self
            .core
            .store()
            .keep_vault_entries(&format!("user:{user}"))
            .await?
            .into_iter()
            .map(|entry| entry.name)
            .collect();
        let agent = self.keep.agents().in_force(&row.agent).await?;
        let sealed = self.check_row(&row);
        let mut basis = review_of(row, agent, &ceiling, &connections);
        if let Err(error) = sealed {
            basis.review.refused = Some(error.to_string());
        }
        Ok(basis)
    }

    /// The calling person's tool proposals, newest first.
    pub async fn list(self, caller: &Identity) -> Result<Vec<ToolReview>, KeepError> {
        let user = session_user(caller)?;
        let mut reviews = Vec::new();
        for row in self.core.store().keep_tool_proposals(user).await? {
            reviews.push(self.basis(row).await?.review);
        }
        Ok(reviews)
    }

    /// One of the calling person's tool proposals; another person's reads as one that does not
    /// exist.
    pub async fn get(self, caller: &Identity, id: &str) -> Result<ToolReview, KeepError> {
        let user = session_user(caller)?;
        match self.core.store().keep_tool_proposal(id).await? {
            Some(row) if row.user_name == user => Ok(self.basis(row).await?.review),
            _ => Err(KeepError::NotFound("proposal")),
        }
    }

    /// Applies the person's device-signed decision on tool proposal `id`: `approve_proposal`
    /// deploys the clamped manifest as `u/<user>/<name>@<version>`; `deny_proposal` refuses it,
    /// also when the host refuses the proposal itself (it can then only be denied). Refusals
    /// are journaled with their reason.
    pub async fn decide(
        self,
        caller: &Identity,
        id: &str,
        envelope: &Signed,
    ) -> Result<ToolReview, KeepError> {
        let user = session_user(caller)?;
        let row = match self.core.store().keep_tool_proposal(id).await? {
            Some(row) if row.user_name == user => row,
            _ => return Err(KeepError::NotFound("proposal")),
        };
        let subject = format!("proposal:{id}");
        match self.try_decide(caller, user, row, envelope).await {
            Ok(review) => Ok(review),
            Err(error) => {
                let attempt = self.core.decision_attempt(envelope, user).await;
                let what = (Some(user), "decide_tool", subject.as_str());
                self.core
                    .refuse_attempt(caller, what, Some(attempt), error)
                    .await
            }
        }
    }
}

impl Tools<'_> {
    /// The calling person's tools, each at its highest version.
    pub async fn list(self, caller: &Identity) -> Result<Vec<ToolView>, KeepError> {
        self.all_of(session_user(caller)?).await
    }

    /// `user`'s tools, each at its highest version (for the operator's view of a person).
    pub(super) async fn all_of(self, user: &str) -> Result<Vec<ToolView>, KeepError> {
        let ceiling_version = self.keep.ceilings().in_force(user).await?.ceiling.version;
        let mut views = Vec::new();
        for row in self.core.store().keep_tools(user).await? {
            views.push(self.checked_tool_view(row, ceiling_version).await?);
        }
        Ok(views)
    }

    /// One of the calling person's tools, by name (`name` or `u/<user>/<name>`).
    pub async fn get(self, caller: &Identity, name: &str) -> Result<ToolView, KeepError> {
        let user = session_user(caller)?;
        let name = own_tool_name(user, name).ok_or(KeepError::NotFound("tool"))?;
        self.tool_of(user, name).await
    }

    /// `user`'s tool `name`, as its owner sees it.
    pub(super) async fn tool_of(self, user: &str, name: &str) -> Result<ToolView, KeepError> {
        let row = self
            .core
            .store()
            .keep_tool(user, name)
            .await?
            .ok_or(KeepError::NotFound("tool"))?;
        let ceiling_version = self.keep.ceilings().in_force(user).await?.ceiling.version;
        self.checked_tool_view(row, ceiling_version).await
    }

    /// [`tool_view`] with the host's verdict on the row's seal.
    async fn checked_tool_view(
        self,
        row: imurun_store::ToolRow,
        ceiling_version: i64,
    ) -> Result<ToolView, KeepError> {
        let mut refused = self
            .check_row_current(&row)
            .await
            .err()
            .map(|error| error.to_string());
        // A revoke undone in the database is shown as what it is: no call starts the tool.
        if row.revoked_at_ms.is_none() && self.revoked(&row).await? {
            refused.get_or_insert_with(|| {
                format!(
                    "u/{}/{} was revoked: the revocation mark covers version {} although the \
                     database says it is in force",
                    row.user_name, row.name, row.version
                )
            });
        }
        let mut view = tool_view(row, ceiling_version)?;
        if refused.is_some() {
            view.clear_taint = None;
        }
        view.refused = refused;
        Ok(view)
    }

    /// Lifts the taint mark of the calling person's tool `name` with their device-signed
    /// `clear_taint` decision: its egress leaves ask mode. Nothing a cell does reaches this.
    pub async fn clear_taint(
        self,
        caller: &Identity,
        name: &str,
        envelope: &Signed,
    ) -> Result<ToolView, KeepError> {
        let user = session_user(caller)?;
        let subject = format!("tool:u/{user}/{}", crate::manifest::cut(name));
        match self.try_clear_taint(caller, user, name, envelope).await {
            Ok(view) => Ok(view),
            Err(error) => {
                let attempt = self.core.decision_attempt(envelope, user).await;
                let what = (Some(user), "clear_taint", subject.as_str());
                self.core
                    .refuse_attempt(caller, what, Some(attempt), error)
                    .await
            }
        }
    }

    /// `user`'s tool `name` in force for a call: not revoked, sealed by this host, its
    /// manifest valid. `None` for a tool that does not exist or was revoked (one answer for
    /// both, and for another person's).
    pub(crate) async fn for_call(
        self,
        user: &str,
        name: &str,
    ) -> Result<Option<(imurun_store::ToolRow, Manifest)>, KeepError> {
        let Some(row) = self.core.store().keep_tool(user, name).await? else {
            return Ok(None);
        };
        if self.revoked(&row).await? {
            return Ok(None);
        }
        self.check_row_current(&row).await?;
        let mut manifest: Manifest = serde_json::from_str(&row.manifest)
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?;
        manifest.validate(crate::host::HostAllowance::Operator)?;
        // The ceiling in force bounds every call, not only the approval: a ceiling lowered or
        // expired since takes its authority away from tools deployed under the old one.
        let ceiling = self.keep.ceilings().in_force(user).await?.ceiling;
        let manifest = authority::clamp(&manifest, &ceiling).manifest;
        Ok(Some((row, manifest)))
    }

    /// [`Self::check_tool_row`], and that the row is the newest version ever deployed under its
    /// name: an older row, sealed but brought back by deleting newer ones in the database, is
    /// rolled back.
    async fn check_row_current(self, row: &imurun_store::ToolRow) -> Result<(), KeepError> {
        self.check_tool_row(row)?;
        let subject = format!("{}/{}", row.user_name, row.name);
        let deployed = self.core.high_water(
            TOOL_KIND,
            &subject,
            self.core
                .store()
                .keep_high_water(TOOL_KIND, &subject)
                .await?,
        )?;
        if row.version < deployed {
            return Err(KeepError::Rule(RuleError::RolledBack {
                what: format!("tool u/{subject}"),
                version: row.version,
                highest: deployed,
            }));
        }
        Ok(())
    }

    /// Checks a deployed tool's row against this host's seal: every column a call or a decision
    /// reads but its revocation.
    pub(super) fn check_tool_row(self, row: &imurun_store::ToolRow) -> Result<(), KeepError> {
        let fields = super::tool_decisions::tool_fields(row);
        Ok(crate::seal::check_tool(
            &self.core.host_key().public(),
            &fields,
            &row.seal,
        )?)
    }
}

impl ToolProposals<'_> {
    /// Checks a tool proposal's row against this host's seal.
    pub(crate) fn check_row(self, row: &imurun_store::ToolProposalRow) -> Result<(), KeepError> {
        let fields = proposal_fields(row);
        Ok(crate::seal::check_tool_proposal(
            &self.core.host_key().public(),
            &fields,
            &row.seal,
        )?)
    }

    /// Refuses a proposal whose name and version were deployed already (or a lower version):
    /// versions are immutable, and a new version is a new proposal.
    pub(super) async fn check_version_free(
        self,
        tx: &mut imurun_store::KeepTx,
        user: &str,
        (name, version): (&str, i64),
        bundle_sha256: &str,
    ) -> Result<(), KeepError> {
        let (deployed, highest) = self.version_state(tx, user, (name, version)).await?;
        Ok(tool_decision::version_free(
            (user, name, version),
            bundle_sha256,
            deployed.as_deref(),
            highest,
        )?)
    }

    /// The bundle hash deployed at `user`'s tool `name` at `version`, if any, and the highest
    /// version of it ever accepted (in the database and in the Keep folder).
    pub(crate) async fn version_state(
        self,
        tx: &mut imurun_store::KeepTx,
        user: &str,
        (name, version): (&str, i64),
    ) -> Result<(Option<String>, i64), KeepError> {
        let deployed = tx.tool_version_sha256(user, name, version).await?;
        let subject = format!("{user}/{name}");
        let highest = self.core.high_water(
            TOOL_KIND,
            &subject,
            tx.high_water(TOOL_KIND, &subject).await?,
        )?;
        Ok((deployed, highest))
    }
}

/// The review of a stored proposal, from the agent in force (`agent`: manifest, version), the
/// ceiling in force and the person's connections.
fn review_of(
    row: imurun_store::ToolProposalRow,
    agent: Option<(Manifest, i64, String)>,
    ceiling: &Ceiling,
    connections: &BTreeSet<String>,
) -> Basis {
    let (base, policy_version) = match agent {
        Some((manifest, version, _)) => (manifest, version),
        None => (authority::no_authority(), 0),
    };
    let proposed = tool_review::Proposed {
        manifest: &row.manifest,
        bundle_sha256: &row.bundle_sha256,
        description: &row.description,
    };
    let review = tool_review::review(&proposed, &base, ceiling, connections);
    let view = ToolReview {
        kind: "tool",
        qualified_name: format!("u/{}/{}", row.user_name, row.name),
        name: row.name,
        version: row.version,
        description: row.description,
        bundle_sha256: row.bundle_sha256.clone(),
        bundle_size: row.bundle_size,
        origin: ToolOrigin {
            agent: row.agent,
            agent_version: row.agent_version,
            signer_key_id: row.signer_key_id,
            session_id: row.session_id,
            created_at_ms: row.created_at_ms,
            taint_source: row.taint_source,
        },
        tainted: row.tainted,
        state: row.state,
        decided_at_ms: row.decided_at_ms,
        proposed_manifest: serde_json::to_value(&review.proposed).unwrap_or(Value::Null),
        no_new_authority: review.authority_diff.is_empty(),
        authority_diff: review.authority_diff,
        clamped_manifest: serde_json::to_value(&review.clamped).unwrap_or(Value::Null),
        dropped: review.dropped,
        granted_diff: review.granted_diff,
        hashes: review.hashes,
        ceiling_version: ceiling.version,
        policy_version,
        needs_confirm_tainted: row.tainted,
        refused: review.refused,
        id: row.id,
    };
    Basis {
        review: view,
        clamped: review.clamped,
        bundle_sha256: row.bundle_sha256,
    }
}

/// A tool name as its person may write it: `name` or `u/<user>/<name>`; `None` for another
/// person's namespace.
pub(crate) fn own_tool_name<'a>(user: &str, name: &'a str) -> Option<&'a str> {
    match name.strip_prefix("u/") {
        Some(rest) => {
            let (owner, name) = rest.split_once('/')?;
            (owner == user).then_some(name)
        }
        None => Some(name),
    }
}

fn tool_view(row: imurun_store::ToolRow, ceiling_version: i64) -> Result<ToolView, KeepError> {
    let manifest: Manifest = serde_json::from_str(&row.manifest).map_err(|error| {
        KeepError::Rule(RuleError::Canonical(format!("a stored tool: {error}")))
    })?;
    let taint_cleared = row.taint_cleared.is_some();
    let egress_mode = if row.tainted && !taint_cleared && manifest.egress.mode != EgressMode::Deny {
        EgressMode::Ask
    } else {
        manifest.egress.mode
    };
    let clear_taint =
        (row.tainted && !taint_cleared && row.revoked_at_ms.is_none()).then(|| DecisionBasis {
            kind: DecisionKind::ClearTaint,
            subject: format!("u/{}/{}@{}", row.user_name, row.name, row.version),
            hashes: BTreeMap::from([
                ("bundle".to_owned(), row.bundle_sha256.clone()),
                ("manifest".to_owned(), authority::manifest_sha256(&manifest)),
            ]),
            ceiling_version,
            policy_version: 0,
        });
    let approved_by = Signed::from_text(row.decision.as_bytes())
        .map(|envelope| envelope.signature.key_id)
        .unwrap_or_default();
    Ok(ToolView {
        qualified_name: format!("u/{}/{}", row.user_name, row.name),
        name: row.name,
        version: row.version,
        bundle_sha256: row.bundle_sha256,
        manifest: serde_json::to_value(&manifest).unwrap_or(Value::Null),
        egress_mode,
        tainted: row.tainted,
        taint_source: row.taint_source,
        taint_cleared,
        approved_by,
        proposal_id: row.proposal_id,
        host_signature: row.seal,
        deployed_at_ms: row.deployed_at_ms,
        revoked_at_ms: row.revoked_at_ms,
        clear_taint,
        refused: None,
    })
}

/// What a tool proposal's seal covers, read from its row.
pub(super) fn proposal_fields(
    row: &imurun_store::ToolProposalRow,
) -> crate::seal::ToolProposalFields<'_> {
    crate::seal::ToolProposalFields {
        id: &row.id,
        user: &row.user_name,
        session_id: &row.session_id,
        agent: &row.agent,
        agent_version: row.agent_version,
        signer_key_id: &row.signer_key_id,
        name: &row.name,
        version: row.version,
        description: &row.description,
        manifest: &row.manifest,
        bundle_sha256: &row.bundle_sha256,
        bundle_size: row.bundle_size,
        tainted: row.tainted,
        taint_source: row.taint_source.as_deref(),
        created_at_ms: row.created_at_ms,
    }
}
