//! What a question states, read as values for a call's arguments: its words and where they
//! are, the numbers it writes with the words around each that may say what it is, and the
//! dates it writes. Nothing here asks the model: the likelihood (`likely`) chooses among what
//! these give.

use crate::tool_match::{same_word, split_camel_case, words};

/// Words that link a value to what names it ("the speed *of* 5", "a dog *named* Rex") and
/// say nothing of what it is.
const LINKS: [&str; 17] = [
    "of", "is", "as", "at", "to", "in", "on", "by", "for", "the", "a", "an", "and", "with", "be",
    "called", "named",
];

/// How far back the words that name a number are looked for, linking words included.
const CUE_WORDS_BEFORE: usize = 4;

/// Words that open a clause: what comes before them names nothing after them.
const CLAUSES: [&str; 12] = [
    "when", "if", "where", "which", "that", "while", "who", "whose", "because", "than", "but",
    "then",
];

/// Words that multiply the number before them.
const SCALES: [(&str, f64); 4] = [
    ("thousand", 1e3),
    ("million", 1e6),
    ("billion", 1e9),
    ("trillion", 1e12),
];

/// Currency signs written before an amount.
const SIGNS: [char; 3] = ['$', '€', '£'];

/// A number the question states.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stated {
    /// The number as a JSON literal.
    pub(crate) literal: String,
    /// Lower-case words that may say what it is: the unit written onto it or the word after
    /// it, and the two nearest words before it past linking words ("acceleration of 9.8",
    /// "72kg").
    pub(crate) cues: Vec<String>,
    /// Where the question writes it (bytes); `None` for one written in words.
    pub(crate) at: Option<(usize, usize)>,
    /// What is written onto it, lower-case: a currency sign before it and a unit after it
    /// (`$`, `%`, `kg`); empty for a bare number. Of a number stated twice, the first.
    pub(crate) kind: String,
}

/// The numbers `question` states, in the order it states them, each once: thousands
/// separators dropped, "5,10" read as two numbers, a scale word applied ("50 million" is
/// 50000000), number words read as digits ("six months" states 6); only whole numbers when
/// `integers`.
pub(crate) fn stated_numbers(question: &str, integers: bool) -> Vec<Stated> {
    let mut numbers: Vec<Stated> = Vec::new();
    // Number words count as written in digits; those the question writes in digits are read
    // from the question itself, where their place is known.
    let digits = crate::arithmetic::digits_for_words(&question.to_lowercase());
    for (text, placed) in [(question, true), (digits.as_str(), false)] {
        let spans = word_spans(text);
        let word = |at: usize| &text[spans[at].0..spans[at].1];
        let is_number = |at: usize| !read_number(word(at)).0.is_empty();
        for at in 0..spans.len() {
            let (values, unit) = read_number(word(at));
            if values.is_empty() {
                continue;
            }
            let mut after = at + 1;
            let scale = (unit.is_empty() && after < spans.len())
                .then(|| {
                    let next = word(after).to_lowercase();
                    SCALES
                        .iter()
                        .find(|(name, _)| same_word(name, &next))
                        .map(|(_, scale)| *scale)
                })
                .flatten();
            if scale.is_some() {
                after += 1;
            }
            let sign = word(at)
                .trim_start_matches('-')
                .chars()
                .next()
                .filter(|first| SIGNS.contains(first));
            let kind: String = sign.into_iter().chain(unit.chars()).collect();
            let mut cues = words(unit);
            if unit.contains('%') {
                cues.extend(["percent".to_owned(), "percentage".to_owned()]);
            }
            if after < spans.len() && !is_number(after) {
                cues.extend(words(word(after)));
            }
            // The two nearest words before it that are not links ("final value of $3000"),
            // back to a number, the word right after one ("15% tip on $186.40") or a word
            // that opens a clause ("the final temperature when 20 kg").
            let mut named_by = 0;
            for before in (at.saturating_sub(CUE_WORDS_BEFORE)..at).rev() {
                let lower = word(before).to_lowercase();
                if is_number(before)
                    || (before >= 1 && is_number(before - 1))
                    || CLAUSES.contains(&lower.as_str())
                {
                    break;
                }
                if LINKS.contains(&lower.as_str()) {
                    continue;
                }
                cues.extend(words(&lower));
                named_by += 1;
                if named_by == 2 {
                    break;
                }
            }
            cues.retain(|cue| !LINKS.contains(&cue.as_str()));
            for value in values {
                let Some(literal) = literal(&value, scale.unwrap_or(1.0), integers) else {
                    continue;
                };
                match numbers.iter_mut().find(|known| known.literal == literal) {
                    Some(known) => {
                        for cue in &cues {
                            if !known.cues.contains(cue) {
                                known.cues.push(cue.clone());
                            }
                        }
                    }
                    None => numbers.push(Stated {
                        literal,
                        cues: cues.clone(),
                        at: placed.then_some(spans[at]),
                        kind: kind.to_lowercase(),
                    }),
                }
            }
        }
    }
    numbers
}

