//! What a simple command really runs. Wrappers (`sudo`, `env`, `nice`, `timeout`, ...) are
//! looked through; commands that run code given as text (`bash -c`, `eval`, `iex`,
//! `powershell -Command`, `cmd /c`, `su -c`) hand that text back to be checked in its own
//! right; shells and interpreters that read code from standard input are marked, so a pipe
//! into them can be judged by what feeds it.

use super::inline::Lang;
use super::lexer::{Dialect, SUBSTITUTION, VARIABLE, Word, shell_quote};

/// The language of code a command runs: a shell's, or an interpreter's the deny-list reads
/// through `inline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    Shell(Dialect),
    Inline(Lang),
}

const POSIX: Language = Language::Shell(Dialect::Posix);
const WINDOWS: Language = Language::Shell(Dialect::Windows);

/// Why nobody can tell what a command with a computed first word runs.
pub(crate) const COMPUTED_VERB: &str = "its program is computed when it runs (from a variable, a substitution, a glob or a brace list)";

/// The effective command behind a simple command's words.
#[derive(Debug)]
pub(crate) enum Step<'w> {
    /// Nothing runs: only assignments or keywords.
    Nothing,
    /// A program, by its lowercase base name without `.exe`, with its arguments.
    Run { name: String, args: &'w [Word] },
    /// Code given as text, in `language`; `words` are where it came from.
    Code {
        language: Language,
        text: String,
        words: &'w [Word],
    },
    /// Code read from the file `word` names: a script, or `<(…)`.
    Script { language: Language, word: &'w Word },
    /// Code read from standard input.
    Stdin { language: Language },
    /// Code that cannot be read at all (an `-EncodedCommand` that does not decode).
    Hidden(&'static str),
    /// A program nobody can name without running the command (`$CMD -rf ~`, `/bin/r?`).
    Unknown(&'static str),
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
        "--command-timeout", "-R", "--chroot",
    ] },
    Wrapper { name: "doas", positionals: 0, value_options: &["-u", "-C", "-a"] },
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
        "--max-lines", "--max-args", "--max-procs", "--max-chars",
    ] },
    Wrapper { name: "sshpass", positionals: 0, value_options: &["-p", "-f", "-d", "-P"] },
    Wrapper { name: "caffeinate", positionals: 0, value_options: &["-t", "-w"] },
    Wrapper { name: "strace", positionals: 0, value_options: &["-o", "-e", "-p", "-s", "-u", "-E"] },
    Wrapper { name: "ltrace", positionals: 0, value_options: &["-o", "-e", "-p", "-s", "-u"] },
    Wrapper { name: "chroot", positionals: 1, value_options: &["--userspec", "--groups"] },
    Wrapper { name: "flock", positionals: 1, value_options: &["-w", "-E", "--timeout"] },
    Wrapper { name: "systemd-run", positionals: 0, value_options: &[
        "-u", "--unit", "-p", "--property", "-E", "--setenv", "-M", "--uid", "--on-active",
        "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar",
        "--gid", "--nice", "--working-directory", "--slice", "--description",
    ] },
    Wrapper { name: "unshare", positionals: 0, value_options: &["--setuid", "--setgid", "-S", "-G", "--root", "--wd", "-R", "-w"] },
    Wrapper { name: "nsenter", positionals: 0, value_options: &["-t", "--target", "-S", "-G", "--setuid", "--setgid", "-r", "-w", "--root", "--wd"] },
    Wrapper { name: "firejail", positionals: 0, value_options: &[] },
    Wrapper { name: "fakeroot", positionals: 0, value_options: &["-l", "--lib", "--faked", "-s", "-i"] },
    Wrapper { name: "eatmydata", positionals: 0, value_options: &[] },
    Wrapper { name: "numactl", positionals: 0, value_options: &["-N", "-m", "-C", "-i", "-p", "-P"] },
    Wrapper { name: "prlimit", positionals: 0, value_options: &["-p", "--pid"] },
    Wrapper { name: "setpriv", positionals: 0, value_options: &["--reuid", "--regid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits"] },
    Wrapper { name: "cgexec", positionals: 0, value_options: &["-g"] },
    Wrapper { name: "cpulimit", positionals: 0, value_options: &["-l", "--limit", "-p", "--pid", "-e", "--exe"] },
    Wrapper { name: "torsocks", positionals: 0, value_options: &["-u", "-p", "-a", "-P"] },
    Wrapper { name: "proxychains", positionals: 0, value_options: &["-f"] },
    Wrapper { name: "proxychains4", positionals: 0, value_options: &["-f"] },
    Wrapper { name: "valgrind", positionals: 0, value_options: &[] },
    Wrapper { name: "chpst", positionals: 0, value_options: &["-u", "-U", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-t"] },
    Wrapper { name: "capsh", positionals: 0, value_options: &[] },
];

pub(crate) const POSIX_SHELLS: &[&str] = &[
    "ksh93", "oksh", "loksh", "osh", "hush", "pdksh", "sash", "rc", "nu", "elvish", "xonsh", "sh",
    "bash", "dash", "zsh", "ksh", "mksh", "lksh", "ash", "yash", "rbash", "posh", "fish", "csh",
    "tcsh",
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
    // Exported functions and start-up files: the shell they reach runs code given here as
    // data, under names the reading cannot follow.
    if words.iter().any(|w| {
        w.text.contains("BASH_FUNC_")
            || w.text.starts_with("BASH_ENV=")
            || w.text.starts_with("ENV=")
    }) {
        return Step::Unknown(LATER);
    }
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
        // PowerShell's `& (…) args` and `. (…) args` call whatever the group computes; a
        // group alone in a command's place is a group, and its commands are read.
        if is_computed(first) || (is_group(first) && rest.len() > 1) {
            return Step::Unknown(COMPUTED_VERB);
        }
        let name = command_name(&first.text);
        let args = &rest[1..];
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
            if name == "flock"
                && let Some(at) = args
                    .iter()
                    .position(|w| w.text == "-c" || w.text == "--command")
            {
                return code(POSIX, &args[at + 1..(at + 2).min(args.len())]);
            }
            let after = skip_options(args, wrapper);
            if after.is_empty()
                && name == "sudo"
                && args
                    .iter()
                    .any(|w| is_short_cluster_with(&w.text, &['s', 'i']))
            {
                return Step::Stdin { language: POSIX };
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
            "eval" => return code(POSIX, args),
            // `function name { …; }` and `function name() { …; }`: the body is what runs.
            "function" => rest = args.get(1..).unwrap_or_default(),
            "alias" => return alias(args),
            "trap" => return trap(args),
            "ssh" => return remote(args),
            "kubectl" | "oc" | "lxc" | "incus" | "mosh" => return after_dashes(&name, args),
            "docker" | "podman" | "nerdctl" => return container_exec(args),
            "vagrant" | "gcloud" => {
                return match option_code(args, &["-c", "--command"]) {
                    Step::Nothing => after_dashes("mosh", args),
                    step => step,
                };
            }
            "ansible" | "ansible-console" => return ansible(args),
            "pdsh" | "clush" | "pssh" | "parallel-ssh" => return fan_out(args),
            "aws" | "az" => return cloud_run_command(args),
            "psexec" | "psexec64" | "paexec" => return psexec(args),
            "set-alias" | "sal" | "new-alias" | "nal" => {
                return args
                    .iter()
                    .filter(|w| !w.text.starts_with('-'))
                    .nth(1)
                    .filter(|value| is_destroying_verb(&value.text))
                    .map_or(Step::Nothing, |_| Step::Unknown(RENAMES));
            }
            "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => return awk(args),
            "parallel" => return parallel(args),
            "deno" if args.first().is_some_and(|w| w.text == "eval") => {
                return code(
                    Language::Inline(Lang::JavaScript),
                    args.get(1..2).unwrap_or_default(),
                );
            }
            "watch" => {
                let after = skip_options(
                    args,
                    &Wrapper {
                        name: "watch",
                        value_options: &["-n", "-d"],
                        positionals: 0,
                    },
                );
                return code(POSIX, after);
            }
            "iex" | "invoke-expression" => {
                let code_words = match args.first() {
                    Some(w)
                        if w.text.len() >= 2
                            && "-command".starts_with(&w.text.to_ascii_lowercase()) =>
                    {
                        &args[1..]
                    }
                    _ => args,
                };
                return if code_words.is_empty() {
                    Step::Stdin { language: WINDOWS }
                } else {
                    code(WINDOWS, code_words)
                };
            }
            "source" | "." => {
                return match args.first() {
                    None => Step::Nothing,
                    Some(w) if is_group(w) => Step::Unknown(COMPUTED_VERB),
                    Some(w) if is_stdin_path(&w.text) => Step::Stdin { language: POSIX },
                    Some(w) => Step::Script {
                        language: POSIX,
                        word: w,
                    },
                };
            }
            "powershell" | "pwsh" => return powershell(args),
            "cmd" => return cmd(args),
            _ if is_shell(&name) => return posix_shell(args),
            "git" => return git(args),
            "tar" | "bsdtar" | "gtar" => return tar(args),
            "rsync" | "scp" | "sftp" => return transfer(&name, args),
            "sqlite3" | "sqlite" => return sqlite(&name, args),
            "gdb" | "lldb" => return debugger(&name, args),
            "vim" | "vi" | "nvim" | "ex" | "view" | "gvim" => return editor(&name, args),
            "socat" => return socat(args),
            "nc" | "ncat" | "netcat" | "nc.traditional" | "nc.openbsd" => {
                return netcat(&name, args);
            }
            "at" | "batch" | "crontab" | "tmux" | "screen" | "expect" | "script" | "hash"
            | "new-item" | "ni" | "set-item" | "si" => return later(&name, args),
            _ if is_interpreter(&name) => {
                return interpreter(&name, args);
            }
            _ => return Step::Run { name, args },
        }
    }
}

