//! The host's random numbers: the operating system's generator, passed to the rules.

use imurun_keep_rules::RuleError;
use imurun_keep_rules::random::Random;

/// The operating system's generator.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl Random for OsRandom {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), RuleError> {
        getrandom::fill(bytes).map_err(|error| {
            RuleError::Random(format!("the system's random numbers failed: {error}"))
        })
    }
}
