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
use std::net::IpAddr;

use serde::Serialize;
use serde_json::{Value, json};

use super::sessions::session_user;
use super::{Identity, KeepService, append, append_as};
use crate::KeepError;
use crate::authority::{self, Change, Clamped, Dropped};
use crate::cells::SessionHost;
use crate::decision::DecisionKind;
use crate::documents::{Ceiling, Signed};
use crate::host::Host;
use crate::manifest::{Egress, EgressMode, Manifest, MemoryAccess, Resources, host_of};
use crate::tool_intake::{self, NamesInUse, PENDING_TOOL_PROPOSALS_MAX};
use imurun_keep_rules::checks::{revoke, tool_decision};

/// How tool proposals' ids start (other proposals' start `kp-`).
pub const TOOL_PROPOSAL_ID_PREFIX: &str = "kt-";

/// The `kind` of tools' high-water marks (subject `<user>/<name>`).
pub(crate) const TOOL_KIND: &str = "tool";
/// The `kind` of revocations' high-water marks (subject `<user>/<name>`, the highest version
/// revoked): kept outside the database too, so a revoke undone in the database does not hold.
pub(crate) const TOOL_REVOKED_KIND: &str = "tool_revoked";

/// Where a proposed tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

/// A tool proposal as its person reviews it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReview {
    pub id: String,
    /// Always `tool`.
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
    pub proposed_manifest: Value,
    /// The authority the proposed manifest has beyond the proposing agent in force.
    pub authority_diff: Vec<Change>,
    /// True exactly when `authority_diff` is empty.
    pub no_new_authority: bool,
    /// What deploys if approved now: the proposed manifest clamped by the ceiling in force.
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

/// A deployed tool as its person sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolView {
    pub name: String,
    pub qualified_name: String,
    pub version: i64,
    pub bundle_sha256: String,
    /// The clamped manifest the person approved.
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

/// What a device decision must name to be accepted now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionBasis {
    pub kind: DecisionKind,
    pub subject: String,
    pub hashes: BTreeMap<String, String>,
    pub ceiling_version: i64,
    pub policy_version: i64,
}

/// What the host knows at intake beyond the store: the loopback ports the operator opened,
/// its API's port, and the names of the tools it gives agents itself.
#[derive(Debug, Clone, Default)]
pub struct IntakeContext {
    pub loopback_ports: Vec<u16>,
    pub api_port: Option<u16>,
    pub host_tools: Vec<String>,
}

/// What a decision about a proposal is checked against, computed from the host's state.
pub(super) struct Basis {
    pub(super) review: ToolReview,
    pub(super) clamped: Manifest,
    pub(super) bundle_sha256: String,
}

