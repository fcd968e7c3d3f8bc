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
//!   it as one); short of it, when the question names every required value
//!   ([`NAMED_CALL_MARGIN_MIN`]), or raises the tool at all and holds every required value,
//!   each likely enough ([`STANDING_CALL_MARGIN_MIN`]).
//!
//! - **Which values.** The call's required arguments are filled one by one, each after the
//!   call chosen so far, in the order their kinds are read (a set, numbers, strings, the
//!   rest); the call is written in the schema's order, the call grammar's. What
//!   the question states (`stated`: numbers with the words beside them, dates, quoted
//!   phrases, lists; `currency`: currencies) gives the candidates and the likelihood
//!   chooses among them: an enum's or a boolean's members; the numbers the words beside them name as this argument, else those
//!   they name as no other; a date written as the argument asks; the question's spans
//!   (word runs of up to [`SPAN_WORDS_MAX`] words, scored per token with the closing quote,
//!   so "with the text hello" gives `hello`), in tiers by quotes and naming words, when
//!   likely enough ([`SPAN_MEAN_MIN`]). Anything else — a value the question does not hold
//!   word for word, a list, an object — the model writes under the call grammar, as
//!   without likelihood. Optional arguments follow only when the question says them
//!   (`said_optional`): an enum member it names, or the words of the argument's name.
//! - **Several calls.** Numbers and dates stated for several calls make as many
//!   (`Filler::repeats`); a value that is one member of a list the question gives makes one
//!   call per member (`one_call_per_member`); a question of several requests has each
//!   filled on its own (the loop's `fill_requests`).
//!
//! The prompt's cached start is reused: each candidate costs only its own tokens.

use imurun_calls::parse_tool_calls;
use imurun_core::{
    GenerateRequest, Message, Model, ModelError, Role, ScoreRequest, StopFlag, TokenUsage,
    ToolIndex, ToolSpec,
};
use serde_json::Value;

use crate::stated::{
    Date, Stated, cued, name_words, naming_words, respective_numbers, span_named, stated_dates,
    stated_numbers, takes_a_date, word_spans, written_date,
};

/// The start of a call up to its tool's name, as the worked examples teach it.
pub const CALL_START: &str = "```tool\n{\"name\": \"";

/// The least margin (natural log) at which a reply is started as a call. Chosen on BFCL's
/// even-numbered cases (`docs/agent-loop.md`, "Decisions by likelihood").
pub const CALL_MARGIN_MIN: f64 = 1.3;

/// The least margin at which a reply short of [`CALL_MARGIN_MIN`] is still a call, when the
/// question names every required value of it (`Filled::names_every_value`). Chosen on
/// BFCL's even-numbered cases (`docs/agent-loop.md`, "Decisions by likelihood").
pub const NAMED_CALL_MARGIN_MIN: f64 = -1.5;

/// The least margin at which a reply short of [`CALL_MARGIN_MIN`] is still a call, when the
/// question holds every required value of it, each likely enough (`Filled::stands_alone`):
/// the question must raise the tool's likelihood at all. Chosen on BFCL's even-numbered
/// cases (`docs/agent-loop.md`, "Decisions by likelihood").
pub const STANDING_CALL_MARGIN_MIN: f64 = 0.0;

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

impl Filled {
    /// The figure `name` of the fill, 0 when it has none.
    pub(crate) fn feature(&self, name: &str) -> f64 {
        self.features
            .iter()
            .find(|(feature, _)| feature == name)
            .map_or(0.0, |(_, value)| *value)
    }

    /// Whether the call stands as a request's own: every required value chosen from the
    /// question (none the model wrote), each either named by it or likely enough to be left
    /// out were it optional (mean log-probability at least [`OPTIONAL_SPAN_MEAN_MIN`]).
    pub(crate) fn stands_alone(&self) -> bool {
        self.names_every_value()
            || (self.feature("required") >= 1.0
                && self.feature("written") == 0.0
                && self.feature("value_floor") >= OPTIONAL_SPAN_MEAN_MIN)
    }

    /// Whether the question names every required value of the call (`Values::named`): one
    /// or more, none the model wrote.
    pub(crate) fn names_every_value(&self) -> bool {
        let required = self.feature("required");
        required >= 1.0 && self.feature("written") == 0.0 && self.feature("named") >= required
    }
}