/// The numbers a word writes (several for "5,10") and the unit written onto them (`100µF`:
/// `["100"]`, `µF`); none for a word that writes no number. A minus before a currency sign
/// is the amount's (`-$100` is `-100`).
fn read_number(word: &str) -> (Vec<String>, &str) {
    let (minus, word) = match word.strip_prefix('-') {
        Some(amount) if amount.starts_with(SIGNS) => ("-", amount),
        _ => ("", word),
    };
    let word = word.trim_start_matches(SIGNS);
    let (number, unit) = number_before_unit(word);
    let parses = |text: &str| text.parse::<f64>().is_ok_and(f64::is_finite);
    let values: Vec<String> = if thousands_grouped(number) {
        vec![format!("{minus}{}", number.replace(',', ""))]
    } else {
        number
            .split(',')
            .map(|value| format!("{minus}{value}"))
            .collect()
    };
    if values.iter().all(|value| parses(value)) {
        (values, unit)
    } else {
        (Vec::new(), unit)
    }
}

/// Whether `number` writes its thousands with commas (`12,000`, `1,234.5`).
fn thousands_grouped(number: &str) -> bool {
    let whole = number.split('.').next().unwrap_or_default();
    let mut groups = whole.trim_start_matches(['+', '-']).split(',');
    let first = groups.next().unwrap_or_default();
    let rest: Vec<&str> = groups.collect();
    !rest.is_empty()
        && (1..=3).contains(&first.len())
        && first.chars().all(|c| c.is_ascii_digit())
        && rest
            .iter()
            .all(|group| group.len() == 3 && group.chars().all(|c| c.is_ascii_digit()))
}

/// `plain` (digits, perhaps a sign and a point) times `scale` as a JSON literal; `None` when
/// `integers` and it is not whole.
fn literal(plain: &str, scale: f64, integers: bool) -> Option<String> {
    let value = plain.parse::<f64>().ok()? * scale;
    let whole = value.fract() == 0.0;
    if integers && (!whole || (scale == 1.0 && plain.contains('.'))) {
        return None;
    }
    if scale != 1.0 {
        #[allow(clippy::cast_possible_truncation)]
        return Some(if whole && value.abs() < 1e15 {
            (value as i64).to_string()
        } else {
            value.to_string()
        });
    }
    let literal = if plain.contains('.') {
        plain.trim_start_matches('+').to_owned()
    } else {
        let unsigned = plain.trim_start_matches('+');
        match unsigned.strip_prefix('-') {
            Some(digits) => format!("-{}", digits.trim_start_matches('0')),
            None => unsigned.trim_start_matches('0').to_owned(),
        }
    };
    Some(match literal.as_str() {
        "" | "-" => "0".to_owned(),
        _ if literal.starts_with('.') => format!("0{literal}"),
        _ if literal.starts_with("-.") => format!("-0{}", &literal[1..]),
        _ => literal,
    })
}

/// `word` split into the number it starts with and a unit written onto its end (letters and
/// the signs `°`, `µ`, `%`, `²`, `³`, `/`, `^` before no digit): `100µF` is `100` and `µF`; a
/// word with digits after its first letter (`3x2`, `A4`) or a formula's term (`2x`) is kept
/// whole, and is no number.
fn number_before_unit(word: &str) -> (&str, &str) {
    let Some(at) = word.find(|c: char| c.is_alphabetic() || "°µ%²³/^".contains(c)) else {
        return (word, "");
    };
    let (number, unit) = word.split_at(at);
    let variable = matches!(unit, "x" | "y" | "z" | "n");
    if number.is_empty() || variable || unit.contains(|c: char| c.is_ascii_digit()) {
        return (word, "");
    }
    (number, unit)
}

/// The words of argument `name` that may say what a value is (`frequency_ghz`: "frequency",
/// "ghz"), without the linking ones.
pub(crate) fn name_words(name: &str) -> Vec<String> {
    words(&split_camel_case(name))
        .into_iter()
        // `mass1` and `mass2` are masses.
        .map(|word| {
            word.trim_end_matches(|c: char| c.is_ascii_digit())
                .to_owned()
        })
        .filter(|word| word.len() >= 2)
        .filter(|word| !LINKS.contains(&word.as_str()))
        .collect()
}

/// Whether a value with these `cues` is named as the argument with `named` words: a cue is
/// a word of the name as written or in its plural ("seconds" for `second`), never another
/// word of the same stem ("two charged bodies" says nothing of a `charge`).
pub(crate) fn cued(cues: &[String], named: &[String]) -> bool {
    let same = |word: &str, cue: &str| {
        word == cue
            || cue.strip_suffix('s') == Some(word)
            || cue.strip_suffix("es") == Some(word)
            || word.strip_suffix('s') == Some(cue)
    };
    cues.iter()
        .any(|cue| named.iter().any(|word| same(word, cue)))
}

