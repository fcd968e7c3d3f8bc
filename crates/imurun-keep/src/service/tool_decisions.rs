//! A person's device-signed decisions on tools: approving or denying a proposed tool (an
//! approval deploys it into `u/<user>/<name>@<version>`), and clearing a deployed tool's taint.
//! The rules are `imurun_keep_rules::checks`; this applies their plans.

use imurun_keep_rules::checks::{Signer, clear_taint, tool_decision};
use imurun_store::{KeepTx, ToolProposalRow, ToolRow};

use super::decide::Commit;
use super::tool_access::{Basis, TOOL_KIND, ToolReview, ToolView, own_tool_name, proposal_fields};
use super::{AGENT_KIND, Identity, ToolProposals, Tools, append};
use crate::KeepError;
use crate::documents::Signed;
use crate::events::KeepEvent;
use crate::journal_detail::{ProposalDetail, ToolDetail, ToolKind, ToolProposalDecided};
use crate::manifest::EgressMode;
use crate::seal::ToolFields;
use crate::trust::Trust;

/// What a tool decision reads under the lock.
pub(super) struct ProposalState {
    locked: Option<ToolProposalRow>,
    ceiling_now: i64,
    agent_now: i64,
    deployed_same_version: Option<String>,
    tool_highest: i64,
}

/// What clearing a taint reads under the lock.
pub(super) struct ToolState {
    row: ToolRow,
    revoked: bool,
    ceiling_now: i64,
}

impl ToolProposals<'_> {
    pub(super) async fn try_decide(
        self,
        caller: &Identity,
        user: &str,
        row: ToolProposalRow,
        envelope: &Signed,
    ) -> Result<ToolReview, KeepError> {
        let id = row.id.clone();
        let state = row.state.clone();
        let basis = self.basis(row).await?;
        let review = &basis.review;
        let reviewed = tool_decision::Reviewed {
            state: &state,
            hashes: &review.hashes,
            ceiling_version: review.ceiling_version,
            policy_version: review.policy_version,
            tainted: review.tainted,
            taint_source: review.origin.taint_source.as_deref(),
            refused: review.refused.as_deref(),
        };
        let host_key = self.core.host_key().public();
        // Read before the lock: nothing under it waits for another connection.
        let trust = self.core.trust_if_any().await?;
        let bundle = match tool_decision::approves(envelope) {
            true => self.core.store().keep_tool_proposal_bundle(&id).await?,
            false => None,
        };
        let approve = self
            .core
            .decide_under_lock(
                user,
                envelope,
                async |tx| {
                    self.read_proposal_state(tx, (user, &id), trust.as_ref())
                        .await
                },
                |read: &ProposalState, signer| {
                    tool_decision::check(
                        &proposal_snapshot(&id, reviewed, read, &host_key, signer),
                        envelope,
                    )
                },
                async |tx, read, plan| {
                    let approve = plan.approve;
                    let commit = self
                        .apply_tool_decision(
                            tx,
                            caller,
                            (user, &basis),
                            (read, bundle.as_deref()),
                            plan,
                            envelope,
                        )
                        .await?;
                    Ok((approve, commit))
                },
            )
            .await?;
        let review = self.get(caller, &id).await?;
        self.publish_tool_decision(user, &review, approve);
        Ok(review)
    }
}