/// Words that form a command of their own (`kubectl exec pod -- sh -c 'rm -rf /'`), as text
/// to read again: each word quoted, so it stays one word.
fn command_words(language: Language, words: &[Word]) -> Step<'_> {
    let text = words
        .iter()
        .map(|w| shell_quote(&w.text))
        .collect::<Vec<_>>()
        .join(" ");
    Step::Code {
        language,
        text,
        words,
    }
}

/// The program `name` run with `args`, as judged by the rules.
fn run_as<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    Step::Run {
        name: name.to_string(),
        args,
    }
}

/// POSIX code written inside one word (`--to-command=…`, `-c'…'`, `EXEC:…`).
fn word_code<'w>(text: &str, word: &'w Word) -> Step<'w> {
    Step::Code {
        language: POSIX,
        text: text.to_string(),
        words: std::slice::from_ref(word),
    }
}

fn code(language: Language, words: &[Word]) -> Step<'_> {
    Step::Code {
        language,
        text: joined(words),
        words,
    }
}

/// Standard input, or another descriptor a here-document may feed (`/dev/fd/3`), however
/// the path is spelled (`//dev/stdin`, `/dev/./stdin`).
fn is_stdin_path(text: &str) -> bool {
    if text == "-" {
        return true;
    }
    let path = super::targets::lexical(text);
    path == "/dev/stdin"
        || path.strip_prefix("/dev/fd/").is_some_and(is_number)
        || path
            .strip_prefix("/proc/self/fd/")
            .or_else(|| path.strip_prefix("/proc/thread-self/fd/"))
            .is_some_and(is_number)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit())
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
            // `-la` ends in `-a`, which takes the next word (`exec -la name cmd`).
            let cluster_takes_value = !text.starts_with("--")
                && text.len() > 2
                && text.chars().last().is_some_and(|last| {
                    wrapper.value_options.contains(&format!("-{last}").as_str())
                });
            i += if wrapper.value_options.contains(&text) || cluster_takes_value {
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
            return EnvRest::Split(code(POSIX, &args[i + 1..]));
        }
        // `-iS 'text'`: a cluster whose last letter is `S`.
        if !text.starts_with("--") && text.len() > 2 && text.ends_with('S') {
            return EnvRest::Split(code(POSIX, &args[i + 1..]));
        }
        if let Some(inline) = text
            .strip_prefix("--split-string=")
            .or_else(|| text.strip_prefix("-S"))
        {
            let text = format!("{inline} {}", joined(&args[i + 1..]));
            return EnvRest::Split(Step::Code {
                language: POSIX,
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
        if matches!(text, "-c" | "--command" | "--session-command") {
            return code(POSIX, &args[i + 1..(i + 2).min(args.len())]);
        }
        if let Some(inline) = text
            .strip_prefix("--command=")
            .or_else(|| text.strip_prefix("--session-command="))
            .or_else(|| text.strip_prefix("-c"))
        {
            return Step::Code {
                language: POSIX,
                text: inline.to_string(),
                words: &args[i..=i],
            };
        }
        if text == "--" {
            // Read again as code rather than by recursion: nesting is bounded there.
            return command_words(POSIX, &args[i + 1..]);
        }
    }
    Step::Stdin { language: POSIX }
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
        Some(_) if has_code => code(POSIX, &rest[..1]),
        // `sh -c` with no text: fed by `xargs`, its input becomes the code.
        None if has_code => Step::Stdin { language: POSIX },
        Some(word) if !reads_stdin && !is_stdin_path(&word.text) => Step::Script {
            language: POSIX,
            word,
        },
        _ => Step::Stdin { language: POSIX },
    }
}

