//! The operating system's random numbers, for keys, nonces and tokens.

use crate::KeepError;

/// Fills `bytes` from the operating system's generator.
pub(crate) fn fill(bytes: &mut [u8]) -> Result<(), KeepError> {
    getrandom::fill(bytes)
        .map_err(|error| KeepError::Random(format!("the system's random numbers failed: {error}")))
}

/// A fresh id: `prefix` and 16 random bytes in hexadecimal.
pub(crate) fn hex_id(prefix: &str) -> Result<String, KeepError> {
    let mut bytes = [0_u8; 16];
    fill(&mut bytes)?;
    Ok(format!("{prefix}{}", hex::encode(bytes)))
}
