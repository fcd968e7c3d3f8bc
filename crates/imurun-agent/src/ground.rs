//! Grounded answers: an answer given after tools ran must carry what they returned.
//!
//! A tool that knows what its result means says so in [`Facts`] (`get_time`: the time and the
//! date; `list_dir`: the names; `calculate`: the figure; `file_read`: a quote). Before an
//! answer is delivered the loop checks it here:
//!
//! - a copied result header (`[tool result: …]`, the fences around it, a worked example's
//!   `User:` / `You:` turns) is taken out;
//! - a result block for a tool that did not run in this turn is an invented result;
//! - a value from a worked example the person did not say, and no tool returned, leaked;
//! - each result's required facts must be there (and its weekday, when the person asked
//!   for the day), and no time, weekday, date, file name or
//!   number the result does not hold;
//! - the assistant answers as itself: never as a human or another product, and a greeting
//!   or a question about who it is names it.
//!
//! A failing answer is retried once with a short correction that quotes the result; when
//! the retry fails too, the answer is made from the results themselves ([`Facts::sentence`]).
//! Both are published as `answer.grounding`. No check is the model's judgement: all of them
//! are fixed rules over the text.

use imurun_core::{ClaimKind, Fact, Facts};

use crate::context::TOOL_RESULT_HEADER;
use crate::style::FAILED_SUFFIX;

/// A tool result's text is quoted in a correction up to this many characters.
const QUOTE_CHARS_MAX: usize = 800;

/// One result the answer is built on.
#[derive(Debug, Clone)]
pub(crate) struct Ground {
    pub(crate) tool: String,
    pub(crate) text: String,
    pub(crate) ok: bool,
    pub(crate) facts: Option<Facts>,
}

/// Who the assistant is, from its persona.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// The name the persona gives (`You are imurun, …` → `imurun`).
    pub(crate) name: Option<String>,
    /// How the assistant introduces itself: the persona's first sentence in the first person.
    pub(crate) introduction: String,
}

impl Identity {
    pub(crate) fn from_persona(persona: &str) -> Self {
        let first = persona
            .trim()
            .split_inclusive(['.', '!', '\n'])
            .next()
            .unwrap_or_default()
            .trim();
        let rest = first
            .strip_prefix("You are ")
            .or_else(|| first.strip_prefix("you are "));
        let name = rest.and_then(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                .collect();
            let name = name.trim();
            let lower = name.to_lowercase();
            let article = ["a ", "an ", "the "]
                .iter()
                .any(|article| lower.starts_with(article));
            (!name.is_empty() && !article && name.split_whitespace().count() <= 3)
                .then(|| name.to_owned())
        });
        let introduction = match rest {
            Some(rest) => format!(
                "I'm {}",
                rest.replace("this person's", "your")
                    .replace("the person's", "your")
            ),
            None => match &name {
                Some(name) => format!("I'm {name}."),
                None => "I'm the assistant running on your computer.".to_owned(),
            },
        };
        Self { name, introduction }
    }
}

/// What an answer is checked against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grounds<'a> {
    /// The results the answer follows: the latest tool step's, or the pre-fetch's.
    pub(crate) results: &'a [Ground],
    /// Every tool that returned a result for this prompt.
    pub(crate) ran: &'a [String],
    /// The prompt being answered (and its recent history), where the person's own values are.
    pub(crate) said: &'a str,
    /// Values of the worked examples the system message showed.
    pub(crate) example_values: &'a [String],
    /// Who the assistant is; `None` for a sub-agent, whose answer goes to its parent.
    pub(crate) identity: Option<&'a Identity>,
}

/// What is wrong with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The tool whose result the answer had to carry; `None` for who the assistant is.
    pub(crate) tool: Option<String>,
    /// For a person, in the `answer.grounding` event.
    pub(crate) reason: String,
    /// What the model is told.
    pub(crate) correction: String,
}

/// The verdict on an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The answer holds, as cleaned (copied headers taken out).
    Holds(String),
    /// It does not; the first problem found.
    Fails(Problem),
}

