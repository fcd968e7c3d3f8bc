//! The core every area works over: the journal's one way in, the high-water marks, sealed
//! documents, the trust root in force, and the one refusal path.

use imurun_keep_rules::RuleError;
use imurun_keep_rules::checks::Attempt;
use imurun_store::{JournalDraft, KeepTx};

use crate::journal_detail::{JournalDetail, RefusalDetail, Refused};

use super::refusals::escaped_and_cut;
use super::{Core, Identity, LOCAL_TOKEN_ID, TRUST_ROOT_KIND};
use crate::KeepError;
use crate::documents::Signed;
use crate::journal::JournalEntry;
use crate::keys::KeyPair;
use crate::trust::Trust;
use crate::vault::VaultKey;
use imurun_keep_rules::random::Random;
use imurun_store::Store;

impl Core {
    /// Appends one journal entry in a write of its own, by `actor` (`agent:<name>` for what a
    /// cell did).
    pub(crate) async fn journal_as(
        &self,
        actor: &str,
        user: Option<&str>,
        subject: &str,
        detail: JournalDetail,
    ) -> Result<(), KeepError> {
        let mut tx = self.store.keep_begin().await?;
        append_as(&mut tx, actor, user, subject, detail).await?;
        tx.commit().await?;
        Ok(())
    }
}

impl Core {
    /// The highest version accepted for `kind` and `subject`: the higher of the database's mark
    /// (`in_database`) and the file's.
    pub(crate) fn high_water(
        &self,
        kind: &str,
        subject: &str,
        in_database: i64,
    ) -> Result<i64, KeepError> {
        let in_file = match &self.high_water_file {
            Some(file) => file.get(kind, subject)?,
            None => 0,
        };
        Ok(in_database.max(in_file))
    }

    /// The trust root's version in force, read under the lock of `tx`.
    pub(crate) async fn trust_root_version_locked(
        &self,
        tx: &mut KeepTx,
    ) -> Result<i64, KeepError> {
        self.high_water(
            TRUST_ROOT_KIND,
            "",
            tx.high_water(TRUST_ROOT_KIND, "").await?,
        )
    }

    /// Raises the file's mark (the database's is raised in the transaction).
    pub(crate) fn raise_high_water_file(
        &self,
        kind: &str,
        subject: &str,
        version: i64,
    ) -> Result<(), KeepError> {
        match &self.high_water_file {
            Some(file) => file.raise(kind, subject, version),
            None => Ok(()),
        }
    }

    /// Commits `tx`, then raises the file's mark for `kind` and `subject` to `version`, in a
    /// task of their own: a request dropped while it waits (its client went away) cannot leave
    /// a committed write without its mark outside the database.
    pub(crate) async fn commit_and_mark(
        &self,
        tx: KeepTx,
        (kind, subject, version): (&'static str, String, i64),
    ) -> Result<(), KeepError> {
        let file = self.high_water_file.clone();
        tokio::spawn(async move {
            tx.commit().await?;
            match file {
                Some(file) => file.raise(kind, &subject, version),
                None => Ok(()),
            }
        })
        .await
        .map_err(|error| KeepError::Unavailable(format!("a Keep write stopped: {error}")))?
    }
}

impl Core {
    pub(crate) fn now_s(&self) -> i64 {
        imurun_core::unix_s(self.clock.now())
    }

    pub(crate) fn now_ms(&self) -> i64 {
        imurun_core::unix_ms(self.clock.now())
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn vault_key(&self) -> &VaultKey {
        &self.vault_key
    }

    pub(crate) fn host_key(&self) -> &KeyPair {
        &self.host_key
    }

    /// The generator the rules draw keys, tokens, ids and nonces from.
    pub(crate) fn random(&self) -> &dyn Random {
        self.random.as_ref()
    }

    /// Writes a signed document row, sealed by the host key.
    pub(crate) async fn put_sealed_document(
        &self,
        tx: &mut KeepTx,
        kind: &str,
        subject: &str,
        version: i64,
        envelope: &str,
    ) -> Result<(), KeepError> {
        let fields = crate::seal::DocumentFields {
            kind,
            subject,
            version,
            envelope,
        };
        let seal = crate::seal::seal_document(&self.host_key, &fields);
        tx.put_document(kind, subject, version, envelope, &seal)
            .await?;
        Ok(())
    }

    /// Checks a stored document row's seal.
    pub(crate) fn check_document_row(
        &self,
        row: &imurun_store::DocumentRow,
    ) -> Result<(), KeepError> {
        let fields = crate::seal::DocumentFields {
            kind: &row.kind,
            subject: &row.subject,
            version: row.version,
            envelope: &row.envelope,
        };
        Ok(crate::seal::check_document(
            &self.host_key.public(),
            &fields,
            &row.seal,
        )?)
    }
}

impl Core {
    /// The trust root in force, checked against the highest version accepted and its expiry.
    pub(crate) async fn trust(&self) -> Result<Trust, KeepError> {
        let trust = self.trust_even_expired().await?;
        crate::trust::check_expiry("the trust root", trust.root().expires_at, self.now_s())?;
        Ok(trust)
    }