impl KeepService {
    /// Stores a tool a session's cell proposed, for the session's person: read and bounded
    /// ([`tool_intake::read`]), refused when it asks for forbidden authority, and otherwise
    /// only stored. Journaled with its hashes and authority diff; never its code.
    pub(crate) async fn store_tool_proposal(
        &self,
        host: &SessionHost,
        payload_json: &str,
        taint: Option<&str>,
        context: &IntakeContext,
    ) -> Result<ToolReview, KeepError> {
        let user = host.user.as_str();
        let full = || {
            KeepError::Conflict(format!(
                "{PENDING_TOOL_PROPOSALS_MAX} tool proposals wait for their person already: one \
                 must be decided first"
            ))
        };
        // The operator's switch first: when proposing is off, nothing is read or decoded.
        if !self.tool_propose_in_force().await?.enabled {
            return Err(KeepError::Forbidden(
                "the operator turned tool.propose off for the hosts of this database".into(),
            ));
        }
        // Counted first: past the bound, nothing is read or decoded. Counted again under the
        // write lock.
        if self.store().keep_pending_tool_proposals(user).await? >= PENDING_TOOL_PROPOSALS_MAX {
            return Err(full());
        }
        let (agents, own) = self.store().keep_names_in_use(user).await?;
        let names = NamesInUse {
            proposer: host.agent.clone(),
            reserved: agents
                .into_iter()
                .filter(|name| !own.contains(name))
                .chain(context.host_tools.iter().cloned())
                .collect(),
            tools: own,
        };
        let intake = tool_intake::read(payload_json, &names)?;
        self.check_forbidden(
            user,
            &intake.manifest,
            &context.loopback_ports,
            context.api_port,
        )
        .await?;
        let agent = self.agent_in_force(&host.agent).await;
        let signer_key_id = agent
            .as_ref()
            .map(|(_, _, signer)| signer.clone())
            .unwrap_or_default();
        let id = imurun_keep_rules::random::hex_id(self.random(), TOOL_PROPOSAL_ID_PREFIX)?;
        let manifest_text = serde_json::to_string(&intake.manifest)
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?;
        let mut row = imurun_store::ToolProposalRow {
            id: id.clone(),
            user_name: user.to_owned(),
            session_id: host.session_id.clone(),
            agent: host.agent.clone(),
            agent_version: host.agent_version,
            signer_key_id,
            name: intake.name.clone(),
            version: intake.manifest.version,
            description: intake.description.clone(),
            manifest: manifest_text,
            bundle_sha256: intake.bundle_sha256.clone(),
            bundle_size: i64::try_from(intake.bundle.len()).unwrap_or(i64::MAX),
            tainted: taint.is_some(),
            taint_source: taint.map(str::to_owned),
            state: "pending".to_owned(),
            created_at_ms: super::now_ms(),
            decided_at_ms: None,
            seal: String::new(),
        };
        row.seal = crate::seal::seal_tool_proposal(self.host_key(), &proposal_fields(&row));
        let base = agent.map(|(manifest, _, _)| manifest);
        let diff = authority::diff(&base.unwrap_or_else(no_authority), &intake.manifest);
        let mut tx = self.store().keep_begin().await?;
        if tx.pending_tool_proposals(user).await? >= PENDING_TOOL_PROPOSALS_MAX {
            return Err(full());
        }
        self.check_version_free(
            &mut tx,
            user,
            (&intake.name, intake.manifest.version),
            &intake.bundle_sha256,
        )
        .await?;
        tx.insert_tool_proposal(&imurun_store::NewToolProposal {
            row: &row,
            bundle: &intake.bundle,
        })
        .await?;
        let detail = json!({
            "action": "propose", "kind": "tool", "session": host.session_id,
            "name": intake.name, "version": intake.manifest.version,
            "bundle_sha256": intake.bundle_sha256, "bundle_size": intake.bundle.len(),
            "manifest_sha256": authority::manifest_sha256(&intake.manifest),
            "description_sha256": crate::keys::sha256_hex(intake.description.as_bytes()),
            "tainted": taint.is_some(),
            "authority_diff": diff,
        });
        append_as(
            &mut tx,
            &format!("agent:{}", host.agent),
            Some(user),
            "proposal",
            &format!("proposal:{id}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        let stored = self
            .store()
            .keep_tool_proposal(&id)
            .await?
            .ok_or(KeepError::NotFound("proposal"))?;
        Ok(self.basis(stored).await?.review)
    }

    /// Refuses a manifest asking for what no tool may have, whatever a ceiling allows: the
    /// operator's credentials, and the host's own addresses (its API, and so its deploy route).
    async fn check_forbidden(
        &self,
        user: &str,
        manifest: &Manifest,
        loopback_ports: &[u16],
        api_port: Option<u16>,
    ) -> Result<(), KeepError> {
        let own = imurun_cell::own_addresses();
        for (index, rule) in manifest.egress.rules.iter().enumerate() {
            if targets_host_itself(&rule.host, rule.port, &own, loopback_ports, api_port) {
                return Err(KeepError::Rule(RuleError::ForbiddenAuthority(format!(
                    "egress.rules[{index}] names {}:{}, one of this host's own addresses: its \
                     API, and with it the deploy route, is never a tool's egress target",
                    rule.host, rule.port
                ))));
            }
        }
        for (index, credential) in manifest.credentials.iter().enumerate() {
            if targets_host_itself(
                &credential.bind.host,
                credential.bind.port,
                &own,
                loopback_ports,
                api_port,
            ) {
                return Err(KeepError::Rule(RuleError::ForbiddenAuthority(format!(
                    "credentials[{index}] is bound to one of this host's own addresses"
                ))));
            }
            let owner = format!("user:{user}");
            let users = self
                .store()
                .keep_vault_sealed(&owner, &credential.name)
                .await?
                .is_some();
            let operators = self
                .store()
                .keep_vault_sealed("operator", &credential.name)
                .await?
                .is_some();
            if operators && !users {
                return Err(KeepError::Rule(RuleError::ForbiddenAuthority(format!(
                    "credentials[{index}] names {}, a credential of the operator's: a tool \
                     reaches only its person's own connections",
                    credential.name
                ))));
            }
        }
        Ok(())
    }

    /// The proposing agent in force: its manifest, version and bundle signer; `None` when none
    /// is (then a review compares against no authority at all).
    async fn agent_in_force(&self, name: &str) -> Option<(Manifest, i64, String)> {
        let trust = self.trust().await.ok()?;
        let row = self.store().keep_agent(name).await.ok()??;
        let view = self.verified_agent(row, &trust).await.ok()?;
        let manifest: Manifest = serde_json::from_value(view.manifest).ok()?;
        Some((manifest, view.version, view.signer_key_id))
    }

    /// A stored proposal's review against the host's state now.
    pub(super) async fn basis(
        &self,
        row: imurun_store::ToolProposalRow,
    ) -> Result<Basis, KeepError> {
        let user = row.user_name.clone();
        let ceiling = self.ceiling_in_force(&user).await?.ceiling;
        let connections: BTreeSet<String> = self
            .store()
            .keep_vault_entries(&format!("user:{user}"))
            .await?
            .into_iter()
            .map(|entry| entry.name)
            .collect();
        let agent = self.agent_in_force(&row.agent).await;
        let sealed = self.check_tool_proposal_row(&row);
        let mut basis = review_of(row, agent, &ceiling, &connections);
        if let Err(error) = sealed {
            basis.review.refused = Some(error.to_string());
        }
        Ok(basis)
    }

    /// The calling person's tool proposals, newest first.
    pub async fn tool_proposals(&self, caller: &Identity) -> Result<Vec<ToolReview>, KeepError> {
        let user = session_user(caller)?;
        let mut reviews = Vec::new();
        for row in self.store().keep_tool_proposals(user).await? {
            reviews.push(self.basis(row).await?.review);
        }
        Ok(reviews)
    }

    /// One of the calling person's tool proposals; another person's reads as one that does not
    /// exist.
    pub async fn tool_proposal(
        &self,
        caller: &Identity,
        id: &str,
    ) -> Result<ToolReview, KeepError> {
        let user = session_user(caller)?;
        match self.store().keep_tool_proposal(id).await? {
            Some(row) if row.user_name == user => Ok(self.basis(row).await?.review),
            _ => Err(KeepError::NotFound("proposal")),
        }
    }

    /// Applies the person's device-signed decision on tool proposal `id`: `approve_proposal`
    /// deploys the clamped manifest as `u/<user>/<name>@<version>`; `deny_proposal` refuses it,
    /// also when the host refuses the proposal itself (it can then only be denied). Refusals
    /// are journaled with their reason.
    pub async fn decide_tool_proposal(
        &self,
        caller: &Identity,
        id: &str,
        envelope: &Signed,
    ) -> Result<ToolReview, KeepError> {
        let user = session_user(caller)?;
        let row = match self.store().keep_tool_proposal(id).await? {
            Some(row) if row.user_name == user => row,
            _ => return Err(KeepError::NotFound("proposal")),
        };
        let subject = format!("proposal:{id}");
        match self.try_decide_tool(caller, user, row, envelope).await {
            Ok(review) => Ok(review),
            Err(error) => {
                let attempt = self.decision_attempt(envelope, user).await;
                let what = (Some(user), "decide_tool", subject.as_str());
                self.refuse_attempt(caller, what, Some(attempt), error)
                    .await
            }
        }
    }

    /// The calling person's tools, each at its highest version.
    pub async fn tools(&self, caller: &Identity) -> Result<Vec<ToolView>, KeepError> {
        let user = session_user(caller)?;
        let ceiling_version = self.ceiling_in_force(user).await?.ceiling.version;
        let mut views = Vec::new();
        for row in self.store().keep_tools(user).await? {
            views.push(self.checked_tool_view(row, ceiling_version).await?);
        }
        Ok(views)
    }

    /// One of the calling person's tools, by name (`name` or `u/<user>/<name>`).
    pub async fn tool(&self, caller: &Identity, name: &str) -> Result<ToolView, KeepError> {
        let user = session_user(caller)?;
        let name = own_tool_name(user, name).ok_or(KeepError::NotFound("tool"))?;
        self.tool_of(user, name).await
    }

    /// `user`'s tool `name`, as its owner sees it.
    async fn tool_of(&self, user: &str, name: &str) -> Result<ToolView, KeepError> {
        let row = self
            .store()
            .keep_tool(user, name)
            .await?
            .ok_or(KeepError::NotFound("tool"))?;
        let ceiling_version = self.ceiling_in_force(user).await?.ceiling.version;
        self.checked_tool_view(row, ceiling_version).await
    }

    /// [`tool_view`] with the host's verdict on the row's seal.
    async fn checked_tool_view(
        &self,
        row: imurun_store::ToolRow,
        ceiling_version: i64,
    ) -> Result<ToolView, KeepError> {
        let mut refused = self
            .check_tool_row_current(&row)
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

    /// Revokes the calling person's tool `name`, every version: from this write on, no call
    /// starts it, and its uses waiting for an answer (on any host) are refused. Taking
    /// authority away needs no device.
    ///
    /// The operator may revoke any person's tool, named `u/<user>/<name>`: the entry is in
    /// that person's journal, and the event on their stream.
    pub async fn revoke_tool(&self, caller: &Identity, name: &str) -> Result<ToolView, KeepError> {
        let (user, name) = revoked_tool_name(caller, name)?;
        let mut tx = self.store().keep_begin().await?;
        let subject = format!("{user}/{name}");
        let in_database = tx.high_water(TOOL_KIND, &subject).await?;
        let row = tx.tool(user, name).await?;
        let snapshot = revoke::Snapshot {
            row: row.as_ref().map(|row| revoke::Row {
                version: row.version,
                sealed: self.check_tool_row(row).is_ok(),
            }),
            deployed: self.high_water(TOOL_KIND, &subject, in_database)?,
            deployed_here: self.high_water(TOOL_KIND, &subject, 0)?,
        };
        let plan = revoke::check(&snapshot).ok_or(KeepError::NotFound("tool"))?;
        let changed = row.is_some() && tx.revoke_tool(user, name).await? > 0;
        tx.raise_high_water(TOOL_REVOKED_KIND, &subject, plan.revoked_version)
            .await?;
        self.mark_revoked_here(&subject, plan.vouched);
        // A revoke is journaled, and refuses the tool's waiting uses, whatever the database
        // said about the tool: the mark it raises is a revoke.
        let detail = json!({
            "action": "revoke", "tool": format!("u/{user}/{name}"),
            "version": row.as_ref().map(|row| row.version),
            "revoked_version": plan.revoked_version,
            "bundle_sha256": row.as_ref().map(|row| row.bundle_sha256.clone()),
            "database": if changed { "revoked" } else if row.is_some() { "revoked already" } else { "no row" },
        });
        let journal_subject = format!("tool:u/{user}/{name}");
        append(
            &mut tx,
            caller,
            Some(user),
            "tool",
            &journal_subject,
            detail,
        )
        .await?;
        let refused_here = self
            .refuse_waiting_uses(&mut tx, caller, user, name)
            .await?;
        // In a task of its own, so a request dropped while it commits still commits.
        tokio::spawn(tx.commit())
            .await
            .map_err(|error| KeepError::Unavailable(format!("a Keep write stopped: {error}")))??;
        self.tell_revoked(user, name, plan.revoked_version, refused_here)
            .await;
        match revoke::outcome(row.is_some(), changed) {
            revoke::Outcome::Revoked if caller.is_operator() => self.tool_of(user, name).await,
            revoke::Outcome::Revoked => self.tool(caller, name).await,
            revoke::Outcome::AlreadyRevoked => Err(KeepError::Conflict(format!(
                "u/{user}/{name} was revoked already"
            ))),
            revoke::Outcome::NoRow => Err(KeepError::NotFound("tool")),
        }
    }

    /// Raises the revocation mark in the Keep folder to `vouched` (nothing for 0). It is
    /// raised before anything else in the write can fail (an edited journal, a broken waiting
    /// use): should the write not commit, the tool is refused on this host all the same. A mark
    /// that cannot be written (a full disk) does not hold the revoke back: the write commits,
    /// and the failure is logged.
    fn mark_revoked_here(&self, subject: &str, vouched: i64) {
        if vouched > 0
            && let Err(error) = self.raise_high_water_file(TOOL_REVOKED_KIND, subject, vouched)
        {
            tracing::error!(
                "the revocation mark of u/{subject} could not be written outside the database \
                 ({error}); the revoke holds in the database"
            );
        }
    }

    /// Refuses, in the revoke's write, the uses of `user`'s tool `name` waiting for an answer
    /// on any host; the ids of those waiting on this host.
    async fn refuse_waiting_uses(
        &self,
        tx: &mut imurun_store::KeepTx,
        caller: &Identity,
        user: &str,
        name: &str,
    ) -> Result<Vec<String>, KeepError> {
        let agent = format!("u/{user}/{name}");
        let mut refused_here = Vec::new();
        for wait in tx.egress_waits(user, crate::service::now_ms()).await? {
            let Ok(view) = serde_json::from_str::<crate::cells::WaitingView>(&wait.view) else {
                continue;
            };
            if view.agent != agent {
                continue;
            }
            let answer = super::sessions::Answer {
                user,
                id: &wait.id,
                host: &wait.host,
                approve: false,
                decision: None,
                by: json!("revoked"),
                view: &view,
            };
            if self.record_in(tx, caller, &answer).await? && wait.host == self.host_id() {
                refused_here.push(wait.id);
            }
        }
        Ok(refused_here)
    }

    /// After a revoke commits: its waiting uses here are told, its calls in flight here end
    /// (the other hosts end theirs when they hear of it, [`KeepService::end_revoked_calls`]),
    /// and the person hears of it.
    async fn tell_revoked(&self, user: &str, name: &str, version: i64, refused_here: Vec<String>) {
        for id in refused_here {
            if let Err(error) = self.deliver_answer(&id).await {
                // The use is refused in the database; its cell stops waiting at its timeout.
                tracing::warn!("a revoked tool's waiting use was not told: {error}");
            }
        }
        if let Some(cells) = self.cells() {
            cells.end_calls(user, name);
            cells.publish(
                user,
                json!({"type": "tool.revoked", "name": format!("u/{user}/{name}"),
                       "version": version}),
            );
        }
    }

    /// Ends this host's calls in flight of every tool revoked since they started: the
    /// database is read again for each tool with a call running, so a notice from another
    /// host is only a hint, and a missed one is made up for at the next sweep.
    pub async fn end_revoked_calls(&self) -> Result<usize, KeepError> {
        let Some(cells) = self.cells() else {
            return Ok(0);
        };
        let mut ended = 0;
        for (user, name) in cells.tools_in_flight() {
            let revoked = match self.store().keep_tool(&user, &name).await? {
                Some(row) => self.revoked(&row).await?,
                None => true,
            };
            if revoked {
                ended += cells.end_calls(&user, &name);
            }
        }
        Ok(ended)
    }

    /// Lifts the taint mark of the calling person's tool `name` with their device-signed
    /// `clear_taint` decision: its egress leaves ask mode. Nothing a cell does reaches this.
    pub async fn clear_tool_taint(
        &self,
        caller: &Identity,
        name: &str,
        envelope: &Signed,
    ) -> Result<ToolView, KeepError> {
        let user = session_user(caller)?;
        let subject = format!("tool:u/{user}/{}", crate::manifest::cut(name));
        match self.try_clear_taint(caller, user, name, envelope).await {
            Ok(view) => Ok(view),
            Err(error) => {
                let attempt = self.decision_attempt(envelope, user).await;
                let what = (Some(user), "clear_taint", subject.as_str());
                self.refuse_attempt(caller, what, Some(attempt), error)
                    .await
            }
        }
    }

    /// `user`'s tool `name` in force for a call: not revoked, sealed by this host, its
    /// manifest valid. `None` for a tool that does not exist or was revoked (one answer for
    /// both, and for another person's).
    pub(crate) async fn tool_for_call(
        &self,
        user: &str,
        name: &str,
    ) -> Result<Option<(imurun_store::ToolRow, Manifest)>, KeepError> {
        let Some(row) = self.store().keep_tool(user, name).await? else {
            return Ok(None);
        };
        if self.revoked(&row).await? {
            return Ok(None);
        }
        self.check_tool_row_current(&row).await?;
        let mut manifest: Manifest = serde_json::from_str(&row.manifest)
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?;
        manifest.validate(crate::host::HostAllowance::Operator)?;
        // The ceiling in force bounds every call, not only the approval: a ceiling lowered or
        // expired since takes its authority away from tools deployed under the old one.
        let ceiling = self.ceiling_in_force(user).await?.ceiling;
        let manifest = authority::clamp(&manifest, &ceiling).manifest;
        Ok(Some((row, manifest)))
    }

    /// Whether `row` is revoked: by the row, or by the revocation mark (the database's, or the
    /// one kept outside it, so a revoke undone in the database still holds on the host that
    /// took it).
    pub(crate) async fn revoked(&self, row: &imurun_store::ToolRow) -> Result<bool, KeepError> {
        let subject = format!("{}/{}", row.user_name, row.name);
        let in_database = self
            .store()
            .keep_high_water(TOOL_REVOKED_KIND, &subject)
            .await?;
        self.covered_by_revocation(row, in_database)
    }

    /// [`Self::revoked`], the database's mark read under `tx`'s write lock.
    pub(crate) async fn revoked_locked(
        &self,
        tx: &mut imurun_store::KeepTx,
        row: &imurun_store::ToolRow,
    ) -> Result<bool, KeepError> {
        let subject = format!("{}/{}", row.user_name, row.name);
        let in_database = tx.high_water(TOOL_REVOKED_KIND, &subject).await?;
        self.covered_by_revocation(row, in_database)
    }

    fn covered_by_revocation(
        &self,
        row: &imurun_store::ToolRow,
        in_database: i64,
    ) -> Result<bool, KeepError> {
        let subject = format!("{}/{}", row.user_name, row.name);
        Ok(row.revoked_at_ms.is_some()
            || self.high_water(TOOL_REVOKED_KIND, &subject, in_database)? >= row.version)
    }

    /// [`Self::check_tool_row`], and that the row is the newest version ever deployed under its
    /// name: an older row, sealed but brought back by deleting newer ones in the database, is
    /// rolled back.
    async fn check_tool_row_current(&self, row: &imurun_store::ToolRow) -> Result<(), KeepError> {
        self.check_tool_row(row)?;
        let subject = format!("{}/{}", row.user_name, row.name);
        let deployed = self.high_water(
            TOOL_KIND,
            &subject,
            self.store().keep_high_water(TOOL_KIND, &subject).await?,
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
    fn check_tool_row(&self, row: &imurun_store::ToolRow) -> Result<(), KeepError> {
        let fields = super::tool_decisions::tool_fields(row);
        Ok(crate::seal::check_tool(
            &self.host_key().public(),
            &fields,
            &row.seal,
        )?)
    }

    /// Checks a tool proposal's row against this host's seal.
    pub(crate) fn check_tool_proposal_row(
        &self,
        row: &imurun_store::ToolProposalRow,
    ) -> Result<(), KeepError> {
        let fields = proposal_fields(row);
        Ok(crate::seal::check_tool_proposal(
            &self.host_key().public(),
            &fields,
            &row.seal,
        )?)
    }

    /// Refuses a proposal whose name and version were deployed already (or a lower version):
    /// versions are immutable, and a new version is a new proposal.
    async fn check_version_free(
        &self,
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
        &self,
        tx: &mut imurun_store::KeepTx,
        user: &str,
        (name, version): (&str, i64),
    ) -> Result<(Option<String>, i64), KeepError> {
        let deployed = tx.tool_version_sha256(user, name, version).await?;
        let subject = format!("{user}/{name}");
        let highest = self.high_water(
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
        None => (no_authority(), 0),
    };
    let proposed: Result<Manifest, String> = serde_json::from_str::<Manifest>(&row.manifest)
        .map_err(|error| error.to_string())
        .and_then(|mut manifest| {
            manifest
                .validate(crate::host::HostAllowance::Operator)
                .map(|()| manifest)
                .map_err(|error| error.to_string())
        });
    let (proposed, refused) = match proposed {
        Ok(manifest) => (manifest, None),
        Err(error) => (
            no_authority(),
            Some(format!("the stored proposal does not hold: {error}")),
        ),
    };
    let Clamped {
        manifest: mut clamped,
        mut dropped,
    } = authority::clamp(&proposed, ceiling);
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
    let authority_diff = authority::diff(&base, &proposed);
    let granted_diff = authority::diff(&base, &clamped);
    let hashes = BTreeMap::from([
        ("bundle".to_owned(), row.bundle_sha256.clone()),
        ("manifest".to_owned(), authority::manifest_sha256(&clamped)),
        (
            "description".to_owned(),
            crate::keys::sha256_hex(row.description.as_bytes()),
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
    let review = ToolReview {
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
        proposed_manifest: serde_json::to_value(&proposed).unwrap_or(Value::Null),
        no_new_authority: authority_diff.is_empty(),
        authority_diff,
        clamped_manifest: serde_json::to_value(&clamped).unwrap_or(Value::Null),
        dropped,
        granted_diff,
        hashes,
        ceiling_version: ceiling.version,
        policy_version,
        needs_confirm_tainted: row.tainted,
        refused,
        id: row.id,
    };
    Basis {
        review,
        clamped,
        bundle_sha256: row.bundle_sha256,
    }
}

/// A manifest with no authority at all: what a review compares against when the proposing
/// agent is not in force.
fn no_authority() -> Manifest {
    Manifest {
        name: "none".into(),
        version: 1,
        description: String::new(),
        egress: Egress::default(),
        credentials: Vec::new(),
        memory: MemoryAccess::None,
        model_socket: false,
        card: false,
        resources: Resources {
            memory_mb: 1,
            cpu_ms: 1,
            timeout_ms: 1,
        },
        approval_timeout_s: 1,
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

/// The person and the tool a revoke names: the caller's own (`name` or `u/<user>/<name>`),
/// or for the operator any person's, named `u/<user>/<name>`.
fn revoked_tool_name<'a>(
    caller: &'a Identity,
    name: &'a str,
) -> Result<(&'a str, &'a str), KeepError> {
    if caller.is_operator() {
        let (user, name) = name
            .strip_prefix("u/")
            .and_then(|rest| rest.split_once('/'))
            .ok_or_else(|| {
                KeepError::invalid("name", "the operator names a tool as u/<user>/<name>")
            })?;
        return Ok((user, name));
    }
    let user = session_user(caller)?;
    let name = own_tool_name(user, name).ok_or(KeepError::NotFound("tool"))?;
    Ok((user, name))
}

/// Whether `host:port` is this host itself: a loopback, unspecified or own address (or a
/// `localhost` name) at the API's port or at a port the operator did not open.
fn targets_host_itself(
    host: &str,
    port: u16,
    own: &[IpAddr],
    loopback_ports: &[u16],
    api_port: Option<u16>,
) -> bool {
    let local = match host_of(host) {
        Some(Host::Ipv4(address)) => {
            let ip = IpAddr::V4(address);
            address.is_loopback() || address.is_unspecified() || own.contains(&ip)
        }
        Some(Host::Ipv6(address)) => {
            // Both the mapped (`::ffff:a.b.c.d`) and the compatible (`::a.b.c.d`) forms.
            let mapped = address.to_ipv4();
            address.is_loopback()
                || address.is_unspecified()
                || own.contains(&IpAddr::V6(address))
                || mapped.is_some_and(|v4| {
                    v4.is_loopback() || v4.is_unspecified() || own.contains(&IpAddr::V4(v4))
                })
        }
        Some(host @ (Host::Name(_) | Host::Wildcard(_))) => host.is_loopback_name(),
        None => true,
    };
    local && (Some(port) == api_port || !loopback_ports.contains(&port))
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