/// Checks `answer` against `grounds`.
pub(crate) fn check(answer: &str, grounds: &Grounds<'_>) -> Verdict {
    let (cleaned, headers) = strip_copied_results(answer);
    for tool in &headers {
        if !grounds.ran.iter().any(|ran| ran == tool) {
            return Verdict::Fails(Problem {
                tool: Some(tool.clone()),
                reason: format!("the answer held a result of {tool}, which did not run"),
                correction: format!(
                    "[note] No {tool} result exists in this conversation: {tool} did not run, \
                     so do not write one. Call the tool if you need what it returns, or answer \
                     without it."
                ),
            });
        }
    }
    if cleaned.trim().is_empty() {
        let tool = grounds.results.first().map(|ground| ground.tool.clone());
        return Verdict::Fails(missing(
            tool.as_deref(),
            "the answer only copied the result",
            grounds,
        ));
    }
    let text = normalise(&cleaned);
    let said = normalise(grounds.said);
    if let Some(value) = grounds.example_values.iter().find(|value| {
        let value = normalise(value);
        !value.is_empty()
            && has_form(&text, &value)
            && !has_form(&said, &value)
            && !grounds
                .results
                .iter()
                .any(|ground| has_form(&normalise(&ground.text), &value))
    }) {
        let tool = grounds.results.first().map(|ground| ground.tool.as_str());
        return Verdict::Fails(missing(
            tool,
            &format!(
                "the answer held \"{value}\" from a worked example, not from this conversation"
            ),
            grounds,
        ));
    }
    if let Some(identity) = grounds.identity
        && let Some(problem) = identity_problem(&text, &said, identity)
    {
        return Verdict::Fails(problem);
    }
    // A weekday the person asked for is a fact the answer must hold, when a result gives one.
    let weekday_asked = crate::realtime::asks_the_weekday(grounds.said);
    for ground in grounds.results {
        let Some(facts) = ground.facts.as_ref().filter(|_| ground.ok) else {
            continue;
        };
        let weekday = facts
            .claims
            .iter()
            .find(|claims| weekday_asked && claims.kind == ClaimKind::Weekday)
            .map(|claims| Fact {
                what: "the weekday".to_owned(),
                forms: claims.allowed.clone(),
                at_least: 1,
            });
        if let Some(fact) = facts
            .required
            .iter()
            .chain(&weekday)
            .find(|fact| found_forms(&text, &fact.forms) < fact.at_least.min(fact.forms.len()))
        {
            return Verdict::Fails(missing(
                Some(&ground.tool),
                &format!(
                    "the answer left out {} that {} returned",
                    fact.what, ground.tool
                ),
                grounds,
            ));
        }
        for claims in &facts.claims {
            if let Some(value) = unheld_claim(&cleaned, claims.kind, &claims.allowed, &said) {
                return Verdict::Fails(missing(
                    Some(&ground.tool),
                    &format!(
                        "the answer stated {value}, which {} did not return",
                        ground.tool
                    ),
                    grounds,
                ));
            }
        }
    }
    Verdict::Holds(cleaned)
}

/// A problem with the answer to a result: the correction quotes the result.
fn missing(tool: Option<&str>, reason: &str, grounds: &Grounds<'_>) -> Problem {
    let quoted: Vec<String> = grounds
        .results
        .iter()
        .filter(|ground| ground.ok)
        .map(|ground| {
            format!(
                "{TOOL_RESULT_HEADER}{}] said:\n{}",
                ground.tool,
                cut(ground.text.trim(), QUOTE_CHARS_MAX)
            )
        })
        .collect();
    let correction = if quoted.is_empty() {
        format!("[note] Your answer is not right: {reason}. Answer again, in plain words.")
    } else {
        format!(
            "[note] Your answer is not right: {reason}.\n{}\nAnswer the question again from \
             this result, in one or two plain sentences that state it.",
            quoted.join("\n")
        )
    };
    Problem {
        tool: tool.map(str::to_owned),
        reason: reason.to_owned(),
        correction,
    }
}

