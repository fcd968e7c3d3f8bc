//! Decisions by the model's likelihood: instead of letting a small model write a whole reply
//! and reading what it wrote, the loop asks the back-end how likely each candidate start is
//! ([`Model::score`]) and starts the reply with the best one.
//!
//! - **Which tool.** Each candidate tool's name, closed by its quote, is scored after
//!   [`CALL_START`] (the taught call format up to the tool's name); the most likely is the
//!   one a call would name.
//! - **Call or answer.** The *margin* is how much the question raises that name's
//!   log-probability: the same score with the person's message replaced by one that says
//!   nothing ([`BLANK_QUESTION`]) is taken from it. A tool the question is about is named
//!   far more readily after it than after nothing; one it brushes past is not. The reply is a
//!   call when the margin reaches [`CALL_MARGIN_MIN`] (or a rule of the loop already started
//!   it as one).
//!
//! - **Which values.** The call's required arguments are filled one by one, in the schema's
//!   order, each after the call written so far: an argument whose schema allows a set
//!   (an enum, a boolean) takes its most likely member; a number takes the likeliest of the
//!   numbers the question states, as stated; a string takes the likeliest span of the
//!   question (word runs of up to [`SPAN_WORDS_MAX`] words, scored per token with the closing
//!   quote, so "with the text hello" gives `hello`) when that span is likely enough
//!   ([`SPAN_MEAN_MIN`]). Anything else — a value the question does not hold word for word,
//!   a list, an object — the model writes under the call grammar, as without likelihood.
//!   Each number the question states goes to one argument while any is left. Optional
//!   arguments follow only when the question says them (`said_optional`): an enum member
//!   it names, or the words of the argument's name.
//!
//! The prompt's cached start is reused: each candidate costs only its own tokens.

use imurun_calls::parse_tool_calls;
use imurun_core::{
    GenerateRequest, Message, Model, ModelError, Role, ScoreRequest, StopFlag, TokenUsage,
    ToolIndex, ToolSpec,
};
use serde_json::Value;

/// The start of a call up to its tool's name, as the worked examples teach it.
pub const CALL_START: &str = "```tool\n{\"name\": \"";

/// The least margin (natural log) at which a reply is started as a call. Chosen on BFCL's
/// even-numbered cases (`docs/agent-loop.md`, "Decisions by likelihood").
pub const CALL_MARGIN_MIN: f64 = 1.3;

/// The person's message a question is measured against: one that says nothing.
const BLANK_QUESTION: &str = "N/A";

/// What the likelihood decided for one reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Likelihood {
    /// How much the question raises the likelihood of naming the best tool in a call.
    pub margin: f64,
    /// The tools scored, most likely first, each with its name's log-probability.
    pub tools: Vec<(String, f64)>,
    /// The reply was started as a call to the first of `tools`.
    pub call: bool,
    /// Figures behind the decision, by name.
    pub features: Vec<(String, f64)>,
}

impl Likelihood {
    /// An answer decided before any scoring: no tool is a candidate.
    pub(crate) fn answer() -> Self {
        Self {
            margin: f64::NEG_INFINITY,
            tools: Vec::new(),
            call: false,
            features: Vec::new(),
        }
    }
}

/// How likely the model names `tool` after [`CALL_START`] when the person's last message
/// says nothing ("N/A"): what the margin measures the question against.
pub(crate) async fn call_margin_blank(
    model: &dyn Model,
    messages: &[Message],
    tool: &str,
    stop: &StopFlag,
) -> Result<f64, ModelError> {
    let mut blank = messages.to_vec();
    if let Some(last) = blank.iter_mut().rev().find(|m| m.role == Role::User) {
        last.content = BLANK_QUESTION.to_owned();
    }
    let ranked = rank_tools(model, &blank, &[tool.to_owned()], stop).await?;
    Ok(ranked.first().map_or(0.0, |(_, logprob)| *logprob))
}

