//! Where "now" comes from: the machine clock in production, a frozen instant for tests and
//! reproducible runs (`imurun ask --clock`). The loop's "Today is" line and `get_time` read
//! the same clock, so a run under a frozen clock is the same run at any hour.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// The current instant, and the time zone "local" means.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;

    /// The IANA name of the zone "local" means under this clock, when it pins one; `None`
    /// means the machine's own zone.
    fn zone(&self) -> Option<&str> {
        None
    }
}

/// The machine clock, in the machine's zone.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Always the same instant, optionally in a pinned zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedClock {
    pub at: SystemTime,
    /// An IANA zone name; `None`: the machine's zone.
    pub zone: Option<String>,
}

impl FixedClock {
    /// The instant `at`, with "local" the machine's zone.
    pub fn new(at: SystemTime) -> Self {
        Self { at, zone: None }
    }

    /// The instant `at`, with "local" meaning the IANA zone `zone`.
    pub fn in_zone(at: SystemTime, zone: impl Into<String>) -> Self {
        Self {
            at,
            zone: Some(zone.into()),
        }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.at
    }

    fn zone(&self) -> Option<&str> {
        self.zone.as_deref()
    }
}

/// Milliseconds since the Unix epoch at `at`: 0 for an instant before it, `i64::MAX` past the
/// year 292 million (a wrong stamp is better than a write refused for it).
pub fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    })
}

/// Whole seconds since the Unix epoch at `at` (Keep's documents and decisions count in seconds).
pub fn unix_s(at: SystemTime) -> i64 {
    unix_ms(at).div_euclid(1_000)
}

/// The machine clock in whole seconds since the Unix epoch.
pub fn now_unix_s() -> i64 {
    unix_s(SystemClock.now())
}

/// The machine clock in milliseconds since the Unix epoch: the one reading of "now" as a
/// number that every crate uses.
pub fn now_unix_ms() -> i64 {
    unix_ms(SystemClock.now())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn unix_milliseconds_are_zero_before_the_epoch_and_exact_after() {
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(unix_ms(UNIX_EPOCH + Duration::from_millis(1_500)), 1_500);
        assert_eq!(unix_s(UNIX_EPOCH + Duration::from_millis(1_999)), 1);
        assert!(now_unix_ms() > 1_700_000_000_000);
    }
}