/// The answer made from the results, when the model's answers failed twice.
pub(crate) fn fallback(problem: &Problem, grounds: &Grounds<'_>) -> String {
    if problem.tool.is_none()
        && let Some(identity) = grounds.identity
    {
        return introduction(identity, grounds.said);
    }
    let parts: Vec<String> = grounds
        .results
        .iter()
        .filter(|ground| ground.ok)
        .map(|ground| match &ground.facts {
            Some(facts) => facts.sentence.clone(),
            None => format!(
                "{} returned:\n\n{}",
                ground.tool,
                cut(ground.text.trim(), QUOTE_CHARS_MAX)
                    .lines()
                    .map(|line| format!("> {line}").trim_end().to_owned())
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        })
        .collect();
    if !parts.is_empty() {
        return parts.join("\n\n");
    }
    // Only failures: say what went wrong, in the tools' own words.
    let failed: Vec<(&str, &str)> = grounds
        .results
        .iter()
        .filter(|ground| !ground.ok)
        .map(|ground| {
            let text = ground.text.trim();
            let text = text.strip_suffix(FAILED_SUFFIX).unwrap_or(text).trim_end();
            let text = text.strip_prefix("FAILED:").unwrap_or(text).trim_start();
            (ground.tool.as_str(), text)
        })
        .collect();
    if failed.is_empty() {
        return "I could not find that out: no tool gave me the answer, and I will not guess."
            .to_owned();
    }
    let failures: Vec<String> = failed
        .iter()
        .map(|(tool, text)| format!("`{tool}` did not work: {}", cut(text, QUOTE_CHARS_MAX)))
        .collect();
    format!(
        "I could not find that out, and I will not guess.\n\n{}",
        failures.join("\n\n")
    )
}

/// The assistant's introduction; a greeting is greeted back.
fn introduction(identity: &Identity, said: &str) -> String {
    let said = normalise(said);
    let greeted = GREETINGS.iter().any(|greeting| {
        said.starts_with(greeting)
            && !said[greeting.len()..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric)
    });
    if greeted {
        format!("Hello! {}", identity.introduction)
    } else {
        identity.introduction.clone()
    }
}

/// Openings that greet.
const GREETINGS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "hiya",
    "howdy",
    "greetings",
    "good morning",
    "good afternoon",
    "good evening",
    "yo",
];

/// Questions about who the assistant is, beside the two grammars `asks_who` reads ("who"
/// asking after the other side, "are you" asking what kind of thing it is).
const IDENTITY_QUESTIONS: &[&str] = &[
    "who are you",
    "what are you",
    "your name",
    "introduce yourself",
    "who made you",
    "who built you",
    "who created you",
    "call you",
    "address you",
    "you called",
    "you go by",
    "refer to you",
    "tell me about yourself",
    "describe yourself",
];

/// What "are you (a|an) ..." asks the assistant to be when it asks what kind of thing it is.
const KINDS_OF_THING: &[&str] = &[
    "human",
    "person",
    "people",
    "bot",
    "robot",
    "ai",
    "chatbot",
    "machine",
    "computer",
    "program",
    "real",
    "alive",
    "model",
    "assistant",
    "llm",
    "man",
    "woman",
];

