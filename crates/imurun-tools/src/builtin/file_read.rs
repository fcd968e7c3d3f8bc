//! `file_read`: reads one UTF-8 text file in the workspace, up to a size cap.

use std::sync::Arc;

use imurun_core::{Facts, ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{FileError, Target, Workspace};
use serde_json::{Map, Value};

use super::{WorkspaceTool, required_string};

/// The largest file `file_read` returns, in bytes. A model's context holds far less; a bigger
/// file should be read in parts with the shell (`head`, `sed -n`).
pub const FILE_READ_BYTES_MAX: u64 = 256 * 1024;

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::file_read()
}

/// Reads a text file through the workspace's capability handle.
pub fn file_read_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Read, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    match required_string(args, "path") {
        Ok(path) => read(workspace, path),
        Err(failure) => failure,
    }
}

fn read(workspace: &Workspace, written: &str) -> ToolOutput {
    let path = match workspace.check_path(written, Target::Follow) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    let bytes = match workspace.read(&path, FILE_READ_BYTES_MAX) {
        Ok(bytes) => bytes,
        Err(FileError::TooLarge { size_bytes, .. }) => {
            return ToolOutput::failed(format!(
                "`{written}` is {size_bytes} bytes, more than the {FILE_READ_BYTES_MAX} file_read returns; \
                 read a part of it with the shell (head, tail, sed -n)"
            ));
        }
        Err(error) => return ToolOutput::failed(error),
    };
    // A NUL byte is valid UTF-8 but no text file has one: it is the surest sign of a binary.
    let text = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => text,
        _ => {
            return ToolOutput::failed(format!(
                "`{written}` is a binary file, not UTF-8 text; file_read reads text files only"
            ));
        }
    };
    if text.is_empty() {
        return ToolOutput::ok(format!("(`{written}` is empty)")).with_facts(
            Facts::new(format!("`{written}` is empty.")).require(
                "that it is empty",
                ["empty", "nothing", "no content", "no text", "blank"]
                    .map(str::to_owned)
                    .to_vec(),
            ),
        );
    }
    let facts = facts(written, &text);
    ToolOutput::ok(text).with_facts(facts)
}

/// The lines an answer may quote, and the quote that answers when the model does not.
const QUOTED_LINES_MAX: usize = 40;
const QUOTED_CHARS_MAX: usize = 2000;
/// A line an answer quotes is matched on its first words, up to this many characters.
const LINE_START_CHARS: usize = 60;
/// Lines looked at for forms.
const FORM_LINES_MAX: usize = 200;

/// An answer about a file quotes it: at least the start of one of its lines.
fn facts(written: &str, text: &str) -> Facts {
    let mut quoted: Vec<String> = Vec::new();
    let mut chars = 0;
    let lines: Vec<&str> = text.lines().collect();
    for line in lines.iter().take(QUOTED_LINES_MAX) {
        chars += line.chars().count() + 1;
        if chars > QUOTED_CHARS_MAX {
            break;
        }
        quoted.push(format!("> {line}").trim_end().to_owned());
    }
    if quoted.len() < lines.len() {
        quoted.push(format!("> … ({} lines in all)", lines.len()));
    }
    let forms: Vec<String> = lines
        .iter()
        .take(FORM_LINES_MAX)
        .filter_map(|line| line_start(line))
        .collect();
    let facts = Facts::new(format!("`{written}` says:\n\n{}", quoted.join("\n")));
    if forms.is_empty() {
        facts
    } else {
        facts.require("what the file says", forms)
    }
}

/// The first whole words of a line, without its closing punctuation: what a quote of it
/// holds. `None` for a line with fewer than three letters or digits.
fn line_start(line: &str) -> Option<String> {
    let line = line
        .trim()
        .trim_start_matches(['-', '*', '#', '>', ' '])
        .trim_end_matches(|c: char| !c.is_alphanumeric());
    if line.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
        return None;
    }
    let mut start = String::new();
    for word in line.split_whitespace() {
        if !start.is_empty() && start.chars().count() + 1 + word.chars().count() > LINE_START_CHARS
        {
            break;
        }
        if !start.is_empty() {
            start.push(' ');
        }
        start.push_str(word);
    }
    let start = start
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_owned();
    (!start.is_empty()).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_quotes_the_start_of_a_line() {
        let facts = facts(
            "notes.txt",
            "# Shopping\n- Buy milk.\n\nCall Anna about the 3rd!\n",
        );
        assert_eq!(
            facts.sentence,
            "`notes.txt` says:\n\n> # Shopping\n> - Buy milk.\n>\n> Call Anna about the 3rd!"
        );
        assert_eq!(
            facts.required[0].forms,
            ["Shopping", "Buy milk", "Call Anna about the 3rd"]
        );
        let long = "word ".repeat(30);
        let start = line_start(&long).unwrap();
        assert!(start.chars().count() <= LINE_START_CHARS && start.ends_with("word"));
        assert_eq!(line_start("--"), None);
    }

    #[test]
    fn a_long_file_is_quoted_in_part() {
        let text: String = (1..=100).map(|n| format!("line number {n}\n")).collect();
        let facts = facts("log.txt", &text);
        assert!(
            facts.sentence.ends_with("> … (100 lines in all)"),
            "{}",
            facts.sentence
        );
        assert_eq!(
            facts.sentence.matches("\n> line number").count(),
            QUOTED_LINES_MAX
        );
    }
}
