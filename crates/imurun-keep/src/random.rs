//! The operating system's random numbers, for keys, nonces and tokens.

use crate::KeepError;

/// Fills `bytes` from the operating system's generator.
pub(crate) fn fill(bytes: &mut [u8]) -> Result<(), KeepError> {
    getrandom::fill(bytes)
        .map_err(|error| KeepError::Random(format!("the system's random numbers failed: {error}")))
}