/// Whether a command's first word is computed as the command runs: a variable, a
/// substitution, an unquoted glob or brace list (and the markers for them, when a text is
/// read a second time, as `eval "$X"`'s is).
fn is_computed(word: &Word) -> bool {
    // A word with substitutions of its own says through `computed` whether they compute it
    // (a PowerShell group in a command's place does not); a marker with none came from a
    // text read a second time.
    word.computed
        || (word.substitutions.is_empty() && word.text.contains([VARIABLE, SUBSTITUTION]))
        || is_cmd_variable(&word.text)
}

/// A PowerShell or cmd.exe group, `(…)` or `{…}`, standing as a whole word.
fn is_group(word: &Word) -> bool {
    !word.computed && !word.substitutions.is_empty() && word.text == SUBSTITUTION.to_string()
}

/// cmd.exe's `%NAME%` as a program.
fn is_cmd_variable(text: &str) -> bool {
    text.split('%').count() > 2 && text.split('%').nth(1).is_some_and(|name| !name.is_empty())
}

/// `python -c text`, `perl -ne text`, `node -e text`, `php -r text`, a script, or stdin.
/// Perl, Ruby, Lua and AppleScript take several `-e`; their code is read together.
fn interpreter<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    let lang = Lang::of(name);
    let mut codes: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        match inline_flag(lang, text) {
            InlineFlag::Next => {
                if let Some(code) = args.get(i + 1) {
                    codes.push(code.text.clone());
                }
                i += 2;
                if lang == Lang::Python {
                    break;
                }
                continue;
            }
            InlineFlag::Attached(code) => {
                codes.push(code.to_string());
                i += 1;
                if lang == Lang::Python {
                    break;
                }
                continue;
            }
            InlineFlag::None => {}
        }
        if !codes.is_empty() {
            break;
        }
        if text == "-" {
            return Step::Stdin {
                language: Language::Inline(lang),
            };
        }
        if text == "-m" {
            // `python -m timeit "code"` (and the profilers) run their arguments as code.
            let module = args.get(i + 1).map(|w| w.text.to_ascii_lowercase());
            if lang == Lang::Python
                && matches!(
                    module.as_deref(),
                    Some("timeit" | "cprofile" | "profile" | "trace")
                )
            {
                let rest = args.get(i + 2..).unwrap_or_default();
                let code: Vec<&str> = rest
                    .iter()
                    .map(|w| w.text.as_str())
                    .filter(|t| !t.starts_with('-'))
                    .collect();
                return Step::Code {
                    language: Language::Inline(lang),
                    text: code.join("\n"),
                    words: rest,
                };
            }
            return Step::Nothing;
        }
        if is_stdin_path(text) {
            return Step::Stdin {
                language: Language::Inline(lang),
            };
        }
        if !(text.len() > 1 && text.starts_with('-')) {
            return Step::Script {
                language: Language::Inline(lang),
                word,
            };
        }
        let separate_value = match lang {
            Lang::Ruby => matches!(text, "-r" | "-I" | "-C" | "-E" | "-F"),
            Lang::Perl => matches!(text, "-I" | "-x"),
            Lang::Python => matches!(text, "-W" | "-X"),
            Lang::JavaScript => matches!(text, "-r" | "--require" | "--import" | "--loader"),
            Lang::Php => matches!(text, "-c" | "-d" | "-z"),
            Lang::Awk | Lang::Other => false,
        };
        i += if separate_value { 2 } else { 1 };
    }
    if codes.is_empty() {
        return Step::Stdin {
            language: Language::Inline(lang),
        };
    }
    Step::Code {
        language: Language::Inline(lang),
        text: codes.join("\n"),
        words: args,
    }
}

enum InlineFlag<'t> {
    /// The next word is code.
    Next,
    /// The code is written in the same word (`-cprint(1)`, `--eval=…`).
    Attached(&'t str),
    None,
}

/// Whether `text` is an interpreter's option for inline code: Python's `-c` (also in a
/// cluster, `-Ic`), Perl's and Ruby's `-e` and `-E` (also `-ne`, `-lpe`), Node's `-e`, `-p`,
/// `--eval`, `--print`, PHP's `-r`, `-R`, `-B`, `-E`, and `-e` for the rest.
fn inline_flag(lang: Lang, text: &str) -> InlineFlag<'_> {
    if let Some(long) = text.strip_prefix("--") {
        let (name, value) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (long, None),
        };
        if matches!(name, "eval" | "print" | "command") && lang != Lang::Python {
            return value.map_or(InlineFlag::Next, InlineFlag::Attached);
        }
        return InlineFlag::None;
    }
    let Some(cluster) = text.strip_prefix('-') else {
        return InlineFlag::None;
    };
    let letters: &[char] = match lang {
        Lang::Python => &['c'],
        Lang::Perl => &['e', 'E'],
        Lang::Ruby => &['e'],
        Lang::JavaScript => &['e', 'p'],
        Lang::Php => &['r', 'R', 'B', 'E'],
        Lang::Awk => &[],
        Lang::Other => &['e'],
    };
    // Options whose value follows in the same word or the next (`-rfileutils`, `-I lib`,
    // `-MFile::Path`): the letters after them are the value, not flags.
    let takes_value: &[char] = match lang {
        Lang::Perl => &['M', 'm', 'I', 'x', 'F', 'C', 'd', 'D', 'V'],
        Lang::Ruby => &['r', 'I', 'C', 'E', 'F', 'i', 'x', 'K', 'T', '0', 'W'],
        Lang::Python => &['W', 'X', 'Q'],
        _ => &[],
    };
    if cluster
        .chars()
        .next()
        .is_some_and(|c| takes_value.contains(&c))
    {
        return InlineFlag::None;
    }
    // The code letter ends the cluster's flags: what follows it in the word is the code.
    let Some((at, _)) = cluster.char_indices().find(|(_, c)| letters.contains(c)) else {
        return InlineFlag::None;
    };
    let before = &cluster[..at];
    if !before.chars().all(|c| c.is_ascii_alphabetic()) {
        return InlineFlag::None;
    }
    let after = &cluster[at + 1..];
    if after.is_empty() {
        InlineFlag::Next
    } else if lang == Lang::Python || lang == Lang::Php {
        InlineFlag::Attached(after)
    } else if after.chars().all(|c| c.is_ascii_alphabetic()) {
        // `perl -ep`? Rare; `-e` with more flags after it reads the next word.
        InlineFlag::Next
    } else {
        InlineFlag::Attached(after)
    }
}

