//! Rates written as percentages. A person writes "an annual interest rate of 5%"; a tool's
//! `rate` parameter takes a number, and a rate as a number is a fraction (0.05) unless the
//! tool says it takes percentages. A small model copies the 5. In the prompt's first call,
//! a number argument of a tool that is not one of imurun's own is read as the fraction when
//! all of these hold: the person wrote that very value with `%` or "percent"; the parameter
//! is a `number` (an `integer` cannot hold a fraction); and its name or description says it
//! is a rate (or asks for a decimal or a fraction), while neither its name nor its
//! description asks for a percentage.

use imurun_core::{ToolCall, ToolSpec};
use serde_json::{Number, Value};

/// Words of a parameter's name or description that make it a rate.
const RATE_WORDS: &[&str] = &[
    "rate",
    "rates",
    "probability",
    "yield",
    "return",
    "growth",
    "inflation",
    "ratio",
    "efficiency",
    "confidence",
    "discount",
    "interest",
];

/// Words of a description that ask for the fraction outright.
const FRACTION_WORDS: &[&str] = &["decimal", "fraction"];

/// Words of a description that ask for the percentage as written.
const PERCENT_WORDS: &[&str] = &["percent", "percentage", "percentages", "pct"];

/// Rewrites, in `call` to `spec`, each rate argument the person wrote as a percentage to its
/// fraction; returns the names of those rewritten.
pub(crate) fn percent_rates_as_fractions(
    call: &mut ToolCall,
    spec: &ToolSpec,
    said: &str,
) -> Vec<String> {
    if imurun_core::builtin::is_builtin(&spec.name) {
        return Vec::new();
    }
    let percents = percentages(said);
    if percents.is_empty() {
        return Vec::new();
    }
    let Some(properties) = spec.parameters.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut rewritten = Vec::new();
    for (name, value) in &mut call.args {
        let Some(property) = properties.get(name.as_str()) else {
            continue;
        };
        let Some(written) = value.as_f64() else {
            continue;
        };
        if !takes_a_fraction(name, property) || !percents.contains(&written) {
            continue;
        }
        if let Some(fraction) = Number::from_f64(hundredth(written)) {
            *value = Value::Number(fraction);
            rewritten.push(name.clone());
        }
    }
    rewritten
}

/// `percent` / 100 with no more decimals than the percentage has and two: 5.9% is 0.059, not
/// the nearest float's 0.059000000000000004.
fn hundredth(percent: f64) -> f64 {
    let written = percent.to_string();
    let decimals = written
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    let scale = 10f64.powi(i32::try_from(decimals + 2).unwrap_or(i32::MAX));
    (percent / 100.0 * scale).round() / scale
}

/// Whether the parameter `name`, described by `property`, is a rate that takes a fraction.
fn takes_a_fraction(name: &str, property: &Value) -> bool {
    if property.get("type").and_then(Value::as_str) != Some("number") {
        return false;
    }
    let description = property
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let described = words(description);
    let has =
        |list: &[&str], words: &[String]| words.iter().any(|word| list.contains(&word.as_str()));
    // A name that says percent (`annual_rate_percent`) takes the percentage as written.
    if has(PERCENT_WORDS, &words(name)) {
        return false;
    }
    if has(FRACTION_WORDS, &described) {
        return true;
    }
    if has(PERCENT_WORDS, &described) || description.contains('%') {
        return false;
    }
    has(RATE_WORDS, &words(name)) || has(RATE_WORDS, &described)
}

/// Lower-case words, `snake_case` and `camelCase` split.
fn words(text: &str) -> Vec<String> {
    crate::tool_match::words(&crate::tool_match::split_camel_case(text))
}

