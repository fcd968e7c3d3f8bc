//! A plan asked for: a plan word asked for (`make me a plan for ...`, `what steps should I
//! take to ...`), `plan` used as a verb (`help me plan my wedding`), or a way of asking for the
//! order of things (`how do I go about ...`, `walk me through ...`); and the goal it names.

use std::ops::Range;

use super::words::*;
use super::{GOAL_CHARS_MAX, Reading};

impl Reading<'_> {
    /// Where the message asks for a plan, and the plan's goal.
    pub(super) fn plan(&self) -> Option<(usize, Option<String>)> {
        let mut first = None;
        for index in 0..self.words.len() {
            let Some(goal) = self.plan_at(index) else {
                continue;
            };
            let goal = goal.and_then(|words| self.goal(words));
            if goal.is_some() {
                return Some((index, goal));
            }
            // Without a goal, only a plan asked for by more than a question: `make me a plan`,
            // `break it down`, never `what is a roadmap?` or `how should we go about it?`. Its
            // goal may be in another clause: `I'm moving house in June, can you give me a plan?`
            if self.is(index, PLAN_ACTIONS) || self.asked_for_by_action(index) {
                first.get_or_insert_with(|| (index, self.goal_elsewhere(index)));
            }
        }
        first
    }

    /// Whether the word at `index` asks for a plan, and the words of its goal if it names one.
    fn plan_at(&self, index: usize) -> Option<Option<Range<usize>>> {
        let word = self.text(index);
        let next = self.after(index);
        let next_text = self.text_after(index);
        if self.negated(index) {
            return None;
        }
        // `step by step`, written in three words or one.
        if word == "stepbystep" || (word == "step" && next_text == "by") {
            let end = if word == "stepbystep" {
                index + 1
            } else {
                index + 3
            };
            return self.plan_noun(index, end);
        }
        if word == "steps" || word == "step" {
            let qualified = STEPS_BEFORE.has(self.text_before(index)) || STEPS_AFTER.has(next_text);
            return if qualified {
                self.plan_noun(index, index + 1)
            } else {
                None
            };
        }
        if word == "plan" {
            if PLAN_EXISTS_NEXT.has(next_text) {
                return None;
            }
            let before = self.text_before(index);
            if SUBJECTS.has(before) && matches!(next_text, "to" | "on") {
                return None;
            }
            let verb = self.before(index).is_none() || PLAN_VERB_BEFORE.has(before);
            if verb && PLAN_VERB_OBJECT.has(next_text) {
                return Some(next.map(|next| self.rest(self.goal_after(next))));
            }
        }
        // `to do list`, in three words.
        if word == "list"
            && self.text_before(index) == "do"
            && self.text(index.wrapping_sub(2)) == "to"
        {
            return self.plan_noun(index, index + 1);
        }
        if PLAN_NOUNS.has(word) {
            // `can you schedule a meeting`: a verb, not a plan.
            let before = self.text_before(index);
            if word != "plan" && (PLAN_VERB_BEFORE.has(before) || SUBJECTS.has(before)) {
                return None;
            }
            return self.plan_noun(index, index + 1);
        }
        self.plan_phrase_at(index)
    }

    /// A plan noun (or `steps`) at `index`, its words ending before `after`: asked for, or
    /// opening its sentence with a goal (`Steps to bake bread`).
    fn plan_noun(&self, index: usize, after: usize) -> Option<Option<Range<usize>>> {
        let goal = self
            .connector_goal(index, after)
            .map(|start| self.rest(start))
            .or_else(|| self.goal_before(index).map(|start| start..index));
        let leading = self.position_in_sentence(index) <= 1 && goal.is_some();
        (self.asked_for(index) || leading).then_some(goal)
    }

    /// A goal in another clause than the plan word's at `index`: the nearest before it, else the
    /// nearest after it, of at least two words and not a greeting or a question.
    fn goal_elsewhere(&self, index: usize) -> Option<String> {
        let anchor = self.words.get(index)?.clause;
        let last = self.words.last()?.clause;
        let before = (0..anchor).rev();
        let after = anchor + 1..=last;
        before.chain(after).find_map(|clause| {
            let start = self.words.iter().position(|word| word.clause == clause)?;
            let end = start
                + self.words[start..]
                    .iter()
                    .take_while(|word| word.clause == clause)
                    .count();
            let useful = end - start >= 2
                && !self.is(start, NOT_GOALS)
                && !(start..end).any(|at| self.words[at].address || self.is(at, PLAN_NOUNS));
            if useful { self.goal(start..end) } else { None }
        })
    }

    /// Words `start..` to the end of their sentence.
    fn rest(&self, start: usize) -> Range<usize> {
        let mut end = start;
        while self.same_sentence(start, end) {
            end += 1;
        }
        start..end
    }

    /// The ways of asking for the order of things that have no plan word.
    fn plan_phrase_at(&self, index: usize) -> Option<Option<Range<usize>>> {
        let word = self.text(index);
        let next_text = self.text_after(index);
        let earlier = |reach: usize, what: &str| {
            (index.saturating_sub(reach)..index)
                .any(|before| self.same_sentence(before, index) && self.text(before) == what)
        };
        let start = match word {
            // how do I go about ..., how to go about ...
            "go" if next_text == "about" && earlier(4, "how") => index + 2,
            // how do I get started with ...
            "started"
                if self.text_before(index) == "get"
                    && matches!(next_text, "with" | "on")
                    && (earlier(4, "how") || earlier(4, "where") || earlier(4, "help")) =>
            {
                index + 2
            }
            // where do I start with ..., where should we begin
            "start" | "begin" if earlier(4, "where") && (earlier(3, "i") || earlier(3, "we")) => {
                self.goal_after(index + 1)
            }
            // walk me through ...
            "walk" if matches!(next_text, "me" | "us") && self.text(index + 2) == "through" => {
                self.goal_after(index + 3)
            }
            // break down ..., break moving house down
            "break" if self.asked_or_leading(index) => {
                if next_text == "down" {
                    index + 2
                } else {
                    let down = (index + 2..index + 8)
                        .take_while(|&at| self.same_sentence(index, at))
                        .find(|&at| self.text(at) == "down")?;
                    return Some(Some(index + 1..down));
                }
            }
            // map out ..., lay out ..., sketch out ...
            "map" | "lay" | "sketch" if next_text == "out" && self.asked_or_leading(index) => {
                self.goal_after(index + 2)
            }
            // what should I do first to ..., what do we need to do to ...
            "do" if earlier(5, "what") && (earlier(3, "i") || earlier(3, "we")) => {
                return self
                    .connector_goal(index, index + 1)
                    .map(|start| Some(self.rest(start)));
            }
            _ => return self.plan_verb_at(index),
        };
        Some(self.same_sentence(index, start).then(|| self.rest(start)))
    }

    /// A plan verb in any of its forms: `help me prepare for ...`, `I need help organising my
    /// wedding`, `organise my week`, `can you outline how to ...`.
    fn plan_verb_at(&self, index: usize) -> Option<Option<Range<usize>>> {
        let word = self.text(index);
        let verb = PLAN_VERBS.form_of(word)?;
        if verb == "plan" && word == "plan" {
            return None;
        }
        let helped = (index.saturating_sub(3)..index)
            .any(|before| self.same_sentence(before, index) && self.text(before) == "help");
        let asked = match verb {
            // `prepare` and `get ready` only with help: `can you prepare a summary` is no plan.
            "prepare" | "ready" => helped,
            _ => helped || (self.asked_or_leading(index) && self.verb_position(index)),
        };
        if !asked {
            return None;
        }
        let start = self.goal_after(index + 1);
        Some(self.same_sentence(index, start).then(|| self.rest(start)))
    }

    /// Whether the word at `index` stands where a verb asked for does: opening its sentence or
    /// after `you`, `me`, `please`, `to`, `let's`.
    fn verb_position(&self, index: usize) -> bool {
        self.before(index).is_none() || PLAN_VERB_BEFORE.has(self.text_before(index))
    }

    /// Whether a plan word at `index` is asked for, or opens its sentence (`Steps to bake
    /// bread`).
    fn asked_or_leading(&self, index: usize) -> bool {
        self.asked_for(index) || self.position_in_sentence(index) <= 1
    }

    /// Where the goal starts after a plan noun at `anchor` whose words end before `from`:
    /// after the first linking word a few words on (`a plan for moving house`, `steps I should
    /// take to sell my car`).
    fn connector_goal(&self, anchor: usize, from: usize) -> Option<usize> {
        for at in from..from + CONNECTOR_REACH {
            if !self.same_sentence(anchor, at) {
                return None;
            }
            match (self.text(at), self.text(at + 1), self.text(at + 2)) {
                ("in", "order", "to") => return Some(at + 3),
                // `steps in baking bread`, but not `the steps I take in ...`.
                ("in", _, _) if at != from => continue,
                ("so", "that", _) => return Some(at + 2),
                (word, _, _) if CONNECTORS.has(word) => return Some(at + 1),
                _ => continue,
            }
        }
        None
    }

    /// Where the goal starts after a plan verb's filler words (`plan out a trip to Rome`:
    /// `trip to Rome`; `map out the steps for moving`: `moving`).
    fn goal_after(&self, from: usize) -> usize {
        let mut at = from;
        while self.same_sentence(from, at) && self.is(at, PLAN_FILLER) {
            at += 1;
        }
        if self.same_sentence(from, at) && self.is(at, CONNECTORS) {
            at += 1;
        }
        at
    }

    /// Where a goal written before a plan noun starts (`a moving house plan`).
    fn goal_before(&self, index: usize) -> Option<usize> {
        let mut start = index;
        while let Some(before) = self.before(start) {
            if index - before > 5
                || self.words[before].address
                || self.is(before, BACK_STOP)
                || self.requests(before)
            {
                break;
            }
            start = before;
        }
        (start < index).then_some(start)
    }

    /// The goal in `words`, without the courtesies around it.
    pub(super) fn goal(&self, words: Range<usize>) -> Option<String> {
        let Range { mut start, mut end } = words;
        end = end.min(self.words.len());
        // Leading words that only say the person has a goal: `I want to`, `I'm`.
        if let Some(having) = HAVING_A_GOAL.iter().find(|having| {
            having
                .iter()
                .enumerate()
                .all(|(n, word)| self.text(start + n) == *word)
        }) && start + having.len() < end
        {
            start += having.len();
        }
        // Leading words that only say a goal comes: `how to`, `how I can`.
        if self.text(start) == "how" {
            match (self.text(start + 1), self.text(start + 2)) {
                ("to", _) => start += 2,
                ("i" | "we", "can" | "should" | "could" | "would") => start += 3,
                ("i" | "we", _) => start += 2,
                _ => {}
            }
        }
        // Trailing courtesies and restatements: `please`, `for me`, `into steps`.
        loop {
            let last = |back: usize| {
                end.checked_sub(back)
                    .filter(|&at| at >= start)
                    .map_or("", |at| self.text(at))
            };
            let drop = match (last(3), last(2), last(1)) {
                (_, _, "please" | "thanks" | "thx" | "stepbystep" | "now") => 1,
                (_, "thank", "you") | (_, "for", "me" | "us") | (_, "into" | "in", "steps") => 2,
                ("step", "by", "step") => 3,
                _ => 0,
            };
            if drop == 0 || end < start + drop + 1 {
                break;
            }
            end -= drop;
        }
        if end <= start || end > self.words.len() {
            return None;
        }
        if end == start + 1 && EMPTY_GOALS.has(self.text(start)) {
            return None;
        }
        let text = &self.message[self.words[start].start..self.words[end - 1].end];
        let goal = crate::text::cut_chars(
            &crate::text::plain(&text.replace('\n', " ")),
            GOAL_CHARS_MAX,
        );
        (!goal.is_empty()).then_some(goal)
    }
}
