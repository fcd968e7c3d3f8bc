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
    "save a note ",
    "save a new note ",
    "save a file ",
    "write a note ",
    "write a file ",
    "make a note ",
    "create a note ",
    "start a file ",
    "create ",
];
/// Words between a new file's name and its text.
const TEXT_JOINS: &[&str] = &[
    " that says: ",
    " saying: ",
    " with the text: ",
    " containing: ",
    " with: ",
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

/// Clauses after a write that ask to see the file: ", then read it back", "and show me what
/// it holds". The words that join them, and the verbs that open them.
const THEN_JOINS: &[&str] = &[
    ", and then ",
    " and then ",
    ", then ",
    " then ",
    ", and ",
    " and ",
];
const SEE_VERBS: &[&str] = &["read", "open", "show", "display", "print", "cat", "tell"];

/// Verbs that put given text into a named file ("put 'call mom' into reminder.txt").
const PUT_VERBS: &[&str] = &[
    "write ",
    "put ",
    "save ",
    "store ",
    "jot down ",
    "note down ",
    "record ",
];

/// Words before a file's name ("put 'x' in a new file notes.txt").
const FILE_NAMINGS: &[&str] = &[
    "a new file called ",
    "a new file named ",
    "a new file ",
    "a file called ",
    "a file named ",
    "a file ",
    "the new file ",
    "the file ",
    "new file ",
    "file ",
];

/// Words before the text itself ("save the word banana to fruit.txt").
const TEXT_NAMINGS: &[&str] = &[
    "the words ",
    "the word ",
    "the phrase ",
    "the line ",
    "the text ",
    "the sentence ",
    "the note ",
];

/// Verbs that ask to run a command ("run `ls -la`", "please execute: echo hi").
const RUN_VERBS: &[&str] = &["run", "execute", "exec"];

/// Words between a run verb and the command ("run this in the terminal: pwd").
const RUN_FILLERS: &[&str] = &[
    "please",
    "this command",
    "the command",
    "this",
    "the following",
    "in the terminal",
    "in a terminal",
    "in the shell",
    "in a shell",
    "for me",
    "now",
];

/// The calls a plain request asks for, in order: a change (`change_call`), followed by a
/// `file_read` of the written file when the request goes on to ask to see it ("..., then
/// read it back"); or a `shell` call for a command the person gives to run (`command_call`).
/// Empty when the request is not that plain.
pub(crate) fn planned_calls(prompt: &str) -> Vec<ToolCall> {
    if let Some(command) = command_call(prompt) {
        return vec![command];
    }
    let (request, see) = split_see_clause(prompt);
    let Some(change) = change_call(request) else {
        return Vec::new();
    };
    let mut calls = vec![change];
    if see && calls[0].name == "file_write" {
        let path = calls[0].args.get("path").cloned().unwrap_or(Value::Null);
        let mut args = Map::new();
        args.insert("path".into(), path);
        calls.push(ToolCall::new("file_read", args));
    }
    calls
}

/// `prompt` without a closing clause asking to see the file, and whether it had one.
fn split_see_clause(prompt: &str) -> (&str, bool) {
    let lower = prompt.to_ascii_lowercase();
    let found = THEN_JOINS
        .iter()
        .filter_map(|join| {
            lower.match_indices(join).find_map(|(at, _)| {
                let after = lower[at + join.len()..].trim_start();
                let after = after.strip_prefix("please ").unwrap_or(after);
                SEE_VERBS
                    .iter()
                    .any(|verb| {
                        after.starts_with(verb)
                            && after[verb.len()..].starts_with([' ', '.', '!', '?'])
                            || after == *verb
                    })
                    .then_some(at)
            })
        })
        .min();
    match found {
        Some(at) => (&prompt[..at], true),
        None => (prompt, false),
    }
}

/// The `shell` call for a command the person asks to run: quoted or in backticks after a run
/// verb ("run `ls -la`", "can you run 'date' for me"), after a colon ("execute: echo hi",
/// "run this in the terminal: pwd"), or written plainly when it reads as a command line (a
/// flag, a path or a pipe in it: "run rm -rf ./old"). The shell's deny-list and the mode
/// decide whether it runs, as for any call.
pub(crate) fn command_call(prompt: &str) -> Option<ToolCall> {
    let trimmed = prompt.trim();
    let lower = trimmed.to_ascii_lowercase();
    let lead = POLITE_LEADS
        .iter()
        .rev()
        .find(|lead| lower.starts_with(*lead))
        .map_or(0, |lead| lead.len());
    let verb = RUN_VERBS.iter().find(|verb| {
        lower[lead..].starts_with(*verb) && lower[lead + verb.len()..].starts_with([' ', ':'])
    })?;
    let body = &trimmed[lead + verb.len()..];
    // Quoted or in backticks, anywhere after the verb.
    for (open, close) in [
        ('`', '`'),
        ('\'', '\''),
        ('"', '"'),
        ('\u{201c}', '\u{201d}'),
    ] {
        if let Some(start) = body.find(open) {
            let rest = &body[start + open.len_utf8()..];
            if let Some(end) = rest.find(close) {
                let command = rest[..end].trim();
                if !command.is_empty() && !command.contains('\n') {
                    return Some(call("shell", &[("command", command.to_owned())]));
                }
            }
        }
    }
    let mut rest = body.trim();
    loop {
        let rest_lower = rest.to_ascii_lowercase();
        match RUN_FILLERS
            .iter()
            .find(|filler| rest_lower.starts_with(*filler))
        {
            Some(filler) => rest = rest[filler.len()..].trim_start(),
            None => break,
        }
    }
    let (command, colon) = match rest.strip_prefix(':') {
        Some(after) => (after.trim(), true),
        None => (rest, false),
    };
    let command = command.trim_end_matches(['.', '?', '!']).trim();
    if command.is_empty() || command.contains('\n') {
        return None;
    }
    let first = command.split_whitespace().next().unwrap_or_default();
    let program = first
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-/".contains(c))
        && !DESCRIBING_WORDS.contains(&first);
    let reads_as_a_command_line = command
        .split_whitespace()
        .skip(1)
        .any(|word| word.starts_with('-') || word.contains('/') || word == "|");
    (program && (colon || reads_as_a_command_line))
        .then(|| call("shell", &[("command", command.to_owned())]))
}

/// The call a plain change request asks for, when it is one: `delete` of one named path,
/// `make_dir` of one named folder, or `file_write` of a named file with the text given.
pub(crate) fn change_call(prompt: &str) -> Option<ToolCall> {
    let trimmed = prompt.trim().trim_end_matches(['.', '!', '?']).trim_end();
    let trimmed = trimmed
        .strip_suffix(" please")
        .or_else(|| trimmed.strip_suffix(", please"))
        .unwrap_or(trimmed);
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
        .or_else(|| replaced(rest, rest_lower))
}

/// "replace the contents of notes.txt with \"Call Anna\"", "overwrite todo.md with buy eggs".
fn replaced(rest: &str, lower: &str) -> Option<ToolCall> {
    let verb = ["replace ", "overwrite "]
        .iter()
        .find(|verb| lower.starts_with(*verb))?;
    let body = strip_any(
        &rest[verb.len()..],
        &[
            "the contents of ",
            "the content of ",
            "the text of ",
            "the text in ",
            "the file ",
            "file ",
        ],
    );
    let body_lower = body.to_ascii_lowercase();
    let at = body_lower.find(" with ")?;
    let path = one_name(&body[..at])?;
    let text = unquoted(strip_any(&body[at + " with ".len()..], TEXT_NAMINGS))?;
    looks_like_a_file(&path).then(|| call("file_write", &[("path", path), ("content", text)]))
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

/// "create a file called todo.txt with the text buy milk", "save a todo.txt that says: buy
/// chicken wire", "make notes.md with just the word passport in it": an opening (or a verb
/// that makes, and what it makes: "save a todo.txt"), the file's name, a join, the text.
fn new_file(rest: &str, lower: &str) -> Option<ToolCall> {
    let named = match FILE_OPENINGS
        .iter()
        .find(|opening| lower.starts_with(*opening))
    {
        Some(opening) => &rest[opening.len()..],
        None => {
            let verb = MAKING_VERBS.iter().find(|verb| lower.starts_with(*verb))?;
            let made = strip_any(
                &rest[verb.len()..],
                &["a new ", "a ", "an ", "the ", "new "],
            );
            strip_any(made, &["text file ", "file ", "note ", "document "])
        }
    };
    let named = strip_any(named, NAMINGS);
    let named_lower = named.to_ascii_lowercase();
    let (at, join) = TEXT_JOINS
        .iter()
        .filter_map(|join| named_lower.find(join).map(|at| (at, *join)))
        .min_by_key(|(at, _)| *at)?;
    let path = one_name(&named[..at])?;
    let text = unquoted(given_text(after_described_text(&named[at + join.len()..])))?;
    looks_like_a_file(&path).then(|| call("file_write", &[("path", path), ("content", text)]))
}

/// Verbs that make a file when a file's name follows ("save a todo.txt that says ...").
const MAKING_VERBS: &[&str] = &["create ", "make ", "save ", "write ", "start ", "add "];

/// The text itself from the words that give it: "just the word passport in it" is
/// `passport`, "only the line buy milk" is `buy milk`.
fn given_text(text: &str) -> &str {
    let text = strip_any(text.trim(), &["just ", "only ", "simply ", "exactly "]);
    let text = strip_any(text, TEXT_NAMINGS).trim();
    let lower = text.to_ascii_lowercase();
    [
        " in it",
        " inside it",
        " inside",
        " in there",
        " and nothing else",
        " and nothing more",
    ]
    .iter()
    .find(|end| lower.ends_with(*end))
    .map_or(text, |end| text[..text.len() - end.len()].trim_end())
}

/// "write hello to hello.txt", "put 'buy bread' into todo.txt", "save the word banana to
/// fruit.txt", "save the phrase meet at noon as meeting.txt".
fn written_to(rest: &str, lower: &str) -> Option<ToolCall> {
    let verb = PUT_VERBS.iter().find(|verb| lower.starts_with(*verb))?;
    let body = &rest[verb.len()..];
    let body_lower = body.to_ascii_lowercase();
    let (at, join) = [" to ", " into ", " in ", " as "]
        .iter()
        .filter_map(|join| body_lower.rfind(join).map(|at| (at, *join)))
        .max_by_key(|(at, _)| *at)?;
    let path = one_name(strip_any(&body[at + join.len()..], FILE_NAMINGS))?;
    let text = unquoted(strip_any(&body[..at], TEXT_NAMINGS))?;
    looks_like_a_file(&path).then(|| call("file_write", &[("path", path), ("content", text)]))
}

/// Text introduced by a description and a colon ("exactly this text and nothing else: oat
/// milk") is what follows the colon; any other text as it is.
fn after_described_text(text: &str) -> &str {
    let Some((before, after)) = text.split_once(':') else {
        return text;
    };
    let before_lower = before.to_ascii_lowercase();
    let describes = before.split_whitespace().count() <= 8
        && ["text", "following", "this", "words", "line", "content"]
            .iter()
            .any(|word| before_lower.split_whitespace().any(|w| w == *word));
    if describes && !after.trim().is_empty() {
        after.trim()
    } else {
        text
    }
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
                "save a todo.txt that says: buy chicken wire",
                "file_write",
                json!({"path": "todo.txt", "content": "buy chicken wire"}),
            ),
            (
                "Make packing.md with just the word passport in it",
                "file_write",
                json!({"path": "packing.md", "content": "passport"}),
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
    fn a_write_that_asks_to_see_the_file_reads_it_after() {
        let plan = |prompt: &str| -> Vec<(String, Value)> {
            planned_calls(prompt)
                .into_iter()
                .map(|call| (call.name, Value::Object(call.args)))
                .collect()
        };
        assert_eq!(
            plan("Create a file memo.txt with the text hi there, then read it back."),
            [
                (
                    "file_write".to_owned(),
                    json!({"path": "memo.txt", "content": "hi there"})
                ),
                ("file_read".to_owned(), json!({"path": "memo.txt"})),
            ]
        );
        assert_eq!(
            plan("put 'feed the cat' into cat.txt and show me the file"),
            [
                (
                    "file_write".to_owned(),
                    json!({"path": "cat.txt", "content": "feed the cat"})
                ),
                ("file_read".to_owned(), json!({"path": "cat.txt"})),
            ]
        );
        assert_eq!(
            plan("Save the word kiwi to fruit.txt please"),
            [(
                "file_write".to_owned(),
                json!({"path": "fruit.txt", "content": "kiwi"})
            )]
        );
        assert_eq!(
            plan("Replace the contents of a.md with \"new text\""),
            [(
                "file_write".to_owned(),
                json!({"path": "a.md", "content": "new text"})
            )]
        );
        assert_eq!(
            plan("pls put 'order rye' in a new file work/orders.txt"),
            [(
                "file_write".to_owned(),
                json!({"path": "work/orders.txt", "content": "order rye"})
            )]
        );
        assert_eq!(
            plan("save a note called rent.txt that says pay rent on the 1st"),
            [(
                "file_write".to_owned(),
                json!({"path": "rent.txt", "content": "pay rent on the 1st"})
            )]
        );
        assert_eq!(
            plan("Create list.txt containing exactly this text and nothing else: oat milk"),
            [(
                "file_write".to_owned(),
                json!({"path": "list.txt", "content": "oat milk"})
            )]
        );
        assert_eq!(
            plan("write 'salt and pepper' to spice.txt"),
            [(
                "file_write".to_owned(),
                json!({"path": "spice.txt", "content": "salt and pepper"})
            )]
        );
    }

    #[test]
    fn a_command_given_to_run_is_a_shell_call() {
        let command = |prompt: &str| {
            command_call(prompt).and_then(|call| call.args["command"].as_str().map(str::to_owned))
        };
        assert_eq!(command("run `ls -la`").as_deref(), Some("ls -la"));
        assert_eq!(
            command("Could you run 'uname -a' for me?").as_deref(),
            Some("uname -a")
        );
        assert_eq!(
            command("please execute: echo hi").as_deref(),
            Some("echo hi")
        );
        assert_eq!(
            command("Run this in the terminal: whoami").as_deref(),
            Some("whoami")
        );
        assert_eq!(
            command("run du -sh ./photos").as_deref(),
            Some("du -sh ./photos")
        );
        for prompt in [
            "Run a marathon",
            "run the tests",
            "Execute the plan",
            "run fast",
        ] {
            assert_eq!(command(prompt), None, "{prompt}");
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