/// Whether a prompt greets the assistant or asks who it is: its answer must name it. Besides
/// the greetings and `IDENTITY_QUESTIONS`, two grammars: "who" asking after the other side of
/// the conversation ("who am I chatting with", "who is this", "who's there", "who r u"), and
/// "are you" asking what kind of thing it is ("are you a real person?", "r u a bot").
pub(crate) fn asks_who(prompt: &str) -> bool {
    let text = normalise(prompt);
    let sentence_words = |sentence: &str| -> Vec<String> {
        sentence
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let words = sentence_words(&text);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    // Within a sentence: "who is this" ends its sentence ("who is this person?" is not it).
    let asks_after_the_other_side = text.split(['.', '?', '!', ';']).any(|sentence| {
        let owned = sentence_words(sentence);
        let words: Vec<&str> = owned.iter().map(String::as_str).collect();
        words.iter().enumerate().any(|(at, word)| {
            let rest = &words[at + 1..];
            match *word {
                "who" | "whom" => matches!(
                    rest,
                    ["am" | "m", "i"]
                        | [
                            "am" | "m",
                            "i",
                            "talking"
                                | "speaking"
                                | "chatting"
                                | "texting"
                                | "writing"
                                | "messaging"
                                | "conversing"
                                | "typing",
                            ..
                        ]
                        | ["is" | "s", "this" | "that" | "there" | "speaking" | "here"]
                        | ["are" | "r" | "re", "you" | "u" | "ya" | "yall", ..]
                ),
                "who's" | "whos" => {
                    matches!(rest, ["this" | "that" | "there" | "speaking" | "here"])
                }
                _ => false,
            }
        })
    });
    let asks_what_kind = words.windows(2).enumerate().any(|(at, pair)| {
        matches!(pair, ["are" | "r", "you" | "u"])
            && words[at + 2..]
                .iter()
                .take(4)
                .any(|word| KINDS_OF_THING.contains(word))
    });
    asks_after_the_other_side
        || asks_what_kind
        || IDENTITY_QUESTIONS
            .iter()
            .any(|question| has_form(&text, question))
        || GREETINGS.iter().any(|greeting| {
            text.starts_with(greeting)
                && !text[greeting.len()..]
                    .chars()
                    .next()
                    .is_some_and(char::is_alphanumeric)
                // "Hi, can you list my files?" is a request, not a greeting.
                && text.split_whitespace().count() <= 6
        })
}

/// First-person claims to be a person.
const HUMAN_CLAIMS: &[&str] = &[
    "i'm a human",
    "i am a human",
    "i'm human",
    "i am human",
    "i'm a person",
    "i am a person",
    "i'm a real person",
    "i am a real person",
    "i'm not an ai",
    "i am not an ai",
    "i'm not a bot",
    "i am not a bot",
    "i'm not a robot",
    "i am not a robot",
    "i'm a man",
    "i'm a woman",
    "i am a man",
    "i am a woman",
];

/// Products and makers an answer must not claim to be or come from.
const OTHER_PRODUCTS: &[&str] = &[
    "chatgpt",
    "openai",
    "gpt-4",
    "gpt-3",
    "gpt4",
    "claude",
    "anthropic",
    "gemini",
    "bard",
    "google assistant",
    "siri",
    "alexa",
    "cortana",
    "copilot",
    "meta ai",
    "llama",
    "smollm",
    "hugging face",
    "huggingface",
    "mistral",
    "qwen",
    "deepseek",
];

/// First-person phrases that introduce what the speaker is or who made it.
const SELF_WORDS: &[&str] = &[
    "i am",
    "i'm",
    "my name",
    "i was",
    "made by",
    "developed by",
    "created by",
    "trained by",
    "built by",
];

fn identity_problem(text: &str, said: &str, identity: &Identity) -> Option<Problem> {
    let name = identity.name.as_deref().unwrap_or("the assistant");
    let problem = |reason: String| Problem {
        tool: None,
        correction: format!(
            "[note] Your answer is not right: {reason}. You are {name}, an assistant, not a \
             person, and no other product. Answer again as {name}, in one or two sentences."
        ),
        reason,
    };
    if let Some(claim) = HUMAN_CLAIMS.iter().find(|claim| has_form(text, claim)) {
        return Some(problem(format!("the answer said \"{claim}\"")));
    }
    for sentence in text.split(['.', '!', '?', '\n']) {
        let about_self = SELF_WORDS.iter().any(|words| has_form(sentence, words));
        if !about_self {
            continue;
        }
        if let Some(product) = OTHER_PRODUCTS
            .iter()
            .find(|product| has_form(sentence, product) && !has_form(said, product))
        {
            return Some(problem(format!(
                "the answer said the assistant is or comes from {product}"
            )));
        }
        if let (Some(name), Some(at)) = (identity.name.as_deref(), sentence.find("my name is ")) {
            let given: String = sentence[at + "my name is ".len()..]
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_owned();
            if !given.is_empty() && given != name.to_lowercase() {
                return Some(problem(format!("the answer gave the name \"{given}\"")));
            }
        }
    }
    if asks_who(said)
        && let Some(name) = identity.name.as_deref()
        && !has_form(text, &normalise(name))
    {
        return Some(problem(format!("the answer did not say it is {name}")));
    }
    None
}

/// The answer without copied result headers, and the tools those headers name. A header
/// (`[tool result: name]`, anywhere) takes the fence lines and the worked example's `User:` /
/// `You:` turn markers with it.
pub(crate) fn strip_copied_results(answer: &str) -> (String, Vec<String>) {
    let mut tools = Vec::new();
    let mut text = String::with_capacity(answer.len());
    let mut rest = answer;
    while let Some(at) = rest.find(TOOL_RESULT_HEADER) {
        text.push_str(&rest[..at]);
        let after = &rest[at + TOOL_RESULT_HEADER.len()..];
        match after.find(']') {
            Some(end) if end <= 64 => {
                let name = after[..end].trim().to_owned();
                if !name.is_empty() && !tools.contains(&name) {
                    tools.push(name);
                }
                rest = &after[end + 1..];
            }
            _ => {
                text.push_str(TOOL_RESULT_HEADER);
                rest = after;
            }
        }
    }
    text.push_str(rest);
    let is_fence = |line: &str| {
        let line = line.trim();
        line.starts_with("```") && line[3..].chars().all(char::is_alphanumeric)
    };
    // A fence with no partner, or any fence around a copied header, is a copy's frame.
    let unbalanced = text.lines().filter(|line| is_fence(line)).count() % 2 == 1;
    let copied = !tools.is_empty();
    let mut kept: Vec<String> = Vec::new();
    for line in text.lines() {
        if (copied || unbalanced) && is_fence(line) {
            continue;
        }
        let line = if copied {
            strip_turn_markers(line.trim())
        } else {
            line.trim_end().to_owned()
        };
        // A worked example's turn marker left alone on its line.
        if matches!(line.trim(), "You:" | "User:") {
            continue;
        }
        kept.push(line);
    }
    (kept.join("\n").trim().to_owned(), tools)
}

/// `You: It is 21:04.` → `It is 21:04.`; a `User:` turn is dropped with what follows it on
/// the line up to a `You:`.
fn strip_turn_markers(line: &str) -> String {
    let mut out = line.to_owned();
    if let Some(at) = out.find("You:") {
        let before = out[..at].trim();
        let after = out[at + 4..].trim().to_owned();
        out = if before.is_empty() || before.starts_with("User:") {
            after
        } else {
            format!("{before} {after}")
        };
    }
    if out.trim_start().starts_with("User:") {
        return String::new();
    }
    out.trim().to_owned()
}

/// Lower case, typographic quotes made plain, `*` and `` ` `` removed, spaces folded.
pub(crate) fn normalise(text: &str) -> String {
    let text = text
        .to_lowercase()
        .replace(['\u{2018}', '\u{2019}'], "'")
        .replace(['\u{201c}', '\u{201d}'], "\"")
        .replace(['*', '`'], "");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether normalised `text` holds normalised `form` as whole words: no letter or digit
/// right before or after it where the form itself starts or ends with one.
pub(crate) fn has_form(text: &str, form: &str) -> bool {
    let form = normalise(form);
    if form.is_empty() {
        return false;
    }
    let starts_word = form.chars().next().is_some_and(char::is_alphanumeric);
    let ends_word = form.chars().next_back().is_some_and(char::is_alphanumeric);
    text.match_indices(&form).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + form.len()..].chars().next();
        let joined_before = starts_word && before.is_some_and(char::is_alphanumeric);
        let joined_after = ends_word && after.is_some_and(char::is_alphanumeric);
        !joined_before && !joined_after
    })
}

