//! Proposals other than tools — memory entries, suggestions, plans and cards — as their person
//! lists, accepts and rejects them. A cell's emit is validated in [`crate::proposals`] and
//! stored here with the session's taint; nothing a proposal says is ever acted on by the
//! agent. An accepted memory entry is what the agent's `memory.read` returns later; a card is
//! display only.

use imurun_keep_rules::RuleError;
use serde::Serialize;
use serde_json::Value;

use super::sessions::session_user;
use super::{Identity, Proposals, append, append_as};
use crate::KeepError;
use crate::cells::SessionHost;
use crate::events::KeepEvent;
use crate::journal_detail::{OtherProposed, ProposalDecided, ProposalDetail, Proposed};
use crate::proposals::{PENDING_PER_KIND_MAX, Proposal, ProposalKind};

/// One of a person's proposals: a tool's review, or another kind; as
/// `GET /v1/proposals/{id}` answers it and `proposal.created` carries it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum AnyProposal {
    Tool(Box<crate::service::ToolReview>),
    Other(Box<ProposalView>),
}

/// A proposal that is not a tool, as its person sees it: a memory entry, a suggestion, a plan
/// or a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ProposalInfo))]
pub struct ProposalView {
    pub id: String,
    pub session_id: String,
    pub agent: String,
    /// `memory`, `suggestion`, `plan` or `card`.
    pub kind: String,
    /// The validated payload; plain text, with control and bidi characters escaped as
    /// `\u{XXXX}`. See `docs/keep/proposals.md`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub payload: Value,
    /// Whether its session was tainted when it was made, and by what.
    pub tainted: bool,
    pub taint_source: Option<String>,
    /// `pending`, `accepted` or `rejected`.
    pub state: String,
    pub created_at_ms: i64,
    pub decided_at_ms: Option<i64>,
}