    /// The trust root in force, or `None` when none is (not set up, expired, or a stored root
    /// that does not hold: then nothing it would verify is in force). A failing database is an
    /// error, never "no trust root": a decision must not be checked against the empty ceiling
    /// because a read failed.
    pub(crate) async fn trust_if_any(&self) -> Result<Option<Trust>, KeepError> {
        match self.trust().await {
            Ok(trust) => Ok(Some(trust)),
            Err(error @ KeepError::Store(_)) => Err(error),
            Err(_) => Ok(None),
        }
    }

    /// The trust root in force even when it has expired: what verifies its successor, and what
    /// the host checks at start (an expired root must not keep the host from starting, or it
    /// could never be replaced).
    pub(crate) async fn trust_even_expired(&self) -> Result<Trust, KeepError> {
        let in_database = self.store.keep_high_water(TRUST_ROOT_KIND, "").await?;
        let highest = self.high_water(TRUST_ROOT_KIND, "", in_database)?;
        let row = self
            .store
            .keep_document(TRUST_ROOT_KIND, "")
            .await?
            .ok_or(KeepError::NotInitialised)?;
        self.check_document_row(&row)?;
        let envelope = Signed::from_text(row.envelope.as_bytes())?;
        Ok(Trust::load_expired(&envelope, highest)?)
    }
}

impl Core {
    /// Journals a refusal of `action` on `subject` by the rule `error` names, in a write of its
    /// own (the refused write was never made). Store failures are not journaled.
    pub(crate) async fn refuse<T>(
        &self,
        caller: &Identity,
        user: Option<&str>,
        action: &str,
        subject: &str,
        error: KeepError,
    ) -> Result<T, KeepError> {
        self.refuse_attempt(caller, (user, action, subject), None, error)
            .await
    }

    /// [`Core::refuse`] for a request that names a version and a signing key: the entry
    /// records them, and whether the signature held.
    pub(crate) async fn refuse_attempt<T>(
        &self,
        caller: &Identity,
        (user, action, subject): (Option<&str>, &str, &str),
        attempt: Option<Attempt>,
        error: KeepError,
    ) -> Result<T, KeepError> {
        if matches!(
            error,
            KeepError::Store(_) | KeepError::Rule(RuleError::Random(_)) | KeepError::NotFound(_)
        ) {
            return Err(error);
        }
        // The reason and the subject may quote what the request sent: one line, escaped.
        let detail = RefusalDetail::Refused(Refused {
            action: action.to_owned(),
            rule: error.rule().to_owned(),
            reason: crate::proposals::one_line(&error.to_string(), 500),
            attempt: attempt.map(|attempt| Attempt {
                key_id: escaped_and_cut(&attempt.key_id),
                ..attempt
            }),
        });
        self.journal_refusal(caller, user, &escaped_and_cut(subject), detail)
            .await?;
        Err(error)
    }
}

/// Appends an entry to the journal in `tx`: the one way entries are written (each Keep write
/// calls it in its own transaction; benchmarks call it to measure appends). The entry's `kind`
/// is the detail's.
pub async fn append(
    tx: &mut KeepTx,
    caller: &Identity,
    user: Option<&str>,
    subject: &str,
    detail: impl Into<JournalDetail>,
) -> Result<(), KeepError> {
    let detail = detail.into();
    // The caller's token is read again under the write lock: a token revoked (on this host or
    // another) after the request was let in authorises nothing that commits after the revoke.
    // Revoking one's own token is the one write it may still make.
    let token_id = match caller {
        Identity::Operator { token_id } | Identity::User { token_id, .. } => token_id.as_str(),
    };
    if token_id != LOCAL_TOKEN_ID
        && !tx.token_active(token_id).await?
        && !(detail.kind() == "token" && subject == format!("token:{token_id}"))
    {
        return Err(KeepError::Unauthorized);
    }
    append_as(tx, &caller.actor(), user, subject, detail).await
}

/// [`append`] with the actor named as the journal names it.
pub(crate) async fn append_as(
    tx: &mut KeepTx,
    actor: &str,
    user: Option<&str>,
    subject: &str,
    detail: impl Into<JournalDetail>,
) -> Result<(), KeepError> {
    let detail = detail.into();
    let kind = detail.kind();
    let detail = detail.to_value()?;
    crate::canonical::check_document(&detail)?;
    let draft = JournalDraft {
        actor: actor.to_owned(),
        user_name: user.map(str::to_owned),
        kind: kind.to_owned(),
        subject: subject.to_owned(),
        detail: String::from_utf8(crate::canonical::canonicalize(&detail))
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?,
    };
    tx.append_journal(draft, |row| {
        Ok::<_, KeepError>(entry_from_row(row)?.compute_hash()?)
    })
    .await??;
    Ok(())
}

/// A stored journal row as an entry of the chain.
pub(crate) fn entry_from_row(row: &imurun_store::JournalRow) -> Result<JournalEntry, KeepError> {
    Ok(JournalEntry {
        seq: row.seq,
        at_ms: row.at_ms,
        actor: row.actor.clone(),
        user: row.user_name.clone(),
        kind: row.kind.clone(),
        subject: row.subject.clone(),
        detail: crate::canonical::parse_document(row.detail.as_bytes())?,
        prev_hash: row.prev_hash.clone(),
        hash: row.hash.clone(),
    })
}

/// An envelope's JSON text, as stored.
pub(crate) fn envelope_text(envelope: &Signed) -> Result<String, KeepError> {
    serde_json::to_string(envelope)
        .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))
}
