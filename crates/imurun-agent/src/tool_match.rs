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

use imurun_core::{CallShape, IndexedTool, ToolCall, ToolIndex};
use serde_json::Value;

use crate::unsaid::Said;

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
    !named_tools(question, index.offered()).is_empty()
}

/// The fewest words of its name a tool must share with a question to be the one a first
/// call may name when no tool is named whole: one word ("messages") picks a neighbour
/// (`post_message` for "the last messages in #general").
const BEST_NAME_WORDS_MIN: usize = 2;

/// The shape of the calls a question asks for. When it names offered tools, a call to one
/// of those named (the reply is started as a call, and the call grammar keeps it to them),
/// and a call per case when it asks for the same thing several times ("... and 15 minutes
/// respectively", "then repeat with"); imurun's own tools stay callable. Otherwise, when
/// the question describes one of several offered tools that are not imurun's own
/// (`described_tool`), a call (if the model writes one) names that tool or one of imurun's
/// own. Otherwise, when exactly one offered tool that is not imurun's own has two or more words of its name in the
/// question and more than any other, a call (if the model writes one) names that tool or one
/// of imurun's own: with several tools on offer a
/// small model picks a neighbour (`math.gcd` for "the least common multiple").
pub(crate) fn call_shape(question: &str, index: &ToolIndex) -> Option<CallShape> {
    let builtin = |tool: &&IndexedTool| imurun_core::builtin::is_builtin(&tool.spec.name);
    let builtins = || {
        index
            .offered()
            .filter(builtin)
            .map(|tool| tool.spec.name.clone())
    };
    let named = named_tools(question, index.offered());
    if !named.is_empty() {
        return Some(CallShape {
            tools: named.into_iter().chain(builtins()).collect(),
            calls_min: if asks_for_several(question) { 2 } else { 1 },
        });
    }
    let asked = words(question);
    let own: Vec<&IndexedTool> = index.offered().filter(|tool| !builtin(tool)).collect();
    if own.len() > 1
        && let Some(described) = described_tool(&asked, &own)
    {
        return Some(CallShape {
            tools: std::iter::once(described).chain(builtins()).collect(),
            calls_min: 1,
        });
    }
    let mut scored: Vec<(usize, &str)> = index
        .offered()
        .filter(|tool| !builtin(tool))
        .map(|tool| {
            let hits = name_words(&tool.spec.name)
                .iter()
                .filter(|word| asked.iter().any(|said| same_word(word, said)))
                .count();
            (hits, tool.spec.name.as_str())
        })
        .collect();
    scored.sort_by_key(|(hits, _)| std::cmp::Reverse(*hits));
    let (best, name) = *scored.first()?;
    let unique = scored.get(1).is_none_or(|(next, _)| *next < best);
    (best >= BEST_NAME_WORDS_MIN && unique && scored.len() > 1).then(|| CallShape {
        tools: std::iter::once(name.to_owned()).chain(builtins()).collect(),
        calls_min: 1,
    })
}

/// Those of `candidates` a request weighs: the ones it names or describes, as the call shape
/// keeps a question to them ("the average life expectancy in 1900" weighs
/// `us_history.life_expectancy`, not `us_history.gdp`), else all of them.
pub(crate) fn tools_for(request: &str, index: &ToolIndex, candidates: &[String]) -> Vec<String> {
    let shaped: Vec<String> = call_shape(request, index)
        .map(|shape| {
            shape
                .tools
                .into_iter()
                .filter(|tool| candidates.contains(tool))
                .collect()
        })
        .unwrap_or_default();
    if shaped.is_empty() {
        candidates.to_vec()
    } else {
        shaped
    }
}

/// The names of those of `tools`, not imurun's own, that `question` names.
pub(crate) fn named_tools<'t>(
    question: &str,
    tools: impl IntoIterator<Item = &'t IndexedTool>,
) -> Vec<String> {
    let asked = words(question);
    tools
        .into_iter()
        .filter(|tool| !imurun_core::builtin::is_builtin(&tool.spec.name))
        .filter(|tool| {
            let named = name_words(&tool.spec.name);
            !named.is_empty()
                && named
                    .iter()
                    .all(|word| asked.iter().any(|said| same_word(word, said)))
        })
        .map(|tool| tool.spec.name.clone())
        .collect()
}