/// Shell variables whose value runs as code later: `PROMPT_COMMAND` before each prompt,
/// `PS0`–`PS4` with their substitutions. Set on their own, after `export` or `declare`.
pub(crate) fn hook_code(words: &[Word]) -> Option<String> {
    const HOOKS: &[&str] = &[
        "PROMPT_COMMAND",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_SSH_COMMAND",
        "GIT_SSH",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_PROXY_COMMAND",
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "LESSCLOSE",
        "SUDO_ASKPASS",
    ];
    const SETTERS: &[&str] = &["export", "declare", "typeset", "local", "readonly"];
    let settable = words
        .iter()
        .skip_while(|w| SETTERS.contains(&w.text.as_str()) || w.text.starts_with('-'));
    let values: Vec<&str> = settable
        .take_while(|w| is_assignment(&w.text) || w.text.starts_with('-'))
        .filter_map(|w| {
            let (name, value) = w.text.split_once('=')?;
            let name = name.trim_end_matches('+');
            HOOKS.contains(&name).then_some(value)
        })
        .collect();
    (!values.is_empty()).then(|| values.join("\n"))
}

/// Why renaming a command hides what later commands run.
const RENAMES: &str =
    "it gives a command that can destroy things another name, so later commands cannot be read";

/// Commands that delete, overwrite, re-permission, stop the machine or run other code: an
/// alias to one of them hides what a later, innocent-looking name does.
fn is_destroying_verb(text: &str) -> bool {
    const VERBS: &[&str] = &[
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "dd",
        "mkfs",
        "wipefs",
        "chmod",
        "chown",
        "chgrp",
        "truncate",
        "mv",
        "find",
        "xargs",
        "eval",
        "sudo",
        "doas",
        "su",
        "kill",
        "pkill",
        "killall",
        "shutdown",
        "reboot",
        "halt",
        "poweroff",
        "remove-item",
        "ri",
        "del",
        "erase",
        "rd",
        "format",
        "diskpart",
        "format-volume",
        "clear-disk",
        "stop-computer",
        "restart-computer",
        "invoke-expression",
        "iex",
        "blkdiscard",
        "sgdisk",
        "fdisk",
        "parted",
    ];
    let first = text.split_whitespace().next().unwrap_or_default();
    let name = command_name(first);
    VERBS.contains(&name.as_str())
        || name.starts_with("mkfs.")
        || POSIX_SHELLS.contains(&name.as_str())
        || is_interpreter(&name)
}

/// Shells, by name (`bash5.2` too).
fn is_shell(name: &str) -> bool {
    POSIX_SHELLS.contains(&name)
        || ["bash", "zsh", "ksh", "mksh"].iter().any(|base| {
            name.strip_prefix(base)
                .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
}

/// Why a command that sets up another to run later, detached or under another name cannot
/// be read.
const LATER: &str = "it sets up a command to run later, elsewhere or under another name";

/// `git -c core.pager=…`, `git config alias.x '!…'`, `git rebase --exec …`, `git bisect run`,
/// `git submodule foreach`, `git filter-branch`: git runs a command given as text, now or
/// later.
fn git(args: &[Word]) -> Step<'_> {
    const RUNS: &[&str] = &[
        "core.pager",
        "core.sshcommand",
        "core.fsmonitor",
        "core.editor",
        "core.hookspath",
        "sequence.editor",
        "diff.external",
        "credential.helper",
        "core.askpass",
        "pager.",
        "alias.",
        "gpg.program",
        "filter.",
        "merge.",
        "diff.",
        "uploadpack.packobjectshook",
        "core.gitproxy",
        "protocol.ext",
    ];
    const FILTERS: &[&str] = &[
        "--exec",
        "-x",
        "--tree-filter",
        "--index-filter",
        "--msg-filter",
        "--commit-filter",
        "--env-filter",
        "--parent-filter",
        "--tag-name-filter",
        "--extcmd",
    ];
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        // `-c key=value`: the value of a key that names a command is read as that command.
        if text == "-c"
            && let Some(setting) = args.get(i + 1)
            && let Some((key, value)) = setting.text.split_once('=')
            && let Some(step) = git_setting(key, value, std::slice::from_ref(setting), RUNS)
        {
            return step;
        }
        if text.starts_with("--config-env") {
            return Step::Unknown(LATER);
        }
        // `git config [--global] key value`: reads and removals only look.
        if text == "config" {
            let rest = &args[i + 1..];
            let looks = rest.iter().any(|w| {
                w.text.starts_with("--get")
                    || matches!(
                        w.text.as_str(),
                        "--unset" | "--unset-all" | "--list" | "-l" | "get" | "list" | "unset"
                    )
            });
            let plain: Vec<&Word> = rest.iter().filter(|w| !w.text.starts_with('-')).collect();
            if !looks
                && let [key, value, ..] = plain.as_slice()
                && let Some(step) =
                    git_setting(&key.text, &value.text, std::slice::from_ref(*value), RUNS)
            {
                return step;
            }
            break;
        }
        if let Some(inline) = text.strip_prefix("-x").filter(|v| !v.is_empty()) {
            return word_code(inline, word);
        }
        for option in [
            "--upload-pack=",
            "--receive-pack=",
            "--to-cmd=",
            "--cc-cmd=",
            "--exec-path=",
        ] {
            if let Some(inline) = text.strip_prefix(option) {
                return word_code(inline, word);
            }
        }
        if matches!(
            text,
            "-u" | "--upload-pack" | "--receive-pack" | "--to-cmd" | "--cc-cmd"
        ) {
            return code(POSIX, args.get(i + 1..i + 2).unwrap_or_default());
        }
        if let Some(inline) = text
            .strip_prefix("--exec=")
            .or_else(|| text.strip_prefix("--extcmd="))
        {
            return word_code(inline, word);
        }
        if FILTERS.contains(&text) {
            return code(POSIX, args.get(i + 1..i + 2).unwrap_or_default());
        }
        let after = |previous: &str| i > 0 && args[i - 1].text == previous;
        if text == "run" && after("bisect") {
            return command_words(POSIX, args.get(i + 1..).unwrap_or_default());
        }
        if text == "foreach" && after("submodule") {
            let rest = args.get(i + 1..).unwrap_or_default();
            let skip = rest.iter().take_while(|w| w.text.starts_with('-')).count();
            return code(POSIX, rest.get(skip..).unwrap_or_default());
        }
    }
    run_as("git", args)
}