/// What filling a call needs.
pub(crate) struct Filler<'a> {
    pub(crate) model: &'a dyn Model,
    pub(crate) messages: &'a [Message],
    pub(crate) stop: &'a StopFlag,
    pub(crate) index: &'a ToolIndex,
    /// The question the values are taken from.
    pub(crate) question: &'a str,
    /// Whether a required number may take one an earlier argument took when the question
    /// states no other: a request among several may not (it is then the model's to write).
    pub(crate) again: bool,
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
        // The order the call grammar writes them in (the required, then the optional, each
        // in the schema's order); a value the model writes is written in that order.
        let grammar_order: Vec<&str> = arguments.iter().map(|(name, _, _)| *name).collect();
        // The required arguments are chosen in the order their kinds are read: a set, then
        // numbers, then strings, so a span is not given a number another argument takes.
        arguments.sort_by_key(|(_, schema, needed)| (!needed, reading_order(schema)));
        let values = Values::of(self.question, &arguments, self.again);
        let opening = format!("{}{{", call_opening(&tool.name));
        let (mut chosen_count, mut written_count, mut optional_count) = (0.0, 0.0, 0.0);
        let mut named_count = 0.0;
        let mut span_floor = 0.0_f64;
        // The values so far, by argument, in the order chosen.
        let mut valued: Vec<(&str, String)> = Vec::new();
        for &(name, schema, needed) in &arguments {
            let used: Vec<String> = valued.iter().map(|(_, value)| value.clone()).collect();
            // What the likelihood reads before this value: the call so far, as chosen.
            let mut head = format!("{opening}{}", written_arguments(&valued));
            if !valued.is_empty() {
                head.push_str(", ");
            }
            head.push_str(&serde_json::to_string(name).unwrap_or_default());
            head.push_str(": ");
            if !needed {
                let Some((value, mean)) = self
                    .choose_optional(&head, name, schema, &values, &used)
                    .await?
                else {
                    continue;
                };
                optional_count += 1.0;
                span_floor = span_floor.min(mean);
                valued.push((name, value));
                continue;
            }
            if let Some((value, mean)) = self.choose(&head, name, schema, &values, &used).await? {
                chosen_count += 1.0;
                if values.named(name, schema, &value, &used) {
                    named_count += 1.0;
                }
                span_floor = span_floor.min(mean);
                valued.push((name, value));
                continue;
            }
            written_count += 1.0;
            // The model writes under the call grammar, which holds the arguments to its
            // order: the start it continues is the values chosen so far that come before
            // this one in that order, up to the first not chosen yet.
            let mut before: Vec<(&str, String)> = Vec::new();
            let mut next_is_this = true;
            for next in grammar_order.iter().take_while(|next| **next != name) {
                match valued.iter().find(|(chosen, _)| chosen == next) {
                    Some(value) => before.push(value.clone()),
                    None => {
                        next_is_this = false;
                        break;
                    }
                }
            }
            let mut start = format!("{opening}{}", written_arguments(&before));
            if !before.is_empty() {
                start.push_str(", ");
            }
            // When an argument before this one has no value yet, the model writes it first.
            if next_is_this {
                start.push_str(&serde_json::to_string(name).unwrap_or_default());
                start.push_str(": ");
            }
            let (value, reply, used_tokens) = self.write_value(&start, tool, name).await?;
            usage = usage.plus(used_tokens);
            match value {
                Some(value) => valued.push((name, value)),
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
        // Further calls of the tool with the values the question states past the first
        // call's; else one per member when a value is one of a list the question gives (a
        // tool not imurun's own).
        let again = if own || written_count > 0.0 {
            Vec::new()
        } else {
            self.repeats(&opening, &arguments, &values, &valued).await?
        };
        let mut calls = if own {
            vec![valued]
        } else if again.is_empty() {
            one_call_per_member(self.question, valued)
        } else {
            std::iter::once(valued).chain(again).collect()
        };
        for call in &mut calls {
            // The call as the grammar would write it.
            call.sort_by_key(|(name, _)| grammar_order.iter().position(|next| next == name));
        }
        let text = calls
            .iter()
            .map(|valued| format!("{opening}{}}}}}\n```", written_arguments(valued)))
            .collect::<Vec<_>>()
            .join("\n\n");
        #[allow(clippy::cast_precision_loss)]
        let features = vec![
            ("required".to_owned(), required.len() as f64),
            ("chosen".to_owned(), chosen_count),
            ("named".to_owned(), named_count),
            ("written".to_owned(), written_count),
            ("optional".to_owned(), optional_count),
            ("value_floor".to_owned(), span_floor),
            ("calls".to_owned(), calls.len() as f64),
        ];
        Ok(Filled {
            raw: text,
            usage,
            features,
        })
    }

    /// The calls after `first` when the question states its numbers and dates for several:
    /// as many more as it states beyond the first call's, when it states a whole multiple
    /// of the number and date arguments the call requires ("3 and 4, 5 and 12"; "a radius
    /// of 5 meters, the second 10 meters, the third 15 meters"). Each takes values no
    /// earlier call took; the calls stop at one whose required value cannot be chosen.
    async fn repeats<'n>(
        &self,
        opening: &str,
        arguments: &[(&'n str, &Value, bool)],
        values: &Values<'_>,
        first: &[(&'n str, String)],
    ) -> Result<Vec<Vec<(&'n str, String)>>, ModelError> {
        let stating = arguments
            .iter()
            .filter(|(name, schema, needed)| {
                *needed && (values.numeric.contains(name) || takes_a_date(name, schema))
            })
            .count();
        let stated = values.repeatable(first);
        if stating == 0 || stated < 2 * stating || !stated.is_multiple_of(stating) {
            return Ok(Vec::new());
        }
        let values = values.without_again();
        let mut taken: Vec<String> = first.iter().map(|(_, value)| value.clone()).collect();
        let mut calls = Vec::new();
        for _ in 1..stated / stating {
            let mut valued: Vec<(&'n str, String)> = Vec::new();
            for &(name, schema, needed) in arguments {
                let mut used = taken.clone();
                used.extend(valued.iter().map(|(_, value)| value.clone()));
                let mut head = format!("{opening}{}", written_arguments(&valued));
                if !valued.is_empty() {
                    head.push_str(", ");
                }
                head.push_str(&serde_json::to_string(name).unwrap_or_default());
                head.push_str(": ");
                let chosen = if needed {
                    self.choose(&head, name, schema, &values, &used).await?
                } else {
                    self.choose_optional(&head, name, schema, &values, &used)
                        .await?
                };
                match chosen {
                    Some((value, _)) => valued.push((name, value)),
                    None if needed => return Ok(calls),
                    None => {}
                }
            }
            taken.extend(valued.iter().map(|(_, value)| value.clone()));
            calls.push(valued);
        }
        Ok(calls)
    }

    /// The value chosen by likelihood for argument `name` of `schema` after `text`, as
    /// JSON, with its mean log-probability per token; `None` when the model is to write it.
    async fn choose(
        &self,
        text: &str,
        name: &str,
        schema: &Value,
        values: &Values<'_>,
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
                let numbers = values.numbers_for(name, kind == "integer", used, true);
                if numbers.is_empty() {
                    return Ok(None);
                }
                self.likeliest(text, numbers, &VALUE_ENDS).await
            }
            Some("string") => {
                if let Some(date) = values.date_for(name, schema, used) {
                    return Ok(Some((date, 0.0)));
                }
                if let Some(code) = crate::currency::currency_for(self.question, name, used) {
                    return Ok(Some((code, 0.0)));
                }
                self.likeliest_span(text, name, values, used, (SPAN_WORDS_MAX, SPAN_MEAN_MIN))
                    .await
            }
            Some("array") => Ok(values.list_for(name, schema, used).map(|list| (list, 0.0))),
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
        values: &Values<'_>,
        used: &[String],
    ) -> Result<Option<(String, f64)>, ModelError> {
        if let Some(Items::Members(_)) = array_items(schema) {
            return Ok(values.list_for(name, schema, used).map(|list| (list, 0.0)));
        }
        match said_optional(self.question, name, schema) {
            Some(Said::Among(literals)) => self.likeliest(text, literals, &VALUE_ENDS).await,
            Some(Said::Number { integers }) => {
                let numbers = values.numbers_for(name, integers, used, false);
                if numbers.is_empty() {
                    return Ok(None);
                }
                self.likeliest(text, numbers, &VALUE_ENDS).await
            }
            Some(Said::Span) => {
                if let Some(date) = values.date_for(name, schema, used) {
                    return Ok(Some((date, 0.0)));
                }
                if let Some(code) = crate::currency::currency_for(self.question, name, used) {
                    return Ok(Some((code, 0.0)));
                }
                let reach = (OPTIONAL_SPAN_WORDS_MAX, OPTIONAL_SPAN_MEAN_MIN);
                self.likeliest_span(text, name, values, used, reach).await
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

    /// The likeliest span of the question as a string for argument `name` after `text`
    /// (its opening quote included), when likely enough: each start is scored once, with the
    /// closing quote's chance read after every token, so every length from that start costs
    /// nothing more. Spans the words beside them name as this argument ("title 'David'", "C
    /// key") come first, then those they name as no other argument; a span holding a value
    /// an earlier argument took, or a date when another argument takes dates, is none.
    async fn likeliest_span(
        &self,
        text: &str,
        name: &str,
        values: &Values<'_>,
        used: &[String],
        (words_max, floor): (usize, f64),
    ) -> Result<Option<(String, f64)>, ModelError> {
        let words = &values.words;
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
            for word in start..last {
                let span = values.span_text(start, word + 1);
                if span.contains(['"', '\\', '\n']) {
                    break;
                }
                ends.push((word + 1, span.len()));
            }
            let reach = ends.iter().map(|(_, end)| *end).max().unwrap_or(0);
            continuations.push(format!("\"{}", &self.question[from..from + reach]));
            ends_per_start.push(ends);
        }
        let mut request = ScoreRequest::new(self.messages.to_vec(), text, continuations.clone());
        request.probes = QUOTE_ENDS.iter().map(|end| (*end).to_owned()).collect();
        request.stop = self.stop.clone();
        let scored = self.model.score(&request).await?;
        let naming = values.naming(name);
        let others = values.naming_others(name);
        // The best span of each tier: a quoted phrase named as this argument, one named as
        // no other (when the quotes fill the call's texts), a span named as this argument,
        // one named as no other, any.
        let mut best: [Option<(String, f64)>; 5] = [None, None, None, None, None];
        for (((continuation, ends), scored), &start) in continuations
            .iter()
            .zip(&ends_per_start)
            .zip(&scored)
            .zip(&starts)
        {
            for &(to, end) in ends {
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
                let at = (words[start].0, words[start].0 + end);
                if mean < floor || holds_a_used_value(span, used) || values.blocked(at) {
                    continue;
                }
                // A span that cuts a quoted phrase is no value.
                let Some(quoted) = values.quote(start, to) else {
                    continue;
                };
                let (mine, another) = (
                    values.span_named(start, to, &naming),
                    values.span_named(start, to, &others),
                );
                let quotes_fill = quoted && values.quotes_fill();
                let tiers = [
                    quoted && mine,
                    quotes_fill && !another,
                    mine,
                    !another,
                    true,
                ];
                for (tier, holds) in tiers.into_iter().enumerate() {
                    if holds && best[tier].as_ref().is_none_or(|(_, score)| mean > *score) {
                        best[tier] = Some((span.to_owned(), mean));
                    }
                }
            }
        }
        Ok(best
            .into_iter()
            .flatten()
            .next()
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
    /// The likeliest of the numbers the question states for it (`Values::numbers_for`).
    Number { integers: bool },
    /// The likeliest span of the question, when likely enough.
    Span,
}

/// Whether the question says optional argument `name` of `schema`, and how its value is
/// chosen: an enum by the members the question names; a boolean, a number or a string when
/// the question holds the words of its name ("including human impact" for
/// `include_human_impact`, "using the Darwin model" for `model`), a number then among those
/// the question states that no earlier argument took, a string by a span of the question
/// likely enough. Anything else is left out.
fn said_optional(question: &str, name: &str, schema: &Value) -> Option<Said> {
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
        Some(kind @ ("integer" | "number")) if name_said(question, name) => Some(Said::Number {
            integers: kind == "integer",
        }),
        Some("string") if name_said(question, name) => Some(Said::Span),
        _ => None,
    }
}

/// What the question states for one call's arguments: its words, numbers, dates and quoted
/// phrases, and which argument the words beside a value name.
#[derive(Clone)]
struct Values<'a> {
    question: &'a str,
    words: Vec<(usize, usize)>,
    dates: Vec<Date>,
    /// The phrases the question quotes, as word ranges (into `words`).
    quoted: Vec<(usize, usize)>,
    /// Every argument of the tool, by name.
    names: Vec<&'a str>,
    /// The arguments that take a number, and those that take a string of any text (not an
    /// enum's): the words that name another argument's value say only of these.
    numeric: Vec<&'a str>,
    textual: Vec<&'a str>,
    /// How many required arguments take text.
    textual_required: usize,
    /// Whether an argument takes dates: a date is then no other argument's.
    dated: bool,
    /// The numbers the question lists together, when an argument takes a list of numbers:
    /// they are that list's, no other argument's.
    listed: Vec<String>,
    /// Whether a number an earlier argument took may be taken again when none is left.
    again: bool,
    /// The arguments that take a list of numbers, in the call's reading order: the lists of
    /// numbers the question writes go to them in turn.
    number_listed: Vec<&'a str>,
}

impl<'a> Values<'a> {
    /// What `question` states for `arguments` (name, schema, required); `again` lets a
    /// required number take one an earlier argument took when none is left.
    fn of(question: &'a str, arguments: &[(&'a str, &Value, bool)], again: bool) -> Self {
        let number_listed: Vec<&str> = arguments
            .iter()
            .filter(|(_, schema, _)| array_items(schema) == Some(Items::Numbers))
            .map(|(name, _, _)| *name)
            .collect();
        let takes_numbers = !number_listed.is_empty();
        let words = word_spans(question);
        Self {
            question,
            quoted: quoted_phrases(question, &words),
            words,
            dates: stated_dates(question),
            names: arguments.iter().map(|(name, _, _)| *name).collect(),
            numeric: arguments
                .iter()
                .filter(|(_, schema, _)| {
                    schema.get("enum").is_none()
                        && matches!(
                            schema.get("type").and_then(Value::as_str),
                            Some("integer" | "number" | "float")
                        )
                })
                .map(|(name, _, _)| *name)
                .collect(),
            textual: arguments
                .iter()
                .filter(|(_, schema, _)| {
                    schema.get("enum").is_none()
                        && schema.get("type").and_then(Value::as_str) == Some("string")
                })
                .map(|(name, _, _)| *name)
                .collect(),
            textual_required: arguments
                .iter()
                .filter(|(_, schema, needed)| {
                    *needed
                        && schema.get("enum").is_none()
                        && schema.get("type").and_then(Value::as_str) == Some("string")
                })
                .count(),
            dated: arguments
                .iter()
                .any(|(name, schema, _)| takes_a_date(name, schema)),
            listed: if takes_numbers {
                crate::stated::number_lists(question).concat()
            } else {
                Vec::new()
            },
            again,
            number_listed,
        }
    }

    /// The value the question gives list argument `name` of `schema`, as JSON: for a list
    /// of set members, the members it names (each by its words, with their endings, outside
    /// the values earlier arguments took: a museum named "Natural History Museum" asks for no
    /// `history`), in the order it names them; for a list of numbers, the list of numbers it
    /// writes in this argument's turn among those that take one ("Group A [3, 4, 5] and
    /// Group B [7, 8, 9]"); for a list of text, the first list of names it coordinates that
    /// holds no earlier value ("between John and Alice"). `None` when it gives none.
    fn list_for(&self, name: &str, schema: &Value, used: &[String]) -> Option<String> {
        let list: Vec<Value> = match array_items(schema)? {
            Items::Members(members) => {
                let mut text = crate::ground::normalise(self.question);
                for value in used {
                    if let Ok(value) = serde_json::from_str::<String>(value) {
                        let value = crate::ground::normalise(&value);
                        if !value.is_empty() {
                            text = text.replace(&value, " ");
                        }
                    }
                }
                let said = crate::tool_match::words(&text);
                let mut named: Vec<(usize, &str)> = members
                    .iter()
                    .filter_map(|member| Some((member_said_at(&said, member)?, *member)))
                    .collect();
                named.sort_by_key(|(at, _)| *at);
                named
                    .into_iter()
                    .map(|(_, member)| Value::from(member))
                    .collect()
            }
            Items::Numbers => {
                let turn = self.number_listed.iter().position(|named| *named == name)?;
                crate::stated::number_lists(self.question)
                    .get(turn)?
                    .iter()
                    .filter_map(|literal| serde_json::from_str(literal).ok())
                    .collect()
            }
            Items::Text => crate::stated::name_lists(self.question)
                .into_iter()
                .find(|names| !names.iter().any(|name| holds_a_used_value(name, used)))?
                .into_iter()
                .map(Value::from)
                .collect(),
        };
        (!list.is_empty()).then(|| Value::Array(list).to_string())
    }

    /// These values where a required number never takes one an earlier argument took.
    fn without_again(&self) -> Self {
        Self {
            again: false,
            ..self.clone()
        }
    }

    /// How many numbers and dates the question states for the call's number and date
    /// arguments: its numbers (each once; none a date, a list argument, a quoted phrase or a
    /// text value of the `first` call holds: "account '00125648'" and "Windows 10" are
    /// names), of the kinds the `first` call's numbers are
    /// (a percentage for a percentage, dollars for dollars, a bare number for a bare one),
    /// and, when an argument takes dates, its whole dates.
    fn repeatable(&self, first: &[(&str, String)]) -> usize {
        let stated: Vec<Stated> = stated_numbers(self.question, false)
            .into_iter()
            .filter(|number| {
                number
                    .at
                    .is_none_or(|at| !self.blocked(at) && !self.in_a_quote(at))
                    && !self.listed.contains(&number.literal)
                    && !in_a_taken_phrase(&number.literal, first)
            })
            .collect();
        let kinds: Vec<&str> = stated
            .iter()
            .filter(|number| first.iter().any(|(_, value)| *value == number.literal))
            .map(|number| number.kind.as_str())
            .collect();
        let numbers = stated
            .iter()
            .filter(|number| kinds.is_empty() || kinds.contains(&number.kind.as_str()))
            .count();
        let dates = if self.dated {
            self.dates
                .iter()
                .filter(|date| date.year.is_some() && date.day.is_some())
                .count()
        } else {
            0
        };
        numbers + dates
    }

    /// The numbers for argument `name` as JSON literals: the one a list of numbers gives it
    /// in order after naming it with others ("base and height as 6cm and 10cm"), else those
    /// the words beside them name as it (its unit, "acceleration of 9.8"), else those they
    /// name as no other argument that takes a number, else any; one an earlier argument took only when none is
    /// left, for a required argument (`required`) when the values allow it (`again`).
    fn numbers_for(
        &self,
        name: &str,
        integers: bool,
        used: &[String],
        required: bool,
    ) -> Vec<String> {
        // A list of numbers after as many names gives them in order.
        if let Some((_, value)) = respective_numbers(self.question, &self.names)
            .into_iter()
            .find(|(named, value)| named == name && !used.contains(value))
        {
            return vec![value];
        }
        let mut stated = stated_numbers(self.question, integers);
        stated.retain(|number| {
            number.at.is_none_or(|at| !self.blocked(at)) && !self.listed.contains(&number.literal)
        });
        let left: Vec<&Stated> = stated
            .iter()
            .filter(|number| !used.contains(&number.literal))
            .collect();
        let named = self.distinct_words(name);
        let others: Vec<Vec<String>> = self
            .numeric
            .iter()
            .filter(|other| **other != name)
            .map(|other| self.distinct_words(other))
            .collect();
        let mine: Vec<&Stated> = left
            .iter()
            .copied()
            .filter(|number| cued(&number.cues, &named))
            .collect();
        let free: Vec<&Stated> = left
            .iter()
            .copied()
            .filter(|number| !others.iter().any(|other| cued(&number.cues, other)))
            .collect();
        let chosen: Vec<&Stated> = if !mine.is_empty() {
            mine
        } else if !free.is_empty() {
            free
        } else if !(left.is_empty() && required && self.again) {
            left
        } else {
            stated.iter().collect()
        };
        chosen
            .into_iter()
            .map(|number| number.literal.clone())
            .collect()
    }

    /// Whether the question names `value` (JSON) as argument `name` of `schema`: an enum's
    /// member it writes, a switch whose name it says, a number the words beside it name as
    /// this argument (or a list gives it in order), a date it writes for a date argument, a
    /// span it quotes or names as this argument, a list of what it lists for it past the
    /// values earlier arguments took (`used`). A value chosen only because it was likely is
    /// not named.
    fn named(&self, name: &str, schema: &Value, value: &str, used: &[String]) -> bool {
        let text = serde_json::from_str::<String>(value).ok();
        if schema.get("enum").is_some() {
            let normalised = crate::ground::normalise(self.question);
            return text.is_some_and(|member| {
                crate::ground::has_form(&normalised, &member.replace('_', " "))
            });
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("boolean") => name_said(self.question, name),
            Some("integer" | "number" | "float") => {
                let named = self.distinct_words(name);
                respective_numbers(self.question, &self.names)
                    .iter()
                    .any(|(given, number)| given == name && number == value)
                    || stated_numbers(self.question, false)
                        .iter()
                        .any(|number| number.literal == value && cued(&number.cues, &named))
            }
            Some("string") if takes_a_date(name, schema) => self
                .dates
                .iter()
                .filter_map(|date| written_date(date, schema))
                .any(|date| text.as_deref() == Some(date.as_str())),
            Some("array") => self.list_for(name, schema, used).is_some_and(|list| {
                let named: Vec<Value> = serde_json::from_str(&list).unwrap_or_default();
                let value: Vec<Value> = serde_json::from_str(value).unwrap_or_default();
                !value.is_empty() && value.iter().all(|member| named.contains(member))
            }),
            Some("string") => {
                let Some(text) = text else {
                    return false;
                };
                if crate::currency::names_currency(self.question, name, &text) {
                    return true;
                }
                let naming = self.naming(name);
                (0..self.words.len()).any(|from| {
                    (from + 1..=self.words.len().min(from + SPAN_WORDS_MAX)).any(|to| {
                        self.span_text(from, to) == text
                            && (self.quote(from, to) == Some(true)
                                || self.span_named(from, to, &naming))
                    })
                })
            }
            _ => false,
        }
    }

    /// The words of argument `name` that no other argument's name holds: "initial" of
    /// `initial_value` beside `final_value`.
    fn distinct_words(&self, name: &str) -> Vec<String> {
        let others: Vec<String> = self
            .names
            .iter()
            .filter(|other| **other != name)
            .flat_map(|other| name_words(other))
            .collect();
        name_words(name)
            .into_iter()
            .filter(|word| !others.contains(word))
            .collect()
    }

    /// The first date the question states that no earlier argument took, written as
    /// argument `name` of `schema` asks, as JSON; `None` when it takes no date.
    fn date_for(&self, name: &str, schema: &Value, used: &[String]) -> Option<String> {
        if !takes_a_date(name, schema) {
            return None;
        }
        self.dates
            .iter()
            .filter_map(|date| written_date(date, schema))
            .map(|date| serde_json::to_string(&date).unwrap_or_default())
            .find(|date| !used.contains(date))
    }

    /// Whether bytes `at` of the question lie in a phrase it quotes.
    fn in_a_quote(&self, at: (usize, usize)) -> bool {
        self.quoted.iter().any(|&(from, to)| {
            let (start, end) = (self.words[from].0, self.words[to - 1].1);
            start <= at.0 && at.1 <= end
        })
    }

    /// Whether bytes `at` of the question overlap a date another argument takes.
    fn blocked(&self, at: (usize, usize)) -> bool {
        self.dated
            && self
                .dates
                .iter()
                .any(|date| date.at.0 < at.1 && at.0 < date.at.1)
    }

    /// The words of the question that name argument `name`.
    fn naming(&self, name: &str) -> Vec<usize> {
        naming_words(self.question, &self.distinct_words(name))
    }

    /// The words of the question that name the other arguments that take text.
    fn naming_others(&self, name: &str) -> Vec<usize> {
        let mut naming: Vec<usize> = self
            .textual
            .iter()
            .filter(|other| **other != name)
            .flat_map(|other| self.naming(other))
            .collect();
        naming.sort_unstable();
        naming.dedup();
        naming
    }

    /// Whether words `from..to` are a span the words at `naming` name.
    fn span_named(&self, from: usize, to: usize, naming: &[usize]) -> bool {
        span_named(self.question, &self.words, (from, to), naming)
    }

    /// Whether the question quotes as many phrases as the call takes text values, or more:
    /// the quoted phrases are then those values ("the 'R vs Adams' case"); with fewer, a
    /// quote says only that a phrase is some value ("write 'hello' to a file named out.txt").
    fn quotes_fill(&self) -> bool {
        self.quoted.len() >= self.textual_required
    }

    /// The text of words `from..to`: a phrase the question quotes whole keeps the stops it
    /// ends with inside its quotes ('ABC Ltd.').
    fn span_text(&self, from: usize, to: usize) -> &'a str {
        let (start, mut end) = (self.words[from].0, self.words[to - 1].1);
        if self.quoted.contains(&(from, to)) {
            end = quote_inner_end(self.question, end);
        }
        &self.question[start..end]
    }

    /// Whether words `from..to` are a phrase the question quotes (`Some(true)`), cut one or
    /// hold more than it (`None`: no value), or neither (`Some(false)`).
    fn quote(&self, from: usize, to: usize) -> Option<bool> {
        let mut whole = false;
        for &(start, end) in &self.quoted {
            if (start, end) == (from, to) {
                whole = true;
            } else if from < end && start < to {
                return None;
            }
        }
        Some(whole)
    }
}

/// Where a quoted phrase whose last word ends at byte `end` of `question` ends inside its
/// quotes: past the stops the phrase itself holds ('Apple Inc.', 'Hello!').
fn quote_inner_end(question: &str, end: usize) -> usize {
    end + question[end..]
        .chars()
        .take_while(|c| matches!(c, '.' | '!' | '?'))
        .map(char::len_utf8)
        .sum::<usize>()
}

/// The phrases `question` quotes ('R vs Adams', "Purchase_Amount", 'ABC Ltd.'), as ranges of
/// `words` (from [`word_spans`]): from a word right after an opening quote to the first word
/// right before the same quote (or before the stops the phrase ends with), at most
/// `SPAN_WORDS_MAX` words.
fn quoted_phrases(question: &str, words: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let before = |at: usize| question[..at].chars().next_back();
    let after = |at: usize| question[at..].chars().next();
    let closing = |open: char| match open {
        '“' => '”',
        '‘' => '’',
        other => other,
    };
    let mut phrases = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let (start, _) = words[at];
        let open = before(start).filter(|c| matches!(c, '\'' | '"' | '“' | '‘'));
        let opens = open.is_some()
            && before(start - open.map_or(0, char::len_utf8))
                .is_none_or(|c| c.is_whitespace() || "([{:".contains(c));
        if let (Some(open), true) = (open, opens) {
            let close = closing(open);
            if let Some(last) = (at..words.len().min(at + SPAN_WORDS_MAX))
                .find(|last| after(quote_inner_end(question, words[*last].1)) == Some(close))
            {
                phrases.push((at, last + 1));
                at = last + 1;
                continue;
            }
        }
        at += 1;
    }
    phrases
}

/// The most calls [`one_call_per_member`] makes of one.
const MEMBER_CALLS_MAX: usize = 8;

/// The call's values `valued` as one call per member of a list the question gives, when one
/// value is a member of it and no other value is another ("the factorial of 5,10 and 15" is
/// three calls; "the HCF of 36 and 24" one): a list of numbers, of names (`stated::name_lists`:
/// "the weather in Tokyo, Nairobi and Lima"), or a string value that is itself a list of
/// three or more ("human HbA1c, normal hemoglobin, and rat hemoglobin"); else as it is. With
/// two such values, their members go in pairs when the question says "respectively" and the
/// lists are as long, else every member of one with every member of the other ("Lakers and
/// Bulls in the seasons 2018 and 2020" is four calls), up to [`MEMBER_CALLS_MAX`].
fn one_call_per_member<'n>(
    question: &str,
    valued: Vec<(&'n str, String)>,
) -> Vec<Vec<(&'n str, String)>> {
    let numbers = crate::stated::number_lists(question);
    let names = crate::stated::name_lists(question);
    let as_strings = |list: &[String]| -> Vec<String> {
        list.iter()
            .map(|member| Value::from(member.as_str()).to_string())
            .collect()
    };
    // Numbers a list argument holds are its own.
    let holds_a_list = valued.iter().any(|(_, value)| value.starts_with('['));
    let listed: Vec<(usize, Vec<String>)> = valued
        .iter()
        .enumerate()
        .filter_map(|(at, (_, value))| {
            let text = serde_json::from_str::<String>(value).ok();
            let list = match &text {
                Some(text) => {
                    if let Some(members) = crate::stated::string_list(text) {
                        return Some((at, as_strings(&members)));
                    }
                    as_strings(names.iter().find(|list| list.contains(text))?)
                }
                None if holds_a_list => return None,
                None => numbers.iter().find(|list| list.contains(value))?.clone(),
            };
            // Another value is the list's too: two names of one list ("between New York and
            // Boston") are each their own argument's, and so is a number the question
            // writes only there ("5% for 1,5 and 10 years": the rate's 5 is not the list's).
            let others_in_it = valued.iter().enumerate().any(|(other, (_, value))| {
                other != at
                    && list.contains(value)
                    && (text.is_some() || crate::stated::times_written(question, value) == 1)
            });
            (!others_in_it).then_some((at, list))
        })
        .take(2)
        .collect();
    let mut calls = vec![valued];
    let respectively = crate::tool_match::words(question)
        .iter()
        .any(|word| word == "respectively");
    match listed.as_slice() {
        [(first, a), (second, b)] if respectively && a.len() == b.len() => {
            calls = a
                .iter()
                .zip(b)
                .map(|(one, other)| {
                    let mut call = calls[0].clone();
                    call[*first].1.clone_from(one);
                    call[*second].1.clone_from(other);
                    call
                })
                .collect();
        }
        _ => {
            for (at, members) in &listed {
                calls = calls
                    .iter()
                    .flat_map(|call| {
                        members.iter().map(move |member| {
                            let mut call = call.clone();
                            call[*at].1.clone_from(member);
                            call
                        })
                    })
                    .collect();
            }
        }
    }
    calls.truncate(MEMBER_CALLS_MAX);
    calls
}

/// What a list argument holds.
#[derive(Debug, Clone, PartialEq)]
enum Items<'s> {
    /// Members of a set (its items' enum).
    Members(Vec<&'s str>),
    /// Numbers.
    Numbers,
    /// Text.
    Text,
}

/// What list argument `schema` holds; `None` when it is no list, or a list of anything else.
fn array_items(schema: &Value) -> Option<Items<'_>> {
    if schema.get("type").and_then(Value::as_str) != Some("array") {
        return None;
    }
    let items = schema.get("items")?;
    if let Some(members) = items.get("enum").and_then(Value::as_array) {
        return Some(Items::Members(
            members.iter().filter_map(Value::as_str).collect(),
        ));
    }
    match items.get("type").and_then(Value::as_str)? {
        "integer" | "number" | "float" => Some(Items::Numbers),
        "string" => Some(Items::Text),
        _ => None,
    }
}

