//! Inline code given to an interpreter (`python -c`, `perl -e`, `ruby -e`, `node -e`,
//! `php -r`, ...): what it would run. The deny-list does not parse these languages; it reads
//! their string literals and the names the code calls, which is enough to say three things:
//!
//! - the shell commands the code hands to the operating system (`os.system('…')`,
//!   `subprocess.run([...])`, backticks, `execSync`), each checked like any command;
//! - a delete of a catastrophic path through the language's own library (`shutil.rmtree`,
//!   `fs.rmSync`, `FileUtils.rm_rf`, `unlink`), and a write to a raw disk or kernel control;
//! - when the code computes what it runs (a command, a path or code built from variables,
//!   decoded bytes, concatenation, names looked up at run time), that nobody can tell what
//!   it runs. Plain computation with none of those (`print(1+1)`) is left alone.

use super::lexer::{HOME, SUBSTITUTION, VARIABLE, shell_quote};
use super::runners::{POSIX_SHELLS, command_name};
use super::targets::{dangerous, is_kernel_control, is_raw_disk};

/// Which language a one-liner is in: the few places they differ (what `exec` means, which
/// quotes run a shell, how strings interpolate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Perl,
    Ruby,
    JavaScript,
    Php,
    /// awk's programs: `system()`, and pipes to and from commands.
    Awk,
    /// Lua, R, AppleScript, Tcl and the rest: read with the shared rules.
    Other,
}

impl Lang {
    /// The language of an interpreter by its command name.
    pub(crate) fn of(name: &str) -> Self {
        match name {
            _ if name.starts_with("python") || name.starts_with("pypy") => Lang::Python,
            "perl" => Lang::Perl,
            "ruby" | "irb" => Lang::Ruby,
            "node" | "nodejs" | "deno" | "bun" | "jshell" => Lang::JavaScript,
            _ if name.starts_with("php") => Lang::Php,
            _ if name.starts_with("ruby") => Lang::Ruby,
            _ if name.starts_with("perl") => Lang::Perl,
            _ if name.starts_with("node") => Lang::JavaScript,
            _ => Lang::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Lang::Python => "Python",
            Lang::Perl => "Perl",
            Lang::Ruby => "Ruby",
            Lang::JavaScript => "JavaScript",
            Lang::Php => "PHP",
            Lang::Awk => "awk",
            Lang::Other => "interpreter",
        }
    }

    /// Whether a backtick string runs a shell command (it is a template string in JS).
    fn backticks_run(self) -> bool {
        matches!(self, Lang::Perl | Lang::Ruby | Lang::Php)
    }
}

/// What one piece of inline code would do, as far as it can be read.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    /// Shell command lines the code runs; the caller checks each as a POSIX command.
    pub(crate) commands: Vec<String>,
    /// Code of the same language the code evaluates (`eval('…')`); checked again.
    pub(crate) nested: Vec<String>,
    /// Why the code itself is destructive.
    pub(crate) destructive: Option<String>,
    /// Why nobody can tell what the code runs.
    pub(crate) opaque: Option<&'static str>,
}

/// Stands for a string literal in the code outside strings.
const LITERAL: char = '\u{E010}';

/// Names that hand a command to the operating system, whatever they are called on
/// (`os.system`, `IO.popen`, `pty.spawn`, `child_process.execSync`, PHP's `shell_exec`).
const RUNNERS: &[&str] = &[
    "system",
    "popen",
    "popen2",
    "popen3",
    "spawn",
    "spawnsync",
    "execsync",
    "execfile",
    "execfilesync",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execv",
    "execve",
    "execvp",
    "execvpe",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "spawnv",
    "spawnve",
    "spawnvp",
    "spawnvpe",
    "posix_spawn",
    "posix_spawnp",
    "check_output",
    "check_call",
    "getoutput",
    "getstatusoutput",
    "shell_exec",
    "passthru",
    "proc_open",
    "pcntl_exec",
    "capture2",
    "capture2e",
    "capture3",
    "create_subprocess_shell",
    "create_subprocess_exec",
    "readpipe",
    "system2",
];

/// Runners that, named without being called, are being passed around to run under another
/// name (`f = os.system`).
const PASSABLE: &[&str] = &[
    "system",
    "popen",
    "execsync",
    "spawnsync",
    "shell_exec",
    "passthru",
    "check_output",
    "getoutput",
    "proc_open",
    "execute",
];

/// Runners whose first argument is the program and second its own name (`execl(path, argv0,
/// ...)`): the second is dropped before the command is read.
const ARGV0_RUNNERS: &[&str] = &[
    "execl", "execle", "execlp", "execlpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "execv",
    "execve", "execvp", "execvpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
];

/// Names that only appear in code that reaches the interpreter's internals to find a function
/// it did not name: always unreadable here.
const INTERNALS: &[&str] = &[
    "__builtins__",
    "__subclasses__",
    "__globals__",
    "__getattribute__",
    "__dict__",
    "__code__",
    "__class__",
    "__base__",
    "__bases__",
    "__mro__",
    "globalthis",
];

/// Deletes, by a name no other library uses for anything else.
const DELETERS: &[&str] = &[
    "rmtree",
    "rm_rf",
    "rm_r",
    "rm_f",
    "rmsync",
    "rmdirsync",
    "unlinksync",
    "remove_tree",
    "remove_dir",
    "remove_dir_all",
    "removedirs",
    "remove_entry",
    "remove_entry_secure",
    "rimraf",
    "unlink",
    "rmdir",
    "emptydirsync",
    "removesync",
    "remove_file",
];

/// Deletes by a common name (`remove`, `delete`, `rm`): only when called on a filesystem
/// module (`os.remove`, `fs.rm`, `File.delete`, `FileUtils.rm`).
const GENERIC_DELETERS: &[&str] = &[
    "remove",
    "delete",
    "rm",
    "truncate",
    "move",
    "rename",
    "renames",
    "replace",
    "removesync",
];
const FILESYSTEM_MODULES: &[&str] = &[
    "require",
    "deno",
    "os",
    "fs",
    "fsp",
    "promises",
    "shutil",
    "fileutils",
    "file",
    "dir",
    "pathlib",
    "fse",
];