/// Where each word of `text` starts and ends (bytes): runs of non-space, without the
/// punctuation around them.
pub(crate) fn word_spans(text: &str) -> Vec<(usize, usize)> {
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

/// Which words of `question` (indices into [`word_spans`]) name argument `named`.
pub(crate) fn naming_words(question: &str, named: &[String]) -> Vec<usize> {
    word_spans(question)
        .iter()
        .enumerate()
        .filter(|(_, (from, to))| {
            let word = question[*from..*to].to_lowercase();
            named.iter().any(|name| same_word(name, &word))
        })
        .map(|(at, _)| at)
        .collect()
}

/// Words between a name and the value it names ("the company *the* Acme", "a dog *named*
/// Rex"): fewer than [`LINKS`], since "Museum *in* Paris" does not name Paris a museum.
const NAMING_LINKS: [&str; 8] = ["of", "is", "as", "the", "a", "an", "called", "named"];

/// Whether the span of words `from..to` (indices into [`word_spans`]) is one the words at
/// `naming` name: it starts right after one of them, or after one and a linking word ("title
/// 'David'", "the company Amazon", "a dog named Rex"), or ends right before one written in
/// lower case ("C key", "Thai food"; "Premier League" is a name of its own); it holds none
/// of them, and neither starts nor ends with a linking word.
pub(crate) fn span_named(
    question: &str,
    spans: &[(usize, usize)],
    (from, to): (usize, usize),
    naming: &[usize],
) -> bool {
    let text = |at: usize| spans.get(at).map(|(a, b)| &question[*a..*b]);
    let is = |at: usize, words: &[&str]| {
        text(at).is_some_and(|word| words.contains(&word.to_lowercase().as_str()))
    };
    let lower = |at: usize| text(at).is_some_and(|word| !word.starts_with(char::is_uppercase));
    // A span begins and ends with words of its own ("and a" before "target" is none).
    let own_ends = from < to && !is(from, &LINKS) && !is(to - 1, &LINKS);
    own_ends
        && !naming.iter().any(|at| (from..to).contains(at))
        && naming.iter().any(|&at| {
            at + 1 == from
                || (at + 2 == from && is(at + 1, &NAMING_LINKS))
                || (to == at && lower(at))
        })
}

/// Words that join the members of a list of numbers ("5, 10 and 15").
const LIST_JOINS: [&str; 3] = ["and", "or", "&"];

/// The lists of two or more numbers `question` writes together, each member as a JSON
/// literal: numbers with only commas or a joining word between them ("the factorial of 5,10
/// and 15", "seasons 2017, 2018 and 2019"). "length 7 and breadth 3" is two numbers, no list.
pub(crate) fn number_lists(question: &str) -> Vec<Vec<String>> {
    placed_number_lists(question)
        .into_iter()
        .map(|(_, list)| list)
        .collect()
}

/// How many times `question` writes the number `literal` (a JSON literal).
pub(crate) fn times_written(question: &str, literal: &str) -> usize {
    word_spans(question)
        .iter()
        .map(|&(from, to)| {
            read_number(&question[from..to])
                .0
                .iter()
                .filter(|value| self::literal(value, 1.0, false).as_deref() == Some(literal))
                .count()
        })
        .sum()
}

/// [`number_lists`], each with the index of its first word (into [`word_spans`]).
fn placed_number_lists(question: &str) -> Vec<(usize, Vec<String>)> {
    let spans = word_spans(question);
    let mut lists: Vec<(usize, Vec<String>)> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut first = 0;
    let mut joined = false;
    for (at, &(from, to)) in spans.iter().enumerate() {
        let word = &question[from..to];
        let (values, _) = read_number(word);
        let members: Vec<String> = values
            .iter()
            .filter_map(|value| literal(value, 1.0, false))
            .collect();
        if !members.is_empty() {
            if run.is_empty() {
                first = at;
            }
            run.extend(members);
            joined = false;
        } else if !run.is_empty() && !joined && LIST_JOINS.contains(&word.to_lowercase().as_str()) {
            joined = true;
        } else {
            if run.len() >= 2 {
                lists.push((first, std::mem::take(&mut run)));
            }
            run.clear();
            joined = false;
        }
    }
    if run.len() >= 2 {
        lists.push((first, run));
    }
    lists
}

/// How far before a list of numbers the names it gives values to are looked for.
const RESPECTIVE_WORDS_MAX: usize = 6;

/// The values a list of numbers gives the arguments named just before it, in the same order
/// ("its base and height as 6cm and 10cm": base 6, height 10), by argument: as many
/// arguments, each named once, as the list has members.
pub(crate) fn respective_numbers(question: &str, names: &[&str]) -> Vec<(String, String)> {
    let spans = word_spans(question);
    let named: Vec<Vec<String>> = names.iter().map(|name| name_words(name)).collect();
    let mut given = Vec::new();
    for (first, list) in placed_number_lists(question) {
        let mut order: Vec<usize> = Vec::new();
        for at in first.saturating_sub(RESPECTIVE_WORDS_MAX)..first {
            let word = question[spans[at].0..spans[at].1].to_lowercase();
            let cue = [word];
            let naming: Vec<usize> = (0..names.len())
                .filter(|name| cued(&cue, &named[*name]))
                .collect();
            if let [one] = naming[..]
                && !order.contains(&one)
            {
                order.push(one);
            }
        }
        if order.len() == list.len() {
            given.extend(
                order
                    .into_iter()
                    .zip(list)
                    .map(|(name, value)| (names[name].to_owned(), value)),
            );
        }
    }
    given
}

/// The members of a list a string value writes ("human HbA1c, normal hemoglobin, and rat
/// hemoglobin"): three or more, with commas between; `None` for any other value.
pub(crate) fn string_list(value: &str) -> Option<Vec<String>> {
    if !value.contains(',') {
        return None;
    }
    let members: Vec<String> = value
        .split(',')
        .flat_map(|part| part.split(" and "))
        .map(|member| member.trim().trim_start_matches("and ").trim().to_owned())
        .filter(|member| !member.is_empty())
        .collect();
    (members.len() >= 3).then_some(members)
}

/// The most words one name of a [`name_lists`] list holds ("Los Angeles", "Abraham Lincoln").
const NAME_WORDS_MAX: usize = 4;

/// The lists of names `question` coordinates: two or more names, commas between them and
/// "and" or "or" before the last ("Tokyo, Nairobi and Lima", "Seattle and Los Angeles",
/// "'Open', 'Close', and 'Low'"). A name is a run of up to [`NAME_WORDS_MAX`] words that
/// start with a capital (a later word may be a number: "Maroon 5"). A run of names with no
/// "and" or "or" is no list ("Boston, USA").
pub(crate) fn name_lists(question: &str) -> Vec<Vec<String>> {
    struct Word<'q> {
        bare: &'q str,
        capital: bool,
        comma: bool,
        stop: bool,
    }
    let spans = word_spans(question);
    let words: Vec<Word> = spans
        .iter()
        .enumerate()
        .map(|(at, &(from, to))| {
            let bare = &question[from..to];
            // What lies between this word and the next.
            let gap = &question[to..spans.get(at + 1).map_or(question.len(), |next| next.0)];
            Word {
                bare,
                capital: bare.chars().next().is_some_and(char::is_uppercase),
                comma: gap.contains(','),
                stop: gap.contains(['.', '?', '!', ';', ':']),
            }
        })
        .collect();
    let joins = |word: &Word| matches!(word.bare, "and" | "or");
    // The name starting at `from`: its text and the index after it.
    let name_at = |from: usize| -> Option<(String, usize)> {
        let mut parts: Vec<&str> = Vec::new();
        let mut at = from;
        while let Some(word) = words.get(at) {
            let fits = if parts.is_empty() {
                word.capital
            } else {
                word.capital || word.bare.chars().all(|c| c.is_ascii_digit())
            };
            if !fits || word.bare.is_empty() || parts.len() == NAME_WORDS_MAX {
                break;
            }
            parts.push(word.bare);
            at += 1;
            if word.comma || word.stop {
                break;
            }
        }
        (!parts.is_empty()).then(|| (parts.join(" "), at))
    };
    let mut lists: Vec<Vec<String>> = Vec::new();
    let mut start = 0;
    while start < words.len() {
        let mut names: Vec<String> = Vec::new();
        let mut at = start;
        let mut closed = false;
        let mut last_named = false;
        while let Some((name, after)) = name_at(at) {
            names.push(name);
            at = after;
            if closed {
                last_named = true;
                break;
            }
            let last = &words[after - 1];
            if last.stop {
                break;
            }
            match words.get(after) {
                Some(next) if joins(next) => {
                    closed = true;
                    at = after + 1;
                }
                Some(_) if last.comma => {}
                _ => break,
            }
        }
        if last_named && names.len() >= 2 {
            lists.push(names);
            start = at;
        } else {
            start += 1;
        }
    }
    lists
}