/// How many different forms `text` holds.
fn found_forms(text: &str, forms: &[String]) -> usize {
    let mut found: Vec<String> = Vec::new();
    for form in forms {
        let form = normalise(form);
        if !found.contains(&form) && has_form(text, &form) {
            found.push(form);
        }
    }
    found.len()
}

/// The first value of `kind` in `answer` that is neither allowed nor said by the person.
fn unheld_claim(answer: &str, kind: ClaimKind, allowed: &[String], said: &str) -> Option<String> {
    match kind {
        ClaimKind::ClockTime => clock_times(answer)
            .into_iter()
            .find_map(|(shown, candidates)| {
                let held = candidates.iter().any(|time| allowed.contains(time))
                    || has_form(said, &normalise(&shown));
                (!held).then_some(shown)
            }),
        ClaimKind::Weekday => {
            let text = normalise(answer);
            WEEKDAYS.iter().find_map(|day| {
                let held = allowed
                    .iter()
                    .any(|allowed| allowed.eq_ignore_ascii_case(day))
                    || has_form(said, day);
                (has_form(&text, day) && !held).then(|| capitalised(day))
            })
        }
        ClaimKind::Date => dates(answer).into_iter().find_map(|(shown, (month, day))| {
            let held = allowed.iter().any(|date| {
                let mut parts = date.split('-').skip(1);
                let (m, d) = (parts.next(), parts.next());
                m.and_then(|m| m.parse::<u8>().ok()) == Some(month)
                    && d.and_then(|d| d.parse::<u8>().ok()) == Some(day)
            }) || has_form(said, &normalise(&shown));
            (!held).then_some(shown)
        }),
        ClaimKind::FileName => file_names(answer).into_iter().find(|name| {
            let base = name.rsplit('/').next().unwrap_or(name);
            let held = allowed.iter().any(|allowed| {
                allowed.eq_ignore_ascii_case(name) || allowed.eq_ignore_ascii_case(base)
            });
            !held && !has_form(said, &normalise(name))
        }),
        ClaimKind::Number => {
            let allowed: Vec<f64> = allowed.iter().filter_map(|n| parse_number(n)).collect();
            numbers(answer)
                .into_iter()
                .find(|(shown, value, decimals)| {
                    let close = |held: f64| {
                        let tolerance = 0.5 * 10f64.powi(-i32::try_from(*decimals).unwrap_or(0));
                        (held - value).abs() <= tolerance.max(f64::EPSILON * held.abs())
                    };
                    !allowed.iter().any(|held| close(*held)) && !has_form(said, shown)
                })
                .map(|(shown, ..)| shown)
        }
    }
}