/// What a called name does, as far as the deny-list cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Hands a command to the operating system.
    Runs,
    /// Runs code of the same language given as text.
    Evaluates,
    /// Reaches a function or module by a name computed at run time.
    LooksUp,
    /// Deletes files or folders.
    Deletes,
    Other,
}

fn role(lang: Lang, call: &Call, mentions_subprocess: bool) -> Role {
    use Lang::*;
    let name = call.name.as_str();
    let receiver = call.receiver.as_str();
    let bare = receiver.is_empty();
    let global = bare
        || matches!(
            receiver,
            "builtins" | "kernel" | "window" | "global" | "globalthis" | "self" | "object"
        );
    match (lang, name) {
        _ if RUNNERS.contains(&name) => Role::Runs,
        (Python, "exec") if global => Role::Evaluates,
        (Perl | Ruby | Php | JavaScript, "exec") => Role::Runs,
        (Python, "run" | "call" | "popen")
            if receiver == "subprocess" || (bare && mentions_subprocess) =>
        {
            Role::Runs
        }
        (Other, "execute") if receiver == "os" => Role::Runs,
        (Other, "exec") => Role::Runs,
        (Python, "vars" | "globals" | "locals") => Role::LooksUp,
        (Awk, "system") => Role::Runs,
        (Other, "shell") if call.next_word == "script" => Role::Runs,
        (Ruby, "pipeline" | "pipeline_r" | "pipeline_w") if receiver == "open3" => Role::Runs,
        (JavaScript, "command") if receiver == "deno" => Role::Runs,
        (Python, "eval" | "compile") if global => Role::Evaluates,
        (Perl | Ruby | Php | JavaScript | Other, "eval") if global => Role::Evaluates,
        (Ruby, "instance_eval" | "class_eval" | "module_eval" | "instance_exec") => Role::Evaluates,
        (JavaScript, "function") if global => Role::Evaluates,
        (JavaScript, "runinthiscontext" | "runinnewcontext" | "runincontext") => Role::Evaluates,
        (Other, "load" | "loadstring" | "dostring") if bare => Role::Evaluates,
        (Php, "create_function" | "assert") if bare => Role::Evaluates,
        (Python, "run_path" | "run_module") if receiver == "runpy" => Role::Evaluates,
        (Python, "__import__" | "import_module" | "getattr") => Role::LooksUp,
        (Ruby, "send" | "public_send" | "__send__" | "const_get" | "method") => Role::LooksUp,
        (Ruby | JavaScript, "require") if bare => Role::LooksUp,
        (JavaScript, "import") if bare => Role::LooksUp,
        (
            Php,
            "call_user_func"
            | "call_user_func_array"
            | "array_map"
            | "array_walk"
            | "array_filter"
            | "usort"
            | "uasort"
            | "uksort"
            | "register_shutdown_function"
            | "iterator_apply"
            | "forward_static_call"
            | "ob_start",
        ) => Role::LooksUp,
        _ if DELETERS.contains(&name) => Role::Deletes,
        _ if GENERIC_DELETERS.contains(&name) && FILESYSTEM_MODULES.contains(&receiver) => {
            Role::Deletes
        }
        _ => Role::Other,
    }
}

/// Names that write to a file whatever mode it was opened in.
const WRITERS: &[&str] = &[
    "write",
    "writefile",
    "writefilesync",
    "writesync",
    "write_bytes",
    "write_text",
    "file_put_contents",
    "syswrite",
    "createwritestream",
    "appendfile",
    "appendfilesync",
    "copyfile",
    "copyfilesync",
    "copy",
    "copy2",
    "truncate",
    "binwrite",
];

/// Names of runners and deleters that, written as a string, are being looked up by name
/// (`getattr(os, 'system')`, `os["execute"]`, `array_map("system", …)`).
const NAMED_BY_TEXT: &[&str] = &[
    "system",
    "popen",
    "exec",
    "execute",
    "execsync",
    "spawn",
    "spawnsync",
    "shell_exec",
    "passthru",
    "proc_open",
    "pcntl_exec",
    "eval",
    "rmtree",
    "rm_rf",
    "rmsync",
    "unlink",
    "execl",
    "execlp",
    "execv",
    "execvp",
    "check_output",
    "getoutput",
    "assert",
];

/// What a name stands for: a module (`sp` for `subprocess`) or a module's function
/// (`r` for `shutil.rmtree`).
#[derive(Debug, Clone)]
struct Alias {
    receiver: String,
    name: String,
}

/// The names the code gives modules and functions: `import subprocess as sp`, `from shutil
/// import rmtree as r`, `s = subprocess`, `r = subprocess.run`.
fn aliases(outside: &str) -> std::collections::HashMap<String, Alias> {
    let mut found = std::collections::HashMap::new();
    for statement in outside.split([';', '\n']) {
        let words: Vec<&str> = statement
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .filter(|w| !w.is_empty())
            .collect();
        let from = match words.as_slice() {
            ["from", module, "import", ..] => Some(*module),
            _ => None,
        };
        for window in words.windows(3) {
            if window[1] == "as" {
                let alias = match from {
                    Some(module) => Alias {
                        receiver: module.rsplit('.').next().unwrap_or(module).to_string(),
                        name: window[0].to_string(),
                    },
                    None => Alias {
                        receiver: String::new(),
                        name: window[0]
                            .rsplit('.')
                            .next()
                            .unwrap_or(window[0])
                            .to_string(),
                    },
                };
                found.insert(window[2].to_string(), alias);
            }
        }
        // `s = subprocess`, `r = subprocess.run`.
        if let Some((left, right)) = statement.split_once('=')
            && !right.starts_with('=')
            && !left.ends_with(['!', '<', '>', '='])
        {
            let left = left.trim();
            let right = right.trim();
            let simple = |t: &str| {
                !t.is_empty()
                    && t.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            };
            if simple(left) && !left.contains('.') && simple(right) {
                let (receiver, name) = match right.rsplit_once('.') {
                    Some((receiver, name)) => {
                        (receiver.rsplit('.').next().unwrap_or(receiver), name)
                    }
                    None => ("", right),
                };
                found.insert(
                    left.to_string(),
                    Alias {
                        receiver: receiver.to_string(),
                        name: name.to_string(),
                    },
                );
            }
        }
    }
    found
}