/// The requests `question` makes, when it makes several: its sentences, and within each its
/// clauses after "also", "then", "additionally" or ", and", its questions after a comma
/// ("…, what is the population of Canada") ("Find the area of a rectangle
/// with length 7 and breadth 3. Also, calculate the area of a circle with radius 5." is two),
/// and after an "and" whose next word is what one of the offered `tools` does, the first
/// word of its name's last part ("Invest $2000 in Google and withdraw $1000 from Apple" with
/// a tool `investment.withdraw`; not "the area and perimeter" with a tool
/// `rectangle.calculate_perimeter`). One request is the question itself.
pub(crate) fn requests(question: &str, tools: &[&str]) -> Vec<String> {
    const OPENERS: [&str; 3] = ["also", "then", "additionally"];
    // What a tool does is the first word of its name's last part: `withdraw` of
    // `investment.withdraw`, `calculate` of `rectangle.calculate_perimeter`.
    let actions: Vec<String> = tools
        .iter()
        .filter_map(|tool| {
            let last = tool.rsplit('.').next().unwrap_or(tool);
            name_words(last).into_iter().next()
        })
        .collect();
    let names_an_action = |word: Option<&&str>| {
        word.is_some_and(|word| {
            let bare = word
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            bare.len() >= 3 && cued(&[bare], &actions)
        })
    };
    let mut requests: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let words: Vec<&str> = question.split_whitespace().collect();
    let mut close = |current: &mut Vec<&str>| {
        let text = current.join(" ");
        let text = text
            .trim_matches(|c: char| c.is_whitespace() || ",;".contains(c))
            .to_owned();
        if text.split_whitespace().count() >= 2 {
            requests.push(text);
        }
        current.clear();
    };
    for (at, word) in words.iter().enumerate() {
        let bare = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        let previous = at.checked_sub(1).map(|before| words[before]);
        let after_comma = previous.is_some_and(|before| before.ends_with([',', ';']));
        // A clause opens at "also", "then" or "additionally" after a break or "and", at
        // "and" after a comma, and at a question after a comma ("..., what is the population
        // of Canada").
        let opens = (OPENERS.contains(&bare.as_str())
            && previous.is_none_or(|before| {
                before.ends_with([',', ';', '.', '?', '!']) || before.eq_ignore_ascii_case("and")
            }))
            || (bare == "and" && (after_comma || names_an_action(words.get(at + 1))))
            || (after_comma && asks_at(&words[at..]));
        if opens && !current.is_empty() {
            let joining = current
                .last()
                .is_some_and(|last| last.eq_ignore_ascii_case("and"));
            if joining {
                current.pop();
            }
            close(&mut current);
        }
        if !(opens && bare == "and") {
            current.push(word);
        }
        // A sentence ends at its mark when the next word starts with a capital.
        let ends = word.ends_with(['.', '?', '!'])
            && words
                .get(at + 1)
                .and_then(|next| next.chars().find(|c| c.is_alphanumeric()))
                .is_some_and(char::is_uppercase);
        if ends {
            close(&mut current);
        }
    }
    close(&mut current);
    // The openers lead the clauses they open: "Also, calculate ..." asks "calculate ...".
    requests
        .into_iter()
        .map(|request| {
            let mut words: Vec<&str> = request.split_whitespace().collect();
            while words.first().is_some_and(|first| {
                let bare = first
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase();
                OPENERS.contains(&bare.as_str()) || bare == "and"
            }) {
                words.remove(0);
            }
            words.join(" ")
        })
        .filter(|request| request.split_whitespace().count() >= 2)
        .collect()
}

