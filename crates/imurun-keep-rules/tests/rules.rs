//! imurun-keep-rules' tests: the rules alone, with no store, no cell and no runtime.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod rules {
    use std::sync::atomic::{AtomicU64, Ordering};

    use imurun_keep_rules::RuleError;
    use imurun_keep_rules::random::Random;

    /// The tests' generator: distinct bytes on every call, never secret.
    #[derive(Default)]
    pub(crate) struct Counter(AtomicU64);

    impl Random for Counter {
        fn fill(&self, bytes: &mut [u8]) -> Result<(), RuleError> {
            let call = self.0.fetch_add(1, Ordering::Relaxed);
            for (block, chunk) in bytes.chunks_mut(32).enumerate() {
                let digest =
                    imurun_keep_rules::keys::sha256_hex(format!("{call}:{block}").as_bytes());
                let digest = hex::decode(digest).expect("hex");
                chunk.copy_from_slice(&digest[..chunk.len()]);
            }
            Ok(())
        }
    }

    mod authority;
    mod canonical;
    mod checks;
    mod decisions;
    mod manifests;
    mod properties;
    mod proposals;
    mod trust;
    mod vault;
}
