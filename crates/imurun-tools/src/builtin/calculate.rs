//! `calculate`: arithmetic and common functions, so a small model never has to do sums in
//! its head (SmolLM2-135M says 17 × 23 is 349).
//!
//! The expression is read by `evalexpr`, held to numbers, `+ - * / % ^`, parentheses and a
//! short list of functions: no variables, no assignment, no strings, nothing that runs code.
//! Whole numbers stay exact (64-bit integers) unless the expression divides or a result
//! does not fit, when it is computed in floating point and said to be approximate where it
//! is. Input is bounded ([`EXPRESSION_CHARS_MAX`]), and so, through it, is the work.

use evalexpr::Value as Number;
use imurun_core::{
    BoxFuture, ClaimKind, Facts, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec,
};
use serde_json::{Map, Value};

use super::required_string;

/// The longest expression read (its schema says so too).
pub const EXPRESSION_CHARS_MAX: usize = imurun_core::builtin::CALCULATE_EXPRESSION_CHARS_MAX;

/// Functions an expression may call, as written and as `evalexpr` names them.
const FUNCTIONS: &[(&str, &str)] = &[
    ("sqrt", "math::sqrt"),
    ("cbrt", "math::cbrt"),
    ("abs", "math::abs"),
    ("ln", "math::ln"),
    ("log10", "math::log10"),
    ("log2", "math::log2"),
    ("exp", "math::exp"),
    ("sin", "math::sin"),
    ("cos", "math::cos"),
    ("tan", "math::tan"),
    ("floor", "floor"),
    ("ceil", "ceil"),
    ("round", "round"),
    ("min", "min"),
    ("max", "max"),
];

/// Named constants, replaced by their value.
const CONSTANTS: &[(&str, &str)] = &[("pi", "3.141592653589793"), ("e", "2.718281828459045")];

/// Floats are shown with at most this many significant digits.
const SIGNIFICANT_DIGITS: usize = 12;

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::calculate()
}

/// The calculator. No authority: its category is `compute`.
#[derive(Debug)]
pub struct Calculate {
    spec: ToolSpec,
}

impl Calculate {
    pub fn new() -> Self {
        Self { spec: spec() }
    }
}

impl Default for Calculate {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for Calculate {
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
        let output = match required_string(args, "expression") {
            Ok(text) => match evaluate(text) {
                Ok(answer) => {
                    let line = format!("{} = {answer}", shown(text));
                    ToolOutput::ok(line.clone()).with_facts(facts(text, &answer, line))
                }
                Err(why) => ToolOutput::failed(why),
            },
            Err(failure) => failure,
        };
        Box::pin(async move { output })
    }
}

/// The value of `text`, as a person reads it: `391`, `0.333333333333`, `≈ 1.23e+21`.
pub(crate) fn evaluate(text: &str) -> Result<String, String> {
    let expression = rewrite(text)?;
    let divides = expression.contains('/');
    if !divides && let Ok(value) = evalexpr::eval(&expression) {
        return number_text(&value, false);
    }
    // Division, or an integer result that does not fit: floating point.
    let floating = floats(&expression);
    match evalexpr::eval(&floating) {
        Ok(value) => number_text(&value, !divides),
        Err(error) => Err(explain(&error.to_string())),
    }
}