/// A git setting whose value is a command: the value read as that command (an alias only
/// when it starts with `!`; a hooks folder or a helper that is not a shell command cannot be
/// read at all).
fn git_setting<'w>(key: &str, value: &str, words: &'w [Word], runs: &[&str]) -> Option<Step<'w>> {
    let key = key.to_ascii_lowercase();
    let value = value.trim();
    if key == "core.hookspath" {
        return Some(Step::Unknown(LATER));
    }
    let is_alias = key.starts_with("alias.");
    let is_helper = key == "credential.helper";
    let names_a_command = runs.iter().any(|prefix| {
        if prefix.ends_with('.') {
            // `filter.x.clean`, `diff.x.textconv`, `merge.x.driver`, `pager.log`.
            key.starts_with(prefix)
                && (prefix == &"pager."
                    || prefix == &"alias."
                    || [
                        "clean", "smudge", "process", "textconv", "command", "driver", "cmd",
                    ]
                    .iter()
                    .any(|leaf| key.ends_with(&format!(".{leaf}"))))
        } else {
            key == *prefix
        }
    });
    if !names_a_command {
        return None;
    }
    let command = if is_alias || is_helper {
        value.strip_prefix('!')?
    } else if key == "core.fsmonitor" && matches!(value, "true" | "false") {
        return None;
    } else {
        value
    };
    Some(Step::Code {
        language: POSIX,
        text: command.to_string(),
        words,
    })
}

/// `tar --to-command=…`, `--checkpoint-action=exec=…`, `-I prog`, `--use-compress-program`,
/// `--rsh-command`: tar runs the text.
fn tar(args: &[Word]) -> Step<'_> {
    const INLINE: &[&str] = &[
        "--to-command=",
        "--checkpoint-action=exec=",
        "--use-compress-program=",
        "--rsh-command=",
        "--info-script=",
        "--new-volume-script=",
    ];
    const SEPARATE: &[&str] = &[
        "-I",
        "--to-command",
        "--use-compress-program",
        "-F",
        "--rsh-command",
        "--info-script",
        "--new-volume-script",
    ];
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if let Some(inline) = INLINE.iter().find_map(|prefix| text.strip_prefix(prefix)) {
            return word_code(inline, word);
        }
        if SEPARATE.contains(&text) {
            return code(POSIX, args.get(i + 1..i + 2).unwrap_or_default());
        }
    }
    run_as("tar", args)
}

/// `rsync -e 'cmd'`, `scp -o ProxyCommand=cmd`, `-S prog`: the text runs as the transport.
fn transfer<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if let Some(command) = proxy_command(args, i) {
            return command;
        }
        if let Some(inline) = text
            .strip_prefix("--rsh=")
            .or_else(|| text.strip_prefix("--rsync-path="))
        {
            return word_code(inline, word);
        }
        if matches!(text, "-e" | "--rsh" | "--rsync-path" | "-S") {
            return code(POSIX, args.get(i + 1..i + 2).unwrap_or_default());
        }
    }
    run_as(name, args)
}

/// `-o ProxyCommand=…` / `-o LocalCommand=…` (also `-oProxyCommand=…`): ssh runs the text.
fn proxy_command(args: &[Word], i: usize) -> Option<Step<'_>> {
    let text = args[i].text.as_str();
    let (value, word) = if text == "-o" {
        let next = args.get(i + 1)?;
        (next.text.as_str(), next)
    } else {
        (text.strip_prefix("-o")?, &args[i])
    };
    let (key, command) = value.split_once(['=', ' '])?;
    let key = key.to_ascii_lowercase();
    matches!(
        key.as_str(),
        "proxycommand" | "localcommand" | "knownhostscommand" | "remotecommand"
    )
    .then(|| word_code(command.trim_start_matches('='), word))
}

/// `sqlite3 db '.shell cmd'` / `.system cmd`: the dot command runs a shell command.
fn sqlite<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    for word in args {
        let text = word.text.trim_start();
        if let Some(command) = text
            .strip_prefix(".shell ")
            .or_else(|| text.strip_prefix(".system "))
        {
            return word_code(command, word);
        }
        if text.contains(".shell") || text.contains(".system") {
            return Step::Unknown(LATER);
        }
    }
    run_as(name, args)
}

/// `gdb -ex 'shell cmd'`, `-ex '!cmd'`, `lldb -o 'platform shell cmd'`, `gdb --args prog…`.
fn debugger<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    const EVAL: &[&str] = &[
        "-ex",
        "--ex",
        "-eval-command",
        "--eval-command",
        "-o",
        "--one-line",
        "-iex",
    ];
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if matches!(text, "--args" | "--") {
            return command_words(POSIX, args.get(i + 1..).unwrap_or_default());
        }
        if !EVAL.contains(&text) {
            continue;
        }
        let Some(command) = args.get(i + 1) else {
            continue;
        };
        let line = command.text.trim_start();
        if let Some(shell) = line
            .strip_prefix("shell ")
            .or_else(|| line.strip_prefix('!'))
            .or_else(|| line.strip_prefix("platform shell "))
        {
            return word_code(shell, command);
        }
        if ["python", "script", "pipe", "call", "print"]
            .iter()
            .any(|p| line.starts_with(p))
        {
            return Step::Unknown(LATER);
        }
    }
    run_as(name, args)
}

/// `vim -c '!cmd'`, `vim +'!cmd'`, `ex -c …`: an editor's `:!` runs a shell command; other
/// command-line scripting (`:py`, `:lua`, `:call system()`) cannot be read.
fn editor<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    const SCRIPTING: &[&str] = &[
        "py", "lua", "perl", "ruby", "call", "exe", "sil", "so", "term", "r!", "r !", "w !",
    ];
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        let command = if matches!(text, "-c" | "--cmd" | "-S") {
            args.get(i + 1).map(|w| w.text.as_str())
        } else {
            text.strip_prefix('+')
        };
        let Some(command) = command.map(|c| c.trim_start_matches(':').trim_start()) else {
            continue;
        };
        if let Some(shell) = command.strip_prefix('!') {
            return word_code(shell, word);
        }
        if SCRIPTING.iter().any(|p| command.starts_with(p)) || command.contains("system(") {
            return Step::Unknown(LATER);
        }
    }
    run_as(name, args)
}

/// `socat - EXEC:'cmd'`, `SYSTEM:cmd`: socat runs the text and wires it to the other end.
fn socat(args: &[Word]) -> Step<'_> {
    for word in args {
        let lower = word.text.to_ascii_lowercase();
        for prefix in ["exec:", "system:", "shell:"] {
            if lower.starts_with(prefix) {
                let rest = word.text.get(prefix.len()..).unwrap_or_default();
                let command = rest.split(',').next().unwrap_or_default();
                return word_code(command, word);
            }
        }
    }
    run_as("socat", args)
}

