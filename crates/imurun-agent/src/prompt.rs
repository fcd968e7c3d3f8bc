//! The one system message of a turn: persona, house style, today's date, the tool prompt,
//! invoked skills and the pre-fetch Context block, in that order.
//!
//! The tool prompt teaches exactly one call format and carries two short worked examples:
//! a 135M model measured 0 of 10 tool calls on tool-needing questions with the bare prompt
//! and 3 of 10 with two worked examples, so the examples are not decoration.

use std::fmt::Write;

use imurun_calls::render_call;
use imurun_core::{IndexedTool, ToolCall, ToolIndex};
use jiff::civil::Date;
use serde_json::{Map, Value};

use crate::clock::long_date;
use crate::style::{HOUSE_STYLE, LIVE_DATA_RULE};

/// The most skills one turn injects.
pub const SKILLS_MAX: usize = 3;

/// A skill's body is cut to this many characters.
pub const SKILL_BODY_CHARS_MAX: usize = 4000;

/// The pre-fetch Context block is cut to this many characters.
pub const CONTEXT_CHARS_MAX: usize = 8000;

/// A skill invoked for this turn: its id (what events and the turn view name it by), its
/// name (the prompt's heading) and the instructions injected into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub id: String,
    pub name: String,
    pub body: String,
}

impl Skill {
    /// A skill whose id is its name (one not read from a [`crate::SkillStore`]).
    pub fn new(name: impl Into<String>, body: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            id: name.clone(),
            name,
            body: body.into(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
}

/// Everything the system message is assembled from.
#[derive(Debug, Clone, Copy)]
pub struct SystemPrompt<'a> {
    pub persona: &'a str,
    pub today: Date,
    /// The tools the prompt teaches; `None` sends no tool prompt at all (`max_steps = 1`).
    pub tools: Option<&'a ToolIndex>,
    /// The line naming connected services whose tools this prompt does not list
    /// ("Also connected, ask to use them: Gmail."), shown with the tool prompt.
    pub also_connected: Option<&'a str>,
    /// Only the first [`SKILLS_MAX`] are used.
    pub skills: &'a [Skill],
    /// The pre-fetch results, already formatted.
    pub context: Option<&'a str>,
    /// Whether the tool prompt carries its two worked examples.
    pub examples: bool,
    /// The prompt being answered: the worked examples closest to it come first.
    pub question: &'a str,
}

/// The whole system message.
pub fn system_message(parts: &SystemPrompt<'_>) -> String {
    let mut out = String::new();
    out.push_str(parts.persona.trim());
    out.push_str("\n\n");
    out.push_str(HOUSE_STYLE);
    out.push(' ');
    out.push_str(LIVE_DATA_RULE);
    let _infallible = write!(out, "\n\nToday is {}.", long_date(parts.today));
    if let Some(tool_prompt) = parts
        .tools
        .and_then(|index| tool_prompt_for(index, parts.examples.then_some(parts.question)))
    {
        out.push_str("\n\n");
        out.push_str(&tool_prompt);
        if let Some(line) = parts.also_connected {
            out.push('\n');
            out.push_str(line);
        }
    }
    for skill in parts.skills.iter().take(SKILLS_MAX) {
        let _infallible = write!(
            out,
            "\n\n## Skill: {}\n{}",
            skill.name,
            cut(skill.body.trim(), SKILL_BODY_CHARS_MAX)
        );
    }
    if let Some(context) = parts.context.map(str::trim).filter(|text| !text.is_empty()) {
        out.push_str("\n\n## Context\n");
        out.push_str(cut(context, CONTEXT_CHARS_MAX));
    }
    out
}

/// The tool prompt for the offered tools, with its worked examples, or `None` when nothing
/// is offered.
pub fn tool_prompt(index: &ToolIndex) -> Option<String> {
    tool_prompt_for(index, Some(""))
}

/// The tool prompt with the worked examples closest to `question` (`None`: no examples).
pub fn tool_prompt_for(index: &ToolIndex, question: Option<&str>) -> Option<String> {
    let offered: Vec<&IndexedTool> = index.offered().collect();
    if offered.is_empty() {
        return None;
    }
    let mut out = String::from(
        "## Tools\nYou can call a tool. To call one, reply with only a ```tool block that holds \
         one JSON object, then stop:\n```tool\n{\"name\": \"tool_name\", \"args\": {\"parameter\": \
         \"value\"}}\n```\nThe result comes back in a message headed [tool result: tool_name]. \
         Then answer, or call another tool.\n\nWhen to use a tool:\n\
         1. Anything about the present: the time, the weather, prices, news, scores, what is \
         latest. Your memory is out of date.\n\
         2. Anything in the person's files or on this computer.\n\
         3. Anything you would otherwise have to guess.\n\
         Otherwise answer directly, without a tool.\n\nTools:\n",
    );
    for tool in &offered {
        out.push_str(&tool_line(tool));
        out.push('\n');
    }
    let shown = question.map_or_else(Vec::new, |question| examples(&offered, question));
    for (number, example) in shown.iter().enumerate() {
        let _infallible = write!(
            out,
            "\nExample {}:\nUser: {}\nYou:\n{}\nUser: [tool result: {}]\n{}\nYou: {}\n",
            number + 1,
            example.question,
            render_call(&example.call),
            example.call.name,
            example.result,
            example.answer
        );
    }
    Some(out.trim_end().to_owned())
}

/// `- name(param: type, optional?: type): description`
fn tool_line(tool: &IndexedTool) -> String {
    let spec = &tool.spec;
    let required = spec.required();
    let parameters: Vec<String> = spec
        .properties()
        .map(|properties| {
            properties
                .iter()
                .map(|(name, schema)| {
                    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("any");
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{name}{optional}: {kind}")
                })
                .collect()
        })
        .unwrap_or_default();
    let description = spec.description.trim();
    let mut line = format!("- {}({})", spec.name, parameters.join(", "));
    if !description.is_empty() {
        line.push_str(": ");
        line.push_str(description);
    }
    line
}

/// One worked example: a question, the call, its result, the answer.
struct Example {
    question: String,
    call: ToolCall,
    result: String,
    answer: String,
}

/// A worked example for a well-known tool. Its values are plainly illustrative (a date in
/// 2020, `example.txt`, `12 * 34`): a small model copies examples, and a copied value must
/// be one no real answer holds, so the grounding check can tell.
struct KnownExample {
    tool: &'static str,
    question: &'static str,
    args: &'static [(&'static str, &'static str)],
    result: &'static str,
    answer: &'static str,
    /// Words that point at the tool.
    keywords: &'static str,
    /// The values of the example's world, which an answer about this person's world must
    /// not hold unless the person said them or a tool returned them.
    values: &'static [&'static str],
}