/// The expression as `evalexpr` reads it, or why it is not one this tool computes.
fn rewrite(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the expression is empty; give one such as 17 * 23".to_owned());
    }
    if text.chars().count() > EXPRESSION_CHARS_MAX {
        return Err(format!(
            "the expression is longer than {EXPRESSION_CHARS_MAX} characters"
        ));
    }
    let text = text
        .replace(['×', '·', '✕'], "*")
        .replace(['÷', '∶'], "/")
        .replace(['−', '–'], "-")
        .replace("**", "^");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphabetic() {
            let mut word = String::from(c);
            while let Some(&next) = chars.peek() {
                if next.is_ascii_alphanumeric() || next == '_' {
                    word.push(next);
                    chars.next();
                } else {
                    break;
                }
            }
            let lower = word.to_ascii_lowercase();
            if let Some((_, value)) = CONSTANTS.iter().find(|(name, _)| *name == lower) {
                out.push_str(value);
            } else if let Some((_, name)) = FUNCTIONS.iter().find(|(name, _)| *name == lower) {
                out.push_str(name);
            } else if lower == "x" {
                // `17 x 23`
                out.push('*');
            } else {
                let known: Vec<&str> = FUNCTIONS.iter().map(|(name, _)| *name).collect();
                return Err(format!(
                    "`{word}` is not a number or a function this calculator knows ({}, pi, e)",
                    known.join(", ")
                ));
            }
        } else if c.is_ascii_digit() || " \t.+-*/%^(),".contains(c) {
            out.push(c);
        } else {
            return Err(format!(
                "`{c}` has no meaning in an expression; use numbers, + - * / % ^, parentheses \
                 and functions such as sqrt"
            ));
        }
    }
    Ok(out)
}

/// `expression` with every whole-number literal written as a float, so `7 / 2` is 3.5.
fn floats(expression: &str) -> String {
    let mut out = String::with_capacity(expression.len() + 8);
    let bytes = expression.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let c = bytes[index];
        let starts_number = c.is_ascii_digit() && (index == 0 || !is_name_byte(bytes[index - 1]));
        if starts_number {
            let start = index;
            while index < bytes.len() && (bytes[index].is_ascii_digit() || bytes[index] == b'.') {
                index += 1;
            }
            let literal = &expression[start..index];
            out.push_str(literal);
            if !literal.contains('.') {
                out.push_str(".0");
            }
        } else {
            out.push(char::from(c));
            index += 1;
        }
    }
    out
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b':'
}

/// A result as text; `approximate` marks a float standing in for an integer that overflowed.
fn number_text(value: &Number, approximate: bool) -> Result<String, String> {
    match value {
        Number::Int(int) => Ok(int.to_string()),
        Number::Float(float) if !float.is_finite() => {
            Err("the result is not a finite number (a division by zero, or too large)".to_owned())
        }
        Number::Float(float) => {
            let text = float_text(*float);
            Ok(if approximate {
                format!("≈ {text}")
            } else {
                text
            })
        }
        Number::Boolean(flag) => Ok(flag.to_string()),
        other => Err(format!("the expression gave `{other}`, not a number")),
    }
}

/// A float without noise: whole numbers below 2^53 as integers, others with at most
/// [`SIGNIFICANT_DIGITS`] significant digits.
fn float_text(float: f64) -> String {
    const EXACT_INTEGER_MAX: f64 = 9_007_199_254_740_992.0;
    if float.fract() == 0.0 && float.abs() < EXACT_INTEGER_MAX {
        #[allow(clippy::cast_possible_truncation)]
        let int = float as i64;
        return int.to_string();
    }
    let magnitude = float.abs();
    if !(1e-6..1e15).contains(&magnitude) {
        return format!("{float:.*e}", SIGNIFICANT_DIGITS - 1)
            .replace("0e", "e")
            .trim_end_matches('0')
            .to_owned();
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole_digits = if magnitude >= 1.0 {
        magnitude.log10().floor() as usize + 1
    } else {
        0
    };
    let decimals = SIGNIFICANT_DIGITS.saturating_sub(whole_digits);
    let text = format!("{float:.decimals$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_owned()
}

/// `evalexpr`'s error in a person's words.
fn explain(error: &str) -> String {
    let lower = error.to_ascii_lowercase();
    if lower.contains("division by zero") || lower.contains("divide by zero") {
        "division by zero".to_owned()
    } else if lower.contains("overflow") {
        "the result is too large to compute".to_owned()
    } else {
        format!("that is not an expression this calculator can read ({error})")
    }
}

/// An answer to a sum states its result and no number that is neither the result nor one
/// of the expression's own.
fn facts(expression: &str, answer: &str, line: String) -> Facts {
    let forms = result_forms(answer);
    let mut allowed = forms.clone();
    allowed.extend(numbers_in(expression));
    Facts::new(format!("{line}."))
        .require("the result", forms)
        .only(ClaimKind::Number, allowed)
}

/// How an answer may write `answer`: as the tool does; with thousands grouped (`1,234,567`);
/// a fraction rounded to two or more decimals (`0.33`, `0.333`).
fn result_forms(answer: &str) -> Vec<String> {
    let value = answer.trim_start_matches('≈').trim();
    let mut forms = vec![value.to_owned()];
    let (sign, digits) = match value.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", value),
    };
    if digits.len() > 4 && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        let grouped: Vec<String> = digits
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
            .collect();
        forms.push(format!("{sign}{}", grouped.join(",")));
    }
    if let Some((_, fraction)) = value.split_once('.')
        && !value.contains('e')
        && let Ok(number) = value.parse::<f64>()
    {
        for decimals in 2..fraction.len() {
            let rounded = format!("{number:.decimals$}");
            if !forms.contains(&rounded) {
                forms.push(rounded);
            }
        }
    }
    forms
}