/// The days of the week by name, lower case.
pub(crate) const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Clock times in `text` (`14:05`, `2:05 pm`, `21:04:33`), each as written and as the
/// `HH:MM` values it can mean: `2:05` without am or pm is 02:05 or 14:05.
fn clock_times(text: &str) -> Vec<(String, Vec<String>)> {
    // ASCII lower case keeps every byte where it was: positions in `lower` are in `text`.
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let starts = bytes[index].is_ascii_digit()
            && (index == 0
                || !bytes[index - 1].is_ascii_alphanumeric() && bytes[index - 1] != b':');
        if !starts {
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        let hour_digits = &lower[start..index];
        let is_time = hour_digits.len() <= 2
            && bytes.get(index) == Some(&b':')
            && bytes.get(index + 1).is_some_and(u8::is_ascii_digit)
            && bytes.get(index + 2).is_some_and(u8::is_ascii_digit)
            && !bytes.get(index + 3).is_some_and(u8::is_ascii_digit);
        if !is_time {
            continue;
        }
        let (Ok(hour), Ok(minute)) = (
            hour_digits.parse::<u8>(),
            lower[index + 1..index + 3].parse::<u8>(),
        ) else {
            continue;
        };
        let mut end = index + 3;
        if bytes.get(end) == Some(&b':') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end += 3.min(bytes.len() - end);
        }
        let tail = lower[end..].trim_start();
        let meridiem = ["am", "a.m.", "pm", "p.m."].into_iter().find(|mark| {
            tail.starts_with(mark)
                && !tail[mark.len()..]
                    .chars()
                    .next()
                    .is_some_and(char::is_alphanumeric)
        });
        let hours: Vec<u8> = match meridiem {
            Some(mark) if mark.starts_with('a') => vec![hour % 12],
            Some(_) => vec![hour % 12 + 12],
            None if hour < 12 => vec![hour, hour + 12],
            None => vec![hour],
        };
        if hour > 23 || minute > 59 {
            index = end;
            continue;
        }
        if let Some(mark) = meridiem {
            end = lower.len() - tail.len() + mark.len();
        }
        let shown = text.get(start..end).unwrap_or_default().to_owned();
        let candidates = hours
            .into_iter()
            .map(|hour| format!("{hour:02}:{minute:02}"))
            .collect();
        found.push((shown, candidates));
        index = end;
    }
    found
}

/// Calendar dates in `text` as (written, (month, day)): `2026-12-03`, `3 December`,
/// `December 3rd`, `Dec 3`.
fn dates(text: &str) -> Vec<(String, (u8, u8))> {
    let mut found = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| !word.is_empty())
        .collect();
    for word in &words {
        let bare = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let parts: Vec<&str> = bare.splitn(4, '-').collect();
        if parts.len() >= 3
            && parts[0].len() == 4
            && parts
                .iter()
                .take(3)
                .all(|part| part.chars().take(2).all(|c| c.is_ascii_digit()))
            && let (Ok(month), Ok(day)) = (
                parts[1].parse::<u8>(),
                parts[2].get(..2).unwrap_or(parts[2]).parse::<u8>(),
            )
            && (1..=12).contains(&month)
            && (1..=31).contains(&day)
        {
            found.push((bare.get(..10).unwrap_or(bare).to_owned(), (month, day)));
        }
    }
    for pair in words.windows(2) {
        let (a, b) = (
            pair[0].trim_matches(|c: char| !c.is_alphanumeric()),
            pair[1].trim_matches(|c: char| !c.is_alphanumeric()),
        );
        let found_pair = match (month_of(a), month_of(b)) {
            (Some(month), None) => day_of(b).map(|day| (month, day)),
            (None, Some(month)) => day_of(a).map(|day| (month, day)),
            _ => None,
        };
        if let Some((month, day)) = found_pair {
            found.push((format!("{a} {b}"), (month, day)));
        }
    }
    found
}

