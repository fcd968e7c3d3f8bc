//! Where "now" comes from: the machine clock in production, a frozen instant for tests and
//! reproducible runs (`imurun ask --clock`). The loop's "Today is" line and `get_time` read
//! the same clock, so a run under a frozen clock is the same run at any hour.

use std::fmt;
use std::time::SystemTime;

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
