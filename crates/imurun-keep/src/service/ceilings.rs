//! Per-user ceilings (operator-signed, versioned).
//!
//! A user without a ceiling, or whose ceiling expired, has the empty ceiling
//! ([`Ceiling::empty`]). A stored ceiling whose version is not the highest accepted for its user
//! (an old row restored) is refused, and the empty ceiling applies: deny by default.

use serde::Serialize;

use super::{CEILING_KIND, Ceilings, Identity, append, envelope_text};
use crate::KeepError;
use crate::documents::{CEILING_TYPE, Ceiling, Signed};
use crate::journal_detail::CeilingDetail;
use imurun_keep_rules::checks::documents;

/// A user's ceiling as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CeilingView {
    /// The ceiling in force (the empty ceiling when none is).
    pub ceiling: Ceiling,
    /// Why the empty ceiling applies, when it does: `none set`, `expired`, `rolled back`.
    pub empty_because: Option<String>,
}

impl Ceilings<'_> {
    /// Sets `user`'s ceiling (operator only): signed by an active policy key, for that user, not
    /// expired, and of a higher version than any accepted before.
    pub async fn put(
        self,
        caller: &Identity,
        user: &str,
        envelope: &Signed,
    ) -> Result<Ceiling, KeepError> {
        caller.require_operator()?;
        crate::documents::check_user(user, "user")?;
        let subject = format!("ceiling:{user}");
        match self.try_put(caller, user, envelope).await {
            Ok(ceiling) => Ok(ceiling),
            // An operator's refused write is the operator's business: its reason may name other
            // users and keys, so the entry is not about the user.
            Err(error) => {
                let trust = self.core.trust().await.ok();
                let attempt = documents::attempt(trust.as_ref(), envelope, CEILING_TYPE);
                self.core
                    .refuse_attempt(caller, (None, "ceiling", &subject), Some(attempt), error)
                    .await
            }
        }
    }

    async fn try_put(
        self,
        caller: &Identity,
        user: &str,
        envelope: &Signed,
    ) -> Result<Ceiling, KeepError> {
        let trust = self.core.trust().await?;
        let ceiling = documents::verify_ceiling(&trust, user, envelope, self.core.now_s())?;
        let text = envelope_text(envelope)?;
        let mut tx = self.core.store().keep_begin().await?;
        let locked = documents::Locked {
            root_checked: trust.root().version,
            root_now: self.core.trust_root_version_locked(&mut tx).await?,
            highest: self.core.high_water(
                CEILING_KIND,
                user,
                tx.high_water(CEILING_KIND, user).await?,
            )?,
        };
        documents::check_ceiling(&ceiling, &locked)?;
        self.core
            .put_sealed_document(&mut tx, CEILING_KIND, user, ceiling.version, &text)
            .await?;
        tx.raise_high_water(CEILING_KIND, user, ceiling.version)
            .await?;
        let detail = CeilingDetail {
            user: user.to_owned(),
            version: ceiling.version,
            expires_at: ceiling.expires_at,
            ceiling_sha256: envelope.document_sha256()?,
            policy_key_id: envelope.signature.key_id.clone(),
            egress: ceiling.egress.clone(),
            credentials: ceiling.credentials.clone(),
            memory: ceiling.memory,
            model_socket: ceiling.model_socket,
            resources: ceiling.resources,
        };
        let subject = format!("ceiling:{user}@{}", ceiling.version);
        append(&mut tx, caller, Some(user), &subject, detail).await?;
        self.core
            .commit_and_mark(tx, (CEILING_KIND, user.to_owned(), ceiling.version))
            .await?;
        Ok(ceiling)
    }

    /// `user`'s ceiling in force. The operator may read anyone's; a user only their own, and
    /// another user's answers exactly as a user that does not exist.
    pub async fn get(self, caller: &Identity, user: &str) -> Result<CeilingView, KeepError> {
        if let Some(own) = caller.user()
            && own != user
        {
            return Err(KeepError::NotFound("ceiling"));
        }
        if crate::documents::check_user(user, "user").is_err() {
            return Err(KeepError::NotFound("ceiling"));
        }
        self.in_force(user).await
    }

    /// `user`'s ceiling in force, whoever asks (for the host's own decisions).
    pub async fn in_force(self, user: &str) -> Result<CeilingView, KeepError> {
        let row = self.core.store().keep_document(CEILING_KIND, user).await?;
        let in_database = self
            .core
            .store()
            .keep_high_water(CEILING_KIND, user)
            .await?;
        let highest = self.core.high_water(CEILING_KIND, user, in_database)?;
        let trust = self.core.trust_if_any().await?;
        self.of_row(user, row, highest, trust.as_ref())
    }

    /// The version of `user`'s ceiling in force, derived again from the row read under the
    /// lock of `tx`, with `trust`, the trust root read before the lock (nothing under the lock
    /// waits for another connection).
    pub(crate) async fn version_locked(
        self,
        tx: &mut imurun_store::KeepTx,
        user: &str,
        trust: Option<&crate::trust::Trust>,
    ) -> Result<i64, KeepError> {
        let row = tx.document(CEILING_KIND, user).await?;
        let highest =
            self.core
                .high_water(CEILING_KIND, user, tx.high_water(CEILING_KIND, user).await?)?;
        Ok(self.of_row(user, row, highest, trust)?.ceiling.version)
    }

    /// The ceiling a stored row puts in force: the empty ceiling when there is no row, or when
    /// the row does not hold — older than a version accepted, not sealed by this host, not
    /// signed by a policy key of the trust root in force (`trust`; `None` when none is), not the
    /// user's, or expired. It reads nothing, so it may run under the write lock.
    pub(crate) fn of_row(
        self,
        user: &str,
        row: Option<imurun_store::DocumentRow>,
        highest: i64,
        trust: Option<&crate::trust::Trust>,
    ) -> Result<CeilingView, KeepError> {
        let empty = |because: &str| CeilingView {
            ceiling: Ceiling::empty(user),
            empty_because: Some(because.to_owned()),
        };
        let Some(row) = row else {
            return Ok(empty("none set"));
        };
        if row.version != highest {
            return Ok(empty(
                "rolled back: the stored ceiling is older than one accepted",
            ));
        }
        if self.core.check_document_row(&row).is_err() {
            return Ok(empty("the stored ceiling is not sealed by this host"));
        }
        let Some(trust) = trust else {
            return Ok(empty("no trust root is in force (expired or refused)"));
        };
        let envelope = Signed::from_text(row.envelope.as_bytes())?;
        if trust
            .verify_stored(&envelope, crate::documents::CEILING_TYPE)
            .is_err()
        {
            return Ok(empty("the stored ceiling's signature does not hold"));
        }
        let ceiling = Ceiling::from_document(&envelope.signed)?;
        if ceiling.user != user || ceiling.version != row.version {
            return Ok(empty("the stored ceiling does not match its row"));
        }
        if ceiling.expires_at <= self.core.now_s() {
            return Ok(empty("expired"));
        }
        Ok(CeilingView {
            ceiling,
            empty_because: None,
        })
    }
}