/// `tools` ranked by how likely the model names each after [`CALL_START`], most likely
/// first (ties keep their order).
pub(crate) async fn rank_tools(
    model: &dyn Model,
    messages: &[Message],
    tools: &[String],
    stop: &StopFlag,
) -> Result<Vec<(String, f64)>, ModelError> {
    let continuations = tools.iter().map(|name| quoted_tail(name)).collect();
    let mut request = ScoreRequest::new(messages.to_vec(), CALL_START, continuations);
    request.stop = stop.clone();
    let scored = model.score(&request).await?;
    let mut ranked: Vec<(String, f64)> = tools
        .iter()
        .cloned()
        .zip(scored.iter().map(imurun_core::Scored::total))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(ranked)
}

/// The longest span of the question a string argument is taken from, in words.
pub const SPAN_WORDS_MAX: usize = 8;

/// The most places in the question a span may start at (the first ones).
pub const SPAN_STARTS_MAX: usize = 64;

/// The least mean log-probability per token (closing quote included) at which a span of the
/// question is taken as a string argument; below it the model writes the value.
pub const SPAN_MEAN_MIN: f64 = -2.5;

/// The least mean log-probability per token at which a span of the question is taken as an
/// optional string argument: stricter than [`SPAN_MEAN_MIN`], since leaving it out is safe.
pub const OPTIONAL_SPAN_MEAN_MIN: f64 = -1.0;

/// The longest span of the question an optional string argument is taken from, in words: a
/// unit, a method, a name.
pub const OPTIONAL_SPAN_WORDS_MAX: usize = 3;

/// The most tokens the model writes for one argument it fills itself.
const VALUE_TOKENS_MAX: usize = 96;

/// How a string value can end: its closing quote, alone or joined with what follows.
const QUOTE_ENDS: [&str; 5] = ["\"", "\",", "\"}", "\"}}", "\", "];

/// How another value can end: what follows it in the call.
const VALUE_ENDS: [&str; 4] = [",", "}", "}}", ", "];

/// A call built by likelihood: its raw text (as the model would have written it) and the
/// tokens the values the model wrote took.
#[derive(Debug, Clone)]
pub(crate) struct Filled {
    pub(crate) raw: String,
    pub(crate) usage: TokenUsage,
    /// How the values were chosen, by name (for the decision's figures).
    pub(crate) features: Vec<(String, f64)>,
}

/// What filling a call needs.
pub(crate) struct Filler<'a> {
    pub(crate) model: &'a dyn Model,
    pub(crate) messages: &'a [Message],
    pub(crate) stop: &'a StopFlag,
    pub(crate) index: &'a ToolIndex,
    /// The question the values are taken from.
    pub(crate) question: &'a str,
}