/// A call with its aliases followed: `sp.run` is `subprocess.run`, `r('/')` is
/// `shutil.rmtree('/')`.
fn resolve(call: &Call, aliases: &std::collections::HashMap<String, Alias>) -> Call {
    let mut resolved = call.clone();
    if let Some(alias) = aliases.get(&call.receiver)
        && alias.receiver.is_empty()
    {
        resolved.receiver.clone_from(&alias.name);
    }
    if call.receiver.is_empty()
        && let Some(alias) = aliases.get(&call.name)
    {
        resolved.name.clone_from(&alias.name);
        resolved.receiver.clone_from(&alias.receiver);
    }
    resolved
}

/// Reads `code` written in `lang`.
pub(crate) fn read(lang: Lang, code: &str) -> Reading {
    let mut reading = Reading::default();
    let scanned = scan(lang, code);
    let outside: Vec<char> = scanned.outside.chars().collect();
    if scanned.outside.contains([VARIABLE, SUBSTITUTION]) {
        reading.opaque = Some("its code is built by the shell when it runs");
    }
    // What stands just before each literal, to tell `os["execute"]` and `$f = "system"` (a
    // lookup) from `print('exec')` (text).
    let before_literal: Vec<Option<char>> = {
        let mut before = Vec::with_capacity(scanned.literals.len());
        let mut last = None;
        for c in scanned.outside.chars() {
            if c == LITERAL {
                before.push(last);
            }
            if !c.is_whitespace() {
                last = Some(c);
            }
        }
        before
    };
    for (index, literal) in scanned.literals.iter().enumerate() {
        let text = literal.text.trim();
        let looked_up = matches!(before_literal.get(index), Some(Some('[' | '=')));
        if literal.shell {
            reading.commands.push(literal.text.clone());
        } else if matches!(lang, Lang::Perl | Lang::Ruby)
            && (text.starts_with('|') || text.ends_with('|'))
        {
            // Perl's and Ruby's `open("| cmd")`, `open("cmd |")`, `IO.read("|cmd")`.
            let command = text.trim_matches('|').trim();
            if is_bare_shell("", &[command]) {
                reading
                    .opaque
                    .get_or_insert("it pipes text into a shell, so what runs cannot be read");
            }
            reading.commands.push(command.to_string());
        } else if looked_up && NAMED_BY_TEXT.contains(&text.to_ascii_lowercase().as_str()) {
            reading
                .opaque
                .get_or_insert("it names a way to run commands as text, to look it up at run time");
        }
    }
    if lang == Lang::Other && scanned.outside.contains("do shell script") {
        // AppleScript: every string may be the shell's.
        reading
            .commands
            .extend(scanned.literals.iter().map(|l| l.text.clone()));
    }
    let aliases = aliases(&scanned.outside);
    let Some(calls) = calls(lang, &outside, &scanned.literals, &|name| {
        aliases.contains_key(name)
    }) else {
        reading.opaque = Some("its code is too complex to read");
        return reading;
    };
    if lang == Lang::Awk {
        awk_pipes(&outside, &scanned.literals, &mut reading);
    }
    let mentions_subprocess = scanned.outside.contains("subprocess");
    let mut writes = false;
    for call in &calls {
        let name = call.name.as_str();
        if INTERNALS.contains(&name) {
            reading
                .opaque
                .get_or_insert("it reaches functions through the interpreter's internals");
            continue;
        }
        writes |= WRITERS.contains(&name)
            || (matches!(name, "open" | "fopen" | "sysopen" | "opensync")
                && scanned.literals.iter().any(|l| is_write_mode(&l.text)));
        let resolved = resolve(call, &aliases);
        let call = &resolved;
        let name = call.name.as_str();
        let role = role(lang, call, mentions_subprocess);
        if role == Role::Other {
            continue;
        }
        let Some(args) = &call.args else {
            // `const {execSync} = require(…)`, `from os import system`: named in a list of
            // imports, not passed around.
            let listed = matches!(call.before, Some('{' | ','))
                && matches!(call.after, Some('}' | ','))
                || call.after_import;
            if role == Role::Runs && PASSABLE.contains(&name) && !listed {
                reading
                    .opaque
                    .get_or_insert("it passes a way to run commands around under another name");
            }
            continue;
        };
        if !(args.literal_only || (role == Role::LooksUp && call.closure)) {
            reading.opaque.get_or_insert(match role {
                Role::Deletes => "it deletes a path computed when it runs",
                Role::LooksUp => "it looks up what to call by a name computed when it runs",
                _ => "it runs a command or code computed when it runs",
            });
            continue;
        }
        // Option values (`{stdio: 'inherit'}`, `cwd='x'`) are not part of the command.
        let popen = matches!(name, "popen" | "popen2" | "popen3" | "proc_open");
        let texts: Vec<&str> = call
            .literals
            .iter()
            .filter(|l| !(l.option_value || (popen && is_write_mode_or_read(&l.text))))
            .map(|l| l.text.as_str())
            .collect();
        match role {
            Role::Runs => {
                if let Some(command) = command_line(name, &texts) {
                    if is_bare_shell(name, &texts) {
                        reading
                            .opaque
                            .get_or_insert("it starts a shell whose commands cannot be known");
                    }
                    reading.commands.push(command.join(" "));
                }
            }
            Role::Evaluates => reading
                .nested
                .extend(texts.iter().map(|t| (*t).to_string())),
            Role::LooksUp if lang == Lang::Php && call.closure => {}
            Role::LooksUp => {
                let reaches = texts.iter().any(|t| {
                    let lowered = t.trim_start_matches(':').to_ascii_lowercase();
                    RUNNERS.contains(&lowered.as_str())
                        || matches!(
                            lowered.as_str(),
                            "exec" | "eval" | "child_process" | "subprocess" | "pty"
                        )
                });
                if reaches
                    && name != "require"
                    && name != "import"
                    && name != "__import__"
                    && name != "import_module"
                {
                    reading
                        .opaque
                        .get_or_insert("it looks up a way to run commands by name");
                }
            }
            Role::Deletes => {
                let targets: Vec<&str> = if texts.is_empty() {
                    // `Path('/etc').rmdir()`: the path is in the call's receiver.
                    scanned.literals.iter().map(|l| l.text.as_str()).collect()
                } else {
                    texts
                };
                if let Some(what) = targets.iter().find_map(|t| dangerous(&as_path(t), None)) {
                    reading
                        .destructive
                        .get_or_insert(format!("its {} code deletes {what}", lang.name()));
                }
            }
            Role::Other => {}
        }
    }
    if writes
        && let Some(target) = scanned.literals.iter().find_map(|l| {
            let path = l.text.trim_start_matches(['>', '+', '<', ' ']);
            (is_raw_disk(path) || is_kernel_control(path)).then_some(path)
        })
    {
        reading
            .destructive
            .get_or_insert(format!("its {} code writes to `{target}`", lang.name()));
    }
    reading
}