impl ToolProposals<'_> {
    async fn read_proposal_state(
        self,
        tx: &mut KeepTx,
        (user, id): (&str, &str),
        trust: Option<&Trust>,
    ) -> Result<ProposalState, KeepError> {
        let locked = tx.pending_tool_proposal(id, user).await?;
        let ceiling_now = self.keep.ceilings().version_locked(tx, user, trust).await?;
        let Some(row) = &locked else {
            return Ok(ProposalState {
                locked,
                ceiling_now,
                agent_now: 0,
                deployed_same_version: None,
                tool_highest: 0,
            });
        };
        let agent_now = self.core.high_water(
            AGENT_KIND,
            &row.agent,
            tx.high_water(AGENT_KIND, &row.agent).await?,
        )?;
        let (deployed_same_version, tool_highest) = self
            .version_state(tx, user, (&row.name, row.version))
            .await?;
        Ok(ProposalState {
            locked,
            ceiling_now,
            agent_now,
            deployed_same_version,
            tool_highest,
        })
    }

    /// Writes a tool decision: the proposal's state, its journal entry and, for an approval,
    /// the deploy.
    async fn apply_tool_decision(
        self,
        tx: &mut KeepTx,
        caller: &Identity,
        (user, basis): (&str, &Basis),
        (read, bundle): (&ProposalState, Option<&[u8]>),
        plan: tool_decision::Plan,
        envelope: &Signed,
    ) -> Result<Commit, KeepError> {
        let review = &basis.review;
        let Some(locked) = &read.locked else {
            return Err(KeepError::Conflict(
                "the proposal was decided already".into(),
            ));
        };
        let state = if plan.approve { "approved" } else { "denied" };
        if !tx.decide_tool_proposal(&review.id, state).await? {
            return Err(KeepError::Conflict(
                "the proposal was decided already".into(),
            ));
        }
        // What the journal says of the proposal is what was proposed only when its row held
        // its seal, at the review and under the lock; a denial of an edited row names none of it.
        let trusted = review.refused.is_none() && plan.unsealed.is_none();
        let decided = ToolProposalDecided {
            kind: ToolKind::Tool,
            name: trusted.then(|| locked.name.clone()),
            version: trusted.then_some(locked.version),
            bundle_sha256: trusted.then(|| basis.bundle_sha256.clone()),
            manifest_sha256: review.hashes.get("manifest").filter(|_| trusted).cloned(),
            ceiling_version: review.ceiling_version,
            policy_version: review.policy_version,
            decided_by: plan.decision.device_key_id.clone(),
            nonce: plan.decision.nonce.clone(),
            tainted: trusted.then_some(review.tainted),
            confirm_tainted: plan.decision.confirm_tainted,
            dropped: trusted.then(|| review.dropped.clone()),
            granted_diff: trusted.then(|| review.granted_diff.clone()),
            refused: review.refused.clone().or_else(|| plan.unsealed.clone()),
        };
        let detail = if plan.approve {
            ProposalDetail::Approve(decided)
        } else {
            ProposalDetail::Deny(decided)
        };
        let subject = format!("proposal:{}", review.id);
        append(tx, caller, Some(user), &subject, detail).await?;
        if !plan.approve {
            return Ok(Commit::Plain);
        }
        self.deploy_tool(tx, caller, (user, basis), (locked, bundle), envelope)
            .await?;
        Ok(Commit::Mark(
            TOOL_KIND,
            format!("{user}/{}", locked.name),
            locked.version,
        ))
    }

    /// Deploys an approved proposal: its bundle (checked against the hash reviewed) and its
    /// clamped manifest, sealed by the host key, and the deploy's journal entry.
    async fn deploy_tool(
        self,
        tx: &mut KeepTx,
        caller: &Identity,
        (user, basis): (&str, &Basis),
        (locked, bundle): (&ToolProposalRow, Option<&[u8]>),
        envelope: &Signed,
    ) -> Result<(), KeepError> {
        let id = &basis.review.id;
        let bundle = bundle.ok_or(KeepError::NotFound("proposal"))?;
        if crate::keys::sha256_hex(bundle) != basis.bundle_sha256 {
            return Err(imurun_keep_rules::RuleError::Untrusted(
                "the stored bundle is not the one proposed".into(),
            )
            .into());
        }
        let manifest_text = serde_json::to_string(&basis.clamped)
            .map_err(|error| imurun_keep_rules::RuleError::Canonical(error.to_string()))?;
        let decision_text = super::envelope_text(envelope)?;
        let fields = ToolFields {
            user,
            name: &locked.name,
            version: locked.version,
            bundle_sha256: &basis.bundle_sha256,
            manifest: &manifest_text,
            decision: &decision_text,
            tainted: locked.tainted,
            taint_cleared: None,
        };
        let seal = crate::seal::seal_tool(self.core.host_key(), &fields);
        tx.insert_tool(&imurun_store::NewTool {
            user_name: user,
            name: &locked.name,
            version: locked.version,
            proposal_id: id,
            bundle_sha256: &basis.bundle_sha256,
            bundle,
            manifest: &manifest_text,
            decision: &decision_text,
            tainted: locked.tainted,
            taint_source: locked.taint_source.as_deref(),
            seal: &seal,
        })
        .await
        .map_err(|error| match error {
            imurun_store::StoreError::AlreadyExists { .. } => KeepError::Conflict(format!(
                "u/{user}/{}@{} is deployed already; versions are immutable",
                locked.name, locked.version
            )),
            other => other.into(),
        })?;
        self.journal_deploy(tx, caller, (user, basis), locked).await
    }

    async fn journal_deploy(
        self,
        tx: &mut KeepTx,
        caller: &Identity,
        (user, basis): (&str, &Basis),
        locked: &ToolProposalRow,
    ) -> Result<(), KeepError> {
        let high_water_subject = format!("{user}/{}", locked.name);
        tx.raise_high_water(TOOL_KIND, &high_water_subject, locked.version)
            .await?;
        let mode = if locked.tainted {
            EgressMode::Ask
        } else {
            basis.clamped.egress.mode
        };
        let detail = ToolDetail::Deploy {
            tool: format!("u/{user}/{}", locked.name),
            version: locked.version,
            bundle_sha256: basis.bundle_sha256.clone(),
            manifest_sha256: basis.review.hashes.get("manifest").cloned(),
            egress_mode: mode,
            tainted: locked.tainted,
            host_key_id: self.keep.host_key_id(),
        };
        let subject = format!("tool:u/{user}/{}@{}", locked.name, locked.version);
        append(tx, caller, Some(user), &subject, detail).await
    }

    fn publish_tool_decision(self, user: &str, review: &ToolReview, approve: bool) {
        let Some(cells) = self.keep.cells() else {
            return;
        };
        cells.publish(
            user,
            KeepEvent::ProposalDecided {
                id: review.id.clone(),
                session_id: review.origin.session_id.clone(),
                kind: review.kind.to_owned(),
                state: review.state.clone(),
                name: Some(review.qualified_name.clone()),
                version: Some(review.version),
            },
        );
        if approve {
            cells.publish(
                user,
                KeepEvent::ToolDeployed {
                    name: review.qualified_name.clone(),
                    version: review.version,
                    tainted: review.tainted,
                },
            );
        }
    }
}

