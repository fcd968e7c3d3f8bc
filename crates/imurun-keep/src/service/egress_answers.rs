//! Egress uses waiting for their person, and the answers: listed with what the person is shown,
//! answered here or on another host sharing the database (recorded, sealed and delivered to the
//! cell that waits), approved by a device decision where the manifest asks for one.

use imurun_keep_rules::RuleError;
use imurun_keep_rules::checks::{Signer, egress_answer};

use super::decide::Commit;
use super::devices::device_key;
use super::sessions::{person_tool, session_user};
use super::{Approvals, Identity, append};
use crate::KeepError;
use crate::cells::WaitingView;
use crate::documents::Signed;
use crate::journal_detail::{DeviceAnswer, EgressAnswer, EgressBy, EgressDetail};
use crate::service::now_ms;

/// The channel on which a host tells the others that it recorded an answer to an egress use
/// (the payload is the use's id).
pub const EGRESS_ANSWERS_CHANNEL: &str = "imurun_keep_egress_answers";

/// An egress use waiting for its person: its id and what the person is shown, as
/// `GET /v1/approvals` lists it and `egress.approval_needed` carries it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepApprovalInfo))]
pub struct ApprovalView {
    pub id: String,
    #[serde(flatten)]
    pub waiting: WaitingView,
}

/// An answer to a waiting use, as it is recorded.
pub(crate) struct Answer<'a> {
    pub(crate) user: &'a str,
    pub(crate) id: &'a str,
    /// The host whose cell waits.
    pub(crate) host: &'a str,
    pub(crate) approve: bool,
    /// The device-signed decision it came with, as stored.
    pub(crate) decision: Option<&'a str>,
    /// Who decided, as the journal says.
    pub(crate) by: EgressBy,
    pub(crate) view: &'a WaitingView,
}