/// Words that ask a question when a verb follows them ("what is", "how many"); not "which",
/// "who" or "where", which after a comma open a clause about what comes before ("hotels in
/// Rome, which are near the station").
const QUESTION_WORDS: [&str; 2] = ["what", "how"];

/// Verbs and measures that make a question word ask: "what *is*", "how *far*".
const ASKING: [&str; 16] = [
    "is", "are", "was", "were", "does", "do", "did", "will", "would", "can", "could", "many",
    "much", "far", "long", "old",
];

/// Whether `words` open with a question: a question word and a verb or measure after it
/// ("what is", "how far"), or a question word joined to its verb ("what's").
fn asks_at(words: &[&str]) -> bool {
    let bare = |word: &str| {
        word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase()
            .replace('’', "'")
    };
    let Some(first) = words.first().map(|word| bare(word)) else {
        return false;
    };
    if let Some((asking, _)) = first.split_once('\'') {
        return QUESTION_WORDS.contains(&asking);
    }
    QUESTION_WORDS.contains(&first.as_str())
        && words
            .get(1)
            .is_some_and(|next| ASKING.contains(&bare(next).as_str()))
}

/// A date the question writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Date {
    /// Where the question writes it (bytes).
    pub(crate) at: (usize, usize),
    pub(crate) year: Option<u32>,
    pub(crate) month: u32,
    pub(crate) day: Option<u32>,
}

/// The months by name, January first.
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The dates `question` writes: a month's name with a day, a year or both around it ("March
/// 10th, 2023", "10th December 2022", "Jul 20", "December 2022"), and dates in digits
/// (`2022/08/16`, `2022-08-16`, `08/16/2022`, the day first when the first part cannot be
/// a month).
pub(crate) fn stated_dates(question: &str) -> Vec<Date> {
    // Runs of letters or digits, with where they are.
    let mut tokens: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (at, c) in question
        .char_indices()
        .chain(std::iter::once((question.len(), ' ')))
    {
        if c.is_alphanumeric() {
            start.get_or_insert(at);
        } else if let Some(from) = start.take() {
            tokens.push((from, at));
        }
    }
    let token = |at: usize| &question[tokens[at].0..tokens[at].1];
    let mut dates = Vec::new();
    let mut used_to = 0;
    for at in 0..tokens.len() {
        if tokens[at].0 < used_to {
            continue;
        }
        if let Some(date) = digits_date(question, tokens[at].0) {
            used_to = date.at.1;
            dates.push(date);
            continue;
        }
        let Some(month) = month_of(token(at)) else {
            continue;
        };
        let day_at = |at: usize| (at < tokens.len()).then(|| day_of(token(at))).flatten();
        let year_at = |at: usize| (at < tokens.len()).then(|| year_of(token(at))).flatten();
        let (mut first, mut last) = (at, at);
        let mut day = day_at(at + 1);
        if day.is_some() {
            last = at + 1;
        } else if at >= 1 && day_at(at - 1).is_some() {
            day = day_at(at - 1);
            first = at - 1;
        } else if at >= 2 && token(at - 1).eq_ignore_ascii_case("of") {
            day = day_at(at - 2);
            if day.is_some() {
                first = at - 2;
            }
        }
        let year = year_at(last + 1);
        if year.is_some() {
            last += 1;
        }
        // "may" is a month only with a day or a year beside it; a short name too.
        if day.is_none() && year.is_none() {
            continue;
        }
        dates.push(Date {
            at: (tokens[first].0, tokens[last].1),
            year,
            month,
            day,
        });
        used_to = tokens[last].1;
    }
    dates
}

/// The month a word names, whole or by its first three letters or more ("Sept", "Dec").
fn month_of(word: &str) -> Option<u32> {
    let lower = word.to_lowercase();
    let at = MONTHS
        .iter()
        .position(|month| lower.len() >= 3 && month.starts_with(&lower))?;
    u32::try_from(at + 1).ok()
}

/// The day a word writes: 1 to 31, perhaps with its ending ("10th").
fn day_of(word: &str) -> Option<u32> {
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|ending| word.strip_suffix(ending))
        .unwrap_or(word);
    let day: u32 = digits.parse().ok()?;
    (digits.len() <= 2 && (1..=31).contains(&day)).then_some(day)
}