impl Filler<'_> {
    /// The call to `tool` with its required arguments chosen by likelihood (see the module).
    pub(crate) async fn fill(&self, tool: &ToolSpec) -> Result<Filled, ModelError> {
        let mut usage = TokenUsage {
            exact: self.model.counts_exactly(),
            ..TokenUsage::default()
        };
        let properties = tool.parameters.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = tool
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // The required arguments first, then the optional ones the question says; imurun's
        // own tools keep their defaults (a listing's folder, a search's count), as the rule on
        // unsaid optionals leaves theirs to the model.
        let own = imurun_core::builtin::is_builtin(&tool.name);
        let mut arguments: Vec<(&str, &Value, bool)> = Vec::new();
        for wanted in [true, false].into_iter().take(if own { 1 } else { 2 }) {
            for (name, schema) in properties.into_iter().flatten() {
                if required.contains(&name.as_str()) == wanted {
                    arguments.push((name.as_str(), schema, wanted));
                }
            }
        }
        let mut text = format!("{}{{", call_opening(&tool.name));
        let (mut chosen_count, mut written_count, mut optional_count) = (0.0, 0.0, 0.0);
        let mut span_floor = 0.0_f64;
        let mut used: Vec<String> = Vec::new();
        let mut first = true;
        for (name, schema, needed) in arguments {
            let mut head = text.clone();
            if !first {
                head.push_str(", ");
            }
            head.push_str(&serde_json::to_string(name).unwrap_or_default());
            head.push_str(": ");
            if !needed {
                let Some((value, mean)) = self.choose_optional(&head, name, schema, &used).await?
                else {
                    continue;
                };
                optional_count += 1.0;
                span_floor = span_floor.min(mean);
                head.push_str(&value);
                used.push(value);
                text = head;
                first = false;
                continue;
            }
            text = head;
            first = false;
            let chosen = self.choose(&text, schema, &used).await?;
            match chosen {
                Some((value, mean)) => {
                    chosen_count += 1.0;
                    span_floor = span_floor.min(mean);
                    text.push_str(&value);
                    used.push(value);
                }
                None => {
                    written_count += 1.0;
                    let (value, reply, used_tokens) = self.write_value(&text, tool, name).await?;
                    usage = usage.plus(used_tokens);
                    match value {
                        Some(value) => text.push_str(&value),
                        // The model's call did not read: its whole reply stands, as without
                        // likelihood.
                        None => {
                            return Ok(Filled {
                                raw: reply,
                                usage,
                                features: vec![("unread".to_owned(), 1.0)],
                            });
                        }
                    }
                }
            }
        }
        text.push_str("}}\n```");
        #[allow(clippy::cast_precision_loss)]
        let features = vec![
            ("required".to_owned(), required.len() as f64),
            ("chosen".to_owned(), chosen_count),
            ("written".to_owned(), written_count),
            ("optional".to_owned(), optional_count),
            ("value_floor".to_owned(), span_floor),
        ];
        Ok(Filled {
            raw: text,
            usage,
            features,
        })
    }

    /// The value chosen by likelihood for an argument of `schema` after `text`, as JSON, with
    /// its mean log-probability per token; `None` when the model is to write it.
    async fn choose(
        &self,
        text: &str,
        schema: &Value,
        used: &[String],
    ) -> Result<Option<(String, f64)>, ModelError> {
        if let Some(members) = schema.get("enum").and_then(Value::as_array) {
            let literals: Vec<String> = members.iter().map(Value::to_string).collect();
            return self.likeliest(text, literals, &VALUE_ENDS).await;
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("boolean") => {
                self.likeliest(text, vec!["true".into(), "false".into()], &VALUE_ENDS)
                    .await
            }
            Some(kind @ ("integer" | "number")) => {
                let numbers = stated_numbers(self.question, kind == "integer");
                if numbers.is_empty() {
                    return Ok(None);
                }
                // Each number the question states is there for one argument: one an earlier
                // argument took is taken again only when none is left.
                let unused = unused(&numbers, used);
                let numbers = if unused.is_empty() { numbers } else { unused };
                self.likeliest(text, numbers, &VALUE_ENDS).await
            }
            Some("string") => {
                self.likeliest_span(text, used, (SPAN_WORDS_MAX, SPAN_MEAN_MIN))
                    .await
            }
            _ => Ok(None),
        }
    }

    /// The value of the optional argument `name` after `text`, when the question says it
    /// (see [`said_optional`]); `None` leaves it out, and the tool's default applies.
    async fn choose_optional(
        &self,
        text: &str,
        name: &str,
        schema: &Value,
        used: &[String],
    ) -> Result<Option<(String, f64)>, ModelError> {
        match said_optional(self.question, name, schema, used) {
            Some(Said::Among(literals)) => self.likeliest(text, literals, &VALUE_ENDS).await,
            Some(Said::Span) => {
                let reach = (OPTIONAL_SPAN_WORDS_MAX, OPTIONAL_SPAN_MEAN_MIN);
                self.likeliest_span(text, used, reach).await
            }
            None => Ok(None),
        }
    }

    /// The likeliest of `literals` after `text`, each closed by one of `ends`, with its mean
    /// log-probability per token.
    async fn likeliest(
        &self,
        text: &str,
        literals: Vec<String>,
        ends: &[&str],
    ) -> Result<Option<(String, f64)>, ModelError> {
        let mut request = ScoreRequest::new(self.messages.to_vec(), text, literals.clone());
        request.probes = ends.iter().map(|end| (*end).to_owned()).collect();
        request.stop = self.stop.clone();
        let scored = self.model.score(&request).await?;
        let best = literals
            .into_iter()
            .zip(&scored)
            .map(|(literal, scored)| {
                let end = scored.probe_logprobs.last().copied().map_or(0.0, f64::from);
                #[allow(clippy::cast_precision_loss)]
                let tokens = (scored.token_logprobs.len() + 1) as f64;
                (literal, scored.total() + end, tokens)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        Ok(best.map(|(literal, total, tokens)| (literal, total / tokens)))
    }

    /// The likeliest span of the question as a string after `text` (its opening quote
    /// included), when likely enough: each start is scored once, with the closing quote's
    /// chance read after every token, so every length from that start costs nothing more.
    async fn likeliest_span(
        &self,
        text: &str,
        used: &[String],
        (words_max, floor): (usize, f64),
    ) -> Result<Option<(String, f64)>, ModelError> {
        let words = word_spans(self.question);
        let starts: Vec<usize> = (0..words.len()).take(SPAN_STARTS_MAX).collect();
        if starts.is_empty() {
            return Ok(None);
        }
        let mut continuations = Vec::with_capacity(starts.len());
        let mut ends_per_start = Vec::with_capacity(starts.len());
        for &start in &starts {
            let last = (start + words_max).min(words.len());
            let from = words[start].0;
            // A span stops before a quote or a backslash: JSON would escape it.
            let mut ends = Vec::new();
            for &(_, end) in &words[start..last] {
                let span = &self.question[from..end];
                if span.contains(['"', '\\', '\n']) {
                    break;
                }
                ends.push(end - from);
            }
            let reach = ends.last().copied().unwrap_or(0);
            continuations.push(format!("\"{}", &self.question[from..from + reach]));
            ends_per_start.push(ends);
        }
        let mut request = ScoreRequest::new(self.messages.to_vec(), text, continuations.clone());
        request.probes = QUOTE_ENDS.iter().map(|end| (*end).to_owned()).collect();
        request.stop = self.stop.clone();
        let scored = self.model.score(&request).await?;
        let mut best: Option<(String, f64)> = None;
        for ((continuation, ends), scored) in continuations.iter().zip(&ends_per_start).zip(&scored)
        {
            for &end in ends {
                // The opening quote is the continuation's first byte.
                let Some(token) = scored.token_ends.iter().position(|at| *at == end + 1) else {
                    continue;
                };
                let sum: f64 = scored.token_logprobs[..=token]
                    .iter()
                    .map(|lp| f64::from(*lp))
                    .sum::<f64>()
                    + f64::from(
                        scored
                            .probe_logprobs
                            .get(token)
                            .copied()
                            .unwrap_or(f32::NEG_INFINITY),
                    );
                #[allow(clippy::cast_precision_loss)]
                let mean = sum / (token + 2) as f64;
                let span = &continuation[1..=end];
                if !holds_a_used_value(span, used)
                    && best.as_ref().is_none_or(|(_, score)| mean > *score)
                {
                    best = Some((span.to_owned(), mean));
                }
            }
        }
        Ok(best
            .filter(|(_, mean)| *mean >= floor)
            .map(|(span, mean)| (serde_json::to_string(&span).unwrap_or_default(), mean)))
    }

    /// The model writes the rest of the call from `text` (under the back-end's call
    /// grammar); the value it gave `name` is read from it, as JSON. `None` when what it
    /// wrote is not a call to `tool` holding that argument.
    async fn write_value(
        &self,
        text: &str,
        tool: &ToolSpec,
        name: &str,
    ) -> Result<(Option<String>, String, TokenUsage), ModelError> {
        let mut request = GenerateRequest::new(self.messages.to_vec());
        request.prefill = Some(text.to_owned());
        request.max_tokens = Some(VALUE_TOKENS_MAX);
        request.stop = self.stop.child();
        let reply = self.model.generate(&request, &mut |_: &str| {}).await?;
        let usage = TokenUsage::of(self.model, &request, &reply);
        let parsed = parse_tool_calls(&reply, self.index);
        let value = parsed
            .calls
            .first()
            .filter(|call| call.name == tool.name)
            .and_then(|call| call.args.get(name))
            .map(Value::to_string);
        Ok((value, reply, usage))
    }
}

/// How an optional argument the question says is chosen.
#[derive(Debug, Clone, PartialEq)]
enum Said {
    /// The likeliest of these JSON literals.
    Among(Vec<String>),
    /// The likeliest span of the question, when likely enough.
    Span,
}

/// Whether the question says optional argument `name` of `schema`, and how its value is
/// chosen: an enum by the members the question names; a boolean, a number or a string when
/// the question holds the words of its name ("including human impact" for
/// `include_human_impact`, "using the Darwin model" for `model`), a number then among those
/// the question states that no earlier argument took, a string by a span of the question
/// likely enough. Anything else is left out.
fn said_optional(question: &str, name: &str, schema: &Value, used: &[String]) -> Option<Said> {
    let text = crate::ground::normalise(question);
    if let Some(members) = schema.get("enum").and_then(Value::as_array) {
        let named: Vec<String> = members
            .iter()
            .filter(|member| {
                member
                    .as_str()
                    .is_some_and(|member| crate::ground::has_form(&text, &member.replace('_', " ")))
            })
            .map(Value::to_string)
            .collect();
        return (!named.is_empty()).then_some(Said::Among(named));
    }
    match schema.get("type").and_then(Value::as_str) {
        // Naming a switch asks for it, unless the words before deny it ("without the
        // description").
        Some("boolean") => name_said(question, name).then(|| {
            let on = !name_denied(question, name);
            Said::Among(vec![on.to_string()])
        }),
        // A number or a string the question holds may be any argument's: the question
        // names this one too.
        Some(kind @ ("integer" | "number")) if name_said(question, name) => {
            let left = unused(&stated_numbers(question, kind == "integer"), used);
            (!left.is_empty()).then_some(Said::Among(left))
        }
        Some("string") if name_said(question, name) => Some(Said::Span),
        _ => None,
    }
}

/// Whether `text` holds every word of argument `name` that says what it is
/// (`include_human_impact`: "human", "impact"), each as written or with another ending.
fn name_said(text: &str, name: &str) -> bool {
    use crate::tool_match::{same_word, split_camel_case, words};
    const VERBS: [&str; 10] = [
        "include", "is", "has", "use", "get", "show", "allow", "enable", "with", "specific",
    ];
    let named: Vec<String> = words(&split_camel_case(name))
        .into_iter()
        .filter(|word| !VERBS.contains(&word.as_str()))
        .collect();
    let said = words(text);
    !named.is_empty()
        && named.iter().all(|word| {
            // "detailed" is said by "details".
            let stem = ["ing", "ed"]
                .iter()
                .find_map(|ending| word.strip_suffix(ending).filter(|stem| stem.len() >= 4))
                .unwrap_or(word);
            said.iter()
                .any(|said| same_word(word, said) || same_word(stem, said))
        })
}

/// Whether a word of argument `name` said in `question` follows, within three words, a word
/// that denies it ("without", "no", "not", "exclude", …).
fn name_denied(question: &str, name: &str) -> bool {
    use crate::tool_match::{same_word, split_camel_case, words};
    const DENIALS: [&str; 9] = [
        "no",
        "not",
        "without",
        "exclude",
        "excluding",
        "don",
        "dont",
        "never",
        "skip",
    ];
    let named = words(&split_camel_case(name));
    let said = words(question);
    said.iter().enumerate().any(|(at, word)| {
        named.iter().any(|named| same_word(named, word))
            && said[at.saturating_sub(3)..at]
                .iter()
                .any(|before| DENIALS.contains(&before.as_str()))
    })
}

/// Whether `span` holds, as whole words, a value an earlier argument took (`used`, JSON
/// values: a string's text or a number as written): "San Francisco in 2020" is not the state
/// once the city is "San Francisco".
fn holds_a_used_value(span: &str, used: &[String]) -> bool {
    let span = crate::ground::normalise(span);
    used.iter().any(|value| {
        let text = serde_json::from_str::<String>(value).unwrap_or_else(|_| value.clone());
        crate::ground::has_form(&span, &text)
    })
}

/// The `numbers` (JSON literals) no earlier argument took (`used`, JSON values).
fn unused(numbers: &[String], used: &[String]) -> Vec<String> {
    numbers
        .iter()
        .filter(|number| !used.contains(number))
        .cloned()
        .collect()
}

/// Where each word of `text` starts and ends (bytes): runs of non-space, without the
/// punctuation around them.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (at, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        if c.is_whitespace() {
            if let Some(from) = start.take() {
                let word = &text[from..at];
                let lead = word.len() - word.trim_start_matches(is_edge).len();
                let trimmed = word.trim_matches(is_edge);
                if !trimmed.is_empty() {
                    spans.push((from + lead, from + lead + trimmed.len()));
                }
            }
        } else if start.is_none() {
            start = Some(at);
        }
    }
    spans
}