/// awk's `print … | "command"` and `"command" | getline`: the literal beside the pipe is a
/// command; a pipe to or from a computed one cannot be read.
fn awk_pipes(outside: &[char], literals: &[Literal], reading: &mut Reading) {
    let mut literal_at = Vec::new();
    for (i, c) in outside.iter().enumerate() {
        if *c == LITERAL {
            literal_at.push(i);
        }
    }
    let literal = |position: usize| {
        literal_at
            .binary_search(&position)
            .ok()
            .and_then(|index| literals.get(index))
    };
    for (i, c) in outside.iter().enumerate() {
        let single =
            *c == '|' && outside.get(i + 1) != Some(&'|') && (i == 0 || outside[i - 1] != '|');
        if !single {
            continue;
        }
        let after = (i + 1..outside.len()).find(|k| !outside[*k].is_whitespace());
        let before = (0..i).rev().find(|k| !outside[*k].is_whitespace());
        let getline =
            after.is_some_and(|k| outside[k..].starts_with(&['g', 'e', 't', 'l', 'i', 'n', 'e']));
        let command_at = if getline { before } else { after };
        match command_at.and_then(&literal) {
            Some(command) => {
                if is_bare_shell("", &[command.text.as_str()]) {
                    reading
                        .opaque
                        .get_or_insert("it pipes text into a shell, so what runs cannot be read");
                }
                reading.commands.push(command.text.clone());
            }
            None => {
                reading
                    .opaque
                    .get_or_insert("it pipes to or from a command computed when it runs");
            }
        }
    }
}

/// A file mode (`r`, `w`, `rb`, `r+`): a `popen`'s second argument, not part of the command.
fn is_write_mode_or_read(text: &str) -> bool {
    !text.is_empty() && text.len() <= 3 && text.chars().all(|c| "rwab+xt".contains(c))
}

/// A file mode that writes: Python's and C's `w`, `a`, `+`; Perl's `>`, `>>`, `+<`.
fn is_write_mode(text: &str) -> bool {
    let short = text.len() <= 3
        && !text.is_empty()
        && text.chars().all(|c| "rwab+xt".contains(c))
        && text.contains(['w', 'a', '+', 'x']);
    short || text.starts_with('>') || text.starts_with("+<") || text.contains("O_WRONLY")
}

/// The words of the command a runner gets: one literal is a shell command line; several are
/// the program and its arguments.
fn command_line(name: &str, texts: &[&str]) -> Option<Vec<String>> {
    match texts {
        [] => None,
        [only] => Some(vec![(*only).to_string()]),
        [program, rest @ ..] => {
            let rest = if ARGV0_RUNNERS.contains(&name) {
                rest.get(1..).unwrap_or_default()
            } else {
                rest
            };
            let mut words = vec![shell_quote(program)];
            words.extend(rest.iter().map(|t| shell_quote(t)));
            Some(words)
        }
    }
}

/// A shell started with nothing to run: it reads commands nobody wrote here.
fn is_bare_shell(name: &str, texts: &[&str]) -> bool {
    let split: Vec<String> = match texts {
        [only] => only.split_whitespace().map(str::to_string).collect(),
        [program, rest @ ..] => {
            let rest = if ARGV0_RUNNERS.contains(&name) {
                rest.get(1..).unwrap_or_default()
            } else {
                rest
            };
            std::iter::once(program)
                .chain(rest)
                .map(|t| (*t).to_string())
                .collect()
        }
        [] => return false,
    };
    let Some(first) = split.first() else {
        return false;
    };
    let name = command_name(first);
    let shell = POSIX_SHELLS.contains(&name.as_str())
        || matches!(name.as_str(), "cmd" | "powershell" | "pwsh");
    shell
        && split[1..]
            .iter()
            .all(|w| w.starts_with('-') && !w[1..].contains('c') && w != "--")
}

/// A string literal as a path: a leading `~` and `$HOME` are the home folder.
fn as_path(text: &str) -> String {
    let home = HOME.to_string();
    if let Some(rest) = text.strip_prefix('~') {
        return format!("{home}{rest}");
    }
    for variable in ["$HOME", "${HOME}", "%USERPROFILE%"] {
        if let Some(rest) = text.strip_prefix(variable) {
            return format!("{home}{rest}");
        }
    }
    text.to_string()
}