/// The year a word writes: four digits from 1000 to 2999.
fn year_of(word: &str) -> Option<u32> {
    let year: u32 = word.parse().ok()?;
    (word.len() == 4 && (1000..=2999).contains(&year)).then_some(year)
}

/// A date written in digits at byte `from` of `question`: year, month, day with `-`, `/` or
/// `.` between, or month (or day), day (or month), year.
fn digits_date(question: &str, from: usize) -> Option<Date> {
    let rest = &question[from..];
    let len = rest
        .find(|c: char| !(c.is_ascii_digit() || "-/.".contains(c)))
        .unwrap_or(rest.len());
    let written = rest[..len].trim_end_matches(['-', '/', '.']);
    let separator = written.chars().find(|c| "-/.".contains(*c))?;
    let parts: Vec<&str> = written.split(separator).collect();
    if parts.len() != 3 || parts.iter().any(|part| part.is_empty()) {
        return None;
    }
    let number = |part: &str| part.parse::<u32>().ok();
    let (year, first, second) = if parts[0].len() == 4 {
        (number(parts[0])?, number(parts[1])?, number(parts[2])?)
    } else if parts[2].len() == 4 {
        let (a, b) = (number(parts[0])?, number(parts[1])?);
        // The first part is the month unless it cannot be one.
        if a > 12 {
            (number(parts[2])?, b, a)
        } else {
            (number(parts[2])?, a, b)
        }
    } else {
        return None;
    };
    ((1..=12).contains(&first) && (1..=31).contains(&second)).then_some(Date {
        at: (from, from + written.len()),
        year: Some(year),
        month: first,
        day: Some(second),
    })
}

/// The date formats a description may ask for, and how each writes a date.
/// (A year's letters may be short of four, "MM-DD-YYY", and it is still written in full.)
const DATE_FORMATS: [(&str, &str); 10] = [
    ("yyyy-mm-dd", "%Y-%m-%d"),
    ("year-month-day", "%Y-%m-%d"),
    ("mm-dd-yy", "%m-%d-%Y"),
    ("month-day-year", "%m-%d-%Y"),
    ("dd-mm-yy", "%d-%m-%Y"),
    ("day-month-year", "%d-%m-%Y"),
    ("yyyy/mm/dd", "%Y/%m/%d"),
    ("mm/dd/yy", "%m/%d/%Y"),
    ("dd/mm/yy", "%d/%m/%Y"),
    ("yyyymmdd", "%Y%m%d"),
];

/// Whether argument `name` of `schema` takes a date: a string whose name says "date" or
/// whose description asks for a date format.
pub(crate) fn takes_a_date(name: &str, schema: &serde_json::Value) -> bool {
    let string = schema.get("type").and_then(serde_json::Value::as_str) == Some("string");
    let described = description(schema);
    string
        && (name_words(name).iter().any(|word| same_word("date", word))
            || DATE_FORMATS
                .iter()
                .any(|(format, _)| described.contains(format)))
}

/// `date` written as the description of `schema` asks (year, month and day; ISO's
/// `yyyy-mm-dd` when it asks for none); `None` without a year and a day.
pub(crate) fn written_date(date: &Date, schema: &serde_json::Value) -> Option<String> {
    let (year, day) = (date.year?, date.day?);
    let described = description(schema);
    let format = DATE_FORMATS
        .iter()
        .find(|(format, _)| described.contains(format))
        .map_or("%Y-%m-%d", |(_, written)| written);
    Some(
        format
            .replace("%Y", &format!("{year:04}"))
            .replace("%m", &format!("{:02}", date.month))
            .replace("%d", &format!("{day:02}")),
    )
}

