//! `get_time`: the current date and time in an IANA time zone, or the machine's own.
//!
//! Time zones come from `jiff`, with the IANA database bundled into the binary as a fallback
//! for machines without `/usr/share/zoneinfo` (minimal containers), so `Europe/Paris` works
//! everywhere the binary runs.

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use serde_json::{Map, Value, json};

use super::optional_string;

/// The longest time zone name looked up; IANA names are under 40 bytes.
const TIMEZONE_BYTES_MAX: usize = 64;

pub(crate) fn spec() -> ToolSpec {
    ToolSpec::new(
        "get_time",
        "The current date and time, in a time zone.",
        json!({"type": "object", "properties": {
            "timezone": {"type": "string", "description": "an IANA time zone such as Europe/Paris (default: local)"}
        }}),
    )
}

/// Reads the clock. No authority: its category is `compute`.
#[derive(Debug)]
pub struct GetTime {
    spec: ToolSpec,
}

impl GetTime {
    pub fn new() -> Self {
        Self { spec: spec() }
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
                Ok(name) => now_in(name.map(str::trim).unwrap_or("local")),
                Err(failure) => failure,
            }
        })
    }
}

fn now_in(name: &str) -> ToolOutput {
    let now = if name.is_empty() || name.eq_ignore_ascii_case("local") {
        Zoned::now()
    } else {
        if name.len() > TIMEZONE_BYTES_MAX {
            return ToolOutput::failed("that is not a time zone name: it is too long");
        }
        match TimeZone::get(name) {
            Ok(zone) => Timestamp::now().to_zoned(zone),
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
            let output = now_in(name);
            assert_eq!(output.ok, ok, "{name}: {}", output.text);
            assert!(output.text.contains(expected), "{name}: {}", output.text);
        }
    }
}
