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

use crate::KeepError;

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
    /// A new key from the operating system's random numbers.
    pub fn generate() -> Result<VaultKey, KeepError> {
        let mut bytes = [0_u8; VAULT_KEY_BYTES];
        crate::random::fill(&mut bytes)?;
        Ok(VaultKey(bytes))
    }

    /// The key from its 64 hexadecimal characters (the vault key file's content).
    pub fn from_hex(text: &str) -> Result<VaultKey, KeepError> {
        crate::keys::hex_exact::<VAULT_KEY_BYTES>(text.trim(), "vault key")
            .map(VaultKey)
            .map_err(|_| KeepError::Vault("the vault key is not 64 hexadecimal characters".into()))
    }

    /// The key in hexadecimal, to write its file once.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Seals `value` for `owner`'s entry `name`: the nonce, then the ciphertext and tag.
    pub fn seal(&self, owner: &str, name: &str, value: &[u8]) -> Result<Vec<u8>, KeepError> {
        if value.len() > SECRET_BYTES_MAX {
            return Err(KeepError::Vault(format!(
                "a credential is at most {SECRET_BYTES_MAX} bytes"
            )));
        }
        let mut nonce = [0_u8; NONCE_BYTES];
        crate::random::fill(&mut nonce)?;
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
            .map_err(|_| KeepError::Vault("sealing failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens what [`VaultKey::seal`] made for the same owner and name.
    pub fn open(&self, owner: &str, name: &str, sealed: &[u8]) -> Result<Secret, KeepError> {
        if sealed.len() < NONCE_BYTES {
            return Err(KeepError::Vault("the sealed value is cut short".into()));
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
                KeepError::Vault(format!(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_for_its_owner_name_and_key() {
        let key = VaultKey::generate().expect("key");
        let sealed = key.seal("alice", "github", b"ghp_canary").expect("seal");
        assert!(!sealed.windows(10).any(|window| window == b"ghp_canary"));
        assert_eq!(
            key.open("alice", "github", &sealed).expect("open").expose(),
            b"ghp_canary"
        );
        assert!(key.open("bob", "github", &sealed).is_err());
        assert!(key.open("alice", "gitlab", &sealed).is_err());
        let other = VaultKey::generate().expect("key");
        assert!(other.open("alice", "github", &sealed).is_err());
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(key.open("alice", "github", &flipped).is_err());
        assert_eq!(
            format!("{:?}", key.open("alice", "github", &sealed).expect("open")),
            "[redacted]"
        );
    }
}
