//! Bearer tokens and enrolment codes: made from the host's random numbers, shown
//! once, and kept only as their SHA-256. A token's id (the first 12 hexadecimal characters of
//! its hash) names it in lists, the journal and `keep token revoke` without revealing it.

use crate::RuleError;
use crate::keys::sha256_hex;
use crate::random::Random;

/// What every token starts with, so a leaked one is recognisable in logs and by secret scanners.
pub const TOKEN_PREFIX: &str = "imk_";

/// What every enrolment code starts with.
pub const ENROL_CODE_PREFIX: &str = "ime_";

/// Characters of a token id.
pub const TOKEN_ID_CHARS: usize = 12;

/// Longest token accepted in a request, in bytes; longer ones are refused before hashing.
pub const TOKEN_BYTES_MAX: usize = 128;

/// A new secret: `prefix` and 32 bytes of `random` in hexadecimal.
pub fn new_secret(random: &dyn Random, prefix: &str) -> Result<String, RuleError> {
    let mut bytes = [0_u8; 32];
    random.fill(&mut bytes)?;
    Ok(format!("{prefix}{}", hex::encode(bytes)))
}

/// The hash a token (or code) is stored as.
pub fn secret_hash(secret: &str) -> String {
    sha256_hex(secret.as_bytes())
}

/// The id of a token, from its hash.
pub fn token_id(hash: &str) -> String {
    hash.chars().take(TOKEN_ID_CHARS).collect()
}