/// `nc -e /bin/sh host port`, `ncat --exec …`, `nc -c cmd`: a program wired to the network.
fn netcat<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    let wires = args.iter().any(|w| {
        matches!(
            w.text.as_str(),
            "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec"
        ) || w.text.starts_with("--exec=")
            || w.text.starts_with("--sh-exec=")
    });
    if wires {
        Step::Hidden("wires a program to the network as a remote shell")
    } else {
        run_as(name, args)
    }
}

/// Commands that run another later, detached or under another name: `at`, `batch`,
/// `crontab`, `tmux new …`, `screen -dm …`, `expect -c`, `script -c`, `hash -p`, PowerShell's
/// `New-Item alias:…`.
fn later<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    const TMUX_RUNS: &[&str] = &[
        "new",
        "new-session",
        "new-window",
        "neww",
        "split-window",
        "splitw",
        "send-keys",
        "send",
        "run-shell",
        "run",
        "respawn-pane",
    ];
    let has = |options: &[&str]| args.iter().any(|w| options.contains(&w.text.as_str()));
    let unknown = match name {
        "at" | "batch" => !has(&["-l", "-r", "-d", "-c", "-V"]),
        "crontab" => !has(&["-l"]),
        "tmux" => {
            if args
                .iter()
                .any(|w| matches!(w.text.as_str(), "send-keys" | "send"))
            {
                true
            } else if args.iter().any(|w| TMUX_RUNS.contains(&w.text.as_str())) {
                // The command is the last plain word after the options' values, if any.
                const VALUES: &[&str] = &[
                    "-s", "-n", "-c", "-t", "-x", "-y", "-e", "-F", "-l", "-w", "-h",
                ];
                let mut command = None;
                let mut i = 0;
                while let Some(w) = args.get(i) {
                    if VALUES.contains(&w.text.as_str()) {
                        i += 2;
                        continue;
                    }
                    if !w.text.starts_with('-') && !TMUX_RUNS.contains(&w.text.as_str()) {
                        command = Some(i);
                    }
                    i += 1;
                }
                return match command {
                    Some(at) => code(POSIX, &args[at..=at]),
                    None => Step::Nothing,
                };
            } else {
                false
            }
        }
        "screen" => {
            let mut i = 0;
            while let Some(w) = args.get(i) {
                match w.text.as_str() {
                    "-S" | "-c" | "-t" | "-L" | "-Logfile" => i += 2,
                    t if t.starts_with('-') => {
                        i += if t.ends_with('S') { 2 } else { 1 };
                    }
                    _ => break,
                }
            }
            let rest = args.get(i..).unwrap_or_default();
            if rest.is_empty() {
                return Step::Nothing;
            }
            return command_words(POSIX, rest);
        }
        "expect" => has(&["-c"]),
        "script" => {
            if let Some(at) = args
                .iter()
                .position(|w| w.text == "-c" || w.text == "--command")
            {
                return code(POSIX, args.get(at + 1..at + 2).unwrap_or_default());
            }
            false
        }
        "hash" => has(&["-p"]),
        _ => args
            .iter()
            .any(|w| w.text.to_ascii_lowercase().starts_with("alias:")),
    };
    if unknown {
        Step::Unknown(LATER)
    } else {
        run_as(name, args)
    }
}

/// Interpreters the deny-list reads one-liners of, by name (`python3.12`, `lua5.4`, `ruby3.2`).
fn is_interpreter(name: &str) -> bool {
    if INTERPRETERS.contains(&name) || name.starts_with("python") || name.starts_with("pypy") {
        return true;
    }
    ["lua", "ruby", "perl", "php", "node"].iter().any(|base| {
        name.strip_prefix(base)
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

/// `alias name='text' ...`: each value is code that runs when the name is used; an alias
/// that renames a destroying command hides what runs later.
fn alias(args: &[Word]) -> Step<'_> {
    let values: Vec<&str> = args
        .iter()
        .filter_map(|w| w.text.split_once('=').map(|(_, value)| value))
        .collect();
    if values.is_empty() {
        return Step::Nothing;
    }
    if values.iter().any(|value| is_destroying_verb(value)) {
        return Step::Unknown(RENAMES);
    }
    Step::Code {
        language: POSIX,
        text: values.join("\n"),
        words: args,
    }
}

/// `trap 'text' SIGNAL...`: the text runs when the signal comes (or the shell exits).
fn trap(args: &[Word]) -> Step<'_> {
    let rest = match args.first() {
        Some(w) if w.text == "--" => &args[1..],
        Some(w) if w.text.starts_with('-') => return Step::Nothing,
        _ => args,
    };
    match rest {
        [action, _, ..] => code(POSIX, std::slice::from_ref(action)),
        _ => Step::Nothing,
    }
}

/// `ssh [options] host [command...]`: the command runs on the other machine, read by its
/// shell, and is judged as if it ran here. Without one, the remote shell reads standard input.
fn remote(args: &[Word]) -> Step<'_> {
    const VALUE_OPTIONS: &str = "BbcDEeFIiJLlmOopQRSWw";
    for i in 0..args.len() {
        if let Some(command) = proxy_command(args, i) {
            return command;
        }
    }
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        // The first letter that takes a value ends the cluster; its value is the rest of the
        // word, or the next word.
        let takes_value = cluster
            .char_indices()
            .find(|(_, c)| VALUE_OPTIONS.contains(*c))
            .is_some_and(|(at, _)| at + 1 == cluster.len());
        i += if takes_value { 2 } else { 1 };
    }
    if args.get(i).is_none() {
        return Step::Nothing;
    }
    // OpenSSH reads options after the host too (`ssh host -t 'cmd'`).
    let mut j = i + 1;
    while let Some(word) = args.get(j) {
        let text = word.text.as_str();
        if text == "--" || !text.starts_with('-') || text.len() < 2 {
            break;
        }
        let cluster = &text[1..];
        let takes_value = cluster
            .char_indices()
            .find(|(_, c)| VALUE_OPTIONS.contains(*c))
            .is_some_and(|(at, _)| at + 1 == cluster.len());
        j += if takes_value { 2 } else { 1 };
    }
    let mut command = args.get(j.min(args.len())..).unwrap_or_default();
    if command.first().is_some_and(|w| w.text == "--") {
        command = &command[1..];
    }
    if command.is_empty() {
        return Step::Stdin { language: POSIX };
    }
    if reads_stdin_shell(command) {
        return Step::Stdin { language: POSIX };
    }
    code(POSIX, command)
}

/// `bash`, `sh -s`, `bash -`: a shell that reads its commands from standard input.
fn reads_stdin_shell(words: &[Word]) -> bool {
    let Some((first, rest)) = words.split_first() else {
        return false;
    };
    POSIX_SHELLS.contains(&command_name(&first.text).as_str())
        && rest
            .iter()
            .all(|w| w.text == "-" || (w.text.starts_with('-') && !w.text.contains('c')))
}

