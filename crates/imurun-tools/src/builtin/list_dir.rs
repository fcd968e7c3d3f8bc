//! `list_dir`: lists one folder of the workspace, sorted, with a bound on the entries shown.

use std::fmt::Write as _;
use std::sync::Arc;

use imurun_core::{ClaimKind, Facts, ToolCategory, ToolOutput, ToolSpec};
use imurun_policy::{EntryKind, Target, Workspace};
use serde_json::{Map, Value};

use super::{WorkspaceTool, optional_string};

/// The most entries one listing shows. Enough to see a project's shape; a folder with more is
/// reported as cut, and the model can list its subfolders or use the shell to filter.
pub const LIST_ENTRIES_MAX: usize = 500;

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::list_dir()
}

/// Lists a folder through the workspace's capability handle. Symlinks are shown as links,
/// never followed.
pub fn list_dir_tool(workspace: Arc<Workspace>) -> WorkspaceTool {
    WorkspaceTool::new(spec(), ToolCategory::Read, workspace, run)
}

/// Reads the arguments (a direct run may pass anything) and does the work.
fn run(workspace: &Workspace, args: &Map<String, Value>) -> ToolOutput {
    match optional_string(args, "path") {
        Ok(path) => list(workspace, path.unwrap_or("")),
        Err(failure) => failure,
    }
}

fn list(workspace: &Workspace, written: &str) -> ToolOutput {
    let path = match workspace.check_path(written, Target::Follow) {
        Ok(path) => path,
        Err(denial) => return ToolOutput::failed(denial),
    };
    let listing = match workspace.list(&path, LIST_ENTRIES_MAX) {
        Ok(listing) => listing,
        Err(error) => return ToolOutput::failed(error),
    };
    let shown = if path.relative().as_os_str().is_empty() {
        "the workspace root".to_string()
    } else {
        format!("`{written}`")
    };
    if listing.entries.is_empty() {
        return ToolOutput::ok(format!("{shown} is empty")).with_facts(empty_facts(&shown));
    }
    let mut text = format!("{shown}:\n");
    for entry in &listing.entries {
        // Writing to a String cannot fail.
        let _ = match entry.kind {
            EntryKind::Folder => write!(text, "{}/", entry.name),
            EntryKind::File => write!(text, "{}  ({} bytes)", entry.name, entry.size_bytes),
            EntryKind::Symlink => write!(text, "{}  (symlink)", entry.name),
            EntryKind::Other => write!(text, "{}  (special file)", entry.name),
        };
        if entry.protected {
            text.push_str("  (protected: tools may not open it)");
        }
        text.push('\n');
    }
    if listing.truncated {
        let _ = writeln!(
            text,
            "… more entries not shown (at most {LIST_ENTRIES_MAX} are listed); list a subfolder or filter with the shell"
        );
    }
    let names: Vec<String> = listing
        .entries
        .iter()
        .map(|entry| match entry.kind {
            EntryKind::Folder => format!("{}/", entry.name),
            _ => entry.name.clone(),
        })
        .collect();
    ToolOutput::ok(text.trim_end().to_string()).with_facts(listing_facts(
        &shown,
        &names,
        listing.truncated,
    ))
}

/// Listings this long or shorter must be named in full by an answer; a longer one by at
/// least [`NAMES_AT_LEAST`] of its names.
const NAMES_IN_FULL_MAX: usize = 10;

/// How many names an answer about a long listing must give.
const NAMES_AT_LEAST: usize = 5;

/// An answer about a listing names what it holds and no file it does not hold.
fn listing_facts(shown: &str, names: &[String], truncated: bool) -> Facts {
    let place = place_name(shown);
    let count = names.len();
    let sentence = if count <= NAMES_IN_FULL_MAX && !truncated {
        let list = match names {
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            [] => String::new(),
        };
        let noun = if count == 1 { "entry" } else { "entries" };
        format!("{place} holds {count} {noun}: {list}.")
    } else {
        let more = if truncated {
            ", and more not listed"
        } else {
            ""
        };
        let lines: Vec<String> = names.iter().map(|name| format!("- {name}")).collect();
        format!("{place} holds {count} entries{more}:\n{}", lines.join("\n"))
    };
    let bare = |name: &String| name.trim_end_matches('/').to_owned();
    let mut facts = Facts::new(sentence);
    if count <= NAMES_IN_FULL_MAX {
        for name in names {
            facts = facts.require(format!("the name {name}"), vec![bare(name)]);
        }
    } else {
        facts = facts.require_several(
            "the names it lists",
            names.iter().map(bare).collect(),
            NAMES_AT_LEAST,
        );
    }
    if !truncated {
        facts = facts.only(ClaimKind::FileName, names.iter().map(bare).collect());
    }
    facts
}

/// An answer about an empty folder says so, and names no file.
fn empty_facts(shown: &str) -> Facts {
    let forms = [
        "empty",
        "no files",
        "no entries",
        "no items",
        "nothing",
        "0 files",
        "zero files",
        "contains no",
        "holds no",
        "has no",
        "does not contain",
        "doesn't contain",
        "there are no",
        "there aren't any",
    ];
    Facts::new(format!("{} is empty.", place_name(shown)))
        .require(
            "that it is empty",
            forms.iter().map(|form| (*form).to_owned()).collect(),
        )
        .only(ClaimKind::FileName, Vec::new())
}

/// "the workspace root" → "The workspace"; "`docs`" stays.
fn place_name(shown: &str) -> String {
    if shown == "the workspace root" {
        "The workspace".to_owned()
    } else {
        shown.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_short_listing_must_be_named_in_full() {
        let facts = listing_facts("the workspace root", &names(&["notes.txt", "src/"]), false);
        assert_eq!(
            facts.sentence,
            "The workspace holds 2 entries: notes.txt and src/."
        );
        let required: Vec<&[String]> = facts.required.iter().map(|f| &f.forms[..]).collect();
        assert_eq!(required, [&names(&["notes.txt"])[..], &names(&["src"])[..]]);
        assert_eq!(facts.claims[0].allowed, names(&["notes.txt", "src"]));
        let one = listing_facts("`docs`", &names(&["a.md"]), false);
        assert_eq!(one.sentence, "`docs` holds 1 entry: a.md.");
    }

    #[test]
    fn a_long_or_cut_listing_needs_some_names_and_a_cut_one_allows_any() {
        let many: Vec<String> = (0..12).map(|n| format!("f{n}.txt")).collect();
        let facts = listing_facts("the workspace root", &many, false);
        assert_eq!(facts.required.len(), 1);
        assert_eq!(facts.required[0].at_least, NAMES_AT_LEAST);
        assert!(
            facts
                .sentence
                .starts_with("The workspace holds 12 entries:\n- f0.txt\n")
        );
        let cut = listing_facts("the workspace root", &many, true);
        assert!(cut.claims.is_empty(), "names past the cut are unknown");
        assert!(cut.sentence.contains("and more not listed"));
    }

    #[test]
    fn an_empty_folder_is_said_to_be_empty() {
        let facts = empty_facts("the workspace root");
        assert_eq!(facts.sentence, "The workspace is empty.");
        assert!(facts.required[0].forms.contains(&"empty".to_owned()));
        assert_eq!(facts.claims[0].allowed, Vec::<String>::new());
    }
}
