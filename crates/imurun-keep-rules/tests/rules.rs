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

    /// A device key from `seed` and its registration as `user`'s.
    pub(crate) fn device(
        seed: u8,
        user: &str,
        retired: bool,
    ) -> (
        imurun_keep_rules::keys::KeyPair,
        imurun_keep_rules::decision::DeviceKey,
    ) {
        let pair = imurun_keep_rules::keys::KeyPair::from_seed(&[seed; 32]);
        let registered = imurun_keep_rules::decision::DeviceKey {
            key_id: pair.key_id(),
            public_key: pair.public(),
            user: user.into(),
            retired,
        };
        (pair, registered)
    }

    mod authority;
    mod canonical;
    mod checks;
    mod decisions;
    mod document_checks;
    mod manifests;
    mod properties;
    mod proposals;
    mod trust;
    mod vault;
}
