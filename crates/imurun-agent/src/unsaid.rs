//! Optional arguments the person never gave. A small model fills optional parameters with
//! values of its own — a worked example's zone for `get_time`, `"rounding": 3` for a
//! displacement nobody asked to round — and the tool's own default is the better guess. An
//! optional argument whose value is one word or a number that the person's words do not
//! hold is left out of the prompt's first call before it runs (text of several words is the
//! model's own writing, and later calls may use what results said). Enumerated values, booleans, lists and
//! objects are kept: choosing among them is the model's reading, not a value it made up.
//! Required arguments are never touched: the tool's schema check answers for those. imurun's
//! own tools are left alone: their optional arguments (a sub-agent's step budget, say) are
//! the model's to choose, and a worked example's value is refused by its own rule.

use imurun_core::{ToolCall, ToolSpec};
use serde_json::Value;

/// What the person said, read for values: the text normalised, and every number in it.
pub(crate) struct Said {
    text: String,
    numbers: Vec<f64>,
}

impl Said {
    pub(crate) fn new(said: &str) -> Self {
        Self {
            text: crate::ground::normalise(said),
            numbers: numbers(said),
        }
    }

    /// The person's words, normalised.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether the person's words hold `value`: free text as written (case and spacing
    /// aside), a number as any of the numbers read. `None` for values of other kinds.
    pub(crate) fn holds(&self, value: &Value) -> Option<bool> {
        match value {
            Value::String(text) => {
                let text = text.trim();
                Some(
                    !text.chars().any(char::is_alphanumeric)
                        || crate::ground::has_form(&self.text, text),
                )
            }
            Value::Number(number) => number
                .as_f64()
                .map(|number| self.numbers.iter().any(|said| same_number(*said, number))),
            _ => None,
        }
    }
}

/// Leaves out of `call` the optional arguments of `spec` (a tool that is not one of imurun's
/// own) that hold a string or a number the person's words do not; returns the names of those
/// left out.
pub(crate) fn drop_unsaid_optionals(
    call: &mut ToolCall,
    spec: &ToolSpec,
    said: &Said,
) -> Vec<String> {
    if imurun_core::builtin::is_builtin(&spec.name) {
        return Vec::new();
    }
    let Some(properties) = spec.parameters.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = spec
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let unsaid: Vec<String> = call
        .args
        .iter()
        .filter(|(name, _)| !required.contains(&name.as_str()))
        .filter(|(name, _)| {
            properties
                .get(name.as_str())
                .is_some_and(|property| property.get("enum").is_none())
        })
        // Text of several words is the model's own writing (an issue's body, a title), not a
        // value it could have copied.
        .filter(|(_, value)| !value.as_str().is_some_and(|text| text.trim().contains(' ')))
        .filter(|(_, value)| said.holds(value) == Some(false))
        .map(|(name, _)| name.clone())
        .collect();
    for name in &unsaid {
        call.args.remove(name);
    }
    unsaid
}

/// Every number `text` holds, read loosely: `1,000` both as 1000 and as 1 and 0 (a list),
/// a percentage also as its fraction, a sign ignored.
fn numbers(text: &str) -> Vec<f64> {
    let mut found = Vec::new();
    for run in text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')) {
        let run = run.trim_matches(|c: char| c == '.' || c == ',');
        if !run.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let whole = run.replace(',', "");
        let parts = run.split(',').map(str::to_owned);
        for part in std::iter::once(whole).chain(parts) {
            if let Ok(value) = part.parse::<f64>() {
                found.push(value);
                found.push(value / 100.0);
            }
        }
    }
    found
}

/// Whether two numbers are the same, sign aside.
fn same_number(said: f64, written: f64) -> bool {
    let (said, written) = (said.abs(), written.abs());
    (said - written).abs() <= f64::EPSILON * said.max(written).max(1.0) * 8.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "kinematics.displacement",
            "",
            json!({
                "type": "object",
                "properties": {
                    "speed": {"type": "number"},
                    "time": {"type": "number"},
                    "rounding": {"type": "integer"},
                    "zone": {"type": "string"},
                    "unit": {"type": "string", "enum": ["m", "km"]},
                    "exact": {"type": "boolean"},
                    "note": {"type": "string"},
                },
                "required": ["speed", "time"],
            }),
        )
    }

    fn call(args: Value) -> ToolCall {
        ToolCall::new(
            "kinematics.displacement",
            args.as_object().cloned().unwrap_or_default(),
        )
    }

    #[test]
    fn an_optional_value_the_person_never_gave_is_left_out() {
        let said = "A car at 20 m/s for 5 seconds: how far does it go?";
        let mut made = call(json!({
            "speed": 20, "time": 99, "rounding": 3, "zone": "Asia/Tokyo", "note": "steps to reproduce",
            "unit": "km", "exact": true,
        }));
        let dropped = drop_unsaid_optionals(&mut made, &spec(), &Said::new(said));
        assert_eq!(dropped, ["rounding", "zone"]);
        // The required `time` stays even though 99 was never said: the tool answers for it.
        assert_eq!(
            Value::Object(made.args),
            json!({"speed": 20, "time": 99, "unit": "km", "exact": true, "note": "steps to reproduce"})
        );
    }

    #[test]
    fn an_optional_value_the_person_gave_is_kept() {
        let said = "Round to 2 places: 1,500 metres in 5% less time, in Europe/Oslo time.";
        let mut made = call(json!({
            "speed": 1, "time": 1, "rounding": 2, "zone": "Europe/Oslo",
        }));
        assert!(drop_unsaid_optionals(&mut made, &spec(), &Said::new(said)).is_empty());
        for (said, value) in [
            ("1,500 metres", 1500.0),
            ("5% less", 0.05),
            ("b is -3", -3.0),
        ] {
            let mut made = call(json!({"speed": 1, "time": 1, "rounding": value}));
            assert!(
                drop_unsaid_optionals(&mut made, &spec(), &Said::new(said)).is_empty(),
                "{said}"
            );
        }
    }

    #[test]
    fn imurun_s_own_tools_keep_their_optional_arguments() {
        let spec = imurun_core::run_agent_spec();
        let mut made = ToolCall::new(
            spec.name.clone(),
            json!({"task": "Loop.", "max_steps": 99})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        assert!(drop_unsaid_optionals(&mut made, &spec, &Said::new("Delegate.")).is_empty());
    }

    #[test]
    fn a_tool_without_a_schema_keeps_every_argument() {
        let bare = ToolSpec::new("bare", "", Value::Null);
        let mut made = call(json!({"anything": "at all"}));
        assert!(drop_unsaid_optionals(&mut made, &bare, &Said::new("hello")).is_empty());
        assert_eq!(made.args.len(), 1);
    }
}