/// Where in the words `said` the question first names set member `member`: its words in a
/// row, each as written or with another ending ("scenic views" for `Scenic View`,
/// "age range" for `age_range`).
fn member_said_at(said: &[String], member: &str) -> Option<usize> {
    use crate::tool_match::{same_word, split_camel_case, words};
    let named = words(&split_camel_case(member));
    if named.is_empty() || named.len() > said.len() {
        return None;
    }
    (0..=said.len() - named.len()).find(|at| {
        named
            .iter()
            .zip(&said[*at..])
            .all(|(named, said)| same_word(named, said))
    })
}

/// `"name": value` for each of `valued`, joined by commas.
fn written_arguments(valued: &[(&str, String)]) -> String {
    valued
        .iter()
        .map(|(name, value)| {
            format!(
                "{}: {value}",
                serde_json::to_string(name).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The order an argument of `schema` is read in: a set, a number, a string (a date among
/// them: the dates are no other string's), the rest.
fn reading_order(schema: &Value) -> u8 {
    if schema.get("enum").is_some() {
        return 0;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => 0,
        Some("integer" | "number") => 1,
        Some("string") => 2,
        _ => 3,
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
    use crate::tool_match::{same_word, words};
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
    let named = name_words(name);
    let said = words(question);
    said.iter().enumerate().any(|(at, word)| {
        named.iter().any(|named| same_word(named, word))
            && said[at.saturating_sub(3)..at]
                .iter()
                .any(|before| DENIALS.contains(&before.as_str()))
    })
}

/// Whether a text value of `call` writes the number `literal` as one of its words
/// ("Windows 10" writes 10).
fn in_a_taken_phrase(literal: &str, call: &[(&str, String)]) -> bool {
    call.iter().any(|(_, value)| {
        serde_json::from_str::<String>(value)
            .is_ok_and(|text| holds_a_used_value(&text, &[literal.to_owned()]))
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
    fn an_optional_argument_is_filled_only_when_the_question_says_it() {
        let question = "Predict the forest growth in Yellowstone for the next 5 years including \
                        human impact, by train, with the simpson method.";
        let boolean = serde_json::json!({"type": "boolean"});
        assert_eq!(
            said_optional(question, "include_human_impact", &boolean),
            Some(Said::Among(vec!["true".into()]))
        );
        assert_eq!(
            said_optional(
                "Forecast it without human impact",
                "include_human_impact",
                &boolean
            ),
            Some(Said::Among(vec!["false".into()]))
        );
        assert_eq!(said_optional(question, "allow_transfer", &boolean), None);
        assert_eq!(said_optional(question, "detailed", &boolean), None);
        let method = serde_json::json!({"type": "string", "enum": ["trapezoid", "simpson"]});
        assert_eq!(
            said_optional(question, "method", &method),
            Some(Said::Among(vec!["\"simpson\"".into()]))
        );
        let unit = serde_json::json!({"type": "string", "enum": ["metric", "imperial"]});
        assert_eq!(said_optional(question, "unit", &unit), None);
        // A number the question names, no earlier argument took; none when each is taken.
        let number = serde_json::json!({"type": "integer"});
        assert_eq!(said_optional(question, "rounding", &number), None);
        let text = serde_json::json!({"type": "string"});
        assert_eq!(said_optional(question, "method", &text), Some(Said::Span));
        assert_eq!(said_optional(question, "units", &text), None);
        assert_eq!(
            said_optional(question, "years", &number),
            Some(Said::Number { integers: true })
        );
        let list = serde_json::json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(said_optional(question, "stops", &list), None);
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

    fn values_of<'a>(question: &'a str, arguments: &'a [(&'a str, Value, bool)]) -> Values<'a> {
        let arguments: Vec<(&str, &Value, bool)> = arguments
            .iter()
            .map(|(name, schema, needed)| (*name, schema, *needed))
            .collect();
        Values::of(question, &arguments, true)
    }

    #[test]
    fn a_number_goes_to_the_argument_its_unit_or_name_says() {
        let number = serde_json::json!({"type": "number"});
        let arguments = [
            ("voltage", number.clone(), true),
            ("frequency_ghz", number.clone(), true),
        ];
        let question = "Power of a 3.5GHz clock running at 1.2V?";
        let values = values_of(question, &arguments);
        assert_eq!(
            values.numbers_for("frequency_ghz", false, &[], true),
            ["3.5"]
        );
        // The number its unit names as another argument is not this one's.
        assert_eq!(values.numbers_for("voltage", false, &[], true), ["1.2"]);
        let arguments = [
            ("initial_velocity", number.clone(), true),
            ("time", number.clone(), true),
            ("acceleration", number, false),
        ];
        let question = "The displacement given the initial velocity of 10 and acceleration of \
                        9.8 within 5 seconds.";
        let values = values_of(question, &arguments);
        assert_eq!(
            values.numbers_for("initial_velocity", false, &[], true),
            ["10"]
        );
        assert_eq!(
            values.numbers_for("time", false, &["10".into()], true),
            ["5"]
        );
        assert_eq!(
            values.numbers_for("acceleration", false, &[], false),
            ["9.8"]
        );
        // Every number taken: another is given again only to a required argument.
        let all = ["10".into(), "9.8".into(), "5".into()];
        assert_eq!(values.numbers_for("time", false, &all, true).len(), 3);
        assert!(
            values
                .numbers_for("acceleration", false, &all, false)
                .is_empty()
        );
    }

    #[test]
    fn a_date_goes_to_the_date_argument_as_it_asks_and_to_no_other() {
        let arguments = [
            (
                "from_date",
                serde_json::json!({"type": "string", "description": "The format is MM-DD-YYYY."}),
                true,
            ),
            ("to_date", serde_json::json!({"type": "string"}), true),
            ("room_type", serde_json::json!({"type": "string"}), true),
            ("adults", serde_json::json!({"type": "integer"}), true),
        ];
        let question = "A room for 2 adults from July 10, 2022 to July 20, 2022.";
        let values = values_of(question, &arguments);
        let from = values.date_for("from_date", &arguments[0].1, &[]);
        assert_eq!(from.as_deref(), Some("\"07-10-2022\""));
        let to = values.date_for("to_date", &arguments[1].1, &[]);
        assert_eq!(to.as_deref(), Some("\"2022-07-10\""));
        let to = values.date_for("to_date", &arguments[1].1, &["\"2022-07-10\"".into()]);
        assert_eq!(to.as_deref(), Some("\"2022-07-20\""));
        assert_eq!(values.date_for("room_type", &arguments[2].1, &[]), None);
        // A date's numbers and words are no other argument's.
        assert_eq!(values.numbers_for("adults", true, &[], true), ["2"]);
        let july = question.find("July").unwrap_or_default();
        assert!(values.blocked((july, july + 4)));
        assert!(!values.blocked((0, 6)));
    }

    #[test]
    fn a_listed_value_makes_a_call_per_member() {
        let calls = one_call_per_member(
            "Find the factorial of 5,10 and 15.",
            vec![("number", "10".to_owned())],
        );
        let numbers: Vec<&str> = calls.iter().map(|call| call[0].1.as_str()).collect();
        assert_eq!(numbers, ["5", "10", "15"]);
        // Two numbers two arguments took are no list to repeat.
        let calls = one_call_per_member(
            "the highest common factor of 36 and 24",
            vec![("number1", "36".to_owned()), ("number2", "24".to_owned())],
        );
        assert_eq!(calls.len(), 1);
        let calls = one_call_per_member(
            "$1000 at 5% a year for 1,5 and 10 years",
            vec![
                ("present_value", "1000".to_owned()),
                ("rate", "5".to_owned()),
                ("years", "10".to_owned()),
            ],
        );
        let years: Vec<&str> = calls.iter().map(|call| call[2].1.as_str()).collect();
        assert_eq!(years, ["1", "5", "10"]);
        let calls = one_call_per_member(
            "the sequences of human HbA1c, normal hemoglobin, and rat hemoglobin",
            vec![
                (
                    "protein_name",
                    "\"human HbA1c, normal hemoglobin, and rat hemoglobin\"".to_owned(),
                ),
                ("model_3d", "true".to_owned()),
            ],
        );
        let names: Vec<&str> = calls.iter().map(|call| call[0].1.as_str()).collect();
        assert_eq!(
            names,
            [
                "\"human HbA1c\"",
                "\"normal hemoglobin\"",
                "\"rat hemoglobin\""
            ]
        );
        assert!(calls.iter().all(|call| call[1].1 == "true"));
        // The first two values of each call.
        let pairs = |question: &str, first: (&'static str, &str), second: (&'static str, &str)| {
            one_call_per_member(
                question,
                vec![
                    (first.0, first.1.to_owned()),
                    (second.0, second.1.to_owned()),
                ],
            )
            .into_iter()
            .map(|call| (call[0].1.clone(), call[1].1.clone()))
            .collect::<Vec<(String, String)>>()
        };
        // A name of a list the question coordinates; with a list of numbers, every pair.
        assert_eq!(
            pairs(
                "the winning percentage of Lakers and Bulls in the seasons 2018 and 2020",
                ("team", "\"Lakers\""),
                ("season", "2018")
            ),
            [
                ("\"Lakers\"", "2018"),
                ("\"Lakers\"", "2020"),
                ("\"Bulls\"", "2018"),
                ("\"Bulls\"", "2020")
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        assert_eq!(
            pairs(
                "the growth of Japan and India in the next 10 and 20 years respectively",
                ("country", "\"Japan\""),
                ("years", "10")
            ),
            [("\"Japan\"", "10"), ("\"India\"", "20")].map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        // Two names of one list are two arguments' values.
        let calls = one_call_per_member(
            "the distance between New York and Boston",
            vec![
                ("origin", "\"New York\"".to_owned()),
                ("destination", "\"Boston\"".to_owned()),
            ],
        );
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn numbers_are_read_before_strings_and_strings_before_lists() {
        let order = |schema: Value| reading_order(&schema);
        assert!(
            order(serde_json::json!({"type": "integer"}))
                < order(serde_json::json!({"type": "string"}))
        );
        assert!(
            order(serde_json::json!({"type": "string"}))
                < order(serde_json::json!({"type": "array"}))
        );
        assert!(
            order(serde_json::json!({"type": "string", "enum": ["a"]}))
                < order(serde_json::json!({"type": "number"}))
        );
    }

    #[test]
    fn a_number_in_a_quoted_phrase_is_not_one_to_repeat_a_call_for() {
        let arguments = [
            ("account", serde_json::json!({"type": "string"}), true),
            ("days", serde_json::json!({"type": "integer"}), true),
        ];
        let quoted = values_of("the history of account '00125648' for 7 days", &arguments);
        assert_eq!(quoted.repeatable(&[]), 1);
        let bare = values_of("the history of account 00125648 for 7 days", &arguments);
        assert_eq!(bare.repeatable(&[]), 2);
    }

    #[test]
    fn a_call_repeats_only_for_numbers_of_the_kinds_its_first_call_took() {
        let number = serde_json::json!({"type": "number"});
        let flows = serde_json::json!({"type": "array", "items": {"type": "number"}});
        let arguments = [("rate", number.clone(), true), ("cash_flows", flows, true)];
        let question = "A project costs 5000 up front (so -5000), then pays back 1200, 1500, \
                        1800 and 2100 over four years. What's the NPV at an 8% discount rate?";
        let values = values_of(question, &arguments);
        // A percentage is not repeated by amounts and a count of years.
        assert_eq!(values.repeatable(&[("rate", "8".into())]), 1);
        // Of the same kinds, each counts.
        let arguments = [
            ("principal", number.clone(), true),
            ("rate", number.clone(), true),
            ("years", number, true),
        ];
        let question = "Compare a loan of $5000 at 5% for 10 years and $8000 at 4% for 12 years.";
        let values = values_of(question, &arguments);
        let first = [
            ("principal", "5000".to_owned()),
            ("rate", "5".to_owned()),
            ("years", "10".to_owned()),
        ];
        assert_eq!(values.repeatable(&first), 6);
        assert_eq!(values.repeatable(&first[..1]), 2);
        // A number a text value took is that value's.
        let arguments = [
            ("platform", serde_json::json!({"type": "string"}), true),
            ("rating", serde_json::json!({"type": "number"}), true),
        ];
        let question = "Find multiplayer games for Windows 10 rated at least 4.5.";
        let values = values_of(question, &arguments);
        let first = [
            ("platform", "\"Windows 10\"".to_owned()),
            ("rating", "4.5".to_owned()),
        ];
        assert_eq!(values.repeatable(&first), 1);
    }

    #[test]
    fn a_quoted_phrase_is_a_value_whole_or_none() {
        let question = "Details of the 'R vs Adams' legal case and the company's \"Google\" \
                        filings, its students' grades.";
        let words = word_spans(question);
        let phrases: Vec<String> = quoted_phrases(question, &words)
            .into_iter()
            .map(|(from, to)| question[words[from].0..words[to - 1].1].to_owned())
            .collect();
        assert_eq!(phrases, ["R vs Adams", "Google"]);
        let arguments = [("case_id", serde_json::json!({"type": "string"}), true)];
        let values = values_of(question, &arguments);
        assert_eq!(values.quote(3, 6), Some(true));
        assert_eq!(
            values.quote(3, 7),
            None,
            "a quoted phrase is a value by itself"
        );
        assert_eq!(
            values.quote(4, 6),
            None,
            "a span inside the quotes cuts them"
        );
        assert_eq!(values.quote(6, 8), Some(false));
        // The stops a quoted phrase ends with inside its quotes are the phrase's.
        let question = "Data of employee 345 in company 'ABC Ltd.' and of 'Hello!'.";
        let values = values_of(question, &arguments);
        let words = word_spans(question);
        let phrases: Vec<&str> = quoted_phrases(question, &words)
            .into_iter()
            .map(|(from, to)| values.span_text(from, to))
            .collect();
        assert_eq!(phrases, ["ABC Ltd.", "Hello!"]);
        assert_eq!(values.span_text(0, 2), "Data of");
    }

    #[test]
    fn a_value_is_named_when_the_words_beside_it_say_which_argument_it_is() {
        let arguments = [
            ("title", serde_json::json!({"type": "string"}), true),
            ("artist", serde_json::json!({"type": "string"}), true),
            ("width_cm", serde_json::json!({"type": "integer"}), true),
            ("year", serde_json::json!({"type": "integer"}), true),
            ("framed", serde_json::json!({"type": "boolean"}), false),
            (
                "medium",
                serde_json::json!({"type": "string", "enum": ["oil", "marble"]}),
                false,
            ),
        ];
        let question = "The painting with title 'Sunflowers' by Van Gogh, 92cm wide, in oil, 1888.";
        let values = values_of(question, &arguments);
        let named =
            |at: usize, value: &str| values.named(arguments[at].0, &arguments[at].1, value, &[]);
        assert!(named(0, "\"Sunflowers\""));
        assert!(
            !named(1, "\"Van Gogh\""),
            "likely, but nothing beside it says artist"
        );
        assert!(named(2, "92"));
        assert!(!named(3, "1888"), "no word says year");
        assert!(!named(4, "true"));
        assert!(named(5, "\"oil\""));
        assert!(!named(5, "\"marble\""));
    }

    #[test]
    fn a_list_argument_takes_the_members_numbers_or_names_the_question_lists() {
        let members = serde_json::json!({"type": "array", "items": {"type": "string",
            "enum": ["timings", "exhibitions", "accessibility", "history", "Scenic View"]}});
        let numbers = serde_json::json!({"type": "array", "items": {"type": "integer"}});
        let names = serde_json::json!({"type": "array", "items": {"type": "string"}});
        let arguments = [
            ("museum", serde_json::json!({"type": "string"}), true),
            ("features", members.clone(), true),
        ];
        let question = "About the Natural History Museum: its accessibility, timings and \
                        scenic views.";
        let values = values_of(question, &arguments);
        let used = ["\"Natural History Museum\"".to_owned()];
        assert_eq!(
            values.list_for("features", &members, &used).as_deref(),
            Some(r#"["accessibility","timings","Scenic View"]"#),
            "in the order named, and not the museum's own words"
        );
        assert!(values.named("features", &members, r#"["timings"]"#, &[]));
        assert!(!values.named("features", &members, r#"["exhibitions"]"#, &[]));
        assert_eq!(
            values_of("Tell me about the zoo.", &arguments).list_for("features", &members, &[]),
            None
        );
        let arguments = [
            ("group1", numbers.clone(), true),
            ("group2", numbers.clone(), true),
        ];
        let question = "Compare Group A [3, 4, 5] and Group B with 7, 8 and 9.";
        let values = values_of(question, &arguments);
        assert_eq!(
            values.list_for("group1", &numbers, &[]).as_deref(),
            Some("[3,4,5]")
        );
        assert_eq!(
            values.list_for("group2", &numbers, &[]).as_deref(),
            Some("[7,8,9]")
        );
        let arguments = [("parties", names.clone(), true)];
        let values = values_of("A contract between John and Alice in Texas.", &arguments);
        assert_eq!(
            values.list_for("parties", &names, &[]).as_deref(),
            Some(r#"["John","Alice"]"#)
        );
        assert_eq!(
            values.list_for("parties", &names, &["\"John\"".to_owned()]),
            None
        );
    }
}
