//! Whether a question names what an offered tool does: "Find the area of a triangle ..."
//! and `calculate_triangle_area`, "What is the capital of Brazil?" and
//! `country_info.capital`. A small model asked such a question with several tools on offer
//! tends to explain in prose how one would call the tool instead of calling it; when the
//! question names a tool this plainly, the loop starts the reply as a call (the call prefill)
//! and the call grammar keeps it to an offered tool.
//!
//! A fixed reading of the words, never the model's: the tool's name is split into words
//! (snake case, camel case, dots), words every tool name has ("get", "calculate", "find", ...)
//! are dropped, and the question must hold every word left — of the name's last dotted part,
//! or of the namespace when the last part is only such a word. Built-in tools are left out:
//! their own intents (the pre-fetch, the live-data rule) decide when they are called.

use imurun_core::{IndexedTool, ToolIndex};

/// Words of tool names that say nothing about what the tool is for.
const GENERIC: &[&str] = &[
    "get",
    "set",
    "find",
    "calculate",
    "calc",
    "compute",
    "determine",
    "solve",
    "retrieve",
    "fetch",
    "make",
    "create",
    "run",
    "check",
    "info",
    "data",
    "tool",
    "the",
    "and",
    "for",
    "from",
    "with",
    "by",
    "of",
    "to",
    "in",
    "on",
    "api",
    "v1",
    "v2",
];

/// The built-in tools that answer about the present. A prompt about the present gets a
/// started call only when one of them is offered (or the prompt names another offered tool):
/// with none of them, no call could answer it, and a started call would be a wrong one.
const LIVE_TOOLS: &[&str] = &["get_time", "get_weather", "web_search", "fetch_url"];

/// Whether one of the built-in tools that answer about the present is offered.
pub(crate) fn offers_a_live_tool(index: &ToolIndex) -> bool {
    index
        .offered()
        .any(|tool| LIVE_TOOLS.contains(&tool.spec.name.as_str()))
}

/// Whether `question` names an offered tool that is not one of imurun's own.
pub(crate) fn names_an_offered_tool(question: &str, index: &ToolIndex) -> bool {
    names_a_tool(question, index.offered())
}

/// Whether `question` names one of `tools` that is not one of imurun's own.
pub(crate) fn names_a_tool<'t>(
    question: &str,
    tools: impl IntoIterator<Item = &'t IndexedTool>,
) -> bool {
    let asked = words(question);
    let builtin: Vec<String> = imurun_core::builtin::specs()
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    tools
        .into_iter()
        .filter(|tool| !builtin.contains(&tool.spec.name))
        .any(|tool| {
            let named = name_words(&tool.spec.name);
            !named.is_empty()
                && named
                    .iter()
                    .all(|word| asked.iter().any(|said| same_word(word, said)))
        })
}

/// The words that say what a tool named `name` is for: those of its last dotted part, or of
/// the rest when the last part holds none.
fn name_words(name: &str) -> Vec<String> {
    let meaningful = |part: &str| -> Vec<String> {
        words(&split_camel_case(part))
            .into_iter()
            .filter(|word| !GENERIC.contains(&word.as_str()))
            .collect()
    };
    match name.rsplit_once('.') {
        Some((namespace, last)) => {
            let own = meaningful(last);
            if own.is_empty() {
                meaningful(namespace)
            } else {
                own
            }
        }
        None => meaningful(name),
    }
}

/// Lower-case words of letters and digits, two characters or more.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// `CalculateTax` → `Calculate Tax`.
fn split_camel_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_uppercase() && previous_lower {
            out.push(' ');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        out.push(c);
    }
    out
}

/// The same word, either one's plural in `s`, or a word the named one begins when it has four
/// letters or more (`hypot` and `hypotenuse`).
fn same_word(named: &str, said: &str) -> bool {
    named == said
        || said.strip_suffix('s') == Some(named)
        || named.strip_suffix('s') == Some(said)
        || (named.chars().count() >= 4 && said.starts_with(named))
}

#[cfg(test)]
mod tests {
    use imurun_core::ToolSpec;
    use serde_json::json;

    use super::*;

    fn index(names: &[&str]) -> ToolIndex {
        ToolIndex::offering(
            names
                .iter()
                .map(|name| ToolSpec::new(*name, "", json!({"type": "object"})))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn a_question_that_names_what_a_tool_does_names_it() {
        let cases: &[(&str, &[&str])] = &[
            (
                "Find the area of a triangle with a base of 10 units and height of 5 units.",
                &["calculate_triangle_area"],
            ),
            (
                "Calculate the factorial of 5 using math functions.",
                &["math.factorial"],
            ),
            (
                "Calculate the hypotenuse of a right triangle given the lengths 4 and 5.",
                &["math.hypot"],
            ),
            (
                "Can I find the dimensions and properties of a triangle, if I know its sides?",
                &["triangle_properties.get", "circle_properties.get"],
            ),
            (
                "What is the capital of Brazil?",
                &["country_info.largest_city", "country_info.capital"],
            ),
            ("How much tax do I pay on 50000?", &["CalculateTax"]),
        ];
        for (question, tools) in cases {
            assert!(names_an_offered_tool(question, &index(tools)), "{question}");
        }
    }

    #[test]
    fn a_question_about_something_else_names_none() {
        let cases: &[(&str, &[&str])] = &[
            (
                "Calculate the area of a triangle given the base is 10 meters and height is 5.",
                &["determine_body_mass_index"],
            ),
            (
                "Solve the quadratic equation with a = 1, b = 2, c = 3.",
                &["math.sum"],
            ),
            (
                "Solve for the roots of 3x^2 - 2x - 5.",
                &["distance_calculator.calculate"],
            ),
            ("What is the closest integer to 30?", &["get_closest_prime"]),
            ("Find the integral of x^3 from 1 to 5", &["str_to_int"]),
            ("Who wrote Hamlet?", &["find_restaurant", "get_stock_price"]),
            (
                "What is the largest country?",
                &["country_info.largest_city"],
            ),
            // A tool whose name is only generic words names nothing.
            ("Get me the info", &["get_info"]),
        ];
        for (question, tools) in cases {
            assert!(
                !names_an_offered_tool(question, &index(tools)),
                "{question}"
            );
        }
    }

    #[test]
    fn only_the_built_in_tools_for_the_present_are_live() {
        assert!(offers_a_live_tool(&ToolIndex::offering(
            imurun_core::builtin::specs()
        )));
        assert!(!offers_a_live_tool(&index(&[
            "calculate_time",
            "math.factorial"
        ])));
        assert!(!offers_a_live_tool(&ToolIndex::offering(vec![
            imurun_core::builtin::calculate()
        ])));
    }

    #[test]
    fn built_in_tools_are_left_to_their_own_intents() {
        let builtin = ToolIndex::offering(imurun_core::builtin::specs());
        for question in [
            "Tell me a story about time travel.",
            "What is the weather like in stories?",
            "Read me a poem about a file clerk.",
        ] {
            assert!(!names_an_offered_tool(question, &builtin), "{question}");
        }
    }
}
