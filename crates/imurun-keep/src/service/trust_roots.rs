//! The trust root: installed once by `keep init`, then rotated by signed versions that its own
//! root keys verify.

use super::{Identity, TRUST_ROOT_KIND, TrustRoots, append, envelope_text};
use crate::KeepError;
use crate::documents::{Signed, TRUST_ROOT_TYPE, TrustRoot};
use crate::journal_detail::{KeySummary, TrustRootDetail, TrustRootInstalled, TrustRootRotated};
use crate::trust::Trust;
use imurun_keep_rules::checks::documents;

impl TrustRoots<'_> {
    /// The trust root in force, checked against the highest version accepted and its expiry.
    pub async fn in_force(self) -> Result<Trust, KeepError> {
        self.core.trust().await
    }

    /// The trust root in force even when it has expired: what the host checks at start (an
    /// expired root must not keep the host from starting, or it could never be replaced).
    pub async fn even_expired(self) -> Result<Trust, KeepError> {
        self.core.trust_even_expired().await
    }

    /// Whether a trust root is installed.
    pub async fn is_installed(self) -> Result<bool, KeepError> {
        Ok(self.core.store.keep_high_water(TRUST_ROOT_KIND, "").await? > 0)
    }

    /// Installs the first trust root (`keep init`); refused when one is installed already.
    pub async fn install(self, envelope: &Signed) -> Result<(), KeepError> {
        let trust = Trust::install(envelope, self.core.now_s())?;
        let version = trust.root().version;
        let text = envelope_text(envelope)?;
        let mut tx = self.core.store.keep_begin().await?;
        if tx.high_water(TRUST_ROOT_KIND, "").await? > 0 {
            return Err(KeepError::Conflict(
                "a trust root is installed already; rotate it with a new signed version".into(),
            ));
        }
        self.core
            .put_sealed_document(&mut tx, TRUST_ROOT_KIND, "", version, &text)
            .await?;
        tx.raise_high_water(TRUST_ROOT_KIND, "", version).await?;
        let detail = TrustRootDetail::Installed(TrustRootInstalled {
            version,
            root_sha256: envelope.document_sha256()?,
            keys: key_summary(&trust),
            host_key_id: self.core.host_key.key_id(),
        });
        append(
            &mut tx,
            &Identity::local_operator(),
            None,
            "trust_root@1",
            detail,
        )
        .await?;
        self.core
            .commit_and_mark(tx, (TRUST_ROOT_KIND, String::new(), version))
            .await?;
        Ok(())
    }
}

/// The trust root's keys for the journal: ids, roles, retirement.
fn key_summary(trust: &Trust) -> Vec<KeySummary> {
    trust
        .root()
        .keys
        .iter()
        .map(|key| KeySummary {
            key_id: key.key_id.clone(),
            role: key.role,
            retired: key.retired,
        })
        .collect()
}

impl TrustRoots<'_> {
    /// Puts a new trust root in force (operator only): signed by an active policy key of the
    /// current root, a higher version, not expired.
    pub async fn rotate(
        self,
        caller: &Identity,
        envelope: &Signed,
    ) -> Result<TrustRoot, KeepError> {
        caller.require_operator()?;
        match self.try_rotate(caller, envelope).await {
            Ok(root) => Ok(root),
            Err(error) => {
                let trust = self.core.trust_even_expired().await.ok();
                let attempt = documents::attempt(trust.as_ref(), envelope, TRUST_ROOT_TYPE);
                let what = (None, "trust_root", "trust_root");
                self.core
                    .refuse_attempt(caller, what, Some(attempt), error)
                    .await
            }
        }
    }

    async fn try_rotate(
        self,
        caller: &Identity,
        envelope: &Signed,
    ) -> Result<TrustRoot, KeepError> {
        let current = self.core.trust_even_expired().await?;
        let next = current.rotate(envelope, self.core.now_s())?;
        let version = next.root().version;
        let text = envelope_text(envelope)?;
        let mut tx = self.core.store().keep_begin().await?;
        let locked = documents::Locked {
            root_checked: current.root().version,
            root_now: self.core.trust_root_version_locked(&mut tx).await?,
            highest: current.root().version,
        };
        documents::check_rotation(version, &locked)?;
        self.core
            .put_sealed_document(&mut tx, TRUST_ROOT_KIND, "", version, &text)
            .await?;
        tx.raise_high_water(TRUST_ROOT_KIND, "", version).await?;
        let detail = TrustRootDetail::Rotated(TrustRootRotated {
            version,
            previous_version: current.root().version,
            root_sha256: envelope.document_sha256()?,
            signed_by: envelope.signature.key_id.clone(),
            keys: key_summary(&next),
        });
        append(
            &mut tx,
            caller,
            None,
            &format!("trust_root@{version}"),
            detail,
        )
        .await?;
        self.core
            .commit_and_mark(tx, (TRUST_ROOT_KIND, String::new(), version))
            .await?;
        Ok(next.root().clone())
    }

    /// The trust root in force (operator only).
    pub async fn view(self, caller: &Identity) -> Result<TrustRoot, KeepError> {
        caller.require_operator()?;
        Ok(self.core.trust().await?.root().clone())
    }
}
