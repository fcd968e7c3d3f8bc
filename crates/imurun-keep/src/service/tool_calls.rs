//! Calling a person's deployed tool from their session's cell (`tools.call`): the tool runs in
//! a cell of its own, with its own clamped manifest, the person's own connections, and the
//! session's taint.
//!
//! Who may call: only sessions of the agent that proposed the tool, at the version its review
//! compared against (any version when it was compared against no authority), because "adds
//! no authority" was judged against that agent and no other.
//!
//! Revocation: each call is registered on the host before it reads the tool's row, so a
//! revoke committed before the read refuses it, and one committed after ends it: its cell is
//! stopped (with its requests and its waits for the person), and the calling session gets
//! "revoked" for that call and goes on. The revoking host ends its own calls at once; the
//! other hosts on its database when they hear of it, or at their next sweep. See
//! `docs/keep/tools.md`.

use imurun_keep_rules::RuleError;
use std::sync::Arc;

use imurun_cell::World;

use super::Tools;
use super::tool_access::own_tool_name;
use crate::KeepError;
use crate::cells::{
    CallInFlight, Cells, SessionHost, ToolAnswer, cell_error, cut_text, imports_for, limits_for,
};
use crate::decision::Decision;
use crate::documents::Signed;
use crate::manifest::Manifest;

impl Tools<'_> {
    /// Runs `user`'s tool `name` (`name` or `u/<user>/<name>`) for `parent`'s cell. A tool that
    /// does not exist, was revoked or is another person's gets one answer.
    pub(crate) async fn call(
        self,
        parent: &SessionHost,
        name: &str,
        args_json: &str,
    ) -> Result<ToolAnswer, String> {
        let missing = || format!("no tool named {:?} is yours to call", cut_text(name));
        let Some(own) = own_tool_name(&parent.user, name) else {
            return Err(parent.refused_call("not_found", missing()).await);
        };
        let Some(cells) = parent.cells.upgrade() else {
            return Err("the host is stopping".to_owned());
        };
        // Registered before the row is read: a revoke that commits after the read ends it.
        let in_flight = cells.start_call(&parent.user, own);
        let found = self
            .for_call(&parent.user, own)
            .await
            .map_err(|error| format!("the tool cannot be run: {error}"))?;
        let Some((row, manifest)) = found else {
            return Err(parent.refused_call("not_found", missing()).await);
        };
        if let Err(reason) = self.check_caller(parent, &row).await {
            return Err(parent.refused_call("not_proposer", reason).await);
        }
        self.run_tool(parent, &cells, in_flight, row, manifest, args_json)
            .await
    }

    /// Runs a tool that passed its checks in a cell of its own, until it answers or `in_flight`
    /// says it was revoked.
    async fn run_tool(
        self,
        parent: &SessionHost,
        cells: &Cells,
        mut in_flight: CallInFlight,
        row: imurun_store::ToolRow,
        manifest: Manifest,
        args_json: &str,
    ) -> Result<ToolAnswer, String> {
        let qualified = format!("u/{}/{}", row.user_name, row.name);
        let bundle = self
            .core
            .store()
            .keep_tool_bundle(&row.user_name, &row.name, row.version)
            .await
            .map_err(|error| error.to_string())?
            .ok_or_else(|| format!("the code of {qualified} is missing"))?;
        let ask = row.tainted && row.taint_cleared.is_none();
        let host =
            Arc::new(parent.for_tool(qualified.clone(), manifest, ask, cells.egress_ports()));
        let mut cell = cells
            .engine()
            .start(
                &row.bundle_sha256,
                &bundle,
                World::Tool,
                imports_for(&host.manifest, false),
                limits_for(&host.manifest),
                Arc::clone(&host) as Arc<dyn imurun_cell::CellHost>,
            )
            .await
            .map_err(|error| format!("the tool did not start: {}", cell_error(error)))?;
        let result = tokio::select! {
            // A revoke seen at the same moment as the answer wins: it is the person's word. The
            // answer is the host's own words: nothing the stopped cell read reaches the session.
            biased;
            _ = in_flight.ended.wait_for(|ended| *ended) => None,
            result = cell.call(args_json) => Some(result),
        };
        let Some(result) = result else {
            cell.end().await;
            let reason = format!(
                "revoked: {qualified} was revoked while this call ran; the call was stopped"
            );
            return Err(parent.refused_call("revoked", reason).await);
        };
        drop(cell);
        // What the tool's cell read from outside taints the session that called it, and so
        // does anything a tool proposed by a tainted session answers until its taint is cleared.
        let untrusted = (host.tainted_by().is_some() || ask) && parent.tainted_by().is_none();
        match result {
            Ok(text) => Ok(ToolAnswer { text, untrusted }),
            Err(error) => {
                // A failure's words are the tool's too: they taint as its answer would.
                if untrusted {
                    let source = host.tainted_by().unwrap_or_else(|| {
                        format!("a failure of {qualified}, proposed by a tainted session")
                    });
                    parent.taint(&source).await.map_err(|error| {
                        format!("the session could not be marked tainted: {error}")
                    })?;
                }
                Err(format!("the tool failed: {}", cell_error(error)))
            }
        }
    }

    /// Refuses a call from a session of another agent than the one whose authority the tool's
    /// review was compared against: its proposing agent (from the sealed proposal its signed
    /// decision names), at the version the decision names (any, for a review against none).
    async fn check_caller(
        self,
        parent: &SessionHost,
        row: &imurun_store::ToolRow,
    ) -> Result<(), String> {
        let refused = |why: String| format!("u/{}/{}: {why}", row.user_name, row.name);
        let (agent, version) = self
            .proposer(row)
            .await
            .map_err(|error| refused(format!("its proposer cannot be read: {error}")))?;
        if agent != parent.agent {
            return Err(refused(format!(
                "only sessions of the agent that proposed it ({agent}) may call it; this \
                 session runs {}",
                parent.agent
            )));
        }
        if version != 0 && version != parent.agent_version {
            return Err(refused(format!(
                "it was reviewed against {agent} version {version}, and this session runs \
                 version {}: propose it again from this version",
                parent.agent_version
            )));
        }
        Ok(())
    }

    /// The agent that proposed `row`'s tool and the version of it the decision was made
    /// against (0: against no authority). The decision is covered by the tool row's seal
    /// (checked by [`Tools::for_call`]); the proposal it names is checked against
    /// its own seal here.
    async fn proposer(self, row: &imurun_store::ToolRow) -> Result<(String, i64), KeepError> {
        let envelope = Signed::from_text(row.decision.as_bytes())?;
        let decision: Decision = serde_json::from_value(envelope.signed).map_err(|error| {
            KeepError::Rule(RuleError::Canonical(format!("a stored decision: {error}")))
        })?;
        if decision.subject != row.proposal_id {
            return Err(KeepError::Rule(RuleError::Decision(
                "the stored decision names another proposal than the tool's".to_owned(),
            )));
        }
        let proposal = self
            .core
            .store()
            .keep_tool_proposal(&row.proposal_id)
            .await?
            .ok_or(KeepError::NotFound("proposal"))?;
        self.keep.tool_proposals().check_row(&proposal)?;
        Ok((proposal.agent, decision.policy_version))
    }
}
