//! What a simple command really runs. Wrappers (`sudo`, `env`, `nice`, `timeout`, ...) are
//! looked through; commands that run code given as text (`bash -c`, `eval`, `iex`,
//! `powershell -Command`, `cmd /c`, `su -c`) hand that text back to be checked in its own
//! right; shells and interpreters that read code from standard input are marked, so a pipe
//! into them can be judged by what feeds it.

use super::lexer::{Dialect, Word};

/// The effective command behind a simple command's words.
#[derive(Debug)]
pub(crate) enum Step<'w> {
    /// Nothing runs: only assignments or keywords.
    Nothing,
    /// A program, by its lowercase base name without `.exe`, with its arguments.
    Run { name: String, args: &'w [Word] },
    /// Code given as text. `dialect` says how to read it; `None` is a language the deny-list
    /// does not read (`python -c`), whose text is not checked but whose sources are.
    Code {
        dialect: Option<Dialect>,
        text: String,
        words: &'w [Word],
    },
    /// Code read from the file `word` names: a script, or `<(…)`.
    Script {
        dialect: Option<Dialect>,
        word: &'w Word,
    },
    /// Code read from standard input.
    Stdin { dialect: Option<Dialect> },
    /// Code that cannot be read at all (an `-EncodedCommand` that does not decode).
    Hidden(&'static str),
}

/// A command that runs another command given as its remaining words.
struct Wrapper {
    name: &'static str,
    /// Options that take the next word as their value.
    value_options: &'static [&'static str],
    /// Plain words before the command (`timeout 5 cmd`, `chroot /new cmd`).
    positionals: usize,
}

/// Wrappers, one a line: what they are called, their options that take a value, and how
/// many plain words come before the command they run.
#[rustfmt::skip]
const WRAPPERS: &[Wrapper] = &[
    Wrapper { name: "sudo", positionals: 0, value_options: &[
        "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
        "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user",
        "--command-timeout",
    ] },
    Wrapper { name: "doas", positionals: 0, value_options: &["-u", "-C"] },
    Wrapper { name: "run0", positionals: 0, value_options: &["-u", "--user", "-D", "--chdir"] },
    Wrapper { name: "pkexec", positionals: 0, value_options: &["--user"] },
    Wrapper { name: "command", positionals: 0, value_options: &[] },
    Wrapper { name: "builtin", positionals: 0, value_options: &[] },
    Wrapper { name: "exec", positionals: 0, value_options: &["-a"] },
    Wrapper { name: "nohup", positionals: 0, value_options: &[] },
    Wrapper { name: "setsid", positionals: 0, value_options: &[] },
    Wrapper { name: "unbuffer", positionals: 0, value_options: &[] },
    Wrapper { name: "busybox", positionals: 0, value_options: &[] },
    Wrapper { name: "toybox", positionals: 0, value_options: &[] },
    Wrapper { name: "call", positionals: 0, value_options: &[] },
    Wrapper { name: "nice", positionals: 0, value_options: &["-n", "--adjustment"] },
    Wrapper { name: "time", positionals: 0, value_options: &["-f", "-o", "--format", "--output"] },
    Wrapper { name: "timeout", positionals: 1, value_options: &["-s", "-k", "--signal", "--kill-after"] },
    Wrapper { name: "stdbuf", positionals: 0, value_options: &["-i", "-o", "-e"] },
    Wrapper { name: "ionice", positionals: 0, value_options: &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"] },
    Wrapper { name: "chrt", positionals: 1, value_options: &[] },
    Wrapper { name: "taskset", positionals: 1, value_options: &[] },
    Wrapper { name: "xargs", positionals: 0, value_options: &[
        "-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof",
        "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars",
    ] },
    Wrapper { name: "caffeinate", positionals: 0, value_options: &["-t", "-w"] },
    Wrapper { name: "strace", positionals: 0, value_options: &["-o", "-e", "-p", "-s", "-u", "-E"] },
    Wrapper { name: "ltrace", positionals: 0, value_options: &["-o", "-e", "-p", "-s", "-u"] },
    Wrapper { name: "chroot", positionals: 1, value_options: &["--userspec", "--groups"] },
    Wrapper { name: "flock", positionals: 1, value_options: &["-w", "-E", "--timeout"] },
    Wrapper { name: "systemd-run", positionals: 0, value_options: &[
        "-u", "--unit", "-p", "--property", "-E", "--setenv", "-M", "--uid",
    ] },
];

const POSIX_SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "lksh", "ash", "yash", "rbash", "posh", "fish",
    "csh", "tcsh",
];