/// The fewest words of a tool's name and description together a question must hold for the
/// tool to count as described by it (one of them from the name).
const DESCRIBED_WORDS_MIN: usize = 3;

/// Words of descriptions that say nothing about what a tool is for.
const DESCRIPTION_COMMON: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "from",
    "that",
    "this",
    "which",
    "its",
    "are",
    "any",
    "all",
    "each",
    "into",
    "given",
    "based",
    "specific",
    "specified",
    "provided",
    "using",
    "use",
    "certain",
    "number",
    "value",
    "values",
    "list",
    "information",
    "details",
    "default",
    "optional",
    "returns",
    "return",
    "about",
    "other",
    "such",
    "can",
    "will",
    "one",
    "two",
    "also",
    "their",
    "them",
    "than",
    "then",
    "there",
    "what",
    "when",
    "where",
    "how",
    "who",
    "you",
    "your",
    "not",
    "has",
    "have",
    "was",
    "were",
    "been",
    "being",
    "per",
];

/// The one tool among `tools` whose name and description share the most words with
/// `asked` (the question's words), when it shares at least one word of its name and
/// `DESCRIBED_WORDS_MIN` in all, and no other tool shares as many: "the probability of
/// getting exactly 5 heads in 10 tosses" describes `calc_binomial_probability` ("Calculates
/// the binomial probability given the number of trials, successes and the probability of
/// success on an individual trial"). A reading of words, never the model's.
fn described_tool(asked: &[String], tools: &[&IndexedTool]) -> Option<String> {
    let holds = |word: &str| asked.iter().any(|said| same_word(word, said));
    let mut scored: Vec<(usize, usize, &str)> = tools
        .iter()
        .map(|tool| {
            let name = name_words(&tool.spec.name);
            let mut from_name: Vec<&String> = name.iter().filter(|word| holds(word)).collect();
            from_name.sort_unstable();
            from_name.dedup();
            let mut from_description: Vec<String> = words(&tool.spec.description)
                .into_iter()
                .filter(|word| word.chars().count() >= 3)
                .filter(|word| !word.chars().all(|c| c.is_ascii_digit()))
                .filter(|word| {
                    !DESCRIPTION_COMMON.contains(&word.as_str())
                        && !GENERIC.contains(&word.as_str())
                })
                .filter(|word| !from_name.iter().any(|named| same_word(named, word)))
                .filter(|word| holds(word))
                .collect();
            from_description.sort_unstable();
            from_description.dedup();
            (
                from_name.len(),
                from_name.len() + from_description.len(),
                tool.spec.name.as_str(),
            )
        })
        .collect();
    scored.sort_by_key(|(_, total, _)| std::cmp::Reverse(*total));
    let &(from_name, total, name) = scored.first()?;
    let unique = scored.get(1).is_none_or(|(_, next, _)| *next < total);
    (from_name >= 1 && total >= DESCRIBED_WORDS_MIN && unique).then(|| name.to_owned())
}

/// The fewest content words a question has before a call can be judged unrelated to it.
const QUESTION_WORDS_MIN: usize = 3;

