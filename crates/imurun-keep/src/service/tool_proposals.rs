//! A tool a session's cell proposes: read and bounded by the rules' intake, refused when it asks
//! for authority no tool may have or targets the host itself, and otherwise only stored for its
//! person, sealed by the host key and journaled with its hashes and authority diff.

use std::net::IpAddr;

use imurun_keep_rules::RuleError;

use super::tool_access::{TOOL_PROPOSAL_ID_PREFIX, ToolReview, proposal_fields};
use super::{ToolProposals, append_as};
use crate::KeepError;
use crate::authority;
use crate::cells::{IntakeContext, SessionHost};
use crate::host::Host;
use crate::journal_detail::{ProposalDetail, Proposed, ToolKind, ToolProposed};
use crate::manifest::{Manifest, host_of};
use crate::tool_intake::{self, NamesInUse, PENDING_TOOL_PROPOSALS_MAX, ToolIntake};
use imurun_store::ToolProposalRow;

impl ToolProposals<'_> {
    /// Stores a tool a session's cell proposed, for the session's person: read and bounded
    /// ([`tool_intake::read`]), refused when it asks for forbidden authority, and otherwise
    /// only stored. Journaled with its hashes and authority diff; never its code.
    pub(crate) async fn store(
        self,
        host: &SessionHost,
        payload_json: &str,
        taint: Option<&str>,
        context: &IntakeContext,
    ) -> Result<ToolReview, KeepError> {
        let intake = self.admit(host, payload_json, context).await?;
        let agent = self.keep.agents().in_force(&host.agent).await?;
        let signer_key_id = agent
            .as_ref()
            .map(|(_, _, signer)| signer.clone())
            .unwrap_or_default();
        let row = self.row(host, &intake, taint, signer_key_id)?;
        let base = agent.map(|(manifest, _, _)| manifest);
        let diff = authority::diff(
            &base.unwrap_or_else(authority::no_authority),
            &intake.manifest,
        );
        self.insert(host, &row, &intake, &diff).await?;
        let stored = self
            .core
            .store()
            .keep_tool_proposal(&row.id)
            .await?
            .ok_or(KeepError::NotFound("proposal"))?;
        Ok(self.basis(stored).await?.review)
    }

    /// Reads a cell's `tool.propose` within its bounds, once the operator's switch and the
    /// person's pending proposals allow one: nothing is read or decoded before.
    async fn admit(
        self,
        host: &SessionHost,
        payload_json: &str,
        context: &IntakeContext,
    ) -> Result<ToolIntake, KeepError> {
        let user = host.user.as_str();
        if !self
            .keep
            .host_settings()
            .tool_propose_in_force()
            .await?
            .enabled
        {
            return Err(KeepError::Forbidden(
                "the operator turned tool.propose off for the hosts of this database".into(),
            ));
        }
        // Counted again under the write lock.
        if self.core.store().keep_pending_tool_proposals(user).await? >= PENDING_TOOL_PROPOSALS_MAX
        {
            return Err(too_many_pending());
        }
        let (agents, own) = self.core.store().keep_names_in_use(user).await?;
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
        Ok(intake)
    }

    /// A proposal's row, sealed by the host key.
    fn row(
        self,
        host: &SessionHost,
        intake: &ToolIntake,
        taint: Option<&str>,
        signer_key_id: String,
    ) -> Result<ToolProposalRow, KeepError> {
        let id = imurun_keep_rules::random::hex_id(self.core.random(), TOOL_PROPOSAL_ID_PREFIX)?;
        let manifest_text = serde_json::to_string(&intake.manifest)
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?;
        let mut row = ToolProposalRow {
            id,
            user_name: host.user.clone(),
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
        row.seal = crate::seal::seal_tool_proposal(self.core.host_key(), &proposal_fields(&row));
        Ok(row)
    }

    /// Stores a proposal and its bundle, and journals it with its hashes and authority diff
    /// (never its code), under the lock that counts the person's pending proposals again.
    async fn insert(
        self,
        host: &SessionHost,
        row: &ToolProposalRow,
        intake: &ToolIntake,
        diff: &[authority::Change],
    ) -> Result<(), KeepError> {
        let user = host.user.as_str();
        let mut tx = self.core.store().keep_begin().await?;
        super::proposal_access::may_store(&mut tx, &host.session_id, user).await?;
        if tx.pending_tool_proposals(user).await? >= PENDING_TOOL_PROPOSALS_MAX {
            return Err(too_many_pending());
        }
        let version = (intake.name.as_str(), intake.manifest.version);
        self.check_version_free(&mut tx, user, version, &intake.bundle_sha256)
            .await?;
        tx.insert_tool_proposal(&imurun_store::NewToolProposal {
            row,
            bundle: &intake.bundle,
        })
        .await?;
        let detail = ProposalDetail::Propose(Proposed::Tool(ToolProposed {
            kind: ToolKind::Tool,
            session: host.session_id.clone(),
            name: intake.name.clone(),
            version: intake.manifest.version,
            bundle_sha256: intake.bundle_sha256.clone(),
            bundle_size: u64::try_from(intake.bundle.len()).unwrap_or(u64::MAX),
            manifest_sha256: authority::manifest_sha256(&intake.manifest),
            description_sha256: crate::keys::sha256_hex(intake.description.as_bytes()),
            tainted: row.tainted,
            authority_diff: diff.to_vec(),
        }));
        let actor = format!("agent:{}", host.agent);
        let subject = format!("proposal:{}", row.id);
        append_as(&mut tx, &actor, Some(user), &subject, detail).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Refuses a manifest asking for what no tool may have, whatever a ceiling allows: the
    /// operator's credentials, and the host's own addresses (its API, and so its deploy route).
    async fn check_forbidden(
        self,
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
            // Only the person's own vault is read: whether the operator holds a credential of
            // that name is nobody's business here, so the answer tells the person nothing of it.
            let owner = format!("user:{user}");
            let held = self
                .core
                .store()
                .keep_vault_sealed(&owner, &credential.name)
                .await?
                .is_some();
            if !held {
                return Err(KeepError::Rule(RuleError::ForbiddenAuthority(format!(
                    "credentials[{index}] names {}, which is not one of your connections: a tool \
                     reaches only its person's own connections (add it to your vault first)",
                    credential.name
                ))));
            }
        }
        Ok(())
    }
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

fn too_many_pending() -> KeepError {
    KeepError::Conflict(format!(
        "{PENDING_TOOL_PROPOSALS_MAX} tool proposals wait for their person already: one must be \
         decided first"
    ))
}
