//! A plan for a goal: what to ask the model, the steps read from its answer, and the payload of
//! a `plan` proposal within the host's bounds (docs/keep/proposals.md).

use serde_json::json;

use crate::text::{cut_chars, plain};

/// Characters of a plan's title (the host's bound).
pub const TITLE_CHARS_MAX: usize = 120;
/// Steps in a plan (the host's bound).
pub const STEPS_MAX: usize = 20;
/// Characters of one step (the host's bound).
pub const STEP_CHARS_MAX: usize = 500;
/// Bytes of a proposal's payload as JSON (the host's bound is 16 KiB; a margin is kept).
pub const PAYLOAD_BYTES_MAX: usize = 15 * 1024;
/// Lines of the model's answer read for steps.
const ANSWER_LINES_MAX: usize = 200;

/// The system prompt of a plan.
pub const SYSTEM_PROMPT: &str = "You write short, practical plans. Answer with a numbered list \
of 3 to 7 steps for the person's goal, one step per line, each step one plain sentence. No \
introduction, no headings, no closing remarks.";

/// What the model is asked for `goal`.
pub fn request(goal: &str) -> String {
    format!("My goal: {goal}\nWrite the numbered steps.")
}

/// The plan's title.
pub fn title(goal: &str) -> String {
    cut_chars(&format!("Plan: {goal}"), TITLE_CHARS_MAX)
}

/// The steps in the model's `answer`: its numbered or bulleted lines when it has any (the
/// lines around them are its preamble and closing), else its lines that are not a heading or
/// a preamble; numbering, bullets and emphasis taken off, each cut to the host's bound, at
/// most [`STEPS_MAX`].
pub fn steps_from(answer: &str) -> Vec<String> {
    let lines: Vec<(bool, String)> = answer
        .lines()
        .take(ANSWER_LINES_MAX)
        .map(clean_line)
        .filter(|(_, text)| !text.is_empty())
        .collect();
    let marked = lines.iter().any(|(marked, _)| *marked);
    lines
        .into_iter()
        .filter(|(is_marked, text)| {
            if marked {
                *is_marked
            } else {
                !text.ends_with(':') && !is_preamble(text)
            }
        })
        .map(|(_, text)| cut_chars(&text, STEP_CHARS_MAX))
        .take(STEPS_MAX)
        .collect()
}

/// Steps for `goal` when the model gave none to use (it could not be reached, or its answer
/// had no line to read as a step): the general shape of getting anything done, so the person
/// still gets a plan to edit rather than nothing.
pub fn fallback_steps(goal: &str) -> Vec<String> {
    let goal = cut_chars(goal, 200);
    vec![
        format!("Write down what done looks like for: {goal}."),
        "List what it needs (time, money, people, things) and what you already have.".to_owned(),
        "Break it into small tasks and put them in order.".to_owned(),
        "Give each task a date, and do the first one.".to_owned(),
        "Once a week, check what is done and adjust the rest.".to_owned(),
    ]
}

/// The `plan` proposal's payload: `steps` (at least one) cut so the JSON stays within
/// [`PAYLOAD_BYTES_MAX`]; the steps kept are returned with it.
pub fn payload(title: &str, steps: &[String]) -> (String, Vec<String>) {
    let mut kept: Vec<String> = steps.iter().take(STEPS_MAX).cloned().collect();
    loop {
        let payload = json!({ "title": title, "steps": kept }).to_string();
        if payload.len() <= PAYLOAD_BYTES_MAX || kept.len() <= 1 {
            return (payload, kept);
        }
        kept.pop();
    }
}

/// The reply after a plan was proposed: its title and steps, and `note` on where they came
/// from when they are general ones.
pub fn proposed_reply(title: &str, steps: &[String], note: Option<&str>) -> String {
    let mut reply = format!(
        "I proposed a plan, \"{title}\", for you to accept or reject (beside this \
         conversation, and in Proposals):\n"
    );
    for (number, step) in steps.iter().enumerate() {
        reply.push_str(&format!("\n{}. {step}", number + 1));
    }
    if let Some(note) = note {
        reply.push_str("\n\n");
        reply.push_str(note);
    }
    reply
}

/// A line of the answer without its numbering, bullet and emphasis, and whether it had a
/// number or bullet.
fn clean_line(line: &str) -> (bool, String) {
    let line = plain(line).replace("**", "").replace("__", "");
    let mut text = line.trim().trim_start_matches('#').trim_start();
    let mut marked = false;
    if let Some(rest) = text.strip_prefix(['-', '*', '•', '–', '—', '+', '·', '▪', '◦'])
        && (rest.starts_with(' ') || rest.is_empty())
    {
        text = rest.trim_start();
        marked = true;
    }
    // `1. Step 1: ...`: a number, then the model's own "Step 1:" again. Each pass takes at
    // least a digit off, so this ends.
    while let Some(rest) = strip_number(text) {
        text = rest;
        marked = true;
    }
    (marked, text.trim().to_owned())
}