/// Whether `call` has nothing of `question` in it: a call to a tool that is not one of
/// imurun's own, no word of whose name or description is in the question, and none of
/// whose argument values the person said (a number they wrote, text they wrote or sharing a
/// word with what they wrote). A small model offered tools
/// that cannot answer a question calls one anyway, with values of its own ("Find the
/// fastest route from New York to Boston" → `prime_numbers_in_range {"start": 103256789}`).
/// A `fetch_url` call is unrelated when its host is in neither what the person said nor
/// `seen` (the turn's context and results so far).
pub(crate) fn unrelated_call(
    question: &str,
    call: &ToolCall,
    tool: &IndexedTool,
    said: &Said,
    seen: &Said,
) -> bool {
    if tool.spec.name == "fetch_url" {
        return !fetches(call, said) && !fetches(call, seen);
    }
    let builtin = imurun_core::builtin::is_builtin(&tool.spec.name);
    // A short follow-up ("Try it", "Do that again") says too little to judge a call by.
    if builtin || crate::prompt::content_words(question).len() < QUESTION_WORDS_MIN {
        return false;
    }
    let asked = crate::prompt::content_words(&format!("{question}\n{}", said.text()));
    let said_value = |value: &Value| match value {
        Value::String(text) => {
            text.chars().any(char::is_alphanumeric)
                && (said.holds(value) == Some(true)
                    || crate::prompt::content_words(text)
                        .iter()
                        .any(|word| asked.contains(word)))
        }
        _ => said.holds(value) == Some(true),
    };
    let uses_what_was_said = call.args.values().any(|value| match value {
        Value::Array(items) => items.iter().any(said_value),
        value => said_value(value),
    });
    crate::prompt::question_match(tool, &asked) == 0 && !uses_what_was_said
}

/// Whether a `fetch_url` call fetches a host `said` names: a reply that fetches another
/// host before any result came back made its address up ("Suggest a name for a cat." →
/// `fetch_url {"url": "https://www.catnames.com"}`).
fn fetches(call: &ToolCall, said: &Said) -> bool {
    let url = call
        .args
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit('@')
        .next()
        .unwrap_or_default();
    let host = host.strip_prefix("www.").unwrap_or(host);
    !host.is_empty() && said.holds(&Value::String(host.to_owned())) == Some(true)
}

/// Phrases that ask for the same thing again with other values.
const SEVERAL_CASES: &[&str] = &[
    "then repeat with",
    "repeat with",
    "repeat for",
    "do the same for",
    "do the same calculation",
    "the same for",
    "same calculation for",
    "same thing for",
    "also for",
    "another with",
];