impl Proposals<'_> {
    /// Stores a proposal `host`'s cell emitted, for the session's person; refused when that
    /// person has [`PENDING_PER_KIND_MAX`] of its kind waiting.
    pub(crate) async fn store(
        self,
        host: &SessionHost,
        proposal: &Proposal,
        taint: Option<&str>,
    ) -> Result<ProposalView, KeepError> {
        let id = imurun_keep_rules::random::hex_id(self.core.random(), "kp-")?;
        let kind = proposal.kind.as_str();
        let payload = proposal.payload.to_string();
        let row = imurun_store::ProposalRow {
            id: id.clone(),
            user_name: host.user.clone(),
            session_id: host.session_id.clone(),
            agent: host.agent.clone(),
            kind: kind.to_owned(),
            payload: payload.clone(),
            tainted: taint.is_some(),
            taint_source: taint.map(str::to_owned),
            state: "pending".to_owned(),
            created_at_ms: super::now_ms(),
            decided_at_ms: None,
        };
        let full = || {
            KeepError::Conflict(format!(
                "{PENDING_PER_KIND_MAX} {kind} proposals wait for their person already: one must be \
                 decided first"
            ))
        };
        // Counted first without the write lock, so that a cell emitting in a loop past the
        // bound does not hold every Keep write up; counted again under the lock.
        if self
            .core
            .store()
            .keep_pending_proposals(&host.user, kind)
            .await?
            >= PENDING_PER_KIND_MAX
        {
            return Err(full());
        }
        let mut tx = self.core.store().keep_begin().await?;
        may_store(&mut tx, &host.session_id, &host.user).await?;
        if tx.pending_proposals(&host.user, kind).await? >= PENDING_PER_KIND_MAX {
            return Err(full());
        }
        tx.insert_proposal(&row).await?;
        let detail = ProposalDetail::Propose(Proposed::Other(OtherProposed {
            kind: kind.to_owned(),
            session: host.session_id.clone(),
            tainted: taint.is_some(),
            payload_sha256: imurun_cell::sha256_hex(payload.as_bytes()),
        }));
        append_as(
            &mut tx,
            &format!("agent:{}", host.agent),
            Some(&host.user),
            &format!("proposal:{id}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        // The proposal as stored (the store stamps its time), as its route answers it.
        match self.core.store().keep_proposal(&id).await? {
            Some(stored) => proposal_view(stored),
            None => Err(KeepError::NotFound("proposal")),
        }
    }

    /// The calling person's proposals, newest first; only those of `kind` when it is given.
    pub async fn list(
        self,
        caller: &Identity,
        kind: Option<&str>,
    ) -> Result<Vec<ProposalView>, KeepError> {
        let user = session_user(caller)?;
        if let Some(kind) = kind
            && ProposalKind::parse(kind).is_none()
        {
            return Err(KeepError::invalid(
                "kind",
                "one of memory, suggestion, plan or card",
            ));
        }
        self.core
            .store()
            .keep_proposals(user, kind)
            .await?
            .into_iter()
            .map(proposal_view)
            .collect()
    }

    /// One of the calling person's proposals.
    pub async fn get(self, caller: &Identity, id: &str) -> Result<ProposalView, KeepError> {
        let user = session_user(caller)?;
        match self.core.store().keep_proposal(id).await? {
            Some(row) if row.user_name == user => proposal_view(row),
            _ => Err(KeepError::NotFound("proposal")),
        }
    }

    /// Accepts or rejects one of the calling person's pending proposals. Accepting one made in
    /// a tainted session needs `confirm_tainted`.
    pub async fn decide(
        self,
        caller: &Identity,
        id: &str,
        accept: bool,
        confirm_tainted: bool,
    ) -> Result<ProposalView, KeepError> {
        let user = session_user(caller)?;
        let current = self.get(caller, id).await?;
        if current.state != "pending" {
            return Err(KeepError::Conflict(format!(
                "the proposal was {} already",
                current.state
            )));
        }
        let subject = format!("proposal:{id}");
        // What tainted it is in the proposal; not here: a refusal is journaled, and the source
        // names a file or a URL of the person's conversation.
        let unconfirmed = |kind: &str| {
            KeepError::Rule(RuleError::ConfirmTainted(format!(
                "this {kind} was made after its session was tainted (the proposal says by \
                 what): accept it with `confirm_tainted: true` if you have read it"
            )))
        };
        if accept && current.tainted && !confirm_tainted {
            let error = unconfirmed(&current.kind);
            return self
                .core
                .refuse(caller, Some(user), "accept_proposal", &subject, error)
                .await;
        }
        let state = if accept { "accepted" } else { "rejected" };
        let mut tx = self.core.store().keep_begin().await?;
        // The row as the write lock holds it decides, not the copy read before it.
        let Some(locked) = tx.decide_proposal(id, user, state).await? else {
            return Err(KeepError::Conflict(
                "the proposal was decided already".into(),
            ));
        };
        if accept && locked.tainted && !confirm_tainted {
            drop(tx);
            let error = unconfirmed(&locked.kind);
            return self
                .core
                .refuse(caller, Some(user), "accept_proposal", &subject, error)
                .await;
        }
        let decided = ProposalDecided {
            kind: locked.kind,
            tainted: locked.tainted,
            confirm_tainted,
        };
        let detail = if accept {
            ProposalDetail::Accept(decided)
        } else {
            ProposalDetail::Reject(decided)
        };
        append(&mut tx, caller, Some(user), &subject, detail).await?;
        tx.commit().await?;
        let view = self.get(caller, id).await?;
        self.publish_decided(user, &view);
        Ok(view)
    }

    /// Tells `user` their proposal `view` was decided.
    fn publish_decided(self, user: &str, view: &ProposalView) {
        if let Some(cells) = self.keep.cells() {
            cells.publish(
                user,
                KeepEvent::ProposalDecided {
                    id: view.id.clone(),
                    session_id: view.session_id.clone(),
                    kind: view.kind.clone(),
                    state: view.state.clone(),
                    name: None,
                    version: None,
                },
            );
        }
    }

    /// The texts of the memory entries `user` accepted from `agent`, oldest first, and
    /// whether any of them came from a tainted session.
    pub(crate) async fn memory_texts(
        self,
        user: &str,
        agent: &str,
    ) -> Result<(Vec<String>, bool), KeepError> {
        let entries = self.core.store().keep_memory(user, agent).await?;
        let tainted = entries.iter().any(|(_, tainted)| *tainted);
        let texts = entries
            .iter()
            .filter_map(|(payload, _)| serde_json::from_str::<Value>(payload).ok())
            .filter_map(|payload| {
                payload
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect();
        Ok((texts, tainted))
    }
}

fn proposal_view(row: imurun_store::ProposalRow) -> Result<ProposalView, KeepError> {
    let payload = serde_json::from_str(&row.payload).map_err(|error| {
        KeepError::Rule(RuleError::Canonical(format!("a stored proposal: {error}")))
    })?;
    Ok(ProposalView {
        id: row.id,
        session_id: row.session_id,
        agent: row.agent,
        kind: row.kind,
        payload,
        tainted: row.tainted,
        taint_source: row.taint_source,
        state: row.state,
        created_at_ms: row.created_at_ms,
        decided_at_ms: row.decided_at_ms,
    })
}

/// Refuses, under the lock of `tx`, to store a proposal from `user`'s session `session_id`
/// that nobody could decide as she would (`imurun_keep_rules::proposals::may_store`).
pub(crate) async fn may_store(
    tx: &mut imurun_store::KeepTx,
    session_id: &str,
    user: &str,
) -> Result<(), KeepError> {
    Ok(crate::proposals::may_store(
        tx.session_times(session_id, user).await?,
    )?)
}