/// `December`, `Dec`, `dec.` → 12.
fn month_of(word: &str) -> Option<u8> {
    let lower = word.to_lowercase();
    if lower.len() < 3 {
        return None;
    }
    imurun_core::MONTHS
        .iter()
        .position(|month| {
            let month = month.to_lowercase();
            lower == month
                || (lower.len() == 3 && month.starts_with(&lower) && lower != "may")
                || lower == "may" && month == "may"
        })
        .and_then(|index| u8::try_from(index + 1).ok())
}

/// `3`, `3rd`, `21st` → the day of the month.
fn day_of(word: &str) -> Option<u8> {
    let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
    let suffix = &word[digits.len()..];
    if digits.is_empty() || digits.len() > 2 || !["", "st", "nd", "rd", "th"].contains(&suffix) {
        return None;
    }
    digits
        .parse::<u8>()
        .ok()
        .filter(|day| (1..=31).contains(day))
}

/// Words in `text` that look like file names: a name and an extension with a letter
/// (`notes.txt`, `docs/plan.md`, `oslo_weather.json`); not web addresses.
fn file_names(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || ",;()[]{}<>\"'`*|".contains(c))
        .map(|word| word.trim_end_matches(['.', ':', '!', '?']))
        .filter(|word| {
            if word.contains("://") || word.starts_with("www.") || word.contains('@') {
                return false;
            }
            let base = word.rsplit('/').next().unwrap_or(word);
            let Some((stem, extension)) = base.rsplit_once('.') else {
                return false;
            };
            let stem_ok = stem.chars().any(char::is_alphanumeric)
                && stem
                    .chars()
                    .all(|c| c.is_alphanumeric() || "._-".contains(c));
            let extension_ok = (1..=6).contains(&extension.len())
                && extension.chars().all(|c| c.is_ascii_alphanumeric())
                && extension.chars().any(|c| c.is_ascii_alphabetic());
            stem_ok && extension_ok && !matches!(word.to_lowercase().as_str(), "e.g" | "i.e")
        })
        .map(str::to_owned)
        .collect()
}

/// Numbers in `text`: (as written, value, decimals shown). `1,234.5` is 1234.5; a clock
/// time's or a date's digits are not numbers here.
fn numbers(text: &str) -> Vec<(String, f64, usize)> {
    let mut found = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let previous = index.checked_sub(1).map(|at| chars[at]);
        let starts = c.is_ascii_digit()
            && !previous.is_some_and(|p| {
                p.is_alphanumeric()
                    || p == '.'
                    || p == ':'
                    || p == '-' && index >= 2 && chars[index - 2].is_ascii_digit()
            });
        if !starts {
            index += 1;
            continue;
        }
        let negative = previous == Some('-');
        let start = index;
        while index < chars.len()
            && (chars[index].is_ascii_digit()
                || (matches!(chars[index], ',' | '.')
                    && chars.get(index + 1).is_some_and(char::is_ascii_digit)))
        {
            index += 1;
        }
        let next = chars.get(index).copied();
        let written: String = chars[start..index].iter().collect();
        // Part of a time (`14:05`), a date (`2026-12-01`) or a word (`3rd`, `mp3`).
        if matches!(next, Some(':') | Some('-')) || next.is_some_and(char::is_alphabetic) {
            while index < chars.len() && !chars[index].is_whitespace() {
                index += 1;
            }
            continue;
        }
        let shown = if negative {
            format!("-{written}")
        } else {
            written.clone()
        };
        if let Some(value) = parse_number(&shown) {
            let decimals = written
                .rsplit_once('.')
                .map_or(0, |(_, fraction)| fraction.len());
            found.push((shown, value, decimals));
        }
    }
    found
}

/// `1,234.5` → 1234.5.
fn parse_number(text: &str) -> Option<f64> {
    text.trim().replace(',', "").parse::<f64>().ok()
}

/// The first `chars_max` characters of `text`, with `…` when cut.
fn cut(text: &str, chars_max: usize) -> String {
    match text.char_indices().nth(chars_max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