const INTERPRETERS: &[&str] = &[
    "perl",
    "ruby",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "rscript",
    "osascript",
    "tclsh",
    "jshell",
];

/// Words that may stand before a command without being one.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "coproc",
];

/// The lowercase base name a shell would look up: `/bin/rm` → `rm`, `C:\x\cmd.exe` → `cmd`.
pub(crate) fn command_name(text: &str) -> String {
    let lowered = text.to_ascii_lowercase();
    let base = lowered.rsplit(['/', '\\']).next().unwrap_or(&lowered);
    [".exe", ".com", ".cmd", ".bat"]
        .iter()
        .find_map(|suffix| base.strip_suffix(suffix))
        .unwrap_or(base)
        .to_string()
}

fn is_assignment(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Looks through assignments, keywords and wrappers to what `words` really run.
pub(crate) fn effective(words: &[Word]) -> Step<'_> {
    let mut rest = words;
    // Each pass removes at least one word, so this ends within `words.len()` passes.
    loop {
        while rest
            .first()
            .is_some_and(|w| is_assignment(&w.text) || KEYWORDS.contains(&w.text.as_str()))
        {
            rest = &rest[1..];
        }
        let Some(first) = rest.first() else {
            return Step::Nothing;
        };
        let name = command_name(&first.text);
        let args = &rest[1..];
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
            if name == "flock"
                && let Some(at) = args
                    .iter()
                    .position(|w| w.text == "-c" || w.text == "--command")
            {
                return code(
                    Some(Dialect::Posix),
                    &args[at + 1..(at + 2).min(args.len())],
                );
            }
            let after = skip_options(args, wrapper);
            if after.is_empty()
                && name == "sudo"
                && args
                    .iter()
                    .any(|w| is_short_cluster_with(&w.text, &['s', 'i']))
            {
                return Step::Stdin {
                    dialect: Some(Dialect::Posix),
                };
            }
            rest = after;
            continue;
        }
        match name.as_str() {
            "env" => match env_rest(args) {
                EnvRest::Command(after) => rest = after,
                EnvRest::Split(step) => return step,
            },
            "su" | "runuser" => return su(args),
            "eval" => return code(Some(Dialect::Posix), args),
            "watch" => {
                let after = skip_options(
                    args,
                    &Wrapper {
                        name: "watch",
                        value_options: &["-n", "-d"],
                        positionals: 0,
                    },
                );
                return code(Some(Dialect::Posix), after);
            }
            "iex" | "invoke-expression" => {
                let code_words = match args.first() {
                    Some(w) if w.text.eq_ignore_ascii_case("-command") => &args[1..],
                    _ => args,
                };
                return if code_words.is_empty() {
                    Step::Stdin {
                        dialect: Some(Dialect::Windows),
                    }
                } else {
                    code(Some(Dialect::Windows), code_words)
                };
            }
            "source" | "." => {
                return match args.first() {
                    None => Step::Nothing,
                    Some(w) if is_stdin_path(&w.text) => Step::Stdin {
                        dialect: Some(Dialect::Posix),
                    },
                    Some(w) => Step::Script {
                        dialect: Some(Dialect::Posix),
                        word: w,
                    },
                };
            }
            "powershell" | "pwsh" => return powershell(args),
            "cmd" => return cmd(args),
            _ if POSIX_SHELLS.contains(&name.as_str()) => return posix_shell(args),
            _ if INTERPRETERS.contains(&name.as_str())
                || name.starts_with("python")
                || name.starts_with("pypy") =>
            {
                return interpreter(args);
            }
            _ => return Step::Run { name, args },
        }
    }
}