/// The description of `schema`, lower case, spaces around its dashes and slashes dropped.
fn description(schema: &serde_json::Value) -> String {
    schema
        .get("description")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_lowercase()
        .replace(" - ", "-")
        .replace(" / ", "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals(question: &str, integers: bool) -> Vec<String> {
        stated_numbers(question, integers)
            .into_iter()
            .map(|number| number.literal)
            .collect()
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
            literals("Invest $200,000 at 5% for 10 years, or 0.5 of it", false),
            ["200000", "5", "10", "0.5"]
        );
        assert_eq!(literals("radius 2.5 and 007 sides", true), ["7"]);
        assert!(literals("no numbers here", false).is_empty());
        assert_eq!(literals("from -3 to -0.5", false), ["-3", "-0.5"]);
        // A minus before a currency sign is the amount's.
        assert_eq!(literals("a loss of -$100 on £50", false), ["-100", "50"]);
    }

    #[test]
    fn a_number_is_of_the_kind_written_onto_it() {
        let kinds: Vec<(String, String)> = stated_numbers("$100, -€5, 8% and 72kg of 3", false)
            .into_iter()
            .map(|number| (number.literal, number.kind))
            .collect();
        let expected = [
            ("100", "$"),
            ("-5", "€"),
            ("8", "%"),
            ("72", "kg"),
            ("3", ""),
        ];
        assert_eq!(
            kinds,
            expected.map(|(literal, kind)| (literal.to_owned(), kind.to_owned()))
        );
    }

    #[test]
    fn commas_between_short_numbers_separate_them() {
        assert_eq!(
            literals("the factorial of 5,10 and 15", true),
            ["5", "10", "15"]
        );
        assert_eq!(
            literals("12,000 miles and 1,234.5 km", false),
            ["12000", "1234.5"]
        );
    }

    #[test]
    fn a_scale_word_multiplies_its_number() {
        assert_eq!(
            literals("100 million shares and a payout of 2.5 billion USD", true),
            ["100000000", "2500000000"]
        );
    }

    #[test]
    fn a_unit_written_onto_a_number_stays_out_of_it() {
        assert_eq!(
            literals(
                "1kg of ice at 0°C heated to 100°C, 298K, 100µF, 50mH, 5%",
                false
            ),
            ["1", "0", "100", "298", "50", "5"]
        );
        // Digits after the first letter make a name or a formula, not a number.
        assert!(literals("paper size A4 and 3x^2 + 2x", false).is_empty());
    }

    #[test]
    fn number_words_are_numbers_the_question_states() {
        assert_eq!(
            literals("the last six months, twenty-one days", true),
            ["6", "21"]
        );
    }

    #[test]
    fn a_number_is_cued_by_its_unit_and_the_words_before_it() {
        let numbers = stated_numbers(
            "a 3.5GHz clock at 1.2V, initial velocity of 10 and a 15% tip on $186.40",
            false,
        );
        let cues = |literal: &str| {
            numbers
                .iter()
                .find(|number| number.literal == literal)
                .map(|number| number.cues.clone())
                .unwrap_or_default()
        };
        assert!(cued(&cues("3.5"), &name_words("frequency_ghz")));
        assert!(!cued(&cues("3.5"), &name_words("voltage")));
        assert!(cued(&cues("10"), &name_words("initialVelocity")));
        assert!(cued(&cues("15"), &name_words("tip_percent")));
        assert!(!cued(&cues("186.40"), &name_words("tip_percent")));
        let bodies = stated_numbers("two charged bodies of 1e-9 and 2e-9", false);
        let two = bodies.iter().find(|number| number.literal == "2");
        assert!(two.is_some_and(|two| two.cues.contains(&"charged".to_owned())));
        assert!(!two.is_some_and(|two| cued(&two.cues, &name_words("charge1"))));
    }

    #[test]
    fn a_span_is_named_by_the_word_before_or_after_it() {
        let question = "Find the sculpture with title 'David' by Michelangelo in C key";
        let spans = word_spans(question);
        let title = naming_words(question, &name_words("title"));
        let key = naming_words(question, &name_words("key"));
        assert!(span_named(question, &spans, (5, 6), &title));
        assert!(!span_named(question, &spans, (7, 8), &title));
        assert!(span_named(question, &spans, (9, 10), &key));
        assert!(!span_named(question, &spans, (9, 11), &key));
        let question =
            "The ranking of Liverpool in the Premier League, at the Louvre Museum in Paris";
        let spans = word_spans(question);
        let league = naming_words(question, &name_words("league"));
        assert!(!span_named(question, &spans, (6, 7), &league), "Premier");
        let museum = naming_words(question, &name_words("museum"));
        assert!(!span_named(question, &spans, (13, 14), &museum), "Paris");
    }

    #[test]
    fn numbers_written_together_are_a_list() {
        assert_eq!(
            number_lists("Find the factorial of 5,10 and 15."),
            [vec!["5", "10", "15"]]
        );
        assert_eq!(
            number_lists("a loan term of 15, 20 and 30 years at 4%"),
            [vec!["15", "20", "30"]]
        );
        assert!(number_lists("a rectangle with length 7 and breadth 3").is_empty());
        assert_eq!(times_written("5% a year for 1,5 and 10 years", "5"), 2);
        assert_eq!(times_written("5% a year for 1,5 and 10 years", "10"), 1);
        assert_eq!(
            string_list("human HbA1c, normal hemoglobin, and rat hemoglobin"),
            Some(vec![
                "human HbA1c".to_owned(),
                "normal hemoglobin".to_owned(),
                "rat hemoglobin".to_owned()
            ])
        );
        assert_eq!(string_list("Procter and Gamble"), None);
        assert_eq!(string_list("Paris, France"), None);
    }

    #[test]
    fn a_list_of_numbers_after_as_many_names_gives_them_in_order() {
        let question = "The area of a triangle given its base and height as 6cm and 10cm.";
        assert_eq!(
            respective_numbers(question, &["height", "base", "unit"]),
            [
                ("base".to_owned(), "6".to_owned()),
                ("height".to_owned(), "10".to_owned())
            ]
        );
        // Names and values that do not pair up give nothing.
        assert!(respective_numbers("the base of 6 and 10", &["base", "height"]).is_empty());
    }

    #[test]
    fn names_with_and_or_or_before_the_last_are_a_list() {
        assert_eq!(
            name_lists("What is the weather in Tokyo, Nairobi and Lima today?"),
            [["Tokyo", "Nairobi", "Lima"]]
        );
        assert_eq!(
            name_lists("the air in Oslo, Bergen and Tromsø."),
            [["Oslo", "Bergen", "Tromsø"]]
        );
        assert_eq!(
            name_lists("the temperature for Seattle and Los Angeles?"),
            [["Seattle", "Los Angeles"]]
        );
        assert_eq!(
            name_lists("songs by Taylor Swift and Maroon 5, for 20 minutes"),
            [["Taylor Swift", "Maroon 5"]]
        );
        assert_eq!(
            name_lists("the 'Open', 'Close', and 'Low' prices"),
            [["Open", "Close", "Low"]]
        );
        // A place and its country, and a name before a lower-case word, are no list.
        assert!(name_lists("the forecast for Boston, USA and precipitation").is_empty());
        assert!(name_lists("What is the capital of France? And Spain").is_empty());
    }

    #[test]
    fn a_question_makes_a_request_per_sentence_and_clause() {
        assert_eq!(
            requests(
                "Find the area of a rectangle with length 7 and breadth 3. Also, calculate the \
                 area of a circle with radius 5.",
                &["area.rectangle", "area.circle"]
            ),
            [
                "Find the area of a rectangle with length 7 and breadth 3.",
                "calculate the area of a circle with radius 5."
            ]
        );
        assert_eq!(
            requests(
                "Calculate the GCD of 96 and 128, and the LCM of 15 and 25.",
                &[]
            ),
            ["Calculate the GCD of 96 and 128", "the LCM of 15 and 25."]
        );
        assert_eq!(
            requests(
                "Book a flight to Boston and then book a hotel in Boston.",
                &[]
            ),
            ["Book a flight to Boston", "book a hotel in Boston."]
        );
        assert_eq!(
            requests(
                "Predict the price of a house of 3000 sq ft. in New York.",
                &[]
            ),
            ["Predict the price of a house of 3000 sq ft. in New York."]
        );
        // An "and" before what an offered tool does opens a request; before anything else
        // it joins.
        let tools = ["investment.invest", "investment.withdraw"];
        assert_eq!(
            requests(
                "Invest $2000 in Google and withdraw $1000 from Apple.",
                &tools
            ),
            ["Invest $2000 in Google", "withdraw $1000 from Apple."]
        );
        assert_eq!(
            requests("Invest $2000 in Google and Apple.", &tools),
            ["Invest $2000 in Google and Apple."]
        );
        assert_eq!(
            requests(
                "Get the weather and the time in Lima.",
                &["getWeather", "get_time"]
            ),
            ["Get the weather and the time in Lima."]
        );
        // A question after a comma is a request of its own; a clause that asks nothing
        // is not.
        assert_eq!(
            requests(
                "What is the capital of Peru, what's the population of Chile, and how far \
                 apart are they?",
                &[]
            ),
            [
                "What is the capital of Peru",
                "what's the population of Chile",
                "how far apart are they?"
            ]
        );
        assert_eq!(
            requests("Tell me, what is the time, who knows?", &[]),
            ["Tell me", "what is the time, who knows?"]
        );
        for clause in ["which are", "who is", "where is"] {
            let question = format!("Find hotels in Rome, {clause} near the station.");
            assert_eq!(requests(&question, &[]), [question]);
        }
        assert_eq!(
            requests(
                "Find the area and perimeter of a circle of radius 5 and calculate its area.",
                &["rectangle.calculate_perimeter"]
            ),
            [
                "Find the area and perimeter of a circle of radius 5",
                "calculate its area."
            ]
        );
    }

    #[test]
    fn dates_are_read_in_words_and_in_digits() {
        let question = "From March.11, 2022 or 10th December 2022 to 2022/08/16 and 08-16-2022, \
                        then 25/12/2023; you may go in May 2024 or on Jul 4.";
        let read: Vec<(Option<u32>, u32, Option<u32>, &str)> = stated_dates(question)
            .iter()
            .map(|date| {
                (
                    date.year,
                    date.month,
                    date.day,
                    &question[date.at.0..date.at.1],
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (Some(2022), 3, Some(11), "March.11, 2022"),
                (Some(2022), 12, Some(10), "10th December 2022"),
                (Some(2022), 8, Some(16), "2022/08/16"),
                (Some(2022), 8, Some(16), "08-16-2022"),
                (Some(2023), 12, Some(25), "25/12/2023"),
                (Some(2024), 5, None, "May 2024"),
                (None, 7, Some(4), "Jul 4"),
            ]
        );
    }

    #[test]
    fn a_date_is_written_as_its_argument_asks() {
        let date = Date {
            at: (0, 0),
            year: Some(2022),
            month: 3,
            day: Some(11),
        };
        let asks =
            |description: &str| serde_json::json!({"type": "string", "description": description});
        assert_eq!(
            written_date(&date, &asks("Format: yyyy-mm-dd.")).as_deref(),
            Some("2022-03-11")
        );
        assert_eq!(
            written_date(&date, &asks("The date (month-day-year).")).as_deref(),
            Some("03-11-2022")
        );
        assert_eq!(
            written_date(&date, &asks("The format is MM-DD-YYYY.")).as_deref(),
            Some("03-11-2022")
        );
        assert_eq!(
            written_date(&date, &asks("In the format of MM-DD-YYY.")).as_deref(),
            Some("03-11-2022")
        );
        assert_eq!(
            written_date(&date, &asks("When the stay begins.")).as_deref(),
            Some("2022-03-11")
        );
        assert!(takes_a_date("start_date", &asks("When the stay begins.")));
        assert!(takes_a_date("when", &asks("In YYYY-MM-DD format")));
        assert!(!takes_a_date("room_type", &asks("single or double")));
        let no_day = Date { day: None, ..date };
        assert_eq!(written_date(&no_day, &asks("")), None);
    }
}