/// Punctuation around a word that a value does not keep.
fn is_edge(c: char) -> bool {
    matches!(
        c,
        '.' | ',' | '?' | '!' | ';' | ':' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '“' | '”'
    )
}

/// The numbers `question` states, as JSON literals (thousands separators dropped; only whole
/// numbers when `integers`).
fn stated_numbers(question: &str, integers: bool) -> Vec<String> {
    let mut numbers: Vec<String> = Vec::new();
    // Number words count as written in digits ("six months" states 6).
    let digits = crate::arithmetic::digits_for_words(&question.to_lowercase());
    let words = [question, digits.as_str()].into_iter().flat_map(|text| {
        word_spans(text)
            .into_iter()
            .map(|(from, to)| &text[from..to])
    });
    for word in words {
        let word = word.trim_start_matches(['$', '€', '£']);
        // A unit written onto the number stays out of it: `100m`, `0°C`, `50mH`, `5%`.
        let word = number_before_unit(word);
        let plain = word.replace(',', "");
        let Ok(value) = plain.parse::<f64>() else {
            continue;
        };
        if !value.is_finite() || (integers && plain.contains('.')) {
            continue;
        }
        let literal = if plain.contains('.') {
            plain.trim_start_matches('+').to_owned()
        } else {
            plain
                .trim_start_matches('+')
                .trim_start_matches('0')
                .to_owned()
        };
        let literal = if literal.is_empty() || literal.starts_with('.') {
            format!("0{literal}")
        } else {
            literal
        };
        if !numbers.contains(&literal) {
            numbers.push(literal);
        }
    }
    numbers
}