fn code(dialect: Option<Dialect>, words: &[Word]) -> Step<'_> {
    Step::Code {
        dialect,
        text: joined(words),
        words,
    }
}

fn is_stdin_path(text: &str) -> bool {
    matches!(text, "-" | "/dev/stdin" | "/proc/self/fd/0" | "/dev/fd/0")
}

/// A short option cluster (`-si`, `-Es`) holding any of `letters`.
pub(crate) fn is_short_cluster_with(text: &str, letters: &[char]) -> bool {
    text.strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with('-') && rest.chars().any(|c| letters.contains(&c)))
}

fn skip_options<'w>(args: &'w [Word], wrapper: &Wrapper) -> &'w [Word] {
    let mut i = 0;
    let mut positionals = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if text.len() > 1 && text.starts_with('-') {
            i += if wrapper.value_options.contains(&text) {
                2
            } else {
                1
            };
            continue;
        }
        if positionals < wrapper.positionals {
            positionals += 1;
            i += 1;
            continue;
        }
        break;
    }
    &args[i.min(args.len())..]
}

enum EnvRest<'w> {
    Command(&'w [Word]),
    Split(Step<'w>),
}

/// `env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... [-S 'text'] command...`
fn env_rest(args: &[Word]) -> EnvRest<'_> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if text == "-S" || text == "--split-string" {
            return EnvRest::Split(code(Some(Dialect::Posix), &args[i + 1..]));
        }
        if let Some(inline) = text
            .strip_prefix("--split-string=")
            .or_else(|| text.strip_prefix("-S"))
        {
            let text = format!("{inline} {}", joined(&args[i + 1..]));
            return EnvRest::Split(Step::Code {
                dialect: Some(Dialect::Posix),
                text,
                words: &args[i..],
            });
        }
        if matches!(text, "-u" | "--unset" | "-C" | "--chdir") {
            i += 2;
        } else if is_assignment(text) || (text.len() > 1 && text.starts_with('-')) {
            i += 1;
        } else {
            break;
        }
    }
    EnvRest::Command(&args[i.min(args.len())..])
}

/// `su [-] [user] -c 'text'` and `runuser -u user -- command...`.
fn su(args: &[Word]) -> Step<'_> {
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if text == "-c" || text == "--command" {
            return code(Some(Dialect::Posix), &args[i + 1..(i + 2).min(args.len())]);
        }
        if let Some(inline) = text.strip_prefix("--command=") {
            return Step::Code {
                dialect: Some(Dialect::Posix),
                text: inline.to_string(),
                words: &args[i..=i],
            };
        }
        if text == "--" {
            return effective(&args[i + 1..]);
        }
    }
    Step::Stdin {
        dialect: Some(Dialect::Posix),
    }
}

