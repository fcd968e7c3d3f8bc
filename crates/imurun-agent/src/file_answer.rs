//! Answers about a file hold the file. When the turn read a file the prompt names, a count
//! the prompt asks for ("how many items ...") is made from the file's text, never left to
//! the model; and an answer whose content words are mostly not in the file (a small model's
//! invented summary) is replaced by an extract of the file itself: the lines asked for, the
//! section the prompt names, the lines holding what it asks about, or its headings and
//! first lines. A fixed reading, never the model's; `docs/agent-loop.md`, "Answers about a
//! file".

/// The least share of an answer's content words that must be the file's.
pub(crate) const OVERLAP_MIN: f64 = 0.6;

/// Answers with fewer content words than this are not judged by overlap ("Friday.").
const CONTENT_WORDS_MIN: usize = 3;

/// The most lines an extract quotes, and the most characters.
const EXTRACT_LINES_MAX: usize = 12;
const EXTRACT_CHARS_MAX: usize = 1200;

/// Items a count names, at most.
const COUNT_ITEMS_SHOWN: usize = 12;

/// Words that say what an answer about a file is doing rather than what the file says.
const FRAMING: &[&str] = &[
    "about",
    "above",
    "also",
    "answer",
    "based",
    "below",
    "contains",
    "content",
    "contents",
    "describes",
    "document",
    "file",
    "files",
    "following",
    "from",
    "here",
    "heres",
    "into",
    "item",
    "items",
    "line",
    "lines",
    "list",
    "lists",
    "main",
    "mentions",
    "note",
    "notes",
    "overview",
    "point",
    "points",
    "quote",
    "says",
    "section",
    "sections",
    "short",
    "summary",
    "that",
    "their",
    "there",
    "these",
    "this",
    "those",
    "what",
    "which",
    "with",
    "your",
    "have",
    "will",
    "would",
    "should",
    "could",
    "they",
    "them",
    "then",
    "than",
    "when",
    "where",
    "written",
    "text",
    "called",
    "named",
    "shows",
    "include",
    "includes",
    "including",
];

/// Words of a question that say nothing about which lines it wants.
const QUESTION_WORDS: &[&str] = &[
    "what",
    "what's",
    "whats",
    "which",
    "who",
    "whom",
    "whose",
    "where",
    "when",
    "does",
    "did",
    "the",
    "and",
    "for",
    "are",
    "was",
    "were",
    "according",
    "per",
    "file",
    "say",
    "says",
    "tell",
    "show",
    "give",
    "please",
    "there",
    "here",
    "any",
    "many",
    "much",
    "how",
    "this",
    "that",
    "with",
    "from",
    "about",
    "need",
    "should",
    "have",
    "has",
    "its",
    "it's",
    "her",
    "his",
    "their",
    "my",
    "me",
    "you",
    "can",
    "could",
    "would",
    "is",
    "in",
    "on",
    "of",
    "to",
    "a",
    "an",
    "i",
    "do",
    "going",
    "by",
    "list",
    "quote",
    "summarise",
    "summarize",
    "sum",
    "gist",
    "overview",
    "short",
    "brief",
    "read",
    "open",
    "what's",
    "number",
];

/// What a file answer is, and why it replaced the model's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileAnswer {
    pub(crate) text: String,
    pub(crate) reason: String,
}

/// The answer made from the file `name` (its `text`) for `prompt`, when one must replace
/// `answer`: always for a count; for anything else when fewer than `OVERLAP_MIN` of the
/// answer's content words are the file's.
pub(crate) fn from_file(prompt: &str, name: &str, text: &str, answer: &str) -> Option<FileAnswer> {
    if let Some(noun) = counted_noun(prompt) {
        return Some(FileAnswer {
            text: count(name, text, &noun),
            reason: format!("the count of {noun} is made from `{name}` itself"),
        });
    }
    if let Some(part) = asked_part(prompt, text) {
        return Some(FileAnswer {
            text: extract(prompt, name, text),
            reason: format!("the prompt asks for {part} of `{name}`: quoted from the file itself"),
        });
    }
    if let Some(missing) = asked_but_missing(prompt, name, text, answer) {
        return Some(FileAnswer {
            text: extract(prompt, name, text),
            reason: format!(
                "the answer leaves out \"{missing}\", which the question asks about and `{name}` \
                 holds: the file's lines about it stand in"
            ),
        });
    }
    let share = made_of(answer, text, prompt, name);
    (share < OVERLAP_MIN).then(|| FileAnswer {
        text: extract(prompt, name, text),
        reason: format!(
            "{:.0}% of the answer's content words are in `{name}` (at least {:.0}% must be): \
             an extract of the file stands in",
            share * 100.0,
            OVERLAP_MIN * 100.0
        ),
    })
}

