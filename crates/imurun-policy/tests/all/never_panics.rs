//! Property tests: no input makes the deny-list or path checking panic.

use imurun_policy::{Target, destructive_reason};
use proptest::prelude::*;

use crate::support::TempWorkspace;

/// Pieces of shell syntax, so random commands reach deep into the lexer's paths.
const PIECES: &[&str] = &[
    "rm",
    "-rf",
    "/",
    "~",
    "$HOME",
    "${HOME",
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "\\",
    "|",
    ";",
    "&&",
    "||",
    "&",
    "\n",
    "<<",
    "<<<",
    "EOF",
    ">",
    "<(",
    "{",
    "}",
    "(",
    "bash",
    "sh",
    "-c",
    "powershell",
    "-enc",
    "cmd",
    "/c",
    "iex",
    "iwr",
    "curl",
    "base64",
    "-d",
    ":(){",
    ":|:&",
    "};:",
    "%0|%0",
    "$'\\x",
    "^",
    "C:\\",
    "*",
    "..",
    "sudo",
    "env",
    "-S",
    "cd",
    "find",
    "-delete",
    " ",
    "\t",
];

fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..80).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_deny_list_never_panics_on_any_string(command in any::<String>()) {
        let _ = destructive_reason(&command);
    }

    #[test]
    fn the_deny_list_never_panics_on_shell_like_text(command in shellish()) {
        let _ = destructive_reason(&command);
    }

    #[test]
    fn path_checks_never_panic(written in any::<String>()) {
        let t = TempWorkspace::new();
        let _ = t.workspace.check_path(&written, Target::Follow);
        let _ = t.workspace.check_path(&written, Target::Entry);
    }
}
