//! A fixed reading of plain change requests: "Delete notes.txt", "Make a folder called
//! drafts", "Create a file called todo.txt with the text buy milk", "Write hello to
//! hello.txt". A small model asked these copies a worked example's path instead of the one
//! the person named (`example.txt` for `notes.txt`, with the examples shown or not), so the
//! loop writes the call for it. The call is still a change: it goes through the executor and
//! the policy like any other, so the default mode asks the person before anything is
//! written. A request the reading is not sure of is left to the model.

use imurun_core::ToolCall;
use serde_json::{Map, Value};

use crate::prefetch::{POLITE_LEADS, looks_like_a_file};

/// Verbs that delete one named path.
const DELETE_VERBS: &[&str] = &["delete ", "remove ", "erase "];
/// Openings that make a folder, before its name.
const FOLDER_OPENINGS: &[&str] = &[
    "make a folder ",
    "make a new folder ",
    "create a folder ",
    "create a new folder ",
    "make a directory ",
    "make a new directory ",
    "create a directory ",
    "create a new directory ",
    "make folder ",
    "create folder ",
    "mkdir ",
];
/// Openings that create a file, before its name.
const FILE_OPENINGS: &[&str] = &[
    "create a file ",
    "create a new file ",
    "make a file ",
    "make a new file ",
    "create file ",
    "create ",
];
/// Words between a new file's name and its text.
const TEXT_JOINS: &[&str] = &[
    " with the text ",
    " with the content ",
    " with the words ",
    " containing the text ",
    " containing ",
    " that says ",
    " saying ",
    " with ",
];
/// Words between a name and its opening ("a folder called drafts").
const NAMINGS: &[&str] = &["called ", "named ", "with the name "];

/// The call a plain change request asks for, when it is one: `delete` of one named path,
/// `make_dir` of one named folder, or `file_write` of a named file with the text given.
pub(crate) fn change_call(prompt: &str) -> Option<ToolCall> {
    let trimmed = prompt.trim().trim_end_matches(['.', '!', '?']).trim_end();
    if trimmed.contains('\n') {
        return None;
    }
    // ASCII case only: every pattern is ASCII, and the byte offsets found in the lower-cased
    // text must be the same in the original (`İ` lower-cases to three bytes from two).
    let lower = trimmed.to_ascii_lowercase();
    // The polite lead's length, so the original case of the rest is kept.
    let lead = POLITE_LEADS
        .iter()
        .rev()
        .find(|lead| lower.starts_with(*lead))
        .map_or(0, |lead| lead.len());
    let (rest, rest_lower) = (&trimmed[lead..], &lower[lead..]);
    deletion(rest, rest_lower)
        .or_else(|| folder(rest, rest_lower))
        .or_else(|| new_file(rest, rest_lower))
        .or_else(|| written_to(rest, rest_lower))
}

/// "delete notes.txt", "remove the file old/a.md".
fn deletion(rest: &str, lower: &str) -> Option<ToolCall> {
    let verb = DELETE_VERBS.iter().find(|verb| lower.starts_with(*verb))?;
    let target = strip_any(&rest[verb.len()..], &["the file ", "file "]);
    let path = one_name(target)?;
    looks_like_a_file(&path).then(|| call("delete", &[("path", path)]))
}

/// "make a folder called drafts".
fn folder(rest: &str, lower: &str) -> Option<ToolCall> {
    let opening = FOLDER_OPENINGS
        .iter()
        .find(|opening| lower.starts_with(*opening))?;
    let named = strip_any(&rest[opening.len()..], NAMINGS);
    let path = one_name(named)?;
    Some(call("make_dir", &[("path", path)]))
}

/// "create a file called todo.txt with the text buy milk".
fn new_file(rest: &str, lower: &str) -> Option<ToolCall> {
    let opening = FILE_OPENINGS
        .iter()
        .find(|opening| lower.starts_with(*opening))?;
    let named = strip_any(&rest[opening.len()..], NAMINGS);
    let named_lower = named.to_ascii_lowercase();
    let (at, join) = TEXT_JOINS
        .iter()
        .filter_map(|join| named_lower.find(join).map(|at| (at, *join)))
        .min_by_key(|(at, _)| *at)?;
    let path = one_name(&named[..at])?;
    let text = unquoted(&named[at + join.len()..])?;
    looks_like_a_file(&path).then(|| call("file_write", &[("path", path), ("content", text)]))
}

/// "write hello to hello.txt", "write 'buy bread' into todo.txt".
fn written_to(rest: &str, lower: &str) -> Option<ToolCall> {
    if !lower.starts_with("write ") {
        return None;
    }
    let body = &rest["write ".len()..];
    let body_lower = body.to_ascii_lowercase();
    let (at, join) = [" to ", " into ", " in "]
        .iter()
        .filter_map(|join| body_lower.rfind(join).map(|at| (at, *join)))
        .max_by_key(|(at, _)| *at)?;
    let path = one_name(strip_any(&body[at + join.len()..], &["the file ", "file "]))?;
    let text = unquoted(&body[..at])?;
    looks_like_a_file(&path).then(|| call("file_write", &[("path", path), ("content", text)]))
}