/// A word the question asks about (not a question word, not the file's name; four letters or
/// more) that the file holds but the answer does not: "Which supplier is based in Harthill?"
/// answered without Harthill's line.
fn asked_but_missing(prompt: &str, name: &str, text: &str, answer: &str) -> Option<String> {
    let in_file: std::collections::HashSet<String> = words(text).map(|word| stem(&word)).collect();
    let in_answer: std::collections::HashSet<String> =
        words(answer).map(|word| stem(&word)).collect();
    let name = name.to_lowercase();
    let asked: Vec<String> = words(prompt)
        .filter(|word| word.chars().count() >= 4 && !QUESTION_WORDS.contains(&word.as_str()))
        .filter(|word| !FRAMING.contains(&word.as_str()) && !name.contains(word.as_str()))
        .filter(|word| in_file.contains(&stem(word)))
        .collect();
    // Only a distinctive word counts: one that a few of the file's lines hold, not most.
    let lines: Vec<String> = text.lines().map(str::to_lowercase).collect();
    asked
        .into_iter()
        .filter(|word| {
            let holding = lines
                .iter()
                .filter(|line| words(line).any(|w| stem(&w) == stem(word)))
                .count();
            holding * 3 <= lines.iter().filter(|line| !line.trim().is_empty()).count()
        })
        .find(|word| !in_answer.contains(&stem(word)))
}

/// The part of the file a prompt asks for by its place or its heading ("the first line", "the
/// headings", "the action items" when the file has that heading), said for a person.
fn asked_part(prompt: &str, text: &str) -> Option<&'static str> {
    let lower = prompt.to_lowercase();
    if lower.contains("first line") {
        return Some("the first line");
    }
    if lower.contains("last line") {
        return Some("the last line");
    }
    if words(&lower).any(|word| HEADING_WORDS.contains(&word.as_str())) {
        return Some("the headings");
    }
    let lines: Vec<&str> = text.lines().collect();
    named_section(&lines, &lower).map(|_| "a section")
}

/// Words that ask for a file's headings.
const HEADING_WORDS: &[&str] = &["heading", "headings", "sections", "titles", "headers"];

/// The share of `answer`'s content words (four letters or more, framing words, the prompt's
/// words and the file's name aside) that occur in `file`; 1 for an answer with fewer than
/// `CONTENT_WORDS_MIN`.
pub(crate) fn made_of(answer: &str, file: &str, prompt: &str, name: &str) -> f64 {
    let in_file: std::collections::HashSet<String> = words(file).map(|word| stem(&word)).collect();
    let asked: std::collections::HashSet<String> = words(prompt)
        .chain(words(name))
        .map(|word| stem(&word))
        .collect();
    let content: Vec<String> = words(answer)
        .filter(|word| word.chars().count() >= 4 && word.chars().all(char::is_alphabetic))
        .filter(|word| !FRAMING.contains(&word.as_str()))
        .map(|word| stem(&word))
        .filter(|word| !asked.contains(word))
        .collect();
    if content.len() < CONTENT_WORDS_MIN {
        return 1.0;
    }
    let held = content
        .iter()
        .filter(|word| in_file.contains(*word))
        .count();
    #[allow(clippy::cast_precision_loss)]
    let share = held as f64 / content.len() as f64;
    share
}

/// The file's name as the turn read it, from its `file_read` result's sentence ("`notes.txt`
/// says: ...").
pub(crate) fn read_name(sentence: &str) -> Option<&str> {
    let rest = sentence.strip_prefix('`')?;
    let end = rest.find('`')?;
    Some(&rest[..end])
}

