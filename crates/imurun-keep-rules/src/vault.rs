//! Sealing credentials at rest: XChaCha20-Poly1305 with the host's vault key, a random 24-byte
//! nonce per entry (random nonces of that size never repeat in practice), and the entry's owner
//! and name as associated data, so a sealed value moved to another owner's or name's row does
//! not open.
//!
//! [`Secret`] holds an opened value; its `Debug` and `Display` print `[redacted]`, and it is not
//! `Serialize`, so it cannot reach a response, a log line, an event or the journal by accident.

use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::RuleError;
use crate::random::Random;

/// Bytes of a vault key.
pub const VAULT_KEY_BYTES: usize = 32;

/// Bytes of a credential's value.
pub const SECRET_BYTES_MAX: usize = 8 * 1024;

const NONCE_BYTES: usize = 24;

/// An opened credential.
pub struct Secret(Vec<u8>);

impl Secret {
    /// The value, for the one place that injects it into a request.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("[redacted]")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.fill(0);
    }
}

/// The host's vault key.
pub struct VaultKey([u8; VAULT_KEY_BYTES]);

impl fmt::Debug for VaultKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("VaultKey([redacted])")
    }
}

impl Drop for VaultKey {
    fn drop(&mut self) {
        self.0.fill(0);
    }
}

impl VaultKey {
    /// A new key from `random`'s numbers.
    pub fn generate(random: &dyn Random) -> Result<VaultKey, RuleError> {
        let mut bytes = [0_u8; VAULT_KEY_BYTES];
        random.fill(&mut bytes)?;
        Ok(VaultKey(bytes))
    }

    /// The key from its 64 hexadecimal characters (the vault key file's content).
    pub fn from_hex(text: &str) -> Result<VaultKey, RuleError> {
        crate::keys::hex_exact::<VAULT_KEY_BYTES>(text.trim(), "vault key")
            .map(VaultKey)
            .map_err(|_| RuleError::Vault("the vault key is not 64 hexadecimal characters".into()))
    }

    /// The key in hexadecimal, to write its file once.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Seals `value` for `owner`'s entry `name`: the nonce, then the ciphertext and tag.
    pub fn seal(
        &self,
        random: &dyn Random,
        owner: &str,
        name: &str,
        value: &[u8],
    ) -> Result<Vec<u8>, RuleError> {
        if value.len() > SECRET_BYTES_MAX {
            return Err(RuleError::Vault(format!(
                "a credential is at most {SECRET_BYTES_MAX} bytes"
            )));
        }
        let mut nonce = [0_u8; NONCE_BYTES];
        random.fill(&mut nonce)?;
        let aad = associated_data(owner, name);
        let sealed = self
            .cipher()
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: value,
                    aad: &aad,
                },
            )
            .map_err(|_| RuleError::Vault("sealing failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens what [`VaultKey::seal`] made for the same owner and name.
    pub fn open(&self, owner: &str, name: &str, sealed: &[u8]) -> Result<Secret, RuleError> {
        if sealed.len() < NONCE_BYTES {
            return Err(RuleError::Vault("the sealed value is cut short".into()));
        }
        let (nonce, body) = sealed.split_at(NONCE_BYTES);
        let mut nonce_bytes = [0_u8; NONCE_BYTES];
        nonce_bytes.copy_from_slice(nonce);
        let aad = associated_data(owner, name);
        self.cipher()
            .decrypt(
                &XNonce::from(nonce_bytes),
                Payload {
                    msg: body,
                    aad: &aad,
                },
            )
            .map(Secret)
            .map_err(|_| {
                RuleError::Vault(format!(
                    "the entry {name:?} of {owner:?} does not open with this host's vault key"
                ))
            })
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0.into())
    }
}

fn associated_data(owner: &str, name: &str) -> Vec<u8> {
    format!("imurun.vault\0{owner}\0{name}").into_bytes()
}