/// The tools of the known examples that change the workspace.
const CHANGING_TOOLS: &[&str] = &["file_write", "delete"];

/// The known worked examples, best first: a live-data question leads, because "anything
/// about the present" is the rule small models most need to see applied.
const KNOWN_EXAMPLES: &[KnownExample] = &[
    KnownExample {
        tool: "get_weather",
        question: "What's the weather in Lima right now?",
        args: &[("location", "Lima")],
        result: "Lima: 19 °C, cloudy, wind 3 m/s",
        answer: "It is 19 °C and cloudy in Lima right now.",
        keywords: "weather rain raining snow snowing temperature hot cold warm wind sunny \
                   forecast degrees",
        values: &["Lima", "19 °C", "3 m/s"],
    },
    KnownExample {
        tool: "web_search",
        question: "What is the latest Python release?",
        args: &[("query", "latest Python release")],
        result: "python.org: Python 3.14.0 was released on 7 October 2025.",
        answer: "The latest release is Python 3.14.0, from 7 October 2025.",
        keywords: "search web online look find news latest price prices score scores who",
        values: &["3.14.0", "7 October 2025"],
    },
    KnownExample {
        tool: "get_time",
        question: "What time is it?",
        args: &[],
        result: "Monday, 2 March 2020, 09:30:00 (local time)",
        answer: "It is 09:30 on Monday, 2 March 2020.",
        keywords: "time clock date day hour minute o'clock today",
        values: &["09:30", "2 March 2020", "March 2, 2020"],
    },
    KnownExample {
        tool: "list_dir",
        question: "What files do I have?",
        args: &[],
        result: "the workspace root:\nexample.txt  (27 bytes)\nphotos/",
        answer: "You have example.txt and a folder, photos/.",
        keywords: "files file folder folders list directory workspace",
        values: &["example.txt", "photos"],
    },
    KnownExample {
        tool: "file_read",
        question: "What does example.txt say?",
        args: &[("path", "example.txt")],
        result: "Hello from the example file.",
        answer: "example.txt says: Hello from the example file.",
        keywords: "read contents show open says say file",
        values: &["example.txt", "Hello from the example file"],
    },
    KnownExample {
        tool: "file_write",
        question: "Save the text see you soon to example.txt",
        args: &[("path", "example.txt"), ("content", "see you soon")],
        result: "wrote 12 bytes to `example.txt`",
        answer: "Saved: example.txt now holds \"see you soon\".",
        keywords: "write save create make new put store text",
        values: &["example.txt", "see you soon"],
    },
    KnownExample {
        tool: "delete",
        question: "Delete example.txt",
        args: &[("path", "example.txt")],
        result: "deleted `example.txt`",
        answer: "example.txt is deleted.",
        keywords: "delete remove erase rm trash",
        values: &["example.txt"],
    },
    KnownExample {
        tool: "calculate",
        question: "What is 12 times 34?",
        args: &[("expression", "12 * 34")],
        result: "12 * 34 = 408",
        answer: "12 × 34 = 408.",
        keywords: "calculate times plus minus divided multiplied sum product percent sqrt math \
                   arithmetic",
        values: &["408"],
    },
];

