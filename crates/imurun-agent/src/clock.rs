//! Where "today" comes from: the machine clock in production, a fixed date in tests, so an
//! assembled prompt can be snapshot-tested.

use std::fmt;

use jiff::civil::Date;

/// Today's date for the system message.
pub trait Clock: Send + Sync {
    fn today(&self) -> Date;
}

/// The machine clock, in the machine's time zone.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn today(&self) -> Date {
        jiff::Zoned::now().date()
    }
}

/// Always the same date.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub Date);

impl Clock for FixedClock {
    fn today(&self) -> Date {
        self.0
    }
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
}
