//! What an answer built on a tool's result must carry: the tool that made the result says so
//! (it knows what it returned), and the loop checks the model's answer against it
//! (`imurun-agent`'s grounding). A tool with nothing to say returns no facts, and answers
//! built on its result are not checked.

/// The facts of one result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// Each must appear in an answer built on the result.
    pub required: Vec<Fact>,
    /// Kinds of value an answer may state only as the result holds them.
    pub claims: Vec<Claims>,
    /// The result for a person, in a plain sentence or a few lines: the answer when the
    /// model fails to give one that holds the facts.
    pub sentence: String,
}

impl Facts {
    pub fn new(sentence: impl Into<String>) -> Self {
        Self {
            sentence: sentence.into(),
            ..Self::default()
        }
    }

    /// Adds a fact the answer must hold in one of `forms`.
    pub fn require(mut self, what: impl Into<String>, forms: Vec<String>) -> Self {
        self.required.push(Fact {
            what: what.into(),
            forms,
            at_least: 1,
        });
        self
    }

    /// Adds a fact the answer must hold in `at_least` different ones of `forms`.
    pub fn require_several(
        mut self,
        what: impl Into<String>,
        forms: Vec<String>,
        at_least: usize,
    ) -> Self {
        self.required.push(Fact {
            what: what.into(),
            forms,
            at_least: at_least.max(1),
        });
        self
    }

    /// Values of `kind` an answer may state: only these.
    pub fn only(mut self, kind: ClaimKind, allowed: Vec<String>) -> Self {
        self.claims.push(Claims { kind, allowed });
        self
    }
}

/// One thing an answer must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// What it is, in words for the correction and the event's reason: "the time".
    pub what: String,
    /// The ways an answer may write it. Matched without regard to case, with spaces folded,
    /// as whole words (`391` is not found in `13910`).
    pub forms: Vec<String>,
    /// How many different forms must appear: 1 for most facts, several for a long listing.
    pub at_least: usize,
}

/// The values of one kind an answer may state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub kind: ClaimKind,
    /// As the result holds them (`ClockTime`: `HH:MM` in 24 hours; `Weekday`: the English
    /// name; `FileName`: a name as listed; `Number`: a number as written by the tool).
    pub allowed: Vec<String>,
}

/// Kinds of value the loop can find in an answer and compare with a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// A clock time: `14:05`, `2:05 pm`.
    ClockTime,
    /// A day of the week.
    Weekday,
    /// A calendar date (`2026-12-01`, `1 December`, `December 1st`); allowed as `YYYY-MM-DD`.
    Date,
    /// A file name with an extension: `notes.txt`.
    FileName,
    /// A number.
    Number,
}

/// English month names, January first (for the date forms tools write and answers use).
pub const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The ways an answer may write the clock time `hour:minute` (24 hours): `14:05`,
/// `2:05 pm`, `2:05pm`, `2:05 p.m.`; `09:05` and `9:05` before ten.
pub fn clock_time_forms(hour: u8, minute: u8) -> Vec<String> {
    let mut forms = vec![format!("{hour:02}:{minute:02}")];
    if hour < 10 {
        forms.push(format!("{hour}:{minute:02}"));
    }
    let (twelve, suffix) = match hour {
        0 => (12, "am"),
        1..=11 => (hour, "am"),
        12 => (12, "pm"),
        _ => (hour - 12, "pm"),
    };
    for spacer in [" ", ""] {
        forms.push(format!("{twelve}:{minute:02}{spacer}{suffix}"));
    }
    forms.push(format!("{twelve}:{minute:02} {}.m.", &suffix[..1]));
    forms
}

/// The ways an answer may write a date: `1 December`, `December 1`, `1st December`,
/// `December 1st`, `1st of December`, `Dec 1`, `1 Dec`, `2026-12-01`.
pub fn date_forms(year: i16, month: i8, day: i8) -> Vec<String> {
    let Some(name) = usize::try_from(month - 1)
        .ok()
        .and_then(|index| MONTHS.get(index))
    else {
        return Vec::new();
    };
    let short = &name[..3];
    let ordinal = format!("{day}{}", ordinal_suffix(day));
    let mut forms = vec![
        format!("{day} {name}"),
        format!("{name} {day}"),
        format!("{ordinal} {name}"),
        format!("{name} {ordinal}"),
        format!("{ordinal} of {name}"),
        format!("{year}-{month:02}-{day:02}"),
    ];
    if short != *name {
        forms.extend([
            format!("{day} {short}"),
            format!("{short} {day}"),
            format!("{short}. {day}"),
        ]);
    }
    forms
}

fn ordinal_suffix(day: i8) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_times_are_written_in_both_conventions() {
        assert_eq!(
            clock_time_forms(14, 5),
            ["14:05", "2:05 pm", "2:05pm", "2:05 p.m."]
        );
        assert_eq!(
            clock_time_forms(0, 30),
            ["00:30", "0:30", "12:30 am", "12:30am", "12:30 a.m."]
        );
        assert_eq!(clock_time_forms(12, 0)[1], "12:00 pm");
        assert!(clock_time_forms(9, 7).contains(&"9:07".to_owned()));
    }

    #[test]
    fn dates_have_their_usual_english_forms() {
        let forms = date_forms(2026, 12, 1);
        for form in [
            "1 December",
            "December 1",
            "1st December",
            "December 1st",
            "1st of December",
            "2026-12-01",
            "Dec 1",
            "1 Dec",
        ] {
            assert!(forms.contains(&form.to_owned()), "{form} in {forms:?}");
        }
        assert!(date_forms(2026, 5, 22).contains(&"22nd May".to_owned()));
        assert!(
            !date_forms(2026, 5, 22).iter().any(|form| form == "May. 22"),
            "a month of three letters has no short form"
        );
        assert!(date_forms(2026, 11, 12).contains(&"12th of November".to_owned()));
        assert!(date_forms(2026, 13, 1).is_empty());
    }
}