/// Every value of the known worked examples' worlds (`Lima`, `example.txt`, `09:30`, ...):
/// what no answer about a person's world may hold unless they said it or a tool returned it.
pub fn example_values() -> Vec<&'static str> {
    KNOWN_EXAMPLES
        .iter()
        .flat_map(|example| example.values.iter().copied())
        .collect()
}

/// The values of the examples `tool_prompt_for(index, Some(question))` shows, and their
/// calls' argument values by tool and argument: what a model may copy from them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ShownExamples {
    pub(crate) values: Vec<String>,
    /// (tool, argument, value)
    pub(crate) args: Vec<(String, String, String)>,
}

pub(crate) fn shown_examples(index: &ToolIndex, question: &str) -> ShownExamples {
    let offered: Vec<&IndexedTool> = index.offered().collect();
    let mut shown = ShownExamples::default();
    for example in examples(&offered, question) {
        if let Some(known) = KNOWN_EXAMPLES
            .iter()
            .find(|known| known.question == example.question)
        {
            shown
                .values
                .extend(known.values.iter().map(|value| (*value).to_owned()));
        } else {
            // A generic example's placeholders: "(what `x` returned)".
            shown.values.push(example.result.clone());
            shown.values.push(example.answer.clone());
        }
        for (key, value) in &example.call.args {
            if let Some(value) = value.as_str().filter(|value| *value != "...") {
                shown
                    .args
                    .push((example.call.name.clone(), key.clone(), value.to_owned()));
            }
        }
    }
    shown
}