/// The numbers written in an expression.
fn numbers_in(expression: &str) -> Vec<String> {
    expression
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|part| part.trim_matches('.'))
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The expression as the answer repeats it: one line, at most 80 characters.
fn shown(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_exact_and_divisions_are_real() {
        let cases = [
            ("17 * 23", "391"),
            ("17 x 23", "391"),
            ("17 × 23", "391"),
            ("2 ^ 10", "1024"),
            ("2**10", "1024"),
            ("(1 + 2) * 3 - 4", "5"),
            ("-5 + 2", "-3"),
            ("7 / 2", "3.5"),
            ("1 / 3", "0.333333333333"),
            ("6 / 3", "2"),
            ("10 % 3", "1"),
            ("sqrt(16)", "4"),
            ("sqrt(2)", "1.41421356237"),
            ("2 * pi", "6.28318530718"),
            ("max(3, 9, 4)", "9"),
            ("123456789 * 987654321", "121932631112635269"),
            ("0.1 + 0.2", "0.3"),
        ];
        for (expression, expected) in cases {
            assert_eq!(
                evaluate(expression).as_deref(),
                Ok(expected),
                "{expression}"
            );
        }
    }

    #[test]
    fn what_overflows_is_approximate_and_what_is_not_arithmetic_is_refused() {
        let big = evaluate("99999999999 * 99999999999 * 99999999999").unwrap();
        assert_eq!(big, "≈ 9.9999999997e32");
        for (expression, why) in [
            ("", "empty"),
            ("1 / 0", "not a finite number"),
            ("a = 5", "`a` is not a number"),
            ("\"text\"", "has no meaning"),
            ("rm -rf /", "`rm` is not a number"),
            ("1 +", "can read"),
            ("system(1)", "`system` is not a number"),
        ] {
            let error = evaluate(expression).unwrap_err();
            assert!(error.contains(why), "{expression}: {error}");
        }
        let long = "1+".repeat(200) + "1";
        assert!(evaluate(&long).unwrap_err().contains("longer than"));
    }

    #[test]
    fn an_answer_must_state_the_result_in_a_form_people_write() {
        let facts = facts("17 * 23", "391", "17 * 23 = 391".into());
        assert_eq!(facts.sentence, "17 * 23 = 391.");
        assert_eq!(facts.required[0].forms, ["391"]);
        assert_eq!(facts.claims[0].allowed, ["391", "17", "23"]);
        assert_eq!(
            result_forms("121932631112635269"),
            ["121932631112635269", "121,932,631,112,635,269"]
        );
        assert_eq!(result_forms("-12345"), ["-12345", "-12,345"]);
        assert_eq!(result_forms("1024"), ["1024"]);
        let third = result_forms("0.333333333333");
        assert!(third.contains(&"0.33".to_owned()) && third.contains(&"0.3333".to_owned()));
        assert_eq!(result_forms("≈ 9.9999999997e32"), ["9.9999999997e32"]);
    }
}