impl Approvals<'_> {
    /// Journals a refused answer, with its decision's device key id (and whether that person's
    /// registered device signed it) when it came with one.
    async fn refuse_answer<T>(
        self,
        caller: &Identity,
        (user, subject): (&str, &str),
        decision: Option<&Signed>,
        error: KeepError,
    ) -> Result<T, KeepError> {
        let attempt = match decision {
            Some(envelope) => Some(self.core.decision_attempt(envelope, user).await),
            None => None,
        };
        let what = (Some(user), "approve_egress", subject);
        self.core.refuse_attempt(caller, what, attempt, error).await
    }

    /// The calling person's egress uses waiting for an answer, oldest first: on every host
    /// that shares the database (docs/keep/scaling.md).
    pub async fn list(self, caller: &Identity) -> Result<Vec<ApprovalView>, KeepError> {
        let user = session_user(caller)?;
        let rows = self.waits(user).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let waiting = serde_json::from_str(&row.view).ok()?;
                Some(ApprovalView {
                    id: row.id,
                    waiting,
                })
            })
            .collect())
    }

    /// `user`'s uses waiting for an answer on every host, oldest first. One recorded as waiting
    /// on this host counts only while a cell here waits on it: a wait that just ended (a stop,
    /// a timeout) may leave its row a moment longer.
    async fn waits(self, user: &str) -> Result<Vec<imurun_store::EgressWaitRow>, KeepError> {
        let cells = self.keep.running_cells()?;
        let rows = self.core.store().keep_egress_waits(user, now_ms()).await?;
        // Read after the rows: a wait starts here before its row is written.
        let here: std::collections::HashSet<String> = cells.waiting_ids().into_iter().collect();
        let mut waiting = Vec::new();
        for row in rows {
            if row.host == self.keep.host_id() && !here.contains(&row.id) {
                continue;
            }
            // A use of a session that has ended (its person revoked on another host) is not
            // hers to answer.
            let view: Option<WaitingView> = serde_json::from_str(&row.view).ok();
            let Some(view) = view else { continue };
            let session = self.core.store().keep_session(&view.session_id).await?;
            if session.is_some_and(|session| session.ended_at_ms.is_none()) {
                waiting.push(row);
            }
        }
        Ok(waiting)
    }

    /// Answers a waiting egress use. A use whose rule demands a device signature is approved
    /// only by `decision`, an `approve_egress` decision signed on one of the person's devices
    /// naming the use's id and hashes; denying needs no signature. A decision given is always
    /// checked. The use may wait on another host: the answer then reaches it through the
    /// database. The answer recorded: a refusal when the use's tool was revoked meanwhile.
    pub async fn answer(
        self,
        caller: &Identity,
        id: &str,
        approve: bool,
        decision: Option<&Signed>,
    ) -> Result<bool, KeepError> {
        let user = session_user(caller)?;
        let cells = self.keep.running_cells()?;
        match cells.take_waiting(user, id) {
            Some(entry) => {
                self.answer_here(caller, user, id, entry, approve, decision)
                    .await
            }
            None => {
                self.answer_elsewhere(caller, user, id, approve, decision)
                    .await
            }
        }
    }

    /// Whether `answer` may go to a use of `view`: a use a person's tool asked for before it
    /// was revoked, or asked by a version since replaced, is refused, whatever the answer; a decision given is checked, and an
    /// approval a rule demands a device signature for needs one. Who decided.
    async fn check_answer(
        self,
        user: &str,
        id: &str,
        view: &WaitingView,
        approve: bool,
        decision: Option<&Signed>,
    ) -> Result<EgressBy, KeepError> {
        // A session ended meanwhile (its person revoked on another host) sends nothing more.
        let session = self.core.store().keep_session(&view.session_id).await?;
        if approve && session.is_none_or(|row| row.ended_at_ms.is_some()) {
            return Err(KeepError::Conflict(
                "its session has ended: its uses are refused".to_owned(),
            ));
        }
        if approve && !self.tool_use_in_force(user, view).await? {
            return Err(KeepError::Conflict(format!(
                "{} was revoked: its uses are refused",
                view.agent
            )));
        }
        match (decision, approve && view.device_signature) {
            (Some(envelope), _) => {
                self.check_egress_decision(user, id, view, envelope, approve)
                    .await
            }
            (None, true) => Err(KeepError::Rule(RuleError::Decision(
                "this use's rule demands a decision signed on one of your devices".into(),
            ))),
            (None, false) => Ok(EgressBy::PERSON),
        }
    }

    /// Whether a use `view` shows may still be approved: for a person's tool
    /// (`u/<user>/<name>`), the tool is in force for a call ([`Self::tool_for_call`]) at the
    /// version that asked; anything else (an agent's use) is.
    async fn tool_use_in_force(self, user: &str, view: &WaitingView) -> Result<bool, KeepError> {
        let name = match person_tool(user, &view.agent) {
            None => return Ok(true),
            Some(None) => return Ok(false),
            Some(Some(name)) => name,
        };
        Ok(self
            .keep
            .tools()
            .for_call(user, name)
            .await?
            .is_some_and(|(row, _)| row.version == view.agent_version))
    }

    /// Answers a use this host's cell waits on: the answer is recorded (once: another host
    /// may have answered first) and journaled, then handed to the cell.
    async fn answer_here(
        self,
        caller: &Identity,
        user: &str,
        id: &str,
        entry: crate::cells::Waiting,
        approve: bool,
        decision: Option<&Signed>,
    ) -> Result<bool, KeepError> {
        let subject = format!("approval:{id}");
        let by = match self
            .check_answer(user, id, &entry.view, approve, decision)
            .await
        {
            Ok(by) => by,
            Err(error @ KeepError::Conflict(_)) => {
                // Revoked: refused, whatever the answer.
                let _refused = entry.answer.send(false);
                return self
                    .refuse_answer(caller, (user, &subject), decision, error)
                    .await;
            }
            Err(error) => {
                self.put_back(id, entry).await;
                return self
                    .refuse_answer(caller, (user, &subject), decision, error)
                    .await;
            }
        };
        let decision_text =
            decision.map(|envelope| serde_json::to_string(envelope).unwrap_or_default());
        let answer = Answer {
            user,
            id,
            host: self.keep.host_id(),
            approve,
            decision: decision_text.as_deref(),
            by,
            view: &entry.view,
        };
        let recorded = self.record_answer(caller, &answer).await;
        let approve = match recorded {
            Ok(Some(recorded)) => recorded,
            Ok(None) => {
                // Answered on another host first: the answer recorded there stands (if it
                // verifies), whatever was answered here.
                let released = match self.core.store().keep_egress_wait(id).await {
                    Ok(Some(row)) => self.recorded_approval(user, &row, &entry.view).await,
                    _ => false,
                };
                let _answered = entry.answer.send(released);
                return Err(KeepError::Conflict(
                    "this use was answered already, on another host".into(),
                ));
            }
            Err(error) => {
                // Nothing was recorded here: the use still waits for an answer.
                self.put_back(id, entry).await;
                return Err(error);
            }
        };
        if entry.answer.send(approve).is_err() {
            return self.not_delivered(caller, user, &subject).await;
        }
        Ok(approve)
    }

    /// Journals an answer its use was no longer waiting for (its time ran out or its session
    /// ended), and says so.
    async fn not_delivered(
        self,
        caller: &Identity,
        user: &str,
        subject: &str,
    ) -> Result<bool, KeepError> {
        let detail = EgressDetail::NotDelivered {
            reason: "the request stopped waiting".into(),
        };
        let mut tx = self.core.store().keep_begin().await?;
        append(&mut tx, caller, Some(user), subject, detail).await?;
        tx.commit().await?;
        Err(KeepError::Conflict(
            "the request stopped waiting (its time ran out or its session ended)".into(),
        ))
    }

    /// Puts back a use this host took to answer and could not: it waits again, unless another
    /// host recorded an answer meanwhile (its notice found nothing to hand the answer to while
    /// the use was taken), which is handed to the cell now.
    async fn put_back(self, id: &str, entry: crate::cells::Waiting) {
        let Ok(cells) = self.keep.running_cells() else {
            return;
        };
        cells.put_back(id.to_owned(), entry);
        if let Err(error) = self.deliver(id).await {
            tracing::warn!("an answer to egress use {id} could not be looked up: {error}");
        }
    }

    /// Records `answer` (for `user`'s use `id` waiting on `host`) once, sealed by this host,
    /// journaled, and (for a use waiting on another host) told to the waiting host, all in
    /// one write: the answer recorded (a refusal when its tool was revoked meanwhile), or
    /// `None` when it no longer waited.
    async fn record_answer(
        self,
        caller: &Identity,
        answer: &Answer<'_>,
    ) -> Result<Option<bool>, KeepError> {
        let (user, id, host, view) = (answer.user, answer.id, answer.host, answer.view);
        let mut tx = self.core.store().keep_begin().await?;
        if tx.egress_wait(id, user, now_ms()).await?.is_none() {
            return Ok(None);
        }
        // The waiting host is gone (killed, restarted under another name): nothing waits.
        if host != self.keep.host_id() && tx.host_gone(host).await? {
            return Ok(None);
        }
        // A tool revoked after the answer was checked, on any host, is read again here: its
        // uses are refused, whatever the answer.
        let approve = answer.approve
            && match person_tool(user, &view.agent) {
                None => true,
                Some(None) => false,
                Some(Some(name)) => match tx.tool(user, name).await? {
                    // Revoked by the row or by either mark, as a call reads it.
                    // A use asked by a version since replaced is refused too: the newer
                    // version deployed is not the one that asked.
                    Some(row) => {
                        row.version == view.agent_version
                            && !self.keep.tools().revoked_locked(&mut tx, &row).await?
                    }
                    None => false,
                },
            };
        // So is the device of a signed approval: one retired after the decision was checked
        // (its nonce used in a write of its own) approves nothing.
        let approve = approve
            && match answer.decision {
                Some(text) => {
                    let key_id = Signed::from_text(text.as_bytes())?.signature.key_id;
                    tx.device(&key_id).await?.is_some_and(|device| {
                        device.user_name == user && device.retired_at_ms.is_none()
                    })
                }
                None => true,
            };
        let recorded = Answer {
            approve,
            by: answer.by.clone(),
            ..*answer
        };
        if !self.record_in(&mut tx, caller, &recorded).await? {
            return Ok(None);
        }
        tx.commit().await?;
        Ok(Some(approve))
    }

    /// Records `answer` in `tx` (sealed, journaled, and told to the waiting host when it is
    /// another): whether the use still waited.
    pub(crate) async fn record_in(
        self,
        tx: &mut imurun_store::KeepTx,
        caller: &Identity,
        answer: &Answer<'_>,
    ) -> Result<bool, KeepError> {
        let Answer {
            user,
            id,
            host,
            approve,
            decision,
            ref by,
            view,
        } = *answer;
        let view_sha256 = view_sha256(view);
        let seal = crate::seal::seal_egress_answer(
            self.core.host_key(),
            &crate::seal::EgressAnswerFields {
                id,
                user,
                host,
                view_sha256: &view_sha256,
                approve,
                decision,
            },
        );
        if !tx
            .answer_egress_wait(id, user, approve, decision, &seal)
            .await?
        {
            return Ok(false);
        }
        let answer = EgressAnswer {
            method: view.method.clone(),
            url: None,
            url_sha256: Some(crate::keys::sha256_hex(view.url.as_bytes())),
            session: view.session_id.clone(),
            body_sha256: view.body_sha256.clone(),
            by: by.clone(),
            waits_on: (host != self.keep.host_id()).then(|| host.to_owned()),
        };
        let detail = EgressDetail::answered(approve, answer);
        append(tx, caller, Some(user), &format!("approval:{id}"), detail).await?;
        if host != self.keep.host_id() {
            let notice = self
                .keep
                .notice_seal()
                .seal(EGRESS_ANSWERS_CHANNEL, id, now_ms());
            tx.notify(EGRESS_ANSWERS_CHANNEL, &notice).await?;
        }
        Ok(true)
    }

    /// Answers a use another host's cell waits on: checked as that host would, recorded once
    /// with this host's seal, journaled, and that host told (PostgreSQL's NOTIFY, sent when
    /// the write commits); it checks the seal (and a device decision the use needs, against
    /// what it showed) before it hands the answer to its cell
    /// ([`Approvals::deliver`]).
    async fn answer_elsewhere(
        self,
        caller: &Identity,
        user: &str,
        id: &str,
        approve: bool,
        decision: Option<&Signed>,
    ) -> Result<bool, KeepError> {
        let subject = format!("approval:{id}");
        // A use of this host's is answered where its cell waits (`answer_here`) or not at all.
        let row = self
            .waits(user)
            .await?
            .into_iter()
            .find(|row| row.id == id && row.host != self.keep.host_id())
            .ok_or(KeepError::NotFound("approval"))?;
        let view: WaitingView =
            serde_json::from_str(&row.view).map_err(|_| KeepError::NotFound("approval"))?;
        let decision_text =
            decision.map(|envelope| serde_json::to_string(envelope).unwrap_or_default());
        let (answer, by, decision_text) =
            match self.check_answer(user, id, &view, approve, decision).await {
                Ok(by) => (approve, by, decision_text),
                Err(error @ KeepError::Conflict(_)) => {
                    // Revoked: refused, whatever the answer; the waiting host is told so.
                    let refused = Answer {
                        user,
                        id,
                        host: &row.host,
                        approve: false,
                        decision: None,
                        by: EgressBy::REVOKED,
                        view: &view,
                    };
                    self.record_answer(caller, &refused).await?;
                    return self
                        .refuse_answer(caller, (user, &subject), decision, error)
                        .await;
                }
                Err(error) => {
                    return self
                        .refuse_answer(caller, (user, &subject), decision, error)
                        .await;
                }
            };
        let answer = Answer {
            user,
            id,
            host: &row.host,
            approve: answer,
            decision: decision_text.as_deref(),
            by,
            view: &view,
        };
        self.record_answer(caller, &answer).await?.ok_or_else(|| {
            KeepError::Conflict(
                "the request stopped waiting (its time ran out or its session ended), or was \
                 answered already"
                    .into(),
            )
        })
    }

    /// Whether `row`'s recorded answer releases a use this host shows as `view`: an approval
    /// sealed by a host (the host key every host shares), and, when the use's rule demands a
    /// device signature, a decision that verifies against `view` as this host showed it (its
    /// nonce was used by the host that recorded it), for `user`, whose use waits here: a row
    /// whose user was edited to another person's answers nothing of `user`'s use. Anything
    /// else is a refusal.
    async fn recorded_approval(
        self,
        user: &str,
        row: &imurun_store::EgressWaitRow,
        view: &WaitingView,
    ) -> bool {
        if row.state != "approved" || row.host != self.keep.host_id() || row.user_name != user {
            return false;
        }
        let Some(seal) = &row.seal else {
            return false;
        };
        // The use as this host showed it, not as the row says: a view edited in the database
        // is not what the answer was given to.
        let view_sha256 = view_sha256(view);
        let fields = crate::seal::EgressAnswerFields {
            id: &row.id,
            user: &row.user_name,
            host: &row.host,
            view_sha256: &view_sha256,
            approve: true,
            decision: row.decision.as_deref(),
        };
        if crate::seal::check_egress_answer(&self.core.host_key().public(), &fields, seal).is_err()
        {
            return false;
        }
        // An approval recorded on another host releases nothing of a tool this host holds
        // revoked (its own mark), nor of a version since replaced.
        if !matches!(self.tool_use_in_force(&row.user_name, view).await, Ok(true)) {
            return false;
        }
        if !view.device_signature {
            return true;
        }
        let Some(envelope) = row
            .decision
            .as_deref()
            .and_then(|text| serde_json::from_str::<Signed>(text).ok())
        else {
            return false;
        };
        let device = match self
            .core
            .store()
            .keep_device(&envelope.signature.key_id)
            .await
        {
            Ok(Some(device)) => device_key(device).ok(),
            _ => None,
        };
        let snapshot = egress_answer::Snapshot {
            use_id: &row.id,
            hashes: &view.hashes,
            agent_version: view.agent_version,
            signer: Signer {
                user: &row.user_name,
                device: device.as_ref(),
                now_s: self.core.now_s(),
            },
        };
        egress_answer::check_recorded(&snapshot, &envelope).is_ok()
    }

    /// Hands the answer another host recorded for use `id` to the cell waiting on it here, if
    /// one does (called when the database says an answer came). Only a sealed approval that
    /// holds for the use as this host showed it releases the use; anything else refuses it.
    pub async fn deliver(self, id: &str) -> Result<(), KeepError> {
        let Some(cells) = self.keep.cells() else {
            return Ok(());
        };
        let Some(row) = self.core.store().keep_egress_wait(id).await? else {
            return Ok(());
        };
        if row.host != self.keep.host_id() || row.state == "waiting" {
            return Ok(());
        }
        if let Some(entry) = cells.take_waiting(&row.user_name, id) {
            let approve = self
                .recorded_approval(&row.user_name, &row, &entry.view)
                .await;
            // The cell may have stopped waiting meanwhile; then there is no one to tell.
            let _delivered = entry.answer.send(approve);
        }
        Ok(())
    }

    /// Looks again at every use waiting here, for answers whose notice may have been missed
    /// (the connection to the database was lost a while).
    pub async fn deliver_missed(self) -> Result<(), KeepError> {
        let Some(cells) = self.keep.cells() else {
            return Ok(());
        };
        for id in cells.waiting_ids() {
            self.deliver(&id).await?;
        }
        Ok(())
    }

    /// Forgets the uses this host's cells waited on before it started: those cells are gone.
    pub async fn forget_waits_of_before(self) -> Result<u64, KeepError> {
        Ok(self
            .core
            .store()
            .keep_egress_waits_forget_host(self.keep.host_id())
            .await?)
    }

    /// Verifies a device decision about waiting use `id` and uses its nonce; who decided.
    async fn check_egress_decision(
        self,
        user: &str,
        id: &str,
        view: &WaitingView,
        envelope: &Signed,
        approve: bool,
    ) -> Result<EgressBy, KeepError> {
        self.core
            .decide_under_lock(
                user,
                envelope,
                async |_| Ok(()),
                |(), signer| {
                    let snapshot = egress_answer::Snapshot {
                        use_id: id,
                        hashes: &view.hashes,
                        agent_version: view.agent_version,
                        signer,
                    };
                    egress_answer::check(&snapshot, envelope, approve)
                },
                async |_, (), decision| {
                    let who = EgressBy::Device(DeviceAnswer {
                        device: decision.device_key_id.clone(),
                        nonce: decision.nonce.clone(),
                    });
                    Ok((who, Commit::Plain))
                },
            )
            .await
    }
}

/// The SHA-256 of a waiting use's view as its host records it: what an answer's seal names.
fn view_sha256(view: &WaitingView) -> String {
    crate::keys::sha256_hex(serde_json::to_string(view).unwrap_or_default().as_bytes())
}