/// Whether `prompt` names the file `path` (its whole path or its last part, case aside).
pub(crate) fn names_file(prompt: &str, path: &str) -> bool {
    let prompt = prompt.to_lowercase();
    let path = path.to_lowercase();
    let base = path.rsplit('/').next().unwrap_or(&path);
    [path.as_str(), base].iter().any(|name| {
        prompt.match_indices(name).any(|(at, _)| {
            let before = prompt[..at].chars().next_back();
            let after = prompt[at + name.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '/')
                && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|word| word.trim_matches('\'').to_lowercase())
        .filter(|word| !word.is_empty())
}

/// A word without a plural's `s` ("ingredients" and "ingredient" are one).
fn stem(word: &str) -> String {
    match word.strip_suffix("ies") {
        Some(root) if root.len() >= 3 => format!("{root}y"),
        _ => match word.strip_suffix('s') {
            Some(root) if root.len() >= 3 && !root.ends_with('s') => root.to_owned(),
            _ => word.to_owned(),
        },
    }
}

/// The noun a prompt counts: "how many items", "count the lines", "the number of words".
fn counted_noun(prompt: &str) -> Option<String> {
    let lower = prompt.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|word| !word.is_empty())
        .collect();
    let after = |at: usize| {
        words[at..]
            .iter()
            .find(|word| !["the", "of", "different", "separate", "total"].contains(*word))
            .map(|word| (*word).to_owned())
    };
    for (at, pair) in words.windows(2).enumerate() {
        match pair {
            ["how", "many"] => return after(at + 2),
            ["number", "of"] => return after(at + 2),
            ["count", _] => return after(at + 1),
            _ => {}
        }
    }
    None
}

/// The file's lines, and those of them that are not blank.
fn split_lines(text: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = text.lines().collect();
    let non_empty = lines
        .iter()
        .copied()
        .filter(|line| !line.trim().is_empty())
        .collect();
    (lines, non_empty)
}

/// The count of `noun` in the file, said with the items counted.
fn count(name: &str, text: &str, noun: &str) -> String {
    let (lines, non_empty) = split_lines(text);
    match stem(noun).as_str() {
        "line" => {
            return format!(
                "`{name}` has {} lines ({} of them not empty).",
                lines.len(),
                non_empty.len()
            );
        }
        "word" => {
            return format!("`{name}` has {} words.", text.split_whitespace().count());
        }
        "character" | "letter" | "char" => {
            return format!(
                "`{name}` has {} characters (line ends included).",
                text.chars().count()
            );
        }
        _ => {}
    }
    let items = section_items(&lines, noun)
        .or_else(|| {
            let listed: Vec<String> = lines.iter().filter_map(|line| list_item(line)).collect();
            (!listed.is_empty()).then_some(listed)
        })
        .or_else(|| {
            // One or two lines of comma-separated items ("milk, eggs, bread").
            (non_empty.len() <= 2 && non_empty.iter().any(|line| line.contains(','))).then(|| {
                non_empty
                    .iter()
                    .flat_map(|line| line.split(','))
                    .map(|item| item.trim().trim_end_matches('.').to_owned())
                    .filter(|item| !item.is_empty())
                    .collect()
            })
        })
        .unwrap_or_else(|| {
            let titled = usize::from(has_title_line(&non_empty));
            non_empty
                .iter()
                .skip(titled)
                .filter(|line| !is_heading(line))
                .map(|line| line.trim().to_owned())
                .collect()
        });
    let shown: Vec<&str> = items
        .iter()
        .take(COUNT_ITEMS_SHOWN)
        .map(String::as_str)
        .collect();
    let more = if items.len() > shown.len() {
        ", …"
    } else {
        ""
    };
    format!(
        "`{name}` lists {} {noun}: {}{more}.",
        items.len(),
        shown.join("; ")
    )
}

/// Whether the first of a file's non-empty lines titles the rest rather than being one of
/// them: it ends with a colon, or it holds a separator (a dash between words, a colon, a
/// comma, a bar) that none of at least three lines after it holds ("The Paper Lanterns -
/// setlist, Brackwater Arms" above one song a line).
fn has_title_line(non_empty: &[&str]) -> bool {
    const SEPARATORS: [&str; 6] = [" - ", " – ", " — ", ":", ",", "|"];
    let Some((first, rest)) = non_empty.split_first() else {
        return false;
    };
    let separated = |line: &str| SEPARATORS.iter().any(|separator| line.contains(separator));
    first.trim_end().ends_with(':')
        || (rest.len() >= 3 && separated(first) && !rest.iter().any(|line| separated(line)))
}

/// A list item's text (`- milk`, `* milk`, `1. milk`, `2) milk`), or `None`.
fn list_item(line: &str) -> Option<String> {
    let line = line.trim();
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("• "))
        .or_else(|| {
            let digits = line.chars().take_while(char::is_ascii_digit).count();
            (digits > 0)
                .then(|| &line[digits..])
                .and_then(|rest| rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")))
        })?;
    let rest = rest.trim();
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// A heading: a Markdown `#` line, or a short line with no closing punctuation that opens a
/// block (the file's first line, or one after a blank line, with a line after it).
fn is_heading(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.starts_with('#')
}

/// The file's headings: Markdown `#` lines, else short lines standing alone above a block.
fn headings(lines: &[&str]) -> Vec<(usize, String)> {
    let marked: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.trim().starts_with('#'))
        .map(|(at, line)| (at, line.trim().trim_start_matches('#').trim().to_owned()))
        .collect();
    if !marked.is_empty() {
        return marked;
    }
    lines
        .iter()
        .enumerate()
        .filter(|(at, line)| {
            let trimmed = line.trim();
            let opens = *at == 0 || lines[at - 1].trim().is_empty();
            let followed = lines
                .get(at + 1)
                .is_some_and(|next| !next.trim().is_empty());
            opens
                && followed
                && !trimmed.is_empty()
                && trimmed.split_whitespace().count() <= 5
                && !trimmed.ends_with(['.', ',', ';', ':', '?', '!'])
                && list_item(trimmed).is_none()
        })
        .map(|(at, line)| (at, line.trim().to_owned()))
        .collect()
}

/// The lines of the section whose heading names `noun` ("Ingredients" for "ingredients"),
/// as items: its list items, else its non-empty lines.
fn section_items(lines: &[&str], noun: &str) -> Option<Vec<String>> {
    let wanted = stem(&noun.to_lowercase());
    let (at, _) = headings(lines)
        .into_iter()
        .find(|(_, heading)| words(heading).any(|word| stem(&word) == wanted))?;
    let body = section_body(lines, at);
    let listed: Vec<String> = body.iter().filter_map(|line| list_item(line)).collect();
    Some(if listed.is_empty() {
        body.iter().map(|line| line.trim().to_owned()).collect()
    } else {
        listed
    })
}

/// The non-empty lines under the heading at `at`, up to the next heading or blank line
/// after the block.
fn section_body<'l>(lines: &[&'l str], at: usize) -> Vec<&'l str> {
    let mut body = Vec::new();
    for line in &lines[at + 1..] {
        if line.trim().is_empty() {
            if body.is_empty() {
                continue;
            }
            break;
        }
        if line.trim().starts_with('#') {
            break;
        }
        body.push(*line);
    }
    body
}