/// Two examples: known ones for offered tools first, then generic ones for the first
/// offered tools, so the examples only ever name tools that exist. Known examples that share
/// words with the question lead (a small model copies the first example's tool): "What time
/// is it?" is shown `get_time` first; ties keep the order above.
fn examples(offered: &[&IndexedTool], question: &str) -> Vec<Example> {
    let is_offered = |name: &str| offered.iter().any(|tool| tool.spec.name == name);
    let asked = content_words(question);
    // The examples that change the workspace are shown only for a request to change it: a
    // small model copies an example's call, and a write it copied asks the person for nothing
    // they wanted.
    let changing = crate::prefetch::asks_for_a_change(question);
    let mut known: Vec<&KnownExample> = KNOWN_EXAMPLES
        .iter()
        .filter(|known| is_offered(known.tool))
        .filter(|known| changing || !CHANGING_TOOLS.contains(&known.tool))
        .collect();
    // Stable: equal scores keep their order.
    known.sort_by_key(|known| {
        let words = content_words(&format!(
            "{} {} {}",
            known.tool.replace('_', " "),
            known.question,
            known.keywords
        ));
        std::cmp::Reverse(words.iter().filter(|word| asked.contains(word)).count())
    });
    let mut examples: Vec<Example> = known
        .into_iter()
        .take(2)
        .map(|known| {
            let args: Map<String, Value> = known
                .args
                .iter()
                .map(|(key, value)| ((*key).to_owned(), Value::String((*value).to_owned())))
                .collect();
            Example {
                question: known.question.to_owned(),
                call: ToolCall::new(known.tool, args),
                result: known.result.to_owned(),
                answer: known.answer.to_owned(),
            }
        })
        .collect();
    // A question that names one of the offered tools gets its reply started as a call (the
    // call prefill): a generic example would only show placeholder values to copy.
    if !crate::tool_match::named_tools(question, offered.iter().copied()).is_empty() {
        return examples;
    }
    // Tools without a known example get a generic one, the tools the question is about first:
    // a small model copies the example's call, and an example of another tool leads it to
    // that tool, or to no call at all. When some tool matches the question, the ones that do
    // not get no example.
    let matches: Vec<usize> = offered
        .iter()
        .map(|tool| question_match(tool, &asked))
        .collect();
    let best = matches.iter().copied().max().unwrap_or(0);
    let mut ranked: Vec<(usize, &&IndexedTool)> = matches.into_iter().zip(offered).collect();
    ranked.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    for (score, tool) in ranked {
        if examples.len() >= 2 || (best > 0 && score == 0) {
            break;
        }
        if examples
            .iter()
            .any(|example| example.call.name == tool.spec.name)
        {
            continue;
        }
        examples.push(generic_example(tool));
    }
    examples
}

/// The prompt as the model reads it: numbers with thousands separators written as JSON
/// writes them (`$200,000` → `$200000`). A call grammar ends a number at its first comma, so
/// a small model copying `200,000` into a call wrote `200`. Only commas between groups of
/// exactly three digits after one to three leading digits are taken out; lists such as
/// `5,10 and 15` and decimals such as `46.603354,1.88` are left as they are.
pub(crate) fn plain_numbers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while index < chars.len() {
        let starts = chars[index].is_ascii_digit()
            && !index
                .checked_sub(1)
                .is_some_and(|at| chars[at].is_ascii_digit() || matches!(chars[at], '.' | ','));
        if !starts {
            out.push(chars[index]);
            index += 1;
            continue;
        }
        let lead_end = (index..chars.len())
            .find(|&at| !chars[at].is_ascii_digit())
            .unwrap_or(chars.len());
        let mut end = lead_end;
        let mut groups = 0;
        while chars.get(end) == Some(&',')
            && (end + 1..end + 4).all(|at| chars.get(at).is_some_and(char::is_ascii_digit))
            && !chars.get(end + 4).is_some_and(char::is_ascii_digit)
        {
            end += 4;
            groups += 1;
        }
        let ends_clean = !matches!(chars.get(end), Some(','))
            || !chars.get(end + 1).is_some_and(char::is_ascii_digit);
        if groups > 0 && lead_end - index <= 3 && ends_clean {
            out.extend(chars[index..end].iter().filter(|c| **c != ','));
        } else {
            out.extend(&chars[index..lead_end]);
            end = lead_end;
        }
        index = end;
    }
    out
}

/// How closely a tool matches the question's content words (`asked`): each word of its name
/// counts two, each word of its description one.
pub(crate) fn question_match(tool: &IndexedTool, asked: &[String]) -> usize {
    let name = content_words(&tool.spec.name.replace(['_', '.', '-'], " "));
    let description = content_words(&tool.spec.description);
    let hits = |words: &[String]| words.iter().filter(|word| asked.contains(word)).count();
    2 * hits(&name) + hits(&description)
}

/// Words that say what a question is about: lower-cased, three letters or more, without
/// the words every question has.
pub(crate) fn content_words(text: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "the", "what", "whats", "does", "and", "for", "you", "your", "with", "this", "that",
        "tell", "now", "right", "today", "please", "can", "how", "are", "was", "get", "say",
    ];
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|word| word.chars().count() >= 3 && !COMMON.contains(&word.as_str()))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

fn generic_example(tool: &IndexedTool) -> Example {
    let args: Map<String, Value> = tool
        .spec
        .required()
        .into_iter()
        .map(|name| (name.to_owned(), Value::String("...".to_owned())))
        .collect();
    let name = &tool.spec.name;
    Example {
        question: format!("(a question that needs `{name}`)"),
        call: ToolCall::new(name.clone(), args),
        result: format!("(what `{name}` returned)"),
        answer: format!("(the answer, from what `{name}` returned)"),
    }
}

