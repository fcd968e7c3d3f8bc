//! Where the rules' random numbers come from: a generator the host passes in, so the rules do
//! no I/O and a test can pass its own.

use crate::RuleError;

/// A source of random bytes for keys, nonces, tokens and ids. The host's is the operating
/// system's generator; nothing in the rules reaches one on its own.
pub trait Random: Send + Sync {
    /// Fills `bytes` with random bytes, or says why it could not.
    fn fill(&self, bytes: &mut [u8]) -> Result<(), RuleError>;
}

/// A fresh id: `prefix` and 16 random bytes in hexadecimal.
pub fn hex_id(random: &dyn Random, prefix: &str) -> Result<String, RuleError> {
    let mut bytes = [0_u8; 16];
    random.fill(&mut bytes)?;
    Ok(format!("{prefix}{}", hex::encode(bytes)))
}
