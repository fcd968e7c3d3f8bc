//! A tool asked for, or the tool used: a tool word governed by a making word (`I need a tool
//! that can fetch ...`), and an address with a reading word (`fetch https://...`).

use super::Reading;
use super::words::*;

impl Reading<'_> {
    /// Where the message asks for a new tool: its making word.
    pub(super) fn make_tool(&self) -> Option<usize> {
        (0..self.words.len()).find_map(|index| self.make_tool_at(index))
    }

    fn make_tool_at(&self, noun: usize) -> Option<usize> {
        let word = self.text(noun);
        let strong = TOOL_NOUNS.has_form(word);
        if !strong && !THING_NOUNS.has_form(word) {
            return None;
        }
        let maker = (noun.saturating_sub(MAKE_REACH)..noun)
            .rev()
            .filter(|&at| self.same_sentence(at, noun))
            .find(|&at| self.makes(at))?;
        if (maker + 1..noun).any(|at| USE.has_form(self.text(at))) || self.negated(maker) {
            return None;
        }
        let soft = MAKE_SOFT.has_form(self.text(maker));
        if soft && (maker + 1..noun).any(|at| self.is(at, EXISTING)) {
            return None;
        }
        if !strong && !self.reads_from_the_web(noun) {
            return None;
        }
        Some(maker)
    }

    /// Whether the word at `index` makes something (`like` only as `would like`).
    fn makes(&self, index: usize) -> bool {
        let word = self.text(index);
        if word == "like" {
            return matches!(self.text_before(index), "would" | "id" | "wed");
        }
        MAKE.has_form(word)
    }

    /// Whether a vague thing at `noun` reads from the web: a reading word soon after it, and
    /// an address or a web word in the message.
    fn reads_from_the_web(&self, noun: usize) -> bool {
        let reads = (noun + 1..noun + 7)
            .any(|at| self.same_sentence(noun, at) && READ.has_form(self.text(at)));
        let web = !self.urls.is_empty() || self.words.iter().any(|word| WEB.has_form(&word.text));
        reads && web
    }

    // ---- the tool used ----

    /// Where the message asks to read an address, or to use the tool without one.
    pub(super) fn use_tool(&self) -> Option<usize> {
        let address = self.words.iter().position(|word| word.address);
        let Some(address) = address else {
            // `use the tool`, `run the fetch tool`: the agent asks which address.
            return (0..self.words.len()).find(|&index| {
                USE.has_form(self.text(index))
                    && !self.negated(index)
                    && (index + 1..index + 4).any(|at| {
                        self.same_sentence(index, at)
                            && (TOOL_NOUNS.has_form(self.text(at)) || self.text(at) == "fetch")
                    })
            });
        };
        let reading = (0..self.words.len()).find(|&index| {
            !self.words[index].address && READ.has_form(self.text(index)) && !self.negated(index)
        });
        if let Some(reading) = reading {
            return Some(reading.min(address));
        }
        let only_small_words = self
            .words
            .iter()
            .all(|word| word.address || AROUND_ADDRESS.has(word.text.as_str()));
        (only_small_words && self.words.len() <= 6).then_some(address)
    }
}