/// `bash [options] -c 'text'`, `bash script`, `bash -s`, or `bash` reading its input.
fn posix_shell(args: &[Word]) -> Step<'_> {
    let mut i = 0;
    let mut has_code = false;
    let mut reads_stdin = false;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" || text == "-" {
            reads_stdin |= text == "-";
            i += 1;
            break;
        }
        if text.starts_with("--") {
            i += if matches!(text, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if text.len() > 1 && (text.starts_with('-') || text.starts_with('+')) {
            has_code |= text[1..].contains('c');
            reads_stdin |= text[1..].contains('s');
            i += if matches!(&text[1..], "o" | "O") {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    let rest = &args[i.min(args.len())..];
    match rest.first() {
        Some(_) if has_code => code(Some(Dialect::Posix), &rest[..1]),
        None if has_code => Step::Nothing,
        Some(word) if !reads_stdin && !is_stdin_path(&word.text) => Step::Script {
            dialect: Some(Dialect::Posix),
            word,
        },
        _ => Step::Stdin {
            dialect: Some(Dialect::Posix),
        },
    }
}

/// `python -c text`, `perl -e text`, `node -e text`, `php -r text`, a script, or stdin.
fn interpreter(args: &[Word]) -> Step<'_> {
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if matches!(
            text,
            "-c" | "-e" | "-E" | "-r" | "--eval" | "-p" | "--print"
        ) {
            return code(None, &args[i + 1..(i + 2).min(args.len())]);
        }
        if text == "-" {
            return Step::Stdin { dialect: None };
        }
        if text == "-m" {
            return Step::Nothing;
        }
        if !(text.len() > 1 && text.starts_with('-')) {
            return Step::Script {
                dialect: None,
                word,
            };
        }
    }
    Step::Stdin { dialect: None }
}

/// `powershell [-NoProfile ...] -Command text`, `-EncodedCommand base64`, `-File x.ps1`, or
/// bare words, which PowerShell runs as a command. Parameters may be any unambiguous prefix
/// and start with `-` or `/`.
fn powershell(args: &[Word]) -> Step<'_> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let lower = word.text.to_ascii_lowercase();
        let Some(param) = lower.strip_prefix('-').or_else(|| lower.strip_prefix('/')) else {
            break;
        };
        if param.is_empty() {
            return Step::Stdin {
                dialect: Some(Dialect::Windows),
            };
        }
        if "command".starts_with(param) || param == "cwa" || param.starts_with("commandwith") {
            let rest = &args[i + 1..];
            return match rest {
                [only] if only.text == "-" => Step::Stdin {
                    dialect: Some(Dialect::Windows),
                },
                [] => Step::Stdin {
                    dialect: Some(Dialect::Windows),
                },
                _ => code(Some(Dialect::Windows), rest),
            };
        }
        if param == "e"
            || param == "ec"
            || (param.len() >= 2 && "encodedcommand".starts_with(param))
        {
            let decoded = args
                .get(i + 1)
                .and_then(|w| decode_encoded_command(&w.text));
            return match decoded {
                Some(text) => Step::Code {
                    dialect: Some(Dialect::Windows),
                    text,
                    words: &[],
                },
                None => Step::Hidden("runs an encoded PowerShell command that does not decode"),
            };
        }
        if "file".starts_with(param) {
            return match args.get(i + 1) {
                Some(word) => Step::Script {
                    dialect: Some(Dialect::Windows),
                    word,
                },
                None => Step::Nothing,
            };
        }
        let takes_value = param == "ep"
            || param.starts_with("ex")
            || "windowstyle".starts_with(param)
            || "workingdirectory".starts_with(param)
            || param == "wd"
            || "inputformat".starts_with(param)
            || "outputformat".starts_with(param)
            || "version".starts_with(param)
            || param.starts_with("config")
            || param.starts_with("settings");
        i += if takes_value { 2 } else { 1 };
    }
    let rest = &args[i.min(args.len())..];
    if rest.is_empty() {
        Step::Stdin {
            dialect: Some(Dialect::Windows),
        }
    } else {
        code(Some(Dialect::Windows), rest)
    }
}

/// `cmd [/s /q ...] /c text` (or `/k`, `/r`, also written `/ctext`).
fn cmd(args: &[Word]) -> Step<'_> {
    for (i, word) in args.iter().enumerate() {
        let lower = word.text.to_ascii_lowercase();
        if matches!(lower.as_str(), "/c" | "/k" | "/r") {
            return code(Some(Dialect::Windows), &args[i + 1..]);
        }
        if lower.starts_with("/c") || lower.starts_with("/k") {
            let inline = word.text.get(2..).unwrap_or_default();
            let text = format!("{inline} {}", joined(&args[i + 1..]));
            return Step::Code {
                dialect: Some(Dialect::Windows),
                text,
                words: &args[i..],
            };
        }
        if !lower.starts_with('/') {
            return code(Some(Dialect::Windows), &args[i..]);
        }
    }
    Step::Stdin {
        dialect: Some(Dialect::Windows),
    }
}