/// A string literal: its text (interpolations replaced by the unknown-value marker) and
/// whether it runs as a shell command (backticks, `qx`, `%x`).
#[derive(Debug, Clone)]
struct Literal {
    text: String,
    shell: bool,
    /// The value of a named option in a call (`stdio: 'inherit'`, `cwd='x'`).
    option_value: bool,
}

struct Scanned {
    /// The code with each literal replaced by `LITERAL`, lowercased.
    outside: String,
    literals: Vec<Literal>,
}

fn scan(lang: Lang, code: &str) -> Scanned {
    let chars: Vec<char> = code.chars().collect();
    let mut outside = String::new();
    let mut literals = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some((literal, next)) = quoted_operator(lang, &chars, i) {
            literals.push(literal);
            outside.push(LITERAL);
            i = next;
            continue;
        }
        if matches!(c, '\'' | '"' | '`') {
            let prefix = python_prefix(&outside);
            let (mut literal, mut next) = string(lang, &chars, i, prefix);
            // Python, Ruby, awk and C join adjacent literals: `'r' 'm -rf /'` is one string.
            if matches!(lang, Lang::Python | Lang::Ruby | Lang::Awk | Lang::Other) {
                loop {
                    let after = (next..chars.len()).find(|k| !matches!(chars[*k], ' ' | '\t'));
                    match after {
                        Some(k) if matches!(chars[k], '\'' | '"') => {
                            let (more, end) = string(lang, &chars, k, prefix);
                            literal.text.push_str(&more.text);
                            next = end;
                        }
                        _ => break,
                    }
                }
            }
            literals.push(literal);
            outside.push(LITERAL);
            i = next;
            continue;
        }
        outside.extend(c.to_lowercase());
        i += 1;
    }
    Scanned { outside, literals }
}

/// The letters of a Python string prefix just written (`f`, `rb`, `fr`): raw and formatted.
fn python_prefix(outside: &str) -> (bool, bool) {
    let tail: String = outside
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if tail.len() > 2 || !tail.chars().all(|c| "rbfu".contains(c)) {
        return (false, false);
    }
    (tail.contains('r'), tail.contains('f'))
}

/// A quoted string starting at `start`: its text, and where the code continues.
fn string(lang: Lang, chars: &[char], start: usize, prefix: (bool, bool)) -> (Literal, usize) {
    let quote = chars[start];
    let (raw, formatted) = if lang == Lang::Python {
        prefix
    } else {
        (false, false)
    };
    let triple = lang == Lang::Python
        && chars.get(start + 1) == Some(&quote)
        && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    let interpolates = match lang {
        Lang::Perl | Lang::Php | Lang::Ruby => quote != '\'',
        Lang::JavaScript => quote == '`',
        Lang::Python => formatted,
        Lang::Awk | Lang::Other => false,
    };
    let mut text = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == quote
            && (!triple || (chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote)))
        {
            i += if triple { 3 } else { 1 };
            break;
        }
        if c == '\\' && !raw && i + 1 < chars.len() {
            let (decoded, used) = escape(&chars[i + 1..]);
            text.push(decoded);
            i += 1 + used;
            continue;
        }
        if interpolates && let Some(next) = interpolation(lang, chars, i) {
            text.push(VARIABLE);
            i = next;
            continue;
        }
        text.push(c);
        i += 1;
    }
    let shell = quote == '`' && lang.backticks_run();
    (
        Literal {
            text,
            shell,
            option_value: false,
        },
        i,
    )
}

/// Decodes one backslash escape (the characters after the backslash): `\n`, `\t`, `\xHH`,
/// `\uHHHH`, `\u{H…}`, `\UHHHHHHHH`, octal `\NNN`; any other character stands for itself.
/// Returns the character and how many characters the escape used.
fn escape(after: &[char]) -> (char, usize) {
    let number = |digits: &[char], radix: u32, max: usize| {
        let taken: String = digits
            .iter()
            .take(max)
            .take_while(|c| c.is_digit(radix))
            .collect();
        let value = u32::from_str_radix(&taken, radix)
            .ok()
            .and_then(char::from_u32);
        (value, taken.len())
    };
    let decoded = match after.first() {
        Some('n') => Some(('\n', 1)),
        Some('t') => Some(('\t', 1)),
        Some('r') => Some(('\r', 1)),
        Some('x') => match number(&after[1..], 16, 2) {
            (Some(c), n) if n > 0 => Some((c, 1 + n)),
            _ => None,
        },
        Some('u') if after.get(1) == Some(&'{') => {
            let (value, n) = number(&after[2..], 16, 6);
            value.map(|c| (c, 2 + n + usize::from(after.get(2 + n) == Some(&'}'))))
        }
        Some('u') => match number(&after[1..], 16, 4) {
            (Some(c), 4) => Some((c, 5)),
            _ => None,
        },
        Some('U') => match number(&after[1..], 16, 8) {
            (Some(c), 8) => Some((c, 9)),
            _ => None,
        },
        Some('0'..='7') => match number(after, 8, 3) {
            (Some(c), n) => Some((c, n)),
            _ => None,
        },
        _ => None,
    };
    decoded.unwrap_or_else(|| (after.first().copied().unwrap_or('\\'), 1))
}

