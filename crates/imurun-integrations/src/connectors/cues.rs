//! Whether a piece of text points at a service: its cue phrases matched word by word.
//!
//! Matching is case-insensitive except for cue words written with capitals ("A record"),
//! works on whole words, tolerates simple inflections (`repos`, `filed`, `emailing`,
//! `repositories`), drops a possessive `'s`, and skips small filler words inside a phrase,
//! so "open an issue", "open issues" and "open a new issue" all match `open issue`.
//! A service's `not_cues` ("email address") cover words that then match no cue.

use super::Service;

/// Only this many characters of each message are read: a cue that matters is in what the
/// person wrote, not deep inside a pasted log.
const MESSAGE_CHARS_SCANNED_MAX: usize = 20_000;

/// Words skipped inside a cue phrase: articles, determiners and pronouns that do not change
/// what the phrase points at.
const FILLERS: &[&str] = &[
    "a", "an", "the", "my", "our", "your", "their", "his", "her", "its", "this", "that", "these",
    "those", "new", "some", "me", "us", "them", "any", "all",
];

/// Whether `text` contains one of `service`'s cues.
pub fn points_at(service: &Service, text: &str) -> bool {
    let words = words(text);
    let mut blocked = vec![false; words.len()];
    for not_cue in service.not_cues {
        let phrase = words_of_cue(not_cue);
        for start in 0..words.len() {
            if let Some(end) = match_at(&words, &blocked, start, &phrase) {
                blocked[start..end].fill(true);
            }
        }
    }
    service.cues.iter().any(|cue| {
        let phrase = words_of_cue(cue);
        (0..words.len()).any(|start| match_at(&words, &blocked, start, &phrase).is_some())
    })
}

/// One word of the text, lower-cased and as written.
#[derive(Debug)]
struct Word {
    lower: String,
    written: String,
}

/// The words of `text`: runs of letters, digits and apostrophes (hyphens and other marks
/// separate words), each without a possessive `'s` and without other apostrophes.
fn words(text: &str) -> Vec<Word> {
    let text: String = text.chars().take(MESSAGE_CHARS_SCANNED_MAX).collect();
    text.split(|character: char| !(character.is_alphanumeric() || is_apostrophe(character)))
        .filter_map(|token| {
            let token = token.replace('\u{2019}', "'");
            let token = token.trim_matches('\'');
            let token = token.strip_suffix("'s").unwrap_or(token);
            let written: String = token.chars().filter(|c| *c != '\'').collect();
            (!written.is_empty()).then(|| Word {
                lower: written.to_lowercase(),
                written,
            })
        })
        .collect()
}

fn is_apostrophe(character: char) -> bool {
    character == '\'' || character == '\u{2019}'
}

/// A cue's words, tokenised like the text.
fn words_of_cue(cue: &str) -> Vec<String> {
    words(cue).into_iter().map(|word| word.written).collect()
}

/// Where a match of `phrase` starting at `start` ends, if there is one.
fn match_at(words: &[Word], blocked: &[bool], start: usize, phrase: &[String]) -> Option<usize> {
    let mut position = start;
    for (index, cue_word) in phrase.iter().enumerate() {
        // Fillers are skipped between the phrase's words, never before its first word, so a
        // match starts on a word of the phrase.
        if index > 0 {
            while position < words.len()
                && FILLERS.contains(&words[position].lower.as_str())
                && !word_matches(&words[position], cue_word)
            {
                position += 1;
            }
        }
        let word = words.get(position)?;
        if blocked[position] || !word_matches(word, cue_word) {
            return None;
        }
        position += 1;
    }
    Some(position)
}

/// A cue word with a capital letter must match as written; others match in any case.
fn word_matches(word: &Word, cue_word: &str) -> bool {
    if cue_word.chars().any(char::is_uppercase) {
        inflection_of(&word.written, cue_word)
    } else {
        inflection_of(&word.lower, cue_word)
    }
}

/// `word` is `cue` or a regular inflection of it: -s, -es, -ed, -d, -ing, -e → -ing,
/// -y → -ies.
fn inflection_of(word: &str, cue: &str) -> bool {
    if word == cue {
        return true;
    }
    if let Some(suffix) = word.strip_prefix(cue)
        && matches!(suffix, "s" | "es" | "ed" | "ing")
    {
        return true;
    }
    if let Some(stem) = cue.strip_suffix('e')
        && (word == format!("{cue}d") || word == format!("{stem}ing"))
    {
        return true;
    }
    if let Some(stem) = cue.strip_suffix('y') {
        return word == format!("{stem}ies");
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflections() {
        for (word, cue) in [
            ("repos", "repo"),
            ("filed", "file"),
            ("filing", "file"),
            ("emailing", "email"),
            ("repositories", "repository"),
            ("opened", "open"),
        ] {
            assert!(inflection_of(word, cue), "{word} {cue}");
        }
        for (word, cue) in [("report", "repo"), ("emails", "mail"), ("pray", "pr")] {
            assert!(!inflection_of(word, cue), "{word} {cue}");
        }
    }

    #[test]
    fn words_drop_possessives_and_split_on_marks() {
        let words: Vec<String> = words("The domain’s records; e-mail it's")
            .into_iter()
            .map(|word| word.lower)
            .collect();
        assert_eq!(words, ["the", "domain", "records", "e", "mail", "it"]);
    }
}
