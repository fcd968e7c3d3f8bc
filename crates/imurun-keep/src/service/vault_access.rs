//! The vault: each identity's own credentials, sealed at rest, never returned. Only names and
//! times are listed; the value goes in and never comes back out through this service.

use serde::Serialize;

use super::{Identity, Vault, append};
use crate::KeepError;
use crate::journal_detail::VaultDetail;
use crate::manifest::check_credential_name;

/// Entries one identity may keep.
pub const VAULT_ENTRIES_MAX: usize = 256;

/// A vault entry as the API shows it: its name and when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VaultEntryView {
    pub name: String,
    pub updated_at_ms: i64,
}

impl Vault<'_> {
    /// Stores (or replaces) the caller's credential `name`.
    pub async fn put(
        self,
        caller: &Identity,
        name: &str,
        value: &[u8],
    ) -> Result<VaultEntryView, KeepError> {
        check_credential_name(name, "name")?;
        if value.is_empty() {
            return Err(KeepError::invalid("value", "a credential cannot be empty"));
        }
        let owner = caller.vault_owner();
        let sealed = self
            .core
            .vault_key()
            .seal(self.core.random(), &owner, name, value)?;
        let mut tx = self.core.store().keep_begin().await?;
        // Counted under the write lock: two puts at once cannot both take the last place.
        let (count, replaces) = tx.vault_count(&owner, name).await?;
        if !replaces && count >= VAULT_ENTRIES_MAX as i64 {
            return Err(KeepError::Conflict(format!(
                "the vault holds {VAULT_ENTRIES_MAX} entries for this identity; delete one first"
            )));
        }
        tx.put_vault(&owner, name, &sealed).await?;
        let subject = format!("vault:{name}");
        let owned = name.to_owned();
        let detail = if replaces {
            VaultDetail::Replace { name: owned }
        } else {
            VaultDetail::Add { name: owned }
        };
        append(&mut tx, caller, caller.user(), &subject, detail).await?;
        tx.commit().await?;
        self.list(caller)
            .await?
            .into_iter()
            .find(|entry| entry.name == name)
            .ok_or(KeepError::NotFound("credential"))
    }

    /// The caller's credentials' names.
    pub async fn list(self, caller: &Identity) -> Result<Vec<VaultEntryView>, KeepError> {
        Ok(self
            .core
            .store()
            .keep_vault_entries(&caller.vault_owner())
            .await?
            .into_iter()
            .map(|row| VaultEntryView {
                name: row.name,
                updated_at_ms: row.updated_at_ms,
            })
            .collect())
    }

    /// Deletes the caller's credential `name`.
    pub async fn delete(self, caller: &Identity, name: &str) -> Result<(), KeepError> {
        if check_credential_name(name, "name").is_err() {
            return Err(KeepError::NotFound("credential"));
        }
        let mut tx = self.core.store().keep_begin().await?;
        if !tx.delete_vault(&caller.vault_owner(), name).await? {
            return Err(KeepError::NotFound("credential"));
        }
        let detail = VaultDetail::Delete {
            name: name.to_owned(),
        };
        append(
            &mut tx,
            caller,
            caller.user(),
            &format!("vault:{name}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Opens the caller's credential `name`: for the egress broker only, never for an answer.
    pub async fn open(self, owner: &str, name: &str) -> Result<crate::vault::Secret, KeepError> {
        let sealed = self
            .core
            .store()
            .keep_vault_sealed(owner, name)
            .await?
            .ok_or(KeepError::NotFound("credential"))?;
        Ok(self.core.vault_key().open(owner, name, &sealed)?)
    }
}
