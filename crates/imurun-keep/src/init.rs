//! `imurun keep init`: the Keep folder and its files, the first trust root in the store, and the
//! first operator token.
//!
//! The folder is created `0700` and every file in it `0600`:
//!
//! | file | what | who needs it |
//! | --- | --- | --- |
//! | `policy.key` | the operator's policy key: signs policies, ceilings and trust roots | the operator; move it off the host once set up |
//! | `signer.key` | a bundle signer key, listed in the first trust root | whoever builds packs |
//! | `host.key` | the host key: signs the bundles of tools people approve | the host |
//! | `vault.key` | the vault's sealing key | the host |
//! | `trust-root.json` | trust root version 1, signed by the policy key | a copy; the store holds the one in force |

use imurun_keep_rules::RuleError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use imurun_store::Store;

use crate::KeepError;
use crate::documents::{KeyRole, Signed, TRUST_ROOT_TYPE, TrustRoot, TrustedKey};
use crate::key_files::{read_key, refuse_shared_file, write_key, write_private_file};
use crate::keys::KeyPair;
use crate::random::OsRandom;
use imurun_core::Clock;

use crate::service::{Identity, KeepService, NewToken, TokenRole};
use crate::vault::VaultKey;

/// The operator's policy key's file.
pub const POLICY_KEY_FILE: &str = "policy.key";
/// The first bundle signer key's file.
pub const SIGNER_KEY_FILE: &str = "signer.key";
/// The host key's file.
pub const HOST_KEY_FILE: &str = "host.key";
/// The vault key's file.
pub const VAULT_KEY_FILE: &str = "vault.key";
/// The first trust root's file.
pub const TRUST_ROOT_FILE: &str = "trust-root.json";

/// How long the first trust root is valid, in seconds: a year, after which the operator must
/// have signed a newer one (freeze protection).
pub const TRUST_ROOT_LIFETIME_S: i64 = 365 * 24 * 60 * 60;

/// What `keep init` made.
#[derive(Debug)]
pub struct InitReport {
    /// The Keep folder.
    pub dir: PathBuf,
    /// The first operator token: shown once, stored only as a hash.
    pub operator_token: NewToken,
    /// The policy key's id.
    pub policy_key_id: String,
    /// The signer key's id.
    pub signer_key_id: String,
    /// The host key's id.
    pub host_key_id: String,
}

/// Creates the Keep folder at `dir` with its keys and trust root, installs the trust root in
/// `store` and makes the first operator token. A folder that holds any of the files already is
/// refused: nothing is ever overwritten.
pub async fn initialise(
    dir: &Path,
    store: Store,
    clock: Arc<dyn Clock>,
) -> Result<InitReport, KeepError> {
    let now = imurun_core::unix_s(clock.now());
    create_private_dir(dir)?;
    let policy = KeyPair::generate(&OsRandom)?;
    let signer = KeyPair::generate(&OsRandom)?;
    let host = KeyPair::generate(&OsRandom)?;
    let vault = VaultKey::generate(&OsRandom)?;
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.to_owned(),
        version: 1,
        expires_at: now.saturating_add(TRUST_ROOT_LIFETIME_S),
        keys: vec![
            trusted(&policy, KeyRole::Policy),
            trusted(&signer, KeyRole::Signer),
        ],
    };
    let envelope = Signed::sign(&root, &policy)?;
    let service = KeepService::new(
        store,
        VaultKey::from_hex(&vault.to_hex())?,
        host.clone_pair(),
        clock,
    )
    .with_high_water_file(crate::high_water::HighWaterFile::in_dir(dir));
    if service.trust_roots().is_installed().await? {
        return Err(KeepError::Conflict(
            "this database has a Keep trust root already; `keep init` runs once per host".into(),
        ));
    }
    write_key(&policy, &dir.join(POLICY_KEY_FILE))?;
    write_key(&signer, &dir.join(SIGNER_KEY_FILE))?;
    write_key(&host, &dir.join(HOST_KEY_FILE))?;
    write_private_file(&dir.join(VAULT_KEY_FILE), vault.to_hex().as_bytes())?;
    let text = serde_json::to_vec_pretty(&envelope)
        .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?;
    write_private_file(&dir.join(TRUST_ROOT_FILE), &text)?;
    service.trust_roots().install(&envelope).await?;
    let operator_token = service
        .tokens()
        .create(&Identity::local_operator(), &TokenRole::Operator)
        .await?;
    Ok(InitReport {
        dir: dir.to_path_buf(),
        operator_token,
        policy_key_id: policy.key_id(),
        signer_key_id: signer.key_id(),
        host_key_id: host.key_id(),
    })
}

/// Opens the Keep service over `store` with the host's keys from `dir`.
pub async fn open(
    dir: &Path,
    store: Store,
    clock: Arc<dyn Clock>,
) -> Result<KeepService, KeepError> {
    let host = read_key(&dir.join(HOST_KEY_FILE))?;
    let vault_path = dir.join(VAULT_KEY_FILE);
    refuse_shared_file(&vault_path)?;
    let text = std::fs::read_to_string(&vault_path).map_err(|error| KeepError::KeyFile {
        path: vault_path.display().to_string(),
        reason: error.to_string(),
    })?;
    let vault = VaultKey::from_hex(&text)?;
    let service = KeepService::new(store, vault, host, clock)
        .with_high_water_file(crate::high_water::HighWaterFile::in_dir(dir));
    if !service.trust_roots().is_installed().await? {
        return Err(KeepError::NotInitialised);
    }
    service.trust_roots().even_expired().await?;
    Ok(service)
}

fn trusted(pair: &KeyPair, role: KeyRole) -> TrustedKey {
    TrustedKey {
        key_id: pair.key_id(),
        public_key: pair.public().to_hex(),
        role,
        retired: false,
    }
}

/// Creates `dir` (and its missing parents) with mode `0700`; an existing folder is accepted only when
/// it holds none of the Keep files, and is then narrowed to `0700`.
fn create_private_dir(dir: &Path) -> Result<(), KeepError> {
    let error = |reason: String| KeepError::KeyFile {
        path: dir.display().to_string(),
        reason,
    };
    for file in [
        POLICY_KEY_FILE,
        SIGNER_KEY_FILE,
        HOST_KEY_FILE,
        VAULT_KEY_FILE,
        TRUST_ROOT_FILE,
    ] {
        if dir.join(file).exists() {
            return Err(error(format!(
                "it holds {file} already: Keep was initialised here; nothing is overwritten"
            )));
        }
    }
    // Folders made on the way (the imurun home) are the user's alone too.
    imurun_store::create_private_dir_all(dir).map_err(|source| error(source.to_string()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|source| error(source.to_string()))?;
    }
    Ok(())
}