/// `kubectl exec [options] pod -- command...`, `lxc exec c -- command...`, `mosh host --
/// command...`: what runs in the container or on the other machine.
fn after_dashes<'w>(name: &str, args: &'w [Word]) -> Step<'w> {
    let Some(at) = args.iter().position(|w| w.text == "--") else {
        return Step::Nothing;
    };
    // `kubectl -n prod exec pod -- …`: options may come before `exec`.
    if name != "mosh" && !args[..at].iter().any(|w| w.text == "exec") {
        return Step::Nothing;
    }
    if reads_stdin_shell(&args[at + 1..]) {
        return Step::Stdin { language: POSIX };
    }
    command_words(POSIX, &args[at + 1..])
}

/// `vagrant ssh -c 'text'`, `gcloud compute ssh vm --command='text'`: the text runs on the
/// other machine.
fn option_code<'w>(args: &'w [Word], options: &[&str]) -> Step<'w> {
    for (i, word) in args.iter().enumerate() {
        if options.contains(&word.text.as_str()) {
            return code(POSIX, args.get(i + 1..i + 2).unwrap_or_default());
        }
        for option in options.iter().filter(|o| o.starts_with("--")) {
            if let Some(inline) = word
                .text
                .strip_prefix(option)
                .and_then(|rest| rest.strip_prefix('='))
            {
                return word_code(inline, word);
            }
        }
    }
    Step::Nothing
}

/// `ansible hosts -m shell -a 'text'`: with the `shell`, `command`, `raw` or `script`
/// module, the text runs on every host.
fn ansible(args: &[Word]) -> Step<'_> {
    let module = args
        .iter()
        .position(|w| w.text == "-m" || w.text == "--module-name")
        .and_then(|at| args.get(at + 1))
        .map(|w| w.text.rsplit('.').next().unwrap_or_default().to_string());
    // No `-m`: the `command` module.
    if module.as_deref().is_none_or(|m| {
        matches!(
            m,
            "shell" | "command" | "raw" | "script" | "win_shell" | "win_command"
        )
    }) {
        return option_code(args, &["-a", "--args"]);
    }
    Step::Nothing
}

/// `pdsh -w hosts 'text'`, `clush -a 'text'`: the words after the options run on each host.
fn fan_out(args: &[Word]) -> Step<'_> {
    const VALUE_OPTIONS: &[&str] = &[
        "-w",
        "-x",
        "-l",
        "-R",
        "-t",
        "-u",
        "-f",
        "-g",
        "-X",
        "-h",
        "-H",
        "-p",
        "-o",
        "-e",
        "-O",
        "-i",
        "-b",
        "--hosts",
        "--user",
        "--par",
        "--outdir",
        "--errdir",
        "--options",
        "--timeout",
    ];
    let rest = skip_options(
        args,
        &Wrapper {
            name: "pdsh",
            value_options: VALUE_OPTIONS,
            positionals: 0,
        },
    );
    if rest.is_empty() {
        Step::Nothing
    } else {
        code(POSIX, rest)
    }
}

/// `aws ssm send-command ... --parameters commands='text'` and `az vm run-command invoke
/// ... --scripts 'text'`: the text runs on the cloud machines.
fn cloud_run_command(args: &[Word]) -> Step<'_> {
    for (i, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if text == "--scripts" {
            return code(POSIX, args.get(i + 1..i + 2).unwrap_or_default());
        }
        if text == "--parameters"
            && let Some(value) = args.get(i + 1)
            && let Some(commands) = value.text.strip_prefix("commands=")
        {
            let commands = commands.trim_start_matches('[').trim_end_matches(']');
            return word_code(commands, value);
        }
    }
    Step::Nothing
}

/// `psexec \\host [options] command...`: the command runs on the other Windows machine.
fn psexec(args: &[Word]) -> Step<'_> {
    const VALUE_OPTIONS: &[&str] = &["-u", "-p", "-w", "-n", "-r", "-a", "-cf"];
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text.starts_with("\\\\") || text.starts_with("@") {
            i += 1;
            continue;
        }
        if !text.starts_with('-') {
            break;
        }
        i += if VALUE_OPTIONS.contains(&text.to_ascii_lowercase().as_str()) {
            2
        } else {
            1
        };
    }
    let rest = args.get(i..).unwrap_or_default();
    if rest.is_empty() {
        return Step::Nothing;
    }
    command_words(WINDOWS, rest)
}

/// `awk [-F sep] [-v name=value] 'program' files...`: the program is read as inline code
/// (its `system()`, `print | "cmd"` and `"cmd" | getline` run commands).
fn awk(args: &[Word]) -> Step<'_> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if matches!(text, "-f" | "--file") {
            return match args.get(i + 1) {
                Some(word) => Step::Script {
                    language: Language::Inline(Lang::Awk),
                    word,
                },
                None => Step::Nothing,
            };
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        i += if matches!(text, "-F" | "-v" | "--assign" | "--field-separator") {
            2
        } else {
            1
        };
    }
    match args.get(i) {
        Some(program) => Step::Code {
            language: Language::Inline(Lang::Awk),
            text: program.text.clone(),
            words: std::slice::from_ref(program),
        },
        None => Step::Nothing,
    }
}

/// `docker exec [options] container command...` (also `docker compose exec service
/// command...`): what runs in the container.
fn container_exec(args: &[Word]) -> Step<'_> {
    // `docker -H host exec`, `docker container exec`, `docker compose -f x exec`: global
    // options and management groups come before `exec`.
    const GLOBAL_VALUES: &[&str] = &[
        "-H",
        "--host",
        "--context",
        "-c",
        "--config",
        "-l",
        "--log-level",
        "-f",
        "--file",
        "-p",
        "--project-name",
        "--profile",
        "--env-file",
        "--tlscacert",
        "--tlscert",
        "--tlskey",
        "--project-directory",
        "--ansi",
        "--parallel",
    ];
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if GLOBAL_VALUES.contains(&text) {
            at += 2;
        } else if text.starts_with('-') || matches!(text, "compose" | "container") {
            at += 1;
        } else {
            break;
        }
    }
    let at = at.min(args.len());
    let args = &args[at..];
    if args.first().is_none_or(|w| w.text != "exec") {
        return Step::Nothing;
    }
    const VALUE_OPTIONS: &[&str] = &[
        "-e",
        "--env",
        "-u",
        "--user",
        "-w",
        "--workdir",
        "--env-file",
        "--detach-keys",
    ];
    let mut i = 1;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if !text.starts_with('-') || text == "-" {
            break;
        }
        let cluster_takes_value = !text.starts_with("--")
            && text.len() > 2
            && matches!(text.chars().last(), Some('u' | 'e' | 'w'));
        i += if VALUE_OPTIONS.contains(&text) || cluster_takes_value {
            2
        } else {
            1
        };
    }
    let command = args.get(i + 1..).unwrap_or_default();
    if reads_stdin_shell(command) {
        return Step::Stdin { language: POSIX };
    }
    command_words(POSIX, command)
}