/// The rules' snapshot of a tool decision.
fn proposal_snapshot<'a>(
    id: &'a str,
    reviewed: tool_decision::Reviewed<'a>,
    read: &'a ProposalState,
    host_key: &'a crate::keys::PublicKey,
    signer: Signer<'a>,
) -> tool_decision::Snapshot<'a> {
    tool_decision::Snapshot {
        proposal_id: id,
        reviewed,
        locked: read.locked.as_ref().map(|row| tool_decision::Locked {
            fields: proposal_fields(row),
            seal: &row.seal,
        }),
        host_key,
        ceiling_now: read.ceiling_now,
        agent_now: read.agent_now,
        deployed_same_version: read.deployed_same_version.as_deref(),
        tool_highest: read.tool_highest,
        signer,
    }
}

impl Tools<'_> {
    pub(super) async fn try_clear_taint(
        self,
        caller: &Identity,
        user: &str,
        name: &str,
        envelope: &Signed,
    ) -> Result<ToolView, KeepError> {
        let view = self.get(caller, name).await?;
        let own = own_tool_name(user, name).ok_or(KeepError::NotFound("tool"))?;
        let shown = clear_taint::Shown {
            refused: view.refused.as_deref(),
            basis: view
                .clear_taint
                .as_ref()
                .map(|basis| (basis.subject.as_str(), &basis.hashes, basis.ceiling_version)),
        };
        let host_key = self.core.host_key().public();
        // Read before the lock: nothing under it waits for another connection.
        let trust = self.core.trust_if_any().await?;
        let version = self
            .core
            .decide_under_lock(
                user,
                envelope,
                async |tx| self.read_tool_state(tx, (user, own), trust.as_ref()).await,
                |read: &ToolState, signer| {
                    clear_taint::check(
                        &clear_taint::Snapshot {
                            name,
                            shown,
                            locked: clear_taint::Locked {
                                fields: tool_fields(&read.row),
                                seal: &read.row.seal,
                                revoked: read.revoked,
                            },
                            host_key: &host_key,
                            ceiling_now: read.ceiling_now,
                            signer,
                        },
                        envelope,
                    )
                },
                async |tx, read, decision| {
                    self.apply_clear_taint(tx, caller, &read.row, &decision, envelope)
                        .await?;
                    Ok((read.row.version, Commit::Plain))
                },
            )
            .await?;
        if let Some(cells) = self.keep.cells() {
            cells.publish(
                user,
                KeepEvent::ToolTaintCleared {
                    name: format!("u/{user}/{own}"),
                    version,
                },
            );
        }
        self.get(caller, own).await
    }

    async fn read_tool_state(
        self,
        tx: &mut KeepTx,
        (user, name): (&str, &str),
        trust: Option<&Trust>,
    ) -> Result<ToolState, KeepError> {
        let Some(row) = tx.tool(user, name).await? else {
            return Err(KeepError::NotFound("tool"));
        };
        // Revoked by the row or by either mark, read under the lock.
        let revoked = self.revoked_locked(tx, &row).await?;
        let ceiling_now = self.keep.ceilings().version_locked(tx, user, trust).await?;
        Ok(ToolState {
            row,
            revoked,
            ceiling_now,
        })
    }

    async fn apply_clear_taint(
        self,
        tx: &mut KeepTx,
        caller: &Identity,
        row: &ToolRow,
        decision: &imurun_keep_rules::decision::Decision,
        envelope: &Signed,
    ) -> Result<(), KeepError> {
        let (user, name) = (row.user_name.as_str(), row.name.as_str());
        let cleared = super::envelope_text(envelope)?;
        let fields = ToolFields {
            taint_cleared: Some(&cleared),
            ..tool_fields(row)
        };
        let seal = crate::seal::seal_tool(self.core.host_key(), &fields);
        if !tx
            .clear_tool_taint(user, name, row.version, &cleared, &seal)
            .await?
        {
            return Err(KeepError::Conflict("the tool changed meanwhile".into()));
        }
        let detail = ToolDetail::ClearTaint {
            tool: format!("u/{user}/{name}"),
            version: row.version,
            decided_by: decision.device_key_id.clone(),
            nonce: decision.nonce.clone(),
        };
        let subject = format!("tool:u/{user}/{name}@{}", row.version);
        append(tx, caller, Some(user), &subject, detail).await
    }
}

/// What a deployed tool's seal covers, read from its row.
pub(super) fn tool_fields(row: &ToolRow) -> ToolFields<'_> {
    ToolFields {
        user: &row.user_name,
        name: &row.name,
        version: row.version,
        bundle_sha256: &row.bundle_sha256,
        manifest: &row.manifest,
        decision: &row.decision,
        tainted: row.tainted,
        taint_cleared: row.taint_cleared.as_deref(),
    }
}
