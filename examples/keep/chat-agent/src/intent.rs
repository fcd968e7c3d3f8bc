//! What a person's message asks for, decided from its words alone: a file's arrival, a plan, a
//! new tool, a page read with the tool, or a conversation with the model.
//!
//! People word a need in many ways, so nothing here matches whole phrases. The message is read
//! into words (lower case, apostrophes and hyphens dropped: `don't` is `dont`, `to-do` is
//! `todo`), each address (`http://` or `https://`) one word of its own, and each class of need
//! is recognised by the roles its words play:
//!
//! - **a plan**: a plan word (`plan`, `checklist`, `roadmap`, `to-do`, `itinerary`,
//!   `schedule`, `steps`, `step by step`) that is asked for (a request word before it in its
//!   sentence: `make`, `give`, `need`, `could`, `what`, `how`, ...; or `please`; or the
//!   sentence starting with it), `plan` used as a verb on an object (`help me plan my
//!   wedding`), or a way of asking for the order of things (`how do I go about`, `where do I
//!   start`, `walk me through`, `break it down`, `map out`, `help me prepare for`). The goal is
//!   what follows a linking word (`for`, `to`, `on`, `about`, `with`, ...) or the plan verb, to
//!   the end of the sentence, else another clause of the message (`I'm moving house in June,
//!   can you give me a plan?`); a plan word only asked about (`what is a roadmap?`) is not a
//!   request for one;
//! - **a new tool**: a tool word (`tool`, `plugin`, `connector`, `fetcher`, `scraper`, ...)
//!   governed by a making word a few words before it (`make`, `build`, `need`, `want`, `set
//!   up`, `new`, ...), or a vaguer thing (`something`, `a way`, `an app`, `a script`) governed
//!   so and followed by a reading word (`reads`, `fetches`, `checks`) and an address or a web
//!   word (`page`, `site`, `api`). A `use` between them, or a tool that already exists (`the
//!   tool`, `your tool` after `make`, `get`, `need`...), is not a request to make one;
//! - **the tool used**: an address and a reading word (`fetch`, `read`, `check`, `get`,
//!   `what's on`, `use`, ...), or an address with only a few small words around it; or `use`,
//!   `run`, `call`, `try` before a tool word with no address (then the agent asks for one);
//! - a word preceded closely by a negation (`don't`, `not`, `never`, `without`) does not count.
//!
//! When a message holds two needs, the one asked for first wins, except that a request to
//! make a tool always wins over using one (`I need a tool that can fetch https://...`). A
//! message that follows the agent's own question (what a plan is for, which address) is read by
//! [`answer`] as its answer, unless it asks for something itself.

mod plan_request;
#[cfg(test)]
mod tests;
mod tool_request;
mod url;
mod words;

use serde_json::Value;

pub use url::Url;
use url::{address_spans, parse_url};
use words::{DROPPING, NEGATION_REACH, NEGATIONS, QUESTIONS, REQUEST, Word, Words, words};

/// What a message asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intent {
    /// A file the host handed over (`{"file": {"name", "text"}}`): its name and size.
    File {
        name: String,
        lines: usize,
        bytes: usize,
    },
    /// A plan for `goal`; `None` when the message names no goal.
    Plan { goal: Option<String> },
    /// A new tool reading `url`; `None` when the message gives no usable address.
    MakeTool { url: Option<Url> },
    /// Reading `url` with the fetch tool; `None` when the message gives no usable address.
    UseTool { url: Option<Url> },
    /// Anything else: a conversation with the model.
    Chat,
}

/// Characters of a goal.
pub const GOAL_CHARS_MAX: usize = 200;

/// What `message` asks for.
pub fn intent(message: &str) -> Intent {
    if let Some(file) = file(message) {
        return file;
    }
    let reading = Reading::new(message);
    let url = reading.urls.first().cloned();
    let plan = reading.plan();
    let make = reading.make_tool();
    let use_tool = reading.use_tool();
    match (plan, make, use_tool) {
        (Some((plan_at, goal)), Some(make_at), _) if plan_at < make_at => Intent::Plan { goal },
        (_, Some(_), _) => Intent::MakeTool { url },
        (Some((plan_at, goal)), None, Some(use_at)) if plan_at < use_at => Intent::Plan { goal },
        (_, None, Some(_)) => Intent::UseTool { url },
        (Some((_, goal)), None, None) => Intent::Plan { goal },
        (None, None, None) => Intent::Chat,
    }
}

/// What the agent asked for in its last reply, which the next message may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaiting {
    /// What a plan is for.
    Goal,
    /// Which address a new tool should read.
    ToolAddress,
    /// Which address to fetch.
    FetchAddress,
}