/// Whether `question` asks for the same thing with several sets of values: "... respectively",
/// or one of `SEVERAL_CASES` with two numbers or more in the question ("Set an alarm for 7am
/// and repeat it every weekday" is one call).
pub(crate) fn asks_for_several(question: &str) -> bool {
    let spaced = format!(" {} ", words(question).join(" "));
    let says = |phrase: &str| spaced.contains(&format!(" {phrase} "));
    let numbers = question
        .split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .count();
    says("respectively") || (numbers >= 2 && SEVERAL_CASES.iter().any(|phrase| says(phrase)))
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
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// `CalculateTax` → `Calculate Tax`.
pub(crate) fn split_camel_case(text: &str) -> String {
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

/// The same word, either one's plural in `s`, a word the named one begins when it has four
/// letters or more (`hypot` and `hypotenuse`), or another ending of the same long stem
/// (`depreciation` and `depreciated`: seven letters or more in common, and at most two letters
/// of the shorter word past them).
pub(crate) fn same_word(named: &str, said: &str) -> bool {
    let common = named
        .chars()
        .zip(said.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let shorter = named.chars().count().min(said.chars().count());
    named == said
        || said.strip_suffix('s') == Some(named)
        || named.strip_suffix('s') == Some(said)
        || (named.chars().count() >= 4 && said.starts_with(named))
        || (common >= 7 && common + 2 >= shorter)
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

    /// A tool with its description, offered beside one about something else.
    fn described(tools: &[(&str, &str)]) -> ToolIndex {
        ToolIndex::offering(
            tools
                .iter()
                .chain([&("weather.forecast", "The weather forecast for a city.")])
                .map(|(name, description)| {
                    ToolSpec::new(*name, *description, json!({"type": "object"}))
                })
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn a_question_that_describes_one_of_several_tools_keeps_a_call_to_it() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (
                "What's the probability of rolling a six on a die twice in a row?",
                &[(
                    "probability.dice_roll",
                    "Calculate the probability of rolling a number on a six-sided die a \
                     number of times in a row.",
                )],
                "probability.dice_roll",
            ),
            (
                "Find the highest common factor of 36 and 24.",
                &[(
                    "math.factor_hcf",
                    "Calculate the highest common factor of two integers.",
                )],
                "math.factor_hcf",
            ),
            (
                "Run a two sample t-test on group A and group B, assuming equal variance.",
                &[
                    (
                        "stats.compare_groups",
                        "Perform a two sample t-test for two given arrays, assuming equal variance.",
                    ),
                    ("stats.mean", "The mean of a list of numbers."),
                ],
                "stats.compare_groups",
            ),
        ];
        for (question, tools, described_one) in cases {
            let index = described(tools);
            let shape = call_shape(question, &index).expect(question);
            assert_eq!(shape.tools, [described_one.to_owned()], "{question}");
            // Described is not named: the reply is not started as a call for it.
            assert!(!names_an_offered_tool(question, &index), "{question}");
        }
    }

    #[test]
    fn a_question_that_only_brushes_a_description_describes_nothing() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            // Words of the description only, none of the name.
            (
                "What is the probability that it rains in Oslo tomorrow?",
                &[(
                    "coin_flip",
                    "Simulate the probability of heads and tails in tosses.",
                )],
            ),
            // Two words in all.
            (
                "Who is the Vice President of the United States?",
                &[(
                    "us_president_in_year",
                    "Find the name of the president in a given year.",
                )],
            ),
            // Two tools described as much as each other.
            (
                "What do I get for a circle drawn with a radius of 3 units?",
                &[
                    ("circle_area", "Area of a circle from its radius in units."),
                    (
                        "circle_perimeter",
                        "Perimeter of a circle from its radius in units.",
                    ),
                ],
            ),
            // Common words of descriptions count for nothing.
            (
                "Get the specific information based on the given details.",
                &[(
                    "lookup_record",
                    "Returns specific information based on the given details.",
                )],
            ),
        ];
        for (question, tools) in cases {
            assert_eq!(call_shape(question, &described(tools)), None, "{question}");
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
    fn the_call_shape_keeps_to_the_tools_the_question_names() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "Can I find the dimensions and properties of a triangle, if I know its sides?",
                &["circle_properties.get", "triangle_properties.get"],
                &["triangle_properties.get"],
            ),
            (
                "Calculate the Least Common Multiple (LCM) of 18 and 12.",
                &["math.gcd", "math.lcm", "math.sqrt"],
                &["math.lcm"],
            ),
            (
                "What is the record for the most points scored by a single player in an NBA game?",
                &[
                    "sports_data.basketball.most_points_career",
                    "sports_data.basketball.most_points_single_game",
                ],
                &["sports_data.basketball.most_points_single_game"],
            ),
            (
                "Calculate the depreciated value of a property costing $200,000.",
                &["finance.loan_repayment", "finance.property_depreciation"],
                &["finance.property_depreciation"],
            ),
        ];
        for (question, offered, named) in cases {
            let shape = call_shape(question, &index(offered)).expect(question);
            assert_eq!(shape.tools, *named, "{question}");
            assert_eq!(shape.calls_min, 1, "{question}");
        }
        assert_eq!(call_shape("Who wrote Hamlet?", &index(&["math.lcm"])), None);
        // Named by more words than any other, though not by all of its own.
        let shape = call_shape(
            "Find the rewards for playing the game Fortnite",
            &index(&[
                "game_rewards_history.get",
                "game_scores.get",
                "game_missions.list",
            ]),
        );
        assert_eq!(
            shape.map(|shape| shape.tools),
            Some(vec!["game_rewards_history.get".to_owned()])
        );
        // One word in common is not enough: `post_message` for "the last messages".
        let slack = index(&[
            "slack_post_message",
            "slack_list_channels",
            "slack_get_history",
        ]);
        assert_eq!(
            call_shape("What were the last messages in #general?", &slack),
            None
        );
        // A tie names none; so does a single tool, which needs no narrowing.
        let tie = index(&["game_rewards.get", "player_rewards.get"]);
        assert_eq!(call_shape("the rewards for playing", &tie), None);
        assert_eq!(
            call_shape("the rewards for playing", &index(&["game_rewards.get"])),
            None
        );
    }

    #[test]
    fn a_request_weighs_the_tools_it_names_else_every_candidate() {
        let offered = ["us_history.gdp", "us_history.life_expectancy"];
        let index = index(&offered);
        let candidates: Vec<String> = offered.iter().map(|&tool| tool.to_owned()).collect();
        assert_eq!(
            tools_for(
                "What was the average life expectancy in the USA in 1900?",
                &index,
                &candidates
            ),
            ["us_history.life_expectancy"]
        );
        assert_eq!(
            tools_for("what was the GDP of the USA then?", &index, &candidates),
            ["us_history.gdp"]
        );
        // Naming none, or only a tool that is no candidate, it weighs them all.
        assert_eq!(tools_for("And in 1950?", &index, &candidates), candidates);
        assert_eq!(
            tools_for("the life expectancy", &index, &candidates[..1]),
            candidates[..1]
        );
    }

    #[test]
    fn a_question_asking_the_same_thing_again_asks_for_a_call_per_case() {
        for question in [
            "Play songs from Taylor Swift and Maroon 5, for 20 minutes and 15 minutes respectively, on Spotify.",
            "Calculate the induced force for a field of 5 Tesla, then repeat with a field of 10 Tesla.",
            "Calculate the body mass index for a person 6 feet tall weighing 80 kg, also for a person of 5.6 feet.",
            "Calculate the return for an investment of $2000. Do the same calculation for $5000.",
        ] {
            assert!(asks_for_several(question), "{question}");
        }
        for question in [
            "Set an alarm for 7am and repeat it every weekday.",
            "Also for the record, what is the factorial of 5?",
            "Calculate the final temperature when 2 moles of gas are mixed with 3 moles of the same gas.",
            "Find the area of a triangle with a base of 10 and a height of 5.",
            "Find the roots of a quadratic equation with coefficients 1, -3 and 2.",
        ] {
            assert!(!asks_for_several(question), "{question}");
        }
        let shape = call_shape(
            "Find the factorial of 5, and the same for 10.",
            &index(&["math.factorial"]),
        );
        assert_eq!(shape.map(|shape| shape.calls_min), Some(2));
    }

    #[test]
    fn a_first_fetch_of_a_host_nobody_named_is_unrelated() {
        let index = ToolIndex::offering(imurun_core::builtin::specs());
        let tool = index.get("fetch_url").unwrap();
        let fetch = |url: &str| {
            ToolCall::new(
                "fetch_url",
                json!({"url": url}).as_object().cloned().unwrap_or_default(),
            )
        };
        let question = "Suggest a name for a cat.";
        let said = Said::new(question);
        assert!(unrelated_call(
            question,
            &fetch("https://www.catnames.com/top"),
            tool,
            &said,
            &said
        ));
        let question = "What does example.org/news say today?";
        let said = Said::new(question);
        assert!(!unrelated_call(
            question,
            &fetch("https://example.org/news"),
            tool,
            &said,
            &said
        ));
        assert!(!unrelated_call(
            question,
            &fetch("http://www.example.org"),
            tool,
            &said,
            &said
        ));
        assert!(unrelated_call(
            question,
            &fetch("https://example.org.evil.test/"),
            tool,
            &said,
            &said
        ));
        // Other built-in tools are left to their own rules.
        let read = ToolCall::new(
            "file_read",
            json!({"path": "x.txt"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        assert!(!unrelated_call(
            question,
            &read,
            index.get("file_read").unwrap(),
            &said,
            &said
        ));
        // A host a search result gave is not made up.
        let seen = Said::new("[tool result: web_search] 1. Cat names - https://petnames.test/cats");
        assert!(!unrelated_call(
            "Suggest a name for a cat.",
            &fetch("https://petnames.test/cats"),
            tool,
            &Said::new("Suggest a name for a cat."),
            &seen
        ));
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
