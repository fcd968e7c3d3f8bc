//! What feeds code to a shell: downloads and decoders, whose output nobody can read here,
//! and commands that print only literal text, which is read as the code it becomes.

use super::lexer::{Command, Script, Stdin, unescape_c};
use super::runners::{Step, effective, is_short_cluster_with, joined};

/// Why feeding this command's output to a shell would run code nobody can read here:
/// it downloads (`curl`, `wget`, `iwr`, `WebClient.DownloadString`) or decodes (`base64 -d`,
/// `xxd -r`, `gunzip`, `rev`, `tr`). Looks into the command's substitutions and subshells.
pub(crate) fn hidden_source(command: &Command) -> Option<&'static str> {
    for word in &command.words {
        let text = word.text.as_str();
        let downloads = [
            "downloadstring",
            "downloaddata",
            "net.webclient",
            "net.http",
        ];
        if downloads
            .iter()
            .any(|needle| contains_ignoring_case(text, needle))
        {
            return Some("code downloaded from the network");
        }
        if contains_ignoring_case(text, "frombase64string") {
            return Some("decoded text");
        }
        if let Some(kind) = word.substitutions.iter().find_map(script_hidden_source) {
            return Some(kind);
        }
    }
    if let Some(kind) = command.groups.iter().find_map(script_hidden_source) {
        return Some(kind);
    }
    let Step::Run { name, args } = effective(&command.words) else {
        return None;
    };
    let has = |flags: &[&str]| args.iter().any(|w| flags.contains(&w.text.as_str()));
    let downloads = matches!(
        name.as_str(),
        "curl"
            | "wget"
            | "fetch"
            | "aria2c"
            | "http"
            | "https"
            | "xh"
            | "lwp-request"
            | "ftp"
            | "tftp"
            | "nc"
            | "ncat"
            | "netcat"
            | "socat"
            | "iwr"
            | "invoke-webrequest"
            | "irm"
            | "invoke-restmethod"
            | "start-bitstransfer"
            | "bitsadmin"
    ) || (name == "certutil" && has(&["-urlcache", "/urlcache"]));
    if downloads {
        return Some("code downloaded from the network");
    }
    let decodes = match name.as_str() {
        "base64" | "base32" | "basenc" => {
            has(&["-d", "--decode", "-D"])
                || args.iter().any(|w| is_short_cluster_with(&w.text, &['d']))
        }
        "openssl" => has(&["-d", "-decode", "-base64"]),
        "xxd" => args.iter().any(|w| is_short_cluster_with(&w.text, &['r'])),
        "gzip" | "bzip2" | "xz" | "zstd" | "lzma" => {
            has(&["--decompress", "--uncompress"])
                || args.iter().any(|w| is_short_cluster_with(&w.text, &['d']))
        }
        "uudecode" | "gunzip" | "zcat" | "bunzip2" | "bzcat" | "unxz" | "xzcat" | "unzstd"
        | "zstdcat" | "rev" | "tr" => true,
        "certutil" => has(&["-decode", "/decode", "-decodehex"]),
        _ => false,
    };
    decodes.then_some("decoded text")
}

/// `haystack` contains `needle` (lowercase ASCII) in any case, without allocating: this
/// runs on every word of every command.
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

fn script_hidden_source(script: &Script) -> Option<&'static str> {
    script
        .pipelines
        .iter()
        .flat_map(|p| &p.commands)
        .find_map(hidden_source)
}

/// The text a command prints when it only prints words written in it: `echo`, `printf`,
/// `Write-Output`, `cat` of a here-document, or a bare PowerShell string. Piped into a shell,
/// that text is code, and is checked as such.
pub(crate) fn literal_output(command: &Command, heredocs: &[String]) -> Option<String> {
    if let [only] = command.words.as_slice()
        && only.text.contains(' ')
        && only.substitutions.is_empty()
    {
        return Some(only.text.clone());
    }
    let Step::Run { name, args } = effective(&command.words) else {
        return None;
    };
    match name.as_str() {
        "echo" | "write-output" | "write-host" => {
            let options = args.iter().take_while(|w| is_echo_option(&w.text)).count();
            let escapes = args[..options].iter().any(|w| w.text.contains('e'));
            let text = joined(&args[options..]);
            Some(if escapes { unescape_c(&text) } else { text })
        }
        "printf" => Some(unescape_c(&joined(args))),
        "cat" if args.is_empty() => command.stdin.iter().find_map(|stdin| match stdin {
            Stdin::HereDoc { slot, .. } => heredocs.get(*slot).cloned(),
            Stdin::HereString(word) => Some(word.text.clone()),
        }),
        _ => None,
    }
}

fn is_echo_option(text: &str) -> bool {
    text.len() > 1
        && text.starts_with('-')
        && text[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
}

/// The literal text a nested command prints, when it is one simple command that does.
pub(crate) fn script_literal_output(script: &Script, heredocs: &[String]) -> Option<String> {
    match script.pipelines.as_slice() {
        [pipeline] => literal_output(pipeline.commands.last()?, heredocs),
        _ => None,
    }
}

/// What a command in a pipe does with the text that reaches it.
pub(crate) enum Through {
    /// Passes its input on unchanged, or a part of it (`cat`, `head -1`, `tee log`, `sort`).
    Unchanged,
    /// Prints a file it names (`cat x.sh`): the code is a script, as `bash x.sh` runs one.
    File,
    /// Prints something else.
    Other,
}

/// How `command` treats the text piped into it.
pub(crate) fn passes_through(command: &Command) -> Through {
    const FILTERS: &[&str] = &[
        "cat", "head", "tail", "tee", "sort", "uniq", "pv", "buffer", "dd", "tac", "more",
    ];
    let Step::Run { name, args } = effective(&command.words) else {
        return Through::Other;
    };
    if !FILTERS.contains(&name.as_str()) {
        return Through::Other;
    }
    let operands = args
        .iter()
        .filter(|w| !w.text.starts_with('-') && !w.text.chars().all(|c| c.is_ascii_digit()));
    match name.as_str() {
        "tee" => Through::Unchanged,
        "dd" if args.iter().any(|w| w.text.starts_with("if=")) => Through::File,
        _ if operands.count() > 0 && matches!(name.as_str(), "cat" | "tac" | "more") => {
            Through::File
        }
        _ => Through::Unchanged,
    }
}