/// An extract of the file for `prompt`: the line asked for (first, last), the headings, the
/// section the prompt names, the lines holding the prompt's own words, else the headings
/// with the line after each (or the first lines).
fn extract(prompt: &str, name: &str, text: &str) -> String {
    let lower = prompt.to_lowercase();
    let (lines, non_empty) = split_lines(text);
    let chosen: Vec<String> = if lower.contains("first line") {
        non_empty
            .first()
            .map(|line| vec![(*line).to_owned()])
            .unwrap_or_default()
    } else if lower.contains("last line") {
        non_empty
            .last()
            .map(|line| vec![(*line).to_owned()])
            .unwrap_or_default()
    } else if words(&lower).any(|word| HEADING_WORDS.contains(&word.as_str())) {
        headings(&lines)
            .into_iter()
            .map(|(_, heading)| heading)
            .collect()
    } else if let Some(section) = named_section(&lines, &lower) {
        section
    } else {
        let asked: Vec<String> = words(&lower)
            .filter(|word| word.chars().count() >= 3 && !QUESTION_WORDS.contains(&word.as_str()))
            .filter(|word| !names_file(word, name) && !name.to_lowercase().contains(word.as_str()))
            .map(|word| stem(&word))
            .collect();
        let holding: Vec<String> = non_empty
            .iter()
            .filter(|line| words(line).any(|word| asked.contains(&stem(&word))))
            .map(|line| (*line).to_owned())
            .collect();
        if holding.is_empty() {
            overview(&lines, &non_empty)
        } else {
            holding
        }
    };
    let mut quoted = Vec::new();
    let mut chars = 0;
    for line in chosen.iter().take(EXTRACT_LINES_MAX) {
        chars += line.chars().count();
        if chars > EXTRACT_CHARS_MAX {
            break;
        }
        quoted.push(format!("> {}", line.trim()));
    }
    if quoted.is_empty() {
        return format!("`{name}` is empty.");
    }
    format!(
        "From `{name}` (the file's own words):\n\n{}",
        quoted.join("\n")
    )
}