/// `text` without the first of `prefixes` it starts with (case aside).
fn strip_any<'t>(text: &'t str, prefixes: &[&str]) -> &'t str {
    let lower = text.to_ascii_lowercase();
    prefixes
        .iter()
        .find(|prefix| lower.starts_with(*prefix))
        .map_or(text, |prefix| &text[prefix.len()..])
}

/// One path: a single word, quotes and backticks aside.
fn one_name(text: &str) -> Option<String> {
    let name = text
        .trim()
        .trim_matches(|c: char| "`'\"".contains(c))
        .trim_end_matches(['.', ',']);
    let plain = !name.is_empty()
        && !name.contains(char::is_whitespace)
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "._-/".contains(c));
    plain.then(|| name.to_owned())
}

/// Words that open a description of text rather than the text itself ("a summary of
/// report.txt", "the answer"): such a request is the model's to write.
const DESCRIBING_WORDS: &[&str] = &[
    "a", "an", "the", "some", "my", "your", "our", "its", "this", "that", "these", "those", "all",
];

/// Text given for a file: quoted, the quotes removed; unquoted, as written unless it opens
/// like a description (`DESCRIBING_WORDS`); nothing for empty text.
fn unquoted(text: &str) -> Option<String> {
    let text = text.trim();
    let quoted = ["\"", "'", "`", "\u{201c}"].iter().find_map(|quote| {
        let close = if *quote == "\u{201c}" {
            "\u{201d}"
        } else {
            quote
        };
        text.strip_prefix(quote)?.strip_suffix(close)
    });
    let first = text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let text = match quoted {
        Some(quoted) => quoted,
        None if DESCRIBING_WORDS.contains(&first.as_str()) => return None,
        None => text,
    };
    (!text.trim().is_empty()).then(|| text.to_owned())
}

fn call(name: &str, args: &[(&str, String)]) -> ToolCall {
    let args: Map<String, Value> = args
        .iter()
        .map(|(key, value)| ((*key).to_owned(), Value::String(value.clone())))
        .collect();
    ToolCall::new(name, args)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(prompt: &str) -> Option<(String, Value)> {
        change_call(prompt).map(|call| (call.name, Value::Object(call.args)))
    }

    #[test]
    fn plain_change_requests_are_read_as_their_calls() {
        let cases = [
            ("Delete notes.txt", "delete", json!({"path": "notes.txt"})),
            (
                "Please remove the file old/a.md.",
                "delete",
                json!({"path": "old/a.md"}),
            ),
            (
                "Make a folder called drafts",
                "make_dir",
                json!({"path": "drafts"}),
            ),
            (
                "Could you create a new directory named Photos_2026?",
                "make_dir",
                json!({"path": "Photos_2026"}),
            ),
            (
                "Create a file called todo.txt with the text buy milk",
                "file_write",
                json!({"path": "todo.txt", "content": "buy milk"}),
            ),
            (
                "Make a folder called İzmir",
                "make_dir",
                json!({"path": "İzmir"}),
            ),
            (
                "Write İyi geceler to ödev.txt",
                "file_write",
                json!({"path": "ödev.txt", "content": "İyi geceler"}),
            ),
            (
                "Write 'a poem' to poem.txt",
                "file_write",
                json!({"path": "poem.txt", "content": "a poem"}),
            ),
            (
                "Create a file called İ.txt with the text ÇĞ and İ",
                "file_write",
                json!({"path": "İ.txt", "content": "ÇĞ and İ"}),
            ),
            (
                "Create todo.txt that says Buy bread, and eggs",
                "file_write",
                json!({"path": "todo.txt", "content": "Buy bread, and eggs"}),
            ),
            (
                "Write hello to hello.txt",
                "file_write",
                json!({"path": "hello.txt", "content": "hello"}),
            ),
            (
                "write 'meet at 10 in the hall' into plan.md",
                "file_write",
                json!({"path": "plan.md", "content": "meet at 10 in the hall"}),
            ),
        ];
        for (prompt, tool, args) in cases {
            assert_eq!(read(prompt), Some((tool.to_owned(), args)), "{prompt}");
        }
    }

    #[test]
    fn anything_less_plain_is_left_to_the_model() {
        for prompt in [
            "Delete all my old files",
            "Remove the duplicates from groceries.txt? Actually no.\nKeep them.",
            "Delete it",
            "Write a haiku about autumn.",
            "Write one sentence about the sea.",
            "Create a story about a cat",
            "Make a folder",
            "Make a folder for my holiday photos",
            "Create a file called todo.txt",
            "What happens if I delete notes.txt?",
            "Write to me about files",
            "Make a folder called İstanbul photos",
            "Write a summary of report.txt to summary.md",
            "Create notes.md with a summary of report.txt",
            "Write a poem about autumn to poem.txt",
        ] {
            assert_eq!(read(prompt), None, "{prompt}");
        }
    }
}