/// What `message` asks for when it follows the agent's question `awaiting`: a message that
/// asks for something itself is read as such; otherwise a goal is the message itself, and an
/// address is the first one in it.
pub fn answer(awaiting: Awaiting, message: &str) -> Intent {
    let read = intent(message);
    let reading = Reading::new(message);
    let dropped = reading.words.iter().enumerate().any(|(index, word)| {
        DROPPING.has(word.text.as_str())
            || (word.text == "mind" && reading.text_before(index) == "never")
    });
    let url = reading.urls.first().cloned();
    match (awaiting, read) {
        (Awaiting::Goal, Intent::Chat) if !dropped => {
            let goal = reading.goal(0..reading.words.len());
            if goal.is_some() {
                Intent::Plan { goal }
            } else {
                Intent::Chat
            }
        }
        (Awaiting::ToolAddress, Intent::Chat | Intent::UseTool { .. }) if url.is_some() => {
            Intent::MakeTool { url }
        }
        (Awaiting::FetchAddress, Intent::Chat) if url.is_some() => Intent::UseTool { url },
        (_, read) => read,
    }
}

/// The one message form that is JSON: a file the host hands over when its person uploads one.
fn file(message: &str) -> Option<Intent> {
    if !message.trim_start().starts_with('{') {
        return None;
    }
    let value: Value = serde_json::from_str(message).ok()?;
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let file = object.get("file")?;
    let name = file.get("name")?.as_str()?;
    let text = file.get("text")?.as_str()?;
    Some(Intent::File {
        name: name.to_owned(),
        lines: text.lines().count(),
        bytes: text.len(),
    })
}

/// A message read into words and addresses.
struct Reading<'a> {
    message: &'a str,
    words: Vec<Word>,
    /// The addresses that could be read, in order.
    urls: Vec<Url>,
}

impl<'a> Reading<'a> {
    fn new(message: &'a str) -> Self {
        let spans = address_spans(message);
        let urls = spans
            .iter()
            .filter_map(|&(start, end)| parse_url(&message[start..end]))
            .collect();
        let words = words(message, &spans);
        Reading {
            message,
            words,
            urls,
        }
    }

    fn text(&self, index: usize) -> &str {
        self.words.get(index).map_or("", |word| word.text.as_str())
    }

    fn is(&self, index: usize, list: Words) -> bool {
        list.has(self.text(index))
    }

    fn same_sentence(&self, a: usize, b: usize) -> bool {
        match (self.words.get(a), self.words.get(b)) {
            (Some(a), Some(b)) => a.sentence == b.sentence,
            _ => false,
        }
    }

    /// The word before `index` in its sentence, if any.
    fn before(&self, index: usize) -> Option<usize> {
        let before = index.checked_sub(1)?;
        self.same_sentence(before, index).then_some(before)
    }

    /// The word after `index` in its sentence, if any.
    fn after(&self, index: usize) -> Option<usize> {
        let after = index + 1;
        self.same_sentence(index, after).then_some(after)
    }

    fn text_before(&self, index: usize) -> &str {
        self.before(index).map_or("", |before| self.text(before))
    }

    fn text_after(&self, index: usize) -> &str {
        self.after(index).map_or("", |after| self.text(after))
    }

    /// How many words of its sentence come before `index`.
    fn position_in_sentence(&self, index: usize) -> usize {
        let mut position = 0;
        let mut at = index;
        while let Some(before) = self.before(at) {
            position += 1;
            at = before;
        }
        position
    }

    /// Whether a negation stands just before `index`.
    fn negated(&self, index: usize) -> bool {
        (index.saturating_sub(NEGATION_REACH)..index)
            .any(|before| self.same_sentence(before, index) && self.is(before, NEGATIONS))
    }

    /// Whether the word at `index` asks for something (`like` only as `would like`).
    fn requests(&self, index: usize) -> bool {
        let word = self.text(index);
        if word == "like" || word == "love" {
            return matches!(self.text_before(index), "would" | "id" | "wed");
        }
        REQUEST.has_form(word) && !self.negated(index)
    }

    /// Whether what stands at `index` is asked for: a request word before it in its sentence,
    /// or `please` anywhere.
    fn asked_for(&self, index: usize) -> bool {
        (0..index).any(|before| self.same_sentence(before, index) && self.requests(before))
            || self.words.iter().any(|word| word.text == "please")
    }

    /// Whether what stands at `index` is asked for by more than a question word: `make`,
    /// `need`, `give`, `please`...
    fn asked_for_by_action(&self, index: usize) -> bool {
        (0..index).any(|before| {
            self.same_sentence(before, index)
                && self.requests(before)
                && !self.is(before, QUESTIONS)
        }) || self.words.iter().any(|word| word.text == "please")
    }
}
