//! `get_time`: the current date and time in an IANA time zone, or the machine's own.
//!
//! Time zones come from `jiff`, with the IANA database bundled into the binary as a fallback
//! for machines without `/usr/share/zoneinfo` (minimal containers), so `Europe/Paris` works
//! everywhere the binary runs. The instant comes from a [`Clock`]: the machine's, or a
//! frozen one for reproducible runs, whose pinned zone is then what "local" means.

use std::sync::Arc;

use imurun_core::{
    BoxFuture, ClaimKind, Clock, Facts, SystemClock, Tool, ToolCategory, ToolContext, ToolOutput,
    ToolSpec, clock_time_forms, date_forms,
};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value};

use super::optional_string;

/// The longest time zone name looked up; IANA names are under 40 bytes.
const TIMEZONE_BYTES_MAX: usize = 64;

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::get_time()
}

/// Reads the clock. No authority: its category is `compute`.
#[derive(Debug)]
pub struct GetTime {
    spec: ToolSpec,
    clock: Arc<dyn Clock>,
}

impl GetTime {
    /// The tool over the machine clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// The tool over `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            spec: spec(),
            clock,
        }
    }
}

impl Default for GetTime {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for GetTime {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Compute
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match optional_string(args, "timezone") {
                Ok(name) => now_in(self.clock.as_ref(), name.map(str::trim).unwrap_or("local")),
                Err(failure) => failure,
            }
        })
    }
}

fn now_in(clock: &dyn Clock, name: &str) -> ToolOutput {
    let instant = Timestamp::try_from(clock.now()).unwrap_or(Timestamp::UNIX_EPOCH);
    let now = if name.is_empty() || name.eq_ignore_ascii_case("local") {
        let local = clock
            .zone()
            .and_then(|zone| TimeZone::get(zone).ok())
            .unwrap_or_else(TimeZone::system);
        instant.to_zoned(local)
    } else {
        if name.len() > TIMEZONE_BYTES_MAX {
            return ToolOutput::failed("that is not a time zone name: it is too long");
        }
        match TimeZone::get(name) {
            Ok(zone) => instant.to_zoned(zone),
            Err(_) => {
                return ToolOutput::failed(format!(
                    "`{name}` is not a known time zone; use an IANA name such as Europe/Paris, \
                     America/New_York or UTC, or leave it out for the local time"
                ));
            }
        }
    };
    let zone = now
        .time_zone()
        .iana_name()
        .unwrap_or("local time")
        .to_string();
    ToolOutput::ok(format!(
        "{} ({zone}, UTC{})\nISO 8601: {}",
        now.strftime("%A, %-d %B %Y, %H:%M:%S %Z"),
        now.strftime("%:z"),
        now.strftime("%Y-%m-%dT%H:%M:%S%:z"),
    ))
    .with_facts(facts(&now, &zone))
}

/// An answer about the time holds the clock time and the date, and states no other time or
/// weekday.
fn facts(now: &jiff::Zoned, zone: &str) -> Facts {
    let (hour, minute) = (
        u8::try_from(now.hour()).unwrap_or(0),
        u8::try_from(now.minute()).unwrap_or(0),
    );
    let weekday = now.strftime("%A").to_string();
    Facts::new(format!(
        "It is {} on {} ({zone}).",
        now.strftime("%H:%M"),
        now.strftime("%A, %-d %B %Y")
    ))
    .require("the time", clock_time_forms(hour, minute))
    .require("the date", date_forms(now.year(), now.month(), now.day()))
    .only(ClaimKind::ClockTime, vec![format!("{hour:02}:{minute:02}")])
    .only(ClaimKind::Weekday, vec![weekday])
    .only(ClaimKind::Date, vec![now.strftime("%Y-%m-%d").to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_zone_and_its_offset() {
        let cases = [
            ("UTC", true, "(UTC, UTC+00:00)"),
            ("Asia/Kolkata", true, "(Asia/Kolkata, UTC+05:30)"),
            ("local", true, "ISO 8601: "),
            ("", true, "ISO 8601: "),
            (
                "Mars/Olympus_Mons",
                false,
                "FAILED: `Mars/Olympus_Mons` is not a known time zone",
            ),
            (
                "../../etc/passwd",
                false,
                "FAILED: `../../etc/passwd` is not a known time zone",
            ),
        ];
        for (name, ok, expected) in cases {
            let output = now_in(&SystemClock, name);
            assert_eq!(output.ok, ok, "{name}: {}", output.text);
            assert!(output.text.contains(expected), "{name}: {}", output.text);
        }
    }

    #[test]
    fn a_frozen_clock_gives_its_instant_and_pins_local() {
        let at: Timestamp = "2026-12-01T12:47:05Z".parse().unwrap();
        let clock = imurun_core::FixedClock::in_zone(at.into(), "Asia/Tokyo");
        let local = now_in(&clock, "local");
        assert_eq!(
            local.text,
            "Tuesday, 1 December 2026, 21:47:05 JST (Asia/Tokyo, UTC+09:00)\nISO 8601: 2026-12-01T21:47:05+09:00"
        );
        let paris = now_in(&clock, "Europe/Paris");
        assert!(
            paris.text.contains("ISO 8601: 2026-12-01T13:47:05+01:00"),
            "{}",
            paris.text
        );
    }

    #[test]
    fn the_result_says_what_an_answer_must_hold() {
        let at: Timestamp = "2026-12-01T12:47:05Z".parse().unwrap();
        let clock = imurun_core::FixedClock::in_zone(at.into(), "Asia/Tokyo");
        let facts = now_in(&clock, "local").facts.unwrap();
        assert_eq!(
            facts.sentence,
            "It is 21:47 on Tuesday, 1 December 2026 (Asia/Tokyo)."
        );
        assert_eq!(facts.required[0].what, "the time");
        assert!(facts.required[0].forms.contains(&"9:47 pm".to_owned()));
        assert!(facts.required[1].forms.contains(&"1 December".to_owned()));
        assert_eq!(facts.claims[0].allowed, ["21:47"]);
        assert_eq!(facts.claims[1].allowed, ["Tuesday"]);
        assert_eq!(facts.claims[2].allowed, ["2026-12-01"]);
        assert!(now_in(&clock, "Mars/Base").facts.is_none());
    }
}
