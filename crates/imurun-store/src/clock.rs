//! The store's clock: milliseconds since the Unix epoch that never repeat within a process.

use std::sync::atomic::{AtomicI64, Ordering};

/// The last time [`now_ms`] handed out.
static LAST_MS: AtomicI64 = AtomicI64::new(0);

/// The wall clock in milliseconds, moved forward by one millisecond when it would repeat or go
/// back. Lists are ordered by these stamps ("newest updated first", a session's turns), and two
/// writes in the same millisecond, or a wall clock stepped back by NTP, would otherwise leave
/// their order to chance. Writes are human-paced, so the stamps run ahead of the wall clock only
/// during a burst, by the length of the burst in writes.
pub(crate) fn now_ms() -> i64 {
    let wall_ms = wall_clock_ms();
    let mut last_ms = LAST_MS.load(Ordering::Relaxed);
    loop {
        let next_ms = wall_ms.max(last_ms.saturating_add(1));
        match LAST_MS.compare_exchange_weak(last_ms, next_ms, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return next_ms,
            Err(seen_ms) => last_ms = seen_ms,
        }
    }
}

/// A clock before 1970 reads as 0 and one past the year 292 million as `i64::MAX`, rather than
/// failing: a wrong stamp is better than a write refused for it.
fn wall_clock_ms() -> i64 {
    imurun_core::now_unix_ms()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_strictly_increase_and_follow_the_wall_clock() {
        let before_ms = wall_clock_ms();
        let stamps: Vec<i64> = (0..1_000).map(|_| now_ms()).collect();
        assert!(stamps.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(stamps[0] >= before_ms);
    }
}
