//! "Today" for the system message, from the loop's [`Clock`]: the machine clock in
//! production, a frozen instant in tests and reproducible runs.

use std::fmt;

use imurun_core::Clock;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// Today's date under `clock`, in the zone it pins or the machine's own. An instant jiff
/// cannot represent (before year -9999 or after 9999) reads as the Unix epoch.
pub(crate) fn today(clock: &dyn Clock) -> Date {
    now(clock).date()
}

/// Now under `clock`, in the zone it pins (an unknown name falls back to the machine's zone).
pub(crate) fn now(clock: &dyn Clock) -> Zoned {
    let instant = Timestamp::try_from(clock.now()).unwrap_or(Timestamp::UNIX_EPOCH);
    let zone = clock
        .zone()
        .and_then(|name| TimeZone::get(name).ok())
        .unwrap_or_else(TimeZone::system);
    instant.to_zoned(zone)
}

/// A frozen clock at noon UTC of `date`, with "local" meaning UTC: the same date in the
/// prompt whatever zone the machine is in. For tests and benchmarks.
pub fn noon_utc(date: Date) -> imurun_core::FixedClock {
    let instant = date
        .at(12, 0, 0, 0)
        .to_zoned(TimeZone::UTC)
        .map(|zoned| zoned.timestamp())
        .unwrap_or(Timestamp::UNIX_EPOCH);
    imurun_core::FixedClock::in_zone(instant.into(), "UTC")
}

/// `Monday, 30 November 2026`: the weekday too, because "what day is it" is a question
/// small models otherwise answer from memory.
pub(crate) fn long_date(date: Date) -> impl fmt::Display {
    date.strftime("%A, %-d %B %Y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_reads_in_full() {
        let date = jiff::civil::date(2026, 11, 3);
        assert_eq!(long_date(date).to_string(), "Tuesday, 3 November 2026");
    }

    #[test]
    fn today_is_the_date_in_the_clock_zone() {
        // 23:30 UTC on 30 November is already 1 December in Tokyo.
        let at: Timestamp = "2026-11-30T23:30:00Z".parse().unwrap();
        let utc = imurun_core::FixedClock::in_zone(at.into(), "UTC");
        let tokyo = imurun_core::FixedClock::in_zone(at.into(), "Asia/Tokyo");
        assert_eq!(today(&utc), jiff::civil::date(2026, 11, 30));
        assert_eq!(today(&tokyo), jiff::civil::date(2026, 12, 1));
        assert_eq!(
            today(&noon_utc(jiff::civil::date(2026, 2, 28))),
            jiff::civil::date(2026, 2, 28)
        );
    }
}