/// Where an interpolation starting at `i` ends: Perl's and PHP's `$name`, `@name`, `{$x}`;
/// Ruby's `#{…}`; JavaScript's `${…}`; Python's f-string `{…}`.
fn interpolation(lang: Lang, chars: &[char], i: usize) -> Option<usize> {
    let c = chars[i];
    let next = chars.get(i + 1).copied();
    let braced_end = |from: usize| {
        let mut depth = 0usize;
        for (j, ch) in chars.iter().enumerate().skip(from) {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
        }
        chars.len()
    };
    match (lang, c, next) {
        (Lang::Ruby, '#', Some('{')) => Some(braced_end(i + 1)),
        (Lang::JavaScript, '$', Some('{')) => Some(braced_end(i + 1)),
        (Lang::Python, '{', Some(n)) if n != '{' => Some(braced_end(i)),
        (Lang::Python, '{', Some('{')) => None,
        (Lang::Perl | Lang::Php, '$' | '@', Some(n))
            if n.is_alphanumeric() || n == '_' || n == '{' =>
        {
            let mut j = i + 1;
            if n == '{' {
                return Some(braced_end(j));
            }
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            Some(j)
        }
        (Lang::Php, '{', Some('$')) => Some(braced_end(i)),
        _ => None,
    }
}

/// Perl's `q`, `qq`, `qw`, `qx` and Ruby's `%q`, `%Q`, `%w`, `%x`, `%()` with any delimiter.
fn quoted_operator(lang: Lang, chars: &[char], i: usize) -> Option<(Literal, usize)> {
    let previous_is_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if previous_is_word {
        return None;
    }
    let (kind, open_at) = match lang {
        Lang::Perl => {
            if chars[i] != 'q' {
                return None;
            }
            let word: String = chars[i..]
                .iter()
                .take(3)
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            if !matches!(word.as_str(), "q" | "qq" | "qw" | "qx") {
                return None;
            }
            let end = i + word.len();
            (word, end)
        }
        Lang::Ruby if chars[i] == '%' => match chars.get(i + 1) {
            Some(k @ ('q' | 'Q' | 'w' | 'W' | 'x' | 'i' | 'I')) => (k.to_string(), i + 2),
            Some(d) if "({[<|!".contains(*d) => (String::new(), i + 1),
            _ => return None,
        },
        _ => return None,
    };
    let open = *chars.get(open_at)?;
    if open.is_alphanumeric()
        || open.is_whitespace()
        || open == '_'
        || open == '='
        || open == ','
        || open == ';'
    {
        return None;
    }
    let close = match open {
        '(' => ')',
        '{' => '}',
        '[' => ']',
        '<' => '>',
        other => other,
    };
    let mut depth = 0usize;
    let mut text = String::new();
    let mut j = open_at + 1;
    while j < chars.len() {
        let c = chars[j];
        if c == '\\' && j + 1 < chars.len() {
            text.push(chars[j + 1]);
            j += 2;
            continue;
        }
        if c == close && depth == 0 {
            j += 1;
            break;
        }
        if c == open && open != close {
            depth += 1;
        } else if c == close {
            depth -= 1;
        }
        if kind != "q"
            && kind != "w"
            && kind != "i"
            && let Some(next) = interpolation(lang, chars, j)
        {
            text.push(VARIABLE);
            j = next;
            continue;
        }
        text.push(c);
        j += 1;
    }
    let shell = kind == "qx" || kind == "x";
    Some((
        Literal {
            text,
            shell,
            option_value: false,
        },
        j,
    ))
}

/// A name the code calls, the module it is called on, and what it passes.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    /// The characters just before and after the name (spaces skipped), and whether it is in
    /// an `import` list.
    before: Option<char>,
    after: Option<char>,
    after_import: bool,
    /// Its first argument is a closure (`array_map(fn($x) => …, …)`).
    closure: bool,
    /// The identifier before the `.`, `::` or `->` (`os` in `os.system`), or empty.
    receiver: String,
    /// The word after the name, for two-word forms (AppleScript's `do shell script`).
    next_word: String,
    /// `None` when the name is only referenced, not called.
    args: Option<Args>,
    /// The literals among its arguments.
    literals: Vec<Literal>,
}