/// The numbers `text` writes as percentages: `5%`, `5 %`, `4.5 percent`, `7 per cent`.
fn percentages(text: &str) -> Vec<f64> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    let bytes = lower.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && (bytes[at].is_ascii_digit() || bytes[at] == b'.') {
            at += 1;
        }
        let number = lower[start..at].trim_end_matches('.');
        let rest = lower[at..].trim_start();
        let is_percent =
            rest.starts_with('%') || rest.starts_with("percent") || rest.starts_with("per cent");
        // A digit run inside a longer number (`1,5%`, `v2.5%`) is not read.
        let inside =
            start > 0 && (bytes[start - 1] == b',' || bytes[start - 1].is_ascii_alphanumeric());
        if is_percent
            && !inside
            && let Ok(value) = number.parse::<f64>()
        {
            found.push(value);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(properties: Value) -> ToolSpec {
        ToolSpec::new(
            "finance.future_value",
            "Future value of an investment.",
            json!({"type": "object", "properties": properties}),
        )
    }

    fn call(args: Value) -> ToolCall {
        ToolCall::new(
            "finance.future_value",
            args.as_object().cloned().unwrap_or_default(),
        )
    }

    #[test]
    fn a_rate_the_person_wrote_as_a_percentage_is_its_fraction() {
        let spec = spec(json!({
            "principal": {"type": "number", "description": "The amount invested."},
            "annual_rate": {"type": "number", "description": "The annual rate."},
            "growth": {"type": "number", "description": "Enter as a decimal. E.g. 5% is 0.05"},
            "years": {"type": "integer"},
        }));
        let said =
            "Invest $5000 at an annual interest rate of 5% with 4.5 percent growth for 5 years.";
        let mut made =
            call(json!({"principal": 5000, "annual_rate": 5, "growth": 4.5, "years": 5}));
        let rewritten = percent_rates_as_fractions(&mut made, &spec, said);
        assert_eq!(rewritten, ["annual_rate", "growth"]);
        assert_eq!(
            Value::Object(made.args),
            json!({"principal": 5000, "annual_rate": 0.05, "growth": 0.045, "years": 5})
        );
        // The fraction has the percentage's decimals and two, never a float's tail.
        let said = "A loan at 5.9% APR, saving 19.99% a year, or 0.1%.";
        for (written, fraction) in [(5.9, 0.059), (19.99, 0.1999), (0.1, 0.001)] {
            let mut made = call(json!({"annual_rate": written}));
            percent_rates_as_fractions(&mut made, &spec, said);
            assert_eq!(made.args["annual_rate"].to_string(), fraction.to_string());
        }
    }

    #[test]
    fn a_percentage_parameter_an_integer_or_an_unwritten_percentage_is_kept() {
        let spec = spec(json!({
            "rate": {"type": "number", "description": "The interest rate as a percentage."},
            "rate_sign": {"type": "number", "description": "The rate in %."},
            "rate_percent": {"type": "number", "description": "The rate, as a decimal."},
            "level": {"type": "integer", "description": "The growth rate."},
            "interest_rate": {"type": "number"},
            "brightness": {"type": "number", "description": "Screen brightness."},
        }));
        let said = "A rate of 5%, growth 7%, brightness at 40%; interest is 3.";
        let args = json!({"rate": 5, "rate_sign": 5, "rate_percent": 5, "level": 7,
                          "interest_rate": 3, "brightness": 40});
        let mut made = call(args.clone());
        assert!(percent_rates_as_fractions(&mut made, &spec, said).is_empty());
        assert_eq!(Value::Object(made.args), args);
        // imurun's own tools are left alone.
        let own = ToolSpec::new(
            "calculate",
            "",
            json!({"type": "object", "properties": {"rate": {"type": "number"}}}),
        );
        let mut made = ToolCall::new(
            "calculate",
            json!({"rate": 5}).as_object().cloned().unwrap_or_default(),
        );
        assert!(percent_rates_as_fractions(&mut made, &own, "at 5%").is_empty());
    }

    #[test]
    fn percentages_are_read_in_their_written_forms() {
        assert_eq!(
            percentages("5% then 4.5 % and 7 percent, 8 per cent, 12.5%. Not 2.5x or v2%."),
            [5.0, 4.5, 7.0, 8.0, 12.5]
        );
    }
}
