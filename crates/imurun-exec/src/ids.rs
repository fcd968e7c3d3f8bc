//! Ids for calls and approvals, and the wall clock in milliseconds.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A process-unique id such as `call-7-3f9c…`. The random part (SipHash under a per-process
/// random key) keeps approval ids from being guessed by counting.
pub(crate) fn new_id(prefix: &str) -> String {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let salt = RandomState::new().hash_one(count);
    format!("{prefix}-{count}-{salt:016x}")
}

/// Milliseconds since the Unix epoch; 0 if the clock is before it.
pub(crate) fn now_ms() -> i64 {
    imurun_core::now_unix_ms()
}