/// Decodes PowerShell's `-EncodedCommand`: base64 of UTF-16LE text.
fn decode_encoded_command(encoded: &str) -> Option<String> {
    let bytes = decode_base64(encoded)?;
    if bytes.len() % 2 != 0 {
        return None;
    }
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    String::from_utf16(&units).ok()
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0u32;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deny::lexer::{Budget, parse};

    fn step_of(text: &str, dialect: Dialect) -> String {
        let mut budget = Budget::new(1 << 20);
        let parsed = parse(text, dialect, 0, &mut budget);
        let command = &parsed.script.pipelines[0].commands[0];
        match effective(&command.words) {
            Step::Nothing => "nothing".into(),
            Step::Run { name, args } => format!("run {name} {}", joined(args)),
            Step::Code { dialect, text, .. } => format!("code {dialect:?} {text}"),
            Step::Script { dialect, word } => format!("script {dialect:?} {}", word.text),
            Step::Stdin { dialect } => format!("stdin {dialect:?}"),
            Step::Hidden(why) => format!("hidden {why}"),
        }
    }

    #[test]
    fn unwrapping() {
        use Dialect::{Posix as P, Windows as W};
        let cases = [
            ("sudo -u root rm -rf /", P, "run rm -rf /"),
            ("env -i X=1 nice -n 5 nohup /bin/rm x", P, "run rm x"),
            ("timeout -s KILL 5 rm x", P, "run rm x"),
            ("bash -lc 'rm -rf /'", P, "code Some(Posix) rm -rf /"),
            ("sh -c \"echo hi\" name", P, "code Some(Posix) echo hi"),
            ("sudo bash", P, "stdin Some(Posix)"),
            ("sudo -s", P, "stdin Some(Posix)"),
            ("bash -s -- --flag", P, "stdin Some(Posix)"),
            ("bash script.sh", P, "script Some(Posix) script.sh"),
            ("env -S 'rm -rf /'", P, "code Some(Posix) rm -rf /"),
            ("su - root -c 'rm -rf /'", P, "code Some(Posix) rm -rf /"),
            ("eval rm -rf /", P, "code Some(Posix) rm -rf /"),
            ("python3 -c 'import os'", P, "code None import os"),
            ("python3", P, "stdin None"),
            ("X=1 Y=2 { rm x", P, "run rm x"),
            (
                "powershell -NoProfile -ExecutionPolicy Bypass -Command Remove-Item x",
                W,
                "code Some(Windows) Remove-Item x",
            ),
            ("pwsh -c -", W, "stdin Some(Windows)"),
            (
                "cmd.exe /s /c \"rd /s /q C:\\\"",
                W,
                "code Some(Windows) rd /s /q C:\\",
            ),
            ("iex", W, "stdin Some(Windows)"),
            // "rm -rf /" as UTF-16LE base64.
            (
                "powershell -enc cgBtACAALQByAGYAIAAvAA==",
                W,
                "code Some(Windows) rm -rf /",
            ),
            (
                "powershell -enc !!!",
                W,
                "hidden runs an encoded PowerShell command that does not decode",
            ),
        ];
        for (text, dialect, expect) in cases {
            assert_eq!(step_of(text, dialect), expect, "{text}");
        }
    }

    #[test]
    fn command_names() {
        for (text, expect) in [
            ("/bin/rm", "rm"),
            (r"C:\Windows\System32\cmd.exe", "cmd"),
            ("mkfs.ext4", "mkfs.ext4"),
            ("FORMAT.COM", "format"),
        ] {
            assert_eq!(command_name(text), expect);
        }
    }
}