/// `parallel [options] command ::: arguments`: the command runs once per argument, with the
/// argument in place of `{}` or after it.
fn parallel(args: &[Word]) -> Step<'_> {
    const VALUE_OPTIONS: &[&str] = &[
        "-j",
        "--jobs",
        "-S",
        "--sshlogin",
        "-a",
        "--arg-file",
        "--joblog",
        "--results",
        "-d",
        "--delimiter",
        "-I",
        "-n",
        "-N",
        "--colsep",
        "--timeout",
        "--delay",
        "--halt",
        "--max-args",
        "--workdir",
        "--tmpdir",
    ];
    let rest = skip_options(
        args,
        &Wrapper {
            name: "parallel",
            value_options: VALUE_OPTIONS,
            positionals: 0,
        },
    );
    let split = rest
        .iter()
        .position(|w| w.text.starts_with(":::"))
        .unwrap_or(rest.len());
    let template = joined(&rest[..split]);
    let inputs: Vec<&str> = rest
        .get(split..)
        .unwrap_or_default()
        .iter()
        .map(|w| w.text.as_str())
        .filter(|t| !t.starts_with(":::"))
        .collect();
    if template.is_empty() {
        // No command: each argument is a command line (`parallel ::: 'cmd' …`), or, with
        // none, standard input is.
        if inputs.is_empty() {
            return Step::Stdin { language: POSIX };
        }
        return Step::Code {
            language: POSIX,
            text: inputs.join("\n"),
            words: args,
        };
    }
    const INPUTS_MAX: usize = 64;
    if inputs.len() > INPUTS_MAX
        || template.len().saturating_mul(inputs.len().max(1)) > super::COMMAND_BYTES_MAX
    {
        return Step::Unknown("it runs a command for more arguments than can be checked");
    }
    let lines: Vec<String> = if inputs.is_empty() {
        vec![template.replace("{}", "")]
    } else {
        inputs
            .iter()
            .map(|input| {
                if template.contains("{}") {
                    template.replace("{}", input)
                } else {
                    format!("{template} {input}")
                }
            })
            .collect()
    };
    Step::Code {
        language: POSIX,
        text: lines.join("\n"),
        words: args,
    }
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
            return Step::Stdin { language: WINDOWS };
        }
        if "command".starts_with(param) || param == "cwa" || param.starts_with("commandwith") {
            let rest = &args[i + 1..];
            return match rest {
                [only] if only.text == "-" => Step::Stdin { language: WINDOWS },
                [] => Step::Stdin { language: WINDOWS },
                _ => code(WINDOWS, rest),
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
                    language: WINDOWS,
                    text,
                    words: &[],
                },
                None => Step::Hidden("runs an encoded PowerShell command that does not decode"),
            };
        }
        if "file".starts_with(param) {
            return match args.get(i + 1) {
                Some(word) => Step::Script {
                    language: WINDOWS,
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
        Step::Stdin { language: WINDOWS }
    } else {
        code(WINDOWS, rest)
    }
}

/// `cmd [/s /q ...] /c text` (or `/k`, `/r`, also written `/ctext`).
fn cmd(args: &[Word]) -> Step<'_> {
    for (i, word) in args.iter().enumerate() {
        let lower = word.text.to_ascii_lowercase();
        if matches!(lower.as_str(), "/c" | "/k" | "/r") {
            return code(WINDOWS, &args[i + 1..]);
        }
        if lower.starts_with("/c") || lower.starts_with("/k") {
            let inline = word.text.get(2..).unwrap_or_default();
            let text = format!("{inline} {}", joined(&args[i + 1..]));
            return Step::Code {
                language: WINDOWS,
                text,
                words: &args[i..],
            };
        }
        if !lower.starts_with('/') {
            return code(WINDOWS, &args[i..]);
        }
    }
    Step::Stdin { language: WINDOWS }
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

    fn show(language: Language) -> String {
        match language {
            Language::Shell(dialect) => format!("Some({dialect:?})"),
            Language::Inline(lang) => format!("{lang:?}"),
        }
    }

    fn step_of(text: &str, dialect: Dialect) -> String {
        let mut budget = Budget::new(1 << 20);
        let parsed = parse(text, dialect, 0, &mut budget);
        let command = &parsed.script.pipelines[0].commands[0];
        match effective(&command.words) {
            Step::Nothing => "nothing".into(),
            Step::Run { name, args } => format!("run {name} {}", joined(args)),
            Step::Code { language, text, .. } => format!("code {} {text}", show(language)),
            Step::Script { language, word } => format!("script {} {}", show(language), word.text),
            Step::Stdin { language } => format!("stdin {}", show(language)),
            Step::Unknown(_) => "unknown".into(),
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
            ("python3 -c 'import os'", P, "code Python import os"),
            ("python3 -Ic 'import os'", P, "code Python import os"),
            ("perl -ne 'print' x", P, "code Perl print"),
            ("node --eval=1", P, "code JavaScript 1"),
            ("python3", P, "stdin Python"),
            ("$X -rf /", P, "unknown"),
            ("sudo /bin/r? -rf /", P, "unknown"),
            ("{rm,-rf,/}", P, "unknown"),
            ("[ -f x ]", P, "run [ -f x ]"),
            (
                "ssh -p 22 -o A=b host 'rm -rf /'",
                P,
                "code Some(Posix) rm -rf /",
            ),
            ("ssh host bash -s", P, "stdin Some(Posix)"),
            ("trap 'rm -rf ~' EXIT", P, "code Some(Posix) rm -rf ~"),
            (
                "alias x='echo; rm -rf ~'",
                P,
                "code Some(Posix) echo; rm -rf ~",
            ),
            ("alias ls='rm -i'", P, "unknown"),
            (
                "parallel rm -rf ::: / ~",
                P,
                "code Some(Posix) rm -rf /\nrm -rf \u{e000}",
            ),
            (
                "kubectl exec pod -- rm -rf /",
                P,
                "code Some(Posix) 'rm' '-rf' '/'",
            ),
            (
                "docker exec -u 0 web rm -rf /",
                P,
                "code Some(Posix) 'rm' '-rf' '/'",
            ),
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