/// The first `chars_max` characters of `text`.
fn cut(text: &str, chars_max: usize) -> &str {
    match text.char_indices().nth(chars_max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lose_their_thousands_separators_and_nothing_else() {
        for (said, shown) in [
            (
                "a property costing $200,000 at 3%",
                "a property costing $200000 at 3%",
            ),
            ("1,234,567.5 people", "1234567.5 people"),
            (
                "the factorial of 5,10 and 15",
                "the factorial of 5,10 and 15",
            ),
            ("for 1,5 and 10 years", "for 1,5 and 10 years"),
            (
                "coordinates 46.603354,1.8883340",
                "coordinates 46.603354,1.8883340",
            ),
            ("ids 1,234,56 and 12,3456", "ids 1,234,56 and 12,3456"),
            ("1234,567", "1234,567"),
            ("no numbers, at all", "no numbers, at all"),
        ] {
            assert_eq!(plain_numbers(said), shown, "{said}");
        }
    }
    use imurun_core::ToolSpec;
    use serde_json::json;

    fn builtin_like() -> ToolIndex {
        ToolIndex::offering([
            ToolSpec::new(
                "web_search",
                "Search the web.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"}, "max_results": {"type": "integer"}
                }, "required": ["query"]}),
            ),
            ToolSpec::new(
                "get_weather",
                "Current weather for a place.",
                json!({"type": "object", "properties": {"location": {"type": "string"}},
                       "required": ["location"]}),
            ),
        ])
    }

    #[test]
    fn the_whole_system_message_with_tools_skills_and_context() {
        let index = ToolIndex::offering(imurun_core::builtin::specs());
        let skills = [Skill::new("haiku", "Answer in a haiku.")];
        let message = system_message(&SystemPrompt {
            persona: crate::DEFAULT_PERSONA,
            today: jiff::civil::date(2026, 11, 30),
            tools: Some(&index),
            also_connected: None,
            skills: &skills,
            context: Some("get_time: 09:14 Europe/Oslo"),
            examples: true,
            question: "",
        });
        insta::assert_snapshot!(message);
    }

    #[test]
    fn without_tools_there_is_no_tool_prompt() {
        let message = system_message(&SystemPrompt {
            persona: "You are a test.",
            today: jiff::civil::date(2026, 1, 1),
            tools: None,
            also_connected: None,
            skills: &[],
            context: None,
            examples: true,
            question: "",
        });
        insta::assert_snapshot!(message);
        assert!(!message.contains("```tool"));
    }

    #[test]
    fn the_first_rule_is_anything_about_the_present() {
        let prompt = tool_prompt(&builtin_like()).unwrap();
        let rules = prompt.split("When to use a tool:\n").nth(1).unwrap();
        assert!(rules.starts_with("1. Anything about the present"));
    }

    #[test]
    fn examples_only_name_offered_tools() {
        let index = ToolIndex::offering([ToolSpec::new(
            "lookup",
            "",
            json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
        )]);
        let prompt = tool_prompt(&index).unwrap();
        assert!(prompt.contains("{\"name\": \"lookup\", \"args\": {\"key\": \"...\"}}"));
        assert!(!prompt.contains("get_weather"));
        assert_eq!(tool_prompt(&ToolIndex::new()), None);
    }

    #[test]
    fn the_shown_examples_values_are_known_for_the_grounding_check() {
        let index = ToolIndex::offering(imurun_core::builtin::specs());
        let shown = shown_examples(&index, "Read groceries.txt");
        assert!(
            shown.values.contains(&"example.txt".to_owned()),
            "{shown:?}"
        );
        assert!(
            shown
                .args
                .contains(&("file_read".into(), "path".into(), "example.txt".into()))
        );
        let generic = ToolIndex::offering([ToolSpec::new(
            "lookup",
            "",
            json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
        )]);
        let shown = shown_examples(&generic, "anything");
        assert_eq!(
            shown.values,
            [
                "(what `lookup` returned)",
                "(the answer, from what `lookup` returned)"
            ]
        );
        assert!(shown.args.is_empty(), "placeholders are not values");
    }

    #[test]
    fn at_most_three_skills_each_cut_to_4000_chars() {
        let long = "x".repeat(5000);
        let skills: Vec<Skill> = (0..5).map(|n| Skill::new(format!("s{n}"), &long)).collect();
        let message = system_message(&SystemPrompt {
            persona: "p",
            today: jiff::civil::date(2026, 1, 1),
            tools: None,
            also_connected: None,
            skills: &skills,
            context: None,
            examples: true,
            question: "",
        });
        assert_eq!(message.matches("## Skill: ").count(), 3);
        assert!(message.contains(&format!("{}\n\n## Skill: s1", "x".repeat(4000))));
    }

    #[test]
    fn examples_that_change_the_workspace_are_shown_only_for_a_change() {
        let index = ToolIndex::offering(imurun_core::builtin::specs());
        for question in ["Read groceries.txt", "What does notes.txt say?", "", "Hi"] {
            let prompt = tool_prompt_for(&index, Some(question)).unwrap();
            assert!(!prompt.contains("\"name\": \"file_write\""), "{question:?}");
            assert!(!prompt.contains("\"name\": \"delete\""), "{question:?}");
        }
        let prompt = tool_prompt_for(&index, Some("Write hello to hello.txt")).unwrap();
        let first = &prompt[prompt.find("Example 1:").unwrap()..];
        assert!(first.contains("\"name\": \"file_write\""), "{prompt}");
    }

    #[test]
    fn the_examples_closest_to_the_question_lead() {
        let index = ToolIndex::offering(imurun_core::builtin::specs());
        let first_example_tool = |question: &str| {
            let prompt = tool_prompt_for(&index, Some(question)).unwrap();
            let example = &prompt[prompt.find("Example 1:").unwrap()..];
            let call = &example[example.find("\"name\": \"").unwrap() + 9..];
            call[..call.find('"').unwrap()].to_owned()
        };
        assert_eq!(first_example_tool(""), "get_weather", "the default order");
        assert_eq!(first_example_tool("What time is it now?"), "get_time");
        assert_eq!(first_example_tool("Read notes.txt for me"), "file_read");
        assert_eq!(
            first_example_tool("Search the web for the latest release"),
            "web_search"
        );
        assert_eq!(first_example_tool("Is it raining in Tokyo?"), "get_weather");
        assert_eq!(
            first_example_tool("List the files in my workspace."),
            "list_dir"
        );
        assert_eq!(first_example_tool("What is 17 times 23?"), "calculate");
        assert!(
            !tool_prompt_for(&index, None)
                .unwrap()
                .contains("Example 1:"),
            "no examples"
        );
    }
    #[test]
    fn a_tool_without_a_known_example_gets_one_when_the_question_is_about_it_without_naming_it() {
        let spec = |name: &str, description: &str| {
            ToolSpec::new(
                name,
                description,
                serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}},
                                   "required": ["x"]}),
            )
        };
        let index = ToolIndex::offering(vec![
            spec("get_stock_price", "The latest price of a company's stock."),
            spec("find_restaurant", "Restaurants near a place, by cuisine."),
            spec(
                "calculate_triangle_area",
                "The area of a triangle from its base and height.",
            ),
        ]);
        let example_tools = |question: &str| {
            let prompt = tool_prompt_for(&index, Some(question)).unwrap();
            prompt
                .split("\nExample ")
                .skip(1)
                .map(|example| {
                    let call = &example[example.find("\"name\": \"").unwrap() + 9..];
                    call[..call.find('"').unwrap()].to_owned()
                })
                .collect::<Vec<_>>()
        };
        // The one the question is about, and no other.
        assert_eq!(
            example_tools("How big is a triangle with base 10 and height 5?"),
            ["calculate_triangle_area"]
        );
        assert_eq!(
            example_tools("Any good Italian cuisine near Boston?"),
            ["find_restaurant"]
        );
        // A question that names a tool gets its reply started as a call instead: no example
        // with placeholder values to copy.
        assert!(example_tools("What is the stock price of ACME?").is_empty());
        assert!(example_tools("What is the area of a triangle with base 10?").is_empty());
        // About none of them: the first two, in the order offered.
        assert_eq!(
            example_tools("Who wrote Hamlet?"),
            ["get_stock_price", "find_restaurant"]
        );
    }
}