/// `text` without a leading `1.`, `2)`, `(3)`, `4:`, `5 -`, `Step 6:` or `Step 7.`.
fn strip_number(text: &str) -> Option<&str> {
    let mut rest = text;
    let lower = rest.to_ascii_lowercase();
    if lower.starts_with("step ") {
        rest = rest[5..].trim_start();
    }
    let opened = rest.strip_prefix('(');
    let inner = opened.unwrap_or(rest);
    let digits = inner.len() - inner.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 3 {
        return None;
    }
    let after = &inner[digits..];
    let after = if opened.is_some() {
        after.strip_prefix(')')?
    } else if let Some(after) = after.strip_prefix(['.', ')', ':']) {
        after
    } else {
        after.trim_start().strip_prefix(['-', '–', '—'])?
    };
    // `2024 was a good year` is not numbered: a number is followed by a space or nothing.
    (after.is_empty() || after.starts_with(' ')).then(|| after.trim_start())
}

/// Whether an unnumbered line is the model talking about its answer rather than a step.
fn is_preamble(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "sure",
        "here is",
        "here are",
        "here's",
        "of course",
        "certainly",
        "okay",
        "ok,",
        "good luck",
        "i hope",
        "hope this",
        "let me know",
    ]
    .iter()
    .any(|start| lower.starts_with(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(answer: &str, expected: &[&str]) {
        assert_eq!(steps_from(answer), expected, "for {answer:?}");
    }

    #[test]
    fn numbered_and_bulleted_lines_are_the_steps() {
        check(
            "Sure! Here is a plan:\n\n1. Book a van.\n2) Pack the kitchen\n3: Tell the post office\n\nGood luck!",
            &["Book a van.", "Pack the kitchen", "Tell the post office"],
        );
        check(
            "- Book a van\n* Pack\n• Label boxes\n+ Move",
            &["Book a van", "Pack", "Label boxes", "Move"],
        );
        check(
            "**Step 1:** Decide the date\nStep 2. Book the van\n(3) Pack\n4 - Move\n### 5. Unpack",
            &["Decide the date", "Book the van", "Pack", "Move", "Unpack"],
        );
        check(
            "1. **Book** a van\n   - call three firms\n2. Pack",
            &["Book a van", "call three firms", "Pack"],
        );
    }

    #[test]
    fn without_numbers_every_line_but_the_preamble_is_a_step() {
        check(
            "Here are the steps:\nBook a van\nPack the kitchen\nI hope this helps",
            &["Book a van", "Pack the kitchen"],
        );
        check("Steps:\n\nBook a van", &["Book a van"]);
    }

    #[test]
    fn a_step_numbered_twice_loses_both_numbers() {
        check(
            "1. Step 1: Choose a corner\n2. Step 2: Sort the boxes",
            &["Choose a corner", "Sort the boxes"],
        );
    }

    #[test]
    fn numbers_that_are_not_numbering_stay() {
        check(
            "2024 was a good year to move\n10km is far",
            &["2024 was a good year to move", "10km is far"],
        );
        assert_eq!(strip_number("12345. x"), None);
        assert_eq!(strip_number("1.5 litres"), None);
    }

    #[test]
    fn nothing_usable_gives_no_steps() {
        check("", &[]);
        check("\n\n   \n", &[]);
        check("Here is a plan:\n1.\n2. \n-", &[]);
    }

    #[test]
    fn steps_are_bounded() {
        let many: String = (1..=40).map(|n| format!("{n}. step {n}\n")).collect();
        assert_eq!(steps_from(&many).len(), STEPS_MAX);
        let long = format!("1. {}", "x".repeat(2_000));
        let steps = steps_from(&long);
        assert_eq!(steps[0].chars().count(), STEP_CHARS_MAX);
        assert!(steps[0].ends_with('…'));
        check("1. a\u{1b}[31mb\u{0}c", &["a[31mbc"]);
    }

    #[test]
    fn the_payload_stays_within_the_hosts_bound() {
        let wide = "語".repeat(STEP_CHARS_MAX);
        let steps: Vec<String> = (0..STEPS_MAX).map(|_| wide.clone()).collect();
        let (payload, kept) = payload(&title("x"), &steps);
        assert!(payload.len() <= PAYLOAD_BYTES_MAX);
        assert!(!kept.is_empty() && kept.len() < STEPS_MAX);
        let value: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(value["title"], "Plan: x");
        assert_eq!(value["steps"].as_array().unwrap().len(), kept.len());
    }

    #[test]
    fn the_reply_lists_the_steps() {
        let steps = vec!["Book a van".to_owned(), "Pack".to_owned()];
        assert_eq!(
            proposed_reply("Plan: moving house", &steps, Some("General steps.")),
            "I proposed a plan, \"Plan: moving house\", for you to accept or reject (beside \
             this conversation, and in Proposals):\n\n1. Book a van\n2. Pack\n\nGeneral steps."
        );
    }

    #[test]
    fn titles_and_fallback_steps_keep_the_bounds() {
        assert_eq!(title("moving house"), "Plan: moving house");
        assert_eq!(title(&"a".repeat(300)).chars().count(), TITLE_CHARS_MAX);
        let steps = fallback_steps(&"g".repeat(1_000));
        assert!((1..=STEPS_MAX).contains(&steps.len()));
        assert!(
            steps
                .iter()
                .all(|step| (1..=STEP_CHARS_MAX).contains(&step.chars().count()))
        );
        assert!(steps[0].contains("ggg"));
    }
}
