//! Revoking a person's tool: every version ever deployed, on every host sharing the database;
//! its waiting uses refused and its calls in flight ended.

use super::sessions::session_user;
use super::tool_access::{TOOL_KIND, TOOL_REVOKED_KIND, ToolView, own_tool_name};
use super::{Identity, Tools, append};
use crate::KeepError;
use crate::events::KeepEvent;
use crate::journal_detail::{EgressBy, RevokedInDatabase, ToolDetail};
use imurun_keep_rules::checks::revoke;

impl Tools<'_> {
    /// Revokes the calling person's tool `name`, every version: from this write on, no call
    /// starts it, and its uses waiting for an answer (on any host) are refused. Taking
    /// authority away needs no device.
    ///
    /// The operator may revoke any person's tool, named `u/<user>/<name>`: the entry is in
    /// that person's journal, and the event on their stream.
    pub async fn revoke(self, caller: &Identity, name: &str) -> Result<ToolView, KeepError> {
        let (user, name) = revoked_tool_name(caller, name)?;
        let mut tx = self.core.store().keep_begin().await?;
        let subject = format!("{user}/{name}");
        let in_database = tx.high_water(TOOL_KIND, &subject).await?;
        let row = tx.tool(user, name).await?;
        let snapshot = revoke::Snapshot {
            row: row.as_ref().map(|row| revoke::Row {
                version: row.version,
                sealed: self.check_tool_row(row).is_ok(),
            }),
            deployed: self.core.high_water(TOOL_KIND, &subject, in_database)?,
            deployed_here: self.core.high_water(TOOL_KIND, &subject, 0)?,
        };
        let plan = revoke::check(&snapshot).ok_or(KeepError::NotFound("tool"))?;
        let changed = row.is_some() && tx.revoke_tool(user, name).await? > 0;
        tx.raise_high_water(TOOL_REVOKED_KIND, &subject, plan.revoked_version)
            .await?;
        self.mark_revoked_here(&subject, plan.vouched);
        // A revoke is journaled, and refuses the tool's waiting uses, whatever the database
        // said about the tool: the mark it raises is a revoke.
        let detail = ToolDetail::Revoke {
            tool: format!("u/{user}/{name}"),
            version: row.as_ref().map(|row| row.version),
            revoked_version: plan.revoked_version,
            bundle_sha256: row.as_ref().map(|row| row.bundle_sha256.clone()),
            database: match (changed, row.is_some()) {
                (true, _) => RevokedInDatabase::Revoked,
                (false, true) => RevokedInDatabase::RevokedAlready,
                (false, false) => RevokedInDatabase::NoRow,
            },
        };
        let journal_subject = format!("tool:u/{user}/{name}");
        append(&mut tx, caller, Some(user), &journal_subject, detail).await?;
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
            revoke::Outcome::Revoked if caller.is_operator() => {
                Ok(self.tool_of(user, name).await?.for_operator())
            }
            revoke::Outcome::Revoked => self.get(caller, name).await,
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
    fn mark_revoked_here(self, subject: &str, vouched: i64) {
        if vouched > 0
            && let Err(error) = self
                .core
                .raise_high_water_file(TOOL_REVOKED_KIND, subject, vouched)
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
        self,
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
            let answer = super::egress_answers::Answer {
                user,
                id: &wait.id,
                host: &wait.host,
                approve: false,
                decision: None,
                by: EgressBy::REVOKED,
                view: &view,
            };
            if self.keep.approvals().record_in(tx, caller, &answer).await?
                && wait.host == self.keep.host_id()
            {
                refused_here.push(wait.id);
            }
        }
        Ok(refused_here)
    }

    /// After a revoke commits: its waiting uses here are told, its calls in flight here end
    /// (the other hosts end theirs when they hear of it, [`Tools::end_revoked_calls`]),
    /// and the person hears of it.
    async fn tell_revoked(self, user: &str, name: &str, version: i64, refused_here: Vec<String>) {
        for id in refused_here {
            if let Err(error) = self.keep.approvals().deliver(&id).await {
                // The use is refused in the database; its cell stops waiting at its timeout.
                tracing::warn!("a revoked tool's waiting use was not told: {error}");
            }
        }
        if let Some(cells) = self.keep.cells() {
            cells.end_calls(user, name);
            cells.publish(
                user,
                KeepEvent::ToolRevoked {
                    name: format!("u/{user}/{name}"),
                    version,
                },
            );
        }
    }

    /// Ends this host's calls in flight of every tool revoked since they started: the
    /// database is read again for each tool with a call running, so a notice from another
    /// host is only a hint, and a missed one is made up for at the next sweep.
    pub async fn end_revoked_calls(self) -> Result<usize, KeepError> {
        let Some(cells) = self.keep.cells() else {
            return Ok(0);
        };
        let mut ended = 0;
        for (user, name) in cells.tools_in_flight() {
            let revoked = match self.core.store().keep_tool(&user, &name).await? {
                Some(row) => self.revoked(&row).await?,
                None => true,
            };
            if revoked {
                ended += cells.end_calls(&user, &name);
            }
        }
        Ok(ended)
    }

    /// Whether `row` is revoked: by the row, or by the revocation mark (the database's, or the
    /// one kept outside it, so a revoke undone in the database still holds on the host that
    /// took it).
    pub(crate) async fn revoked(self, row: &imurun_store::ToolRow) -> Result<bool, KeepError> {
        let subject = format!("{}/{}", row.user_name, row.name);
        let in_database = self
            .core
            .store()
            .keep_high_water(TOOL_REVOKED_KIND, &subject)
            .await?;
        self.covered_by_revocation(row, in_database)
    }

    /// [`Self::revoked`], the database's mark read under `tx`'s write lock.
    pub(crate) async fn revoked_locked(
        self,
        tx: &mut imurun_store::KeepTx,
        row: &imurun_store::ToolRow,
    ) -> Result<bool, KeepError> {
        let subject = format!("{}/{}", row.user_name, row.name);
        let in_database = tx.high_water(TOOL_REVOKED_KIND, &subject).await?;
        self.covered_by_revocation(row, in_database)
    }

    fn covered_by_revocation(
        self,
        row: &imurun_store::ToolRow,
        in_database: i64,
    ) -> Result<bool, KeepError> {
        let subject = format!("{}/{}", row.user_name, row.name);
        Ok(row.revoked_at_ms.is_some()
            || self
                .core
                .high_water(TOOL_REVOKED_KIND, &subject, in_database)?
                >= row.version)
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