#[derive(Debug, Clone)]
struct Args {
    /// Only literals, numbers, list and map punctuation, and keyword options with simple
    /// values (`shell=True`, `{stdio: 'inherit'}`).
    literal_only: bool,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every identifier in `outside` that is called or passed around, with its arguments.
/// How many characters the argument reads of one text may scan in all: past it, the code is
/// too complex to read.
const ARGUMENT_WORK_MAX: usize = 1 << 22;

/// Where brackets match and statements stop, found in one pass each, so reading every call's
/// arguments stays linear.
struct Structure {
    /// For each `(`, the index just past its `)` (or the end); for each `)`, its `(`.
    partner: Vec<usize>,
    /// For each index, the first `;`, newline, `}` or `|` at or after it (or the end).
    stop: Vec<usize>,
}

impl Structure {
    fn new(outside: &[char]) -> Self {
        let len = outside.len();
        let mut partner = vec![len; len];
        let mut open = Vec::new();
        for (i, c) in outside.iter().enumerate() {
            match c {
                '(' => open.push(i),
                ')' => {
                    if let Some(at) = open.pop() {
                        partner[at] = i + 1;
                        partner[i] = at;
                    } else {
                        partner[i] = i;
                    }
                }
                _ => {}
            }
        }
        let mut stop = vec![len; len + 1];
        for i in (0..len).rev() {
            stop[i] = if matches!(outside[i], ';' | '\n' | '}' | '|') {
                i
            } else {
                stop[i + 1]
            };
        }
        Self { partner, stop }
    }
}

/// Names whose calls are read: the ones `role` knows, and the file-opening ones.
fn is_interesting(name: &str) -> bool {
    const OTHERS: &[&str] = &[
        "exec",
        "eval",
        "compile",
        "run",
        "call",
        "popen",
        "execute",
        "shell",
        "pipeline",
        "pipeline_r",
        "pipeline_w",
        "command",
        "function",
        "runinthiscontext",
        "runinnewcontext",
        "runincontext",
        "load",
        "loadstring",
        "dostring",
        "create_function",
        "assert",
        "run_path",
        "run_module",
        "__import__",
        "import_module",
        "getattr",
        "send",
        "public_send",
        "__send__",
        "const_get",
        "method",
        "require",
        "import",
        "call_user_func",
        "call_user_func_array",
        "vars",
        "globals",
        "locals",
        "open",
        "fopen",
        "sysopen",
        "opensync",
        "instance_eval",
        "class_eval",
        "module_eval",
        "instance_exec",
        "array_map",
        "array_walk",
        "array_filter",
        "usort",
        "uasort",
        "uksort",
        "register_shutdown_function",
        "iterator_apply",
        "forward_static_call",
        "ob_start",
    ];
    RUNNERS.contains(&name)
        || DELETERS.contains(&name)
        || GENERIC_DELETERS.contains(&name)
        || INTERNALS.contains(&name)
        || WRITERS.contains(&name)
        || OTHERS.contains(&name)
}

/// Every interesting identifier in `outside` that is called or passed around, with its
/// arguments; `None` when reading them would take more than [`ARGUMENT_WORK_MAX`].
fn calls(
    lang: Lang,
    outside: &[char],
    literals: &[Literal],
    aliased: &dyn Fn(&str) -> bool,
) -> Option<Vec<Call>> {
    let paren_less = matches!(lang, Lang::Perl | Lang::Ruby | Lang::Other);
    let structure = Structure::new(outside);
    let mut work = 0usize;
    // The index of each LITERAL marker, to hand its text to the call that holds it.
    let mut literal_index = Vec::with_capacity(outside.len());
    let mut seen = 0usize;
    for c in outside {
        literal_index.push(seen);
        if *c == LITERAL {
            seen += 1;
        }
    }
    let mut calls = Vec::new();
    let mut i = 0;
    while i < outside.len() {
        let c = outside[i];
        if !(is_ident(c) && c != LITERAL)
            || (i > 0 && is_ident(outside[i - 1]) && outside[i - 1] != LITERAL)
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < outside.len() && is_ident(outside[i]) && outside[i] != LITERAL {
            i += 1;
        }
        let name: String = outside[start..i].iter().collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_digit())
            || !(is_interesting(&name) || aliased(&name))
        {
            continue;
        }
        let receiver = receiver_before(outside, start, &structure.partner);
        let mut j = i;
        while j < outside.len() && outside[j] == ' ' {
            j += 1;
        }
        let next_word: String = outside[j..]
            .iter()
            .take_while(|c| is_ident(**c) && **c != LITERAL)
            .collect();
        let (args_range, literal_only) = match outside.get(j) {
            Some('(') => {
                let end = structure.partner[j];
                let inner = &outside[j + 1..end.saturating_sub(1).max(j + 1)];
                work += inner.len();
                (Some((j + 1, end)), literal_only(inner))
            }
            // Perl, Ruby and PHP call without parentheses: `system "…"`, `exec $cmd`,
            // `unlink glob "…"`.
            Some(&next)
                if next == LITERAL
                    || next == '$'
                    || next == '@'
                    || (paren_less && is_ident(next) && j > i) =>
            {
                let end = structure.stop[j];
                work += end - j;
                (Some((j, end)), literal_only(&outside[j..end]))
            }
            _ => (None, false),
        };
        if work > ARGUMENT_WORK_MAX {
            return None;
        }
        let call_literals = match args_range {
            Some((from, to)) => {
                let from = from.min(outside.len());
                let to = to.min(outside.len());
                outside[from..to]
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c == LITERAL)
                    .filter_map(|(k, _)| {
                        let mut literal = literals.get(literal_index[from + k])?.clone();
                        let before = outside[from..from + k]
                            .iter()
                            .rev()
                            .find(|c| !c.is_whitespace());
                        literal.option_value = matches!(before, Some(':' | '=' | '>'));
                        Some(literal)
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        let before = outside[..start]
            .iter()
            .rev()
            .copied()
            .find(|c| !c.is_whitespace());
        let after = outside[i..].iter().copied().find(|c| !c.is_whitespace());
        let line_start = outside[..start]
            .iter()
            .rposition(|c| matches!(c, ';' | '\n'))
            .map_or(0, |p| p + 1);
        let after_import = outside[line_start..start]
            .iter()
            .collect::<String>()
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == "import");
        // A closure among the arguments (`array_map(fn($x) => …)`, `usort($a, function…)`).
        let closure = args_range.is_some_and(|(from, to)| {
            outside[from.min(outside.len())..to.min(outside.len())]
                .iter()
                .collect::<String>()
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "fn" || w == "function")
        });
        calls.push(Call {
            name,
            closure,
            before,
            after,
            after_import,
            receiver,
            next_word,
            args: args_range.map(|_| Args { literal_only }),
            literals: call_literals,
        });
    }
    Some(calls)
}

/// The identifier before `.`, `::` or `->` that ends just before `start`.
fn receiver_before(outside: &[char], start: usize, partner: &[usize]) -> String {
    let mut end = start;
    let separators = [".", "::", "->"];
    let mut matched = false;
    for separator in separators {
        let len = separator.chars().count();
        if end >= len
            && outside[end - len..end]
                .iter()
                .copied()
                .eq(separator.chars())
        {
            end -= len;
            matched = true;
            break;
        }
    }
    if !matched {
        return String::new();
    }
    // `os.path.…`'s receiver is `path`; `fs.promises.rm`'s is `promises`. A call in between
    // (`require('fs').rmSync`) is skipped to the name before it.
    if end > 0 && outside[end - 1] == ')' {
        end = partner[end - 1].min(end - 1);
    }
    let from = outside[..end]
        .iter()
        .rposition(|c| !is_ident(*c) || *c == LITERAL)
        .map_or(0, |p| p + 1);
    outside[from..end].iter().collect()
}

/// Calls that only shape a literal into a path (`Path('build')`, `os.path.join('a', 'b')`,
/// `expanduser('~')`, Perl's `glob("*.tmp")`): the path is still the literal.
const TRANSPARENT: &[&str] = &[
    "path",
    "purepath",
    "posixpath",
    "join",
    "expanduser",
    "abspath",
    "realpath",
    "normpath",
    "resolve",
    "str",
    "os",
    "pathlib",
    "glob",
    "fspath",
];

/// Whether arguments hold only literals, numbers, list and map punctuation, and keyword
/// options with simple values.
fn literal_only(inner: &[char]) -> bool {
    const VALUES: &[&str] = &["true", "false", "none", "nil", "null", "undefined"];
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c == LITERAL
            || c.is_whitespace()
            || matches!(c, ',' | '[' | ']' | '(' | ')' | '{' | '}' | '.')
        {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            while i < inner.len() && (inner[i].is_ascii_alphanumeric() || inner[i] == '.') {
                i += 1;
            }
            continue;
        }
        if is_ident(c) {
            let start = i;
            while i < inner.len() && is_ident(inner[i]) && inner[i] != LITERAL {
                i += 1;
            }
            let word: String = inner[start..i].iter().collect();
            if VALUES.contains(&word.as_str()) || TRANSPARENT.contains(&word.as_str()) {
                continue;
            }
            // Perl's `unlink "x" or die …`: the arguments end at the word.
            if matches!(
                word.as_str(),
                "or" | "and" | "if" | "unless" | "die" | "warn"
            ) {
                return true;
            }
            // `name=value`, `name: value`, `:name => value`: an option, with a simple value.
            let mut j = i;
            while j < inner.len() && inner[j] == ' ' {
                j += 1;
            }
            let option = match inner.get(j) {
                Some('=') if inner.get(j + 1) != Some(&'=') => Some(j + 1),
                Some(':') if inner.get(j + 1) != Some(&':') => Some(j + 1),
                _ => None,
            };
            let Some(mut k) = option else {
                return false;
            };
            if inner.get(k) == Some(&'>') {
                k += 1;
            }
            while k < inner.len() && inner[k] == ' ' {
                k += 1;
            }
            // The value: a literal, a number, a name or a dotted name (`subprocess.PIPE`).
            match inner.get(k) {
                Some(&v) if v == LITERAL => i = k + 1,
                Some(&v) if is_ident(v) => {
                    while k < inner.len()
                        && ((is_ident(inner[k]) && inner[k] != LITERAL) || inner[k] == '.')
                    {
                        k += 1;
                    }
                    i = k;
                }
                _ => return false,
            }
            continue;
        }
        if c == ':' {
            // Ruby's `:symbol`.
            i += 1;
            continue;
        }
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(reading: &Reading) -> String {
        format!(
            "commands={:?} nested={:?} destructive={} opaque={}",
            reading.commands,
            reading.nested,
            reading.destructive.is_some(),
            reading.opaque.is_some()
        )
    }

    #[test]
    fn readings() {
        use Lang::*;
        let cases: &[(Lang, &str, &str)] = &[
            (
                Python,
                "print(1+1)",
                "commands=[] nested=[] destructive=false opaque=false",
            ),
            (
                Python,
                "import os; os.system('rm -rf ~')",
                r#"commands=["rm -rf ~"] nested=[] destructive=false opaque=false"#,
            ),
            (
                Python,
                "import subprocess; subprocess.run(['rm','-rf','/'], check=True)",
                r#"commands=["'rm' '-rf' '/'"] nested=[] destructive=false opaque=false"#,
            ),
            (
                Python,
                "import os; os.execl('/bin/sh', 'sh')",
                r#"commands=["'/bin/sh'"] nested=[] destructive=false opaque=true"#,
            ),
            (
                Python,
                "import os; c='rm -rf /'; os.system(c)",
                "commands=[] nested=[] destructive=false opaque=true",
            ),
            (
                Python,
                "import shutil; shutil.rmtree('/etc')",
                "commands=[] nested=[] destructive=true opaque=false",
            ),
            (
                Python,
                "import shutil; shutil.rmtree('build')",
                "commands=[] nested=[] destructive=false opaque=false",
            ),
            (
                Python,
                "__import__('o'+'s').system('ls')",
                r#"commands=["ls"] nested=[] destructive=false opaque=true"#,
            ),
            (
                Python,
                "exec('import os')",
                r#"commands=[] nested=["import os"] destructive=false opaque=false"#,
            ),
            (
                Python,
                "open('/dev/sda','wb').write(b'0')",
                "commands=[] nested=[] destructive=true opaque=false",
            ),
            (
                Python,
                "x=1; print(f'{x}')",
                "commands=[] nested=[] destructive=false opaque=false",
            ),
            (
                Perl,
                "system qq{rm -rf $d}",
                "commands=[\"rm -rf \\u{e001}\"] nested=[] destructive=false opaque=false",
            ),
            (
                Perl,
                "print `rm -rf ~`",
                r#"commands=["rm -rf ~"] nested=[] destructive=false opaque=false"#,
            ),
            (
                Ruby,
                "%x(rm -rf /)",
                r#"commands=["rm -rf /"] nested=[] destructive=false opaque=false"#,
            ),
            (
                Ruby,
                "require 'fileutils'; FileUtils.rm_rf('/')",
                "commands=[] nested=[] destructive=true opaque=false",
            ),
            (
                JavaScript,
                "require('child_process').execSync('rm -rf ~', {stdio: 'inherit'})",
                r#"commands=["rm -rf ~"] nested=[] destructive=false opaque=false"#,
            ),
            (
                JavaScript,
                "console.log(`${1+1}`)",
                "commands=[] nested=[] destructive=false opaque=false",
            ),
            (
                Php,
                "echo shell_exec($argv[1]);",
                "commands=[] nested=[] destructive=false opaque=true",
            ),
        ];
        for (lang, code, expect) in cases {
            assert_eq!(show(&read(*lang, code)), *expect, "{lang:?}: {code}");
        }
    }
}