/// `word` without a unit written onto its end (letters and the signs `°`, `µ`, `%`, `²`,
/// `³`, `/`, `^` before no digit): `100µF` is `100`; a word with digits after its first
/// letter (`3x2`, `A4`) is kept whole, and is no number.
fn number_before_unit(word: &str) -> &str {
    let Some(at) = word.find(|c: char| c.is_alphabetic() || "°µ%²³/".contains(c)) else {
        return word;
    };
    let (number, unit) = word.split_at(at);
    // `2x` and `3y` are terms of a formula.
    let variable = matches!(unit, "x" | "y" | "z" | "n");
    if number.is_empty() || variable || unit.contains(|c: char| c.is_ascii_digit()) {
        return word;
    }
    number
}

/// The reply's start for a call to `tool`: the call's opening up to its arguments.
pub fn call_opening(tool: &str) -> String {
    format!("{CALL_START}{}, \"args\": ", quoted_tail(tool))
}

/// `name` as a JSON string without its opening quote (the call start holds it).
fn quoted_tail(name: &str) -> String {
    let quoted = serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\""));
    quoted[1..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_names_the_tool_as_json_and_stops_before_the_arguments() {
        assert_eq!(
            call_opening("get_time"),
            "```tool\n{\"name\": \"get_time\", \"args\": "
        );
        assert_eq!(
            call_opening("a\"b"),
            "```tool\n{\"name\": \"a\\\"b\", \"args\": "
        );
    }

    #[test]
    fn words_lose_the_punctuation_around_them() {
        let text = "Create notes.txt with the text \"hello\", then read it.";
        let words: Vec<&str> = word_spans(text)
            .into_iter()
            .map(|(from, to)| &text[from..to])
            .collect();
        assert_eq!(
            words,
            [
                "Create",
                "notes.txt",
                "with",
                "the",
                "text",
                "hello",
                "then",
                "read",
                "it"
            ]
        );
    }

    #[test]
    fn numbers_are_taken_as_stated() {
        assert_eq!(
            stated_numbers("Invest $200,000 at 5% for 10 years, or 0.5 of it", false),
            ["200000", "5", "10", "0.5"]
        );
        assert_eq!(stated_numbers("radius 2.5 and 007 sides", true), ["7"]);
        assert!(stated_numbers("no numbers here", false).is_empty());
    }

    #[test]
    fn a_unit_written_onto_a_number_stays_out_of_it() {
        assert_eq!(
            stated_numbers(
                "1kg of ice at 0°C heated to 100°C, 298K, 100µF, 50mH, 5%",
                false
            ),
            ["1", "0", "100", "298", "50", "5"]
        );
        // Digits after the first letter make a name or a formula, not a number.
        assert!(stated_numbers("paper size A4 and 3x^2 + 2x", false).is_empty());
    }

    #[test]
    fn number_words_are_numbers_the_question_states() {
        assert_eq!(
            stated_numbers("the last six months, twenty-one days", true),
            ["6", "21"]
        );
    }

    #[test]
    fn an_optional_argument_is_filled_only_when_the_question_says_it() {
        let question = "Predict the forest growth in Yellowstone for the next 5 years including \
                        human impact, by train, with the simpson method.";
        let boolean = serde_json::json!({"type": "boolean"});
        assert_eq!(
            said_optional(question, "include_human_impact", &boolean, &[]),
            Some(Said::Among(vec!["true".into()]))
        );
        assert_eq!(
            said_optional(
                "Forecast it without human impact",
                "include_human_impact",
                &boolean,
                &[]
            ),
            Some(Said::Among(vec!["false".into()]))
        );
        assert_eq!(
            said_optional(question, "allow_transfer", &boolean, &[]),
            None
        );
        assert_eq!(said_optional(question, "detailed", &boolean, &[]), None);
        let method = serde_json::json!({"type": "string", "enum": ["trapezoid", "simpson"]});
        assert_eq!(
            said_optional(question, "method", &method, &[]),
            Some(Said::Among(vec!["\"simpson\"".into()]))
        );
        let unit = serde_json::json!({"type": "string", "enum": ["metric", "imperial"]});
        assert_eq!(said_optional(question, "unit", &unit, &[]), None);
        // A number the question names, no earlier argument took; none when each is taken.
        let number = serde_json::json!({"type": "integer"});
        assert_eq!(said_optional(question, "rounding", &number, &[]), None);
        let text = serde_json::json!({"type": "string"});
        assert_eq!(
            said_optional(question, "method", &text, &[]),
            Some(Said::Span)
        );
        assert_eq!(said_optional(question, "units", &text, &[]), None);
        assert_eq!(
            said_optional(question, "years", &number, &[]),
            Some(Said::Among(vec!["5".into()]))
        );
        assert_eq!(
            said_optional(question, "years", &number, &["5".into()]),
            None
        );
        let list = serde_json::json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(said_optional(question, "stops", &list, &[]), None);
    }

    #[test]
    fn a_span_holding_an_earlier_arguments_value_is_not_another_arguments() {
        let used = ["\"San Francisco\"".to_owned(), "2020".to_owned()];
        assert!(holds_a_used_value("San Francisco in 2020", &used));
        assert!(holds_a_used_value("san francisco", &used));
        assert!(holds_a_used_value("the year 2020", &used));
        assert!(!holds_a_used_value("California", &used));
        // Whole words only: 20201 is not 2020.
        assert!(!holds_a_used_value("case 20201", &used));
    }

    #[test]
    fn a_name_is_said_by_its_words_with_their_endings() {
        assert!(name_said("you can transfer", "allow_transfer"));
        assert!(name_said("give details", "detailed"));
        assert!(name_said("including human impact", "includeHumanImpact"));
        assert!(!name_said("human rights", "include_human_impact"));
        // A name of verbs alone says nothing.
        assert!(!name_said("include it", "include"));
    }
}
