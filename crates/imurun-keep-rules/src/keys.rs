//! Ed25519 keys, their ids, their files' format, and signatures over bytes.
//!
//! A key's id is derived from its public key (the first 16 bytes of its SHA-256, in hexadecimal),
//! so no two keys can share an id and an id cannot be pointed at another key. Signatures are
//! checked with `verify_strict`, which also refuses the malleable and small-order forms plain
//! Ed25519 verification lets through. A secret key's file is written and read by the host
//! (`imurun_keep::key_files`), which keeps it private to its owner.

use std::fmt;

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::RuleError;
use crate::random::Random;

/// The `type` of a key file.
pub const KEY_FILE_TYPE: &str = "imurun.key";

/// Hexadecimal characters in a key id (16 bytes).
pub const KEY_ID_CHARS: usize = 32;

/// A public key and its id.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
}

impl PublicKey {
    /// Reads a public key from 64 hexadecimal characters, refusing bytes that are not a point on
    /// the curve and the weak (small-order) keys that would let one signature verify for many
    /// messages.
    pub fn from_hex(text: &str) -> Result<PublicKey, RuleError> {
        let bytes = hex_exact::<32>(text, "public key")?;
        PublicKey::from_bytes(&bytes)
    }

    /// The key from its 32 bytes (see [`PublicKey::from_hex`]).
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<PublicKey, RuleError> {
        let key = VerifyingKey::from_bytes(bytes)
            .map_err(|_| RuleError::Signature("the public key is not an Ed25519 point".into()))?;
        if key.is_weak() {
            return Err(RuleError::Signature(
                "the public key is a weak (small-order) key".into(),
            ));
        }
        Ok(PublicKey { key })
    }

    /// The key's 64 lower-case hexadecimal characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.key.as_bytes())
    }

    /// The key's id: the first 16 bytes of the SHA-256 of the key, in hexadecimal.
    pub fn key_id(&self) -> String {
        let digest = Sha256::digest(self.key.as_bytes());
        hex::encode(&digest[..KEY_ID_CHARS / 2])
    }

    /// The SHA-256 of the key's 32 bytes, in hexadecimal: how a decision names a key it enrols.
    pub fn sha256(&self) -> String {
        sha256_hex(self.key.as_bytes())
    }

    /// Checks `signature` (128 hexadecimal characters) over `message`.
    pub fn verify(&self, message: &[u8], signature: &str) -> Result<(), RuleError> {
        let bytes = hex_exact::<64>(signature, "signature")?;
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        self.key
            .verify_strict(message, &signature)
            .map_err(|_| RuleError::Signature("the signature does not match".into()))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "PublicKey({})", self.key_id())
    }
}

/// A secret key. Its `Debug` shows the id only; the secret bytes are wiped when it is dropped
/// (`ed25519-dalek`'s `zeroize`).
pub struct KeyPair {
    key: SigningKey,
}

impl KeyPair {
    /// A new key from `random`'s numbers.
    pub fn generate(random: &dyn Random) -> Result<KeyPair, RuleError> {
        let mut seed = [0_u8; 32];
        random.fill(&mut seed)?;
        let key = SigningKey::from_bytes(&seed);
        seed.fill(0);
        Ok(KeyPair { key })
    }

    /// The key from its 32 secret bytes.
    pub fn from_seed(seed: &[u8; 32]) -> KeyPair {
        KeyPair {
            key: SigningKey::from_bytes(seed),
        }
    }

    /// A second copy of the key (for a service that keeps its own).
    pub fn clone_pair(&self) -> KeyPair {
        KeyPair::from_seed(&self.key.to_bytes())
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// The public key's id.
    pub fn key_id(&self) -> String {
        self.public().key_id()
    }

    /// Signs `message`; the signature in 128 lower-case hexadecimal characters.
    pub fn sign(&self, message: &[u8]) -> String {
        hex::encode(self.key.sign(message).to_bytes())
    }

    /// The key as a key file's bytes (`imurun.key`, pretty JSON holding the secret key): what
    /// the host writes to a file only its owner may read.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let file = KeyFile {
            kind: KEY_FILE_TYPE.to_owned(),
            algorithm: "ed25519".to_owned(),
            key_id: self.key_id(),
            public_key: self.public().to_hex(),
            secret_key: hex::encode(self.key.to_bytes()),
        };
        serde_json::to_vec_pretty(&file).unwrap_or_default()
    }

    /// Reads a key file's bytes written by [`KeyPair::to_file_bytes`]; the error is the reason,
    /// for the host to say with the file's path.
    pub fn from_file_bytes(bytes: &[u8]) -> Result<KeyPair, String> {
        let file: KeyFile =
            serde_json::from_slice(bytes).map_err(|source| format!("not a key file: {source}"))?;
        if file.kind != KEY_FILE_TYPE || file.algorithm != "ed25519" {
            return Err(format!(
                "its type is {:?} / {:?}, not {KEY_FILE_TYPE:?} / \"ed25519\"",
                file.kind, file.algorithm
            ));
        }
        let seed =
            hex_exact::<32>(&file.secret_key, "secret key").map_err(|error| error.to_string())?;
        let pair = KeyPair::from_seed(&seed);
        if pair.public().to_hex() != file.public_key || pair.key_id() != file.key_id {
            return Err("its public key or id does not belong to its secret key".into());
        }
        Ok(pair)
    }
}

impl fmt::Debug for KeyPair {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "KeyPair({})", self.key_id())
    }
}

/// A key file on disk.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: String,
    algorithm: String,
    key_id: String,
    public_key: String,
    secret_key: String,
}

/// Reads exactly `N` bytes from lower-case hexadecimal.
pub(crate) fn hex_exact<const N: usize>(text: &str, what: &str) -> Result<[u8; N], RuleError> {
    let valid = text.len() == N * 2
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
    let mut out = [0_u8; N];
    if !valid || hex::decode_to_slice(text, &mut out).is_err() {
        return Err(RuleError::Signature(format!(
            "the {what} is not {} lower-case hexadecimal characters",
            N * 2
        )));
    }
    Ok(out)
}

/// The SHA-256 of `bytes` in lower-case hexadecimal.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_and_any_changed_byte_does_not() {
        let pair = KeyPair::from_seed(&[7; 32]);
        let signature = pair.sign(b"hello");
        assert!(pair.public().verify(b"hello", &signature).is_ok());
        assert!(pair.public().verify(b"hellp", &signature).is_err());
        let other = KeyPair::from_seed(&[8; 32]);
        assert!(other.public().verify(b"hello", &signature).is_err());
        assert!(
            pair.public()
                .verify(b"hello", &signature.to_uppercase())
                .is_err()
        );
    }

    #[test]
    fn a_key_file_reads_back_as_its_key_and_a_changed_id_is_refused() {
        let pair = KeyPair::from_seed(&[9; 32]);
        let bytes = pair.to_file_bytes();
        let read = KeyPair::from_file_bytes(&bytes).expect("read");
        assert_eq!(read.key_id(), pair.key_id());
        let text = String::from_utf8(bytes).expect("utf-8");
        let changed = text.replace(&pair.key_id(), &KeyPair::from_seed(&[1; 32]).key_id());
        let refused = KeyPair::from_file_bytes(changed.as_bytes());
        assert!(refused.is_err_and(|error| error.contains("does not belong")));
    }

    #[test]
    fn weak_public_keys_are_refused() {
        // The identity point: every signature with R = identity and s = 0 would verify.
        let mut identity = [0_u8; 32];
        identity[0] = 1;
        assert!(PublicKey::from_bytes(&identity).is_err());
    }
}