/// The lines of a section the prompt names by its heading ("the action items in ...").
fn named_section(lines: &[&str], lower_prompt: &str) -> Option<Vec<String>> {
    headings(lines)
        .into_iter()
        .filter(|(_, heading)| {
            let heading = heading.to_lowercase();
            let heading = heading.trim_end_matches(':').trim();
            heading.chars().count() >= 4 && lower_prompt.contains(heading)
        })
        .map(|(at, _)| {
            section_body(lines, at)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .find(|body| !body.is_empty())
}

/// The file's first line, then its headings each with the line after it; a file without
/// headings, its first lines.
fn overview(lines: &[&str], non_empty: &[&str]) -> Vec<String> {
    let found = headings(lines);
    if found.len() >= 2 {
        let mut out = Vec::new();
        if let Some(first) = non_empty.first()
            && found
                .first()
                .is_none_or(|(at, _)| lines[*at].trim() != first.trim())
        {
            out.push((*first).to_owned());
        }
        for (at, heading) in found {
            out.push(heading);
            if let Some(first) = section_body(lines, at).first() {
                out.push((*first).to_owned());
            }
        }
        return out;
    }
    non_empty
        .iter()
        .take(4)
        .map(|line| (*line).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = "Lentil soup\nServes 2.\n\nIngredients\n- 200 g red lentils\n- 1 onion\n\
                          - 1 litre stock\n\nMethod\n1. Fry the onion.\n2. Add the rest and simmer.\n";

    #[test]
    fn a_count_is_made_from_the_file() {
        let made = from_file(
            "How many ingredients are in soup.txt?",
            "soup.txt",
            RECIPE,
            "Five.",
        );
        let made = made.unwrap();
        assert!(
            made.text
                .starts_with("`soup.txt` lists 3 ingredients: 200 g red lentils"),
            "{}",
            made.text
        );
        let groceries = from_file(
            "how many items on list.txt",
            "list.txt",
            "milk, eggs, bread\n",
            "2",
        );
        assert!(groceries.unwrap().text.contains("lists 3 items"));
        let setlist = from_file(
            "how many songs are on setlist.txt?",
            "setlist.txt",
            "The Lamps - setlist, The Anchor, Friday\nSalt Road\nNeon Heron\nTin Crown\n",
            "4",
        );
        assert!(setlist.unwrap().text.contains("lists 3 songs: Salt Road"));
        let lines = from_file("Count the lines of soup.txt", "soup.txt", RECIPE, "");
        assert!(
            lines
                .unwrap()
                .text
                .contains("has 11 lines (9 of them not empty)")
        );
    }

    #[test]
    fn an_invented_answer_gives_way_to_an_extract() {
        let invented = "The document describes a beautiful garden full of roses and tulips \
                        growing beside ancient marble fountains.";
        let made = from_file("Summarise soup.txt", "soup.txt", RECIPE, invented).unwrap();
        assert!(
            made.text
                .starts_with("From `soup.txt` (the file's own words):")
        );
        assert!(made.text.contains("> Ingredients") && made.text.contains("> - 200 g red lentils"));
        let own = "A lentil soup for 2: fry the onion, then simmer lentils in stock.";
        assert_eq!(
            from_file("Summarise soup.txt", "soup.txt", RECIPE, own),
            None
        );
    }

    #[test]
    fn an_extract_is_the_part_asked_for() {
        let text = |prompt: &str| {
            from_file(prompt, "soup.txt", RECIPE, "zzzz yyyy xxxx wwww vvvv")
                .unwrap()
                .text
        };
        assert!(text("Quote the first line of soup.txt").ends_with("> Lentil soup"));
        assert!(text("Quote the last line of soup.txt").ends_with("> 2. Add the rest and simmer."));
        assert!(text("What are the headings in soup.txt?").contains("> Ingredients\n> Method"));
        assert!(text("What is the method in soup.txt?").contains("> 1. Fry the onion."));
        assert!(text("How much stock does soup.txt need?").contains("> - 1 litre stock"));
    }

    #[test]
    fn an_answer_that_leaves_out_what_was_asked_gives_way_to_the_lines_about_it() {
        let suppliers = "Millbrook Grain - Dunmore - flour\nKestle Dairy - Arnsby - butter\n\
                         Pellow Mills - Harthill - rye\nOrrin Farm - Dunmore - eggs\n";
        let answer = "The suppliers are Millbrook Grain and Kestle Dairy, for flour and butter.";
        let made = from_file(
            "Which supplier in s.txt is based in Harthill?",
            "s.txt",
            suppliers,
            answer,
        );
        assert!(
            made.unwrap()
                .text
                .ends_with("> Pellow Mills - Harthill - rye")
        );
        let right = "Pellow Mills is the one in Harthill.";
        assert_eq!(
            from_file(
                "Which supplier in s.txt is based in Harthill?",
                "s.txt",
                suppliers,
                right
            ),
            None
        );
    }

    #[test]
    fn the_read_file_is_named_by_its_result_and_the_prompt() {
        assert_eq!(
            read_name("`docs/Plan.md` says:\n\n> x"),
            Some("docs/Plan.md")
        );
        assert!(names_file("tl;dr of plan.md please", "docs/Plan.md"));
        assert!(!names_file("tl;dr of myplan.md", "docs/Plan.md"));
    }
}
