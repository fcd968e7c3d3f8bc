//! The destructive-command deny-list: commands no mode may run, whoever approves them.
//!
//! A command line is lexed into words (see `lexer`) twice — once as a POSIX shell reads it
//! and once as cmd.exe and PowerShell read it — and every simple command in it is checked:
//! each segment between `;`, `&&`, `||`, `|` and newlines, every `$(…)` and backtick
//! substitution, every subshell, and the text handed to `bash -c`, `sh -c`, `eval`, `su -c`,
//! `env -S`, `powershell -Command` (or `-EncodedCommand`) and `cmd /c`, recursively. Wrappers
//! (`sudo`, `env`, `nice`, `timeout`, ...) are looked through. Pipes into a shell are judged
//! by what feeds them: a download or a decoder is refused, literal text is checked as code;
//! a delete that takes its targets from a pipe is judged by what the listing before it lists.
//!
//! Everything is bounded: the command's length, the lexing work and the nesting depth.
//! Past a bound the command is refused as too complex to check, never waved through.

mod feeds;
mod forkbomb;
mod inline;
mod lexer;
mod rules;
mod runners;
mod targets;

use lexer::{Budget, Command, Dialect, Pipeline, Script, Stdin, Word};
use runners::{Language, Step};

/// The longest command the deny-list reads. Longer commands are refused: a shell command an
/// agent writes is a line or a short script, and reading has to stay cheap.
pub const COMMAND_BYTES_MAX: usize = 64 * 1024;

/// Characters each lex may consume, summed over every nested text of one command. Generous
/// for any real command (a 64 KiB command read twice, with its `bash -c` strings read again,
/// is well inside it), and small enough to keep one decision in milliseconds.
const LEX_STEPS_MAX: usize = 4 * 1024 * 1024;

/// How many commands before a `… | xargs rm -rf` are read for the targets they list: enough
/// for `find / | grep x | sort | xargs rm -rf`, and it keeps a long pipeline linear.
const PIPED_LISTERS_MAX: usize = 4;

/// The longest working folder followed through `cd`s; past it the folder counts as unknown.
const CWD_CHARS_MAX: usize = 4096;

/// How much of a command a reason quotes.
const SEGMENT_CHARS_MAX: usize = 160;

/// What the deny-list found in a command that it will not wave through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandRisk {
    /// On the destructive-command deny-list: refused in every mode.
    Destructive(String),
    /// What the command runs cannot be known without running it (a program named by a
    /// variable, code built at run time): refused in `allow-all`, asked about elsewhere.
    Opaque(String),
}

impl CommandRisk {
    /// The sentence a person reads.
    pub fn reason(&self) -> &str {
        match self {
            CommandRisk::Destructive(reason) | CommandRisk::Opaque(reason) => reason,
        }
    }
}

/// Starts every reason for an opaque command.
pub const OPAQUE_REASON: &str = "cannot tell what this runs";

/// Why `command` is on the destructive-command deny-list, as a sentence a person reads, or
/// `None` when it is not. Pure and total: any input returns, in time linear in its length.
pub fn destructive_reason(command: &str) -> Option<String> {
    match command_risk(command)? {
        CommandRisk::Destructive(reason) => Some(reason),
        CommandRisk::Opaque(_) => None,
    }
}

/// The deny-list's whole judgement of `command`: destructive, opaque, or `None` when it
/// found nothing. A destructive piece anywhere wins over an opaque one. Pure and total.
pub fn command_risk(command: &str) -> Option<CommandRisk> {
    if command.len() > COMMAND_BYTES_MAX {
        return Some(CommandRisk::Destructive(format!(
            "the command is {} bytes long, more than the {COMMAND_BYTES_MAX} the deny-list reads, so it cannot be checked",
            command.len()
        )));
    }
    let mut context = Context {
        budget: Budget::new(LEX_STEPS_MAX),
        opaque: None,
    };
    if let Some(finding) = analyze(command, Dialect::Posix, 0, None, &mut context)
        .or_else(|| analyze(command, Dialect::Windows, 0, None, &mut context))
    {
        return Some(CommandRisk::Destructive(finding.sentence()));
    }
    context.opaque.map(|finding| {
        CommandRisk::Opaque(format!(
            "{OPAQUE_REASON}: in `{}`, {}",
            finding.shown(),
            finding.why
        ))
    })
}

/// Why writing to a shell's startup file makes later commands unreadable.
const STARTUP_FILE: &str = "it writes to a file that runs commands later (a shell startup \
     file, a hook, a service or a schedule), so what runs then cannot be read";

/// What one decision carries through every nested text: the lexing work left, and the first
/// opaque piece seen, kept while the search for a destructive one goes on.
struct Context {
    budget: Budget,
    opaque: Option<Finding>,
}

impl Context {
    fn note_opaque(&mut self, finding: Finding) {
        self.opaque.get_or_insert(finding);
    }
}

/// A destructive piece of a command and why.
#[derive(Debug)]
struct Finding {
    segment: String,
    why: String,
}

impl Finding {
    fn new(segment: &str, why: impl Into<String>) -> Self {
        Self {
            segment: segment.to_string(),
            why: why.into(),
        }
    }

    fn sentence(&self) -> String {
        format!(
            "`{}` is on the destructive-command deny-list: {}",
            self.shown(),
            self.why
        )
    }

    /// The segment on one line, cut to `SEGMENT_CHARS_MAX` characters, with the lexer's
    /// markers for unknown values written back as a person reads them.
    fn shown(&self) -> String {
        let readable = self
            .segment
            .replace(lexer::HOME, "~")
            .replace(lexer::VARIABLE, "$…")
            .replace(lexer::SUBSTITUTION, "$(…)");
        let one_line = readable.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.chars().count() > SEGMENT_CHARS_MAX {
            one_line
                .chars()
                .take(SEGMENT_CHARS_MAX)
                .chain("…".chars())
                .collect()
        } else {
            one_line
        }
    }
}

fn analyze(
    text: &str,
    dialect: Dialect,
    depth: usize,
    cwd: Option<String>,
    context: &mut Context,
) -> Option<Finding> {
    if depth >= lexer::NESTING_DEPTH_MAX {
        return Some(Finding::new(
            text,
            "it nests commands too deeply to be checked",
        ));
    }
    let parsed = lexer::parse(text, dialect, depth, &mut context.budget);
    if context.budget.exhausted() {
        return Some(Finding::new(text, "it is too complex to be checked"));
    }
    if let Some(why) = forkbomb::fork_bomb(&parsed.skeleton) {
        return Some(Finding::new(text, why));
    }
    let mut walker = Walker {
        heredocs: &parsed.heredocs,
        dialect,
        depth,
        cwd,
        context,
    };
    walker.script(&parsed.script)
}

/// Reads code in any language the deny-list knows: a shell's through `analyze`, an
/// interpreter's one-liner through `inline`, whose shell commands and evaluated code are
/// read again.
fn analyze_code(
    text: &str,
    language: Language,
    depth: usize,
    cwd: Option<String>,
    context: &mut Context,
) -> Option<Finding> {
    let lang = match language {
        Language::Shell(dialect) => return analyze(text, dialect, depth, cwd, context),
        Language::Inline(lang) => lang,
    };
    if depth >= lexer::NESTING_DEPTH_MAX {
        return Some(Finding::new(
            text,
            "it nests commands too deeply to be checked",
        ));
    }
    let reading = inline::read(lang, text);
    if let Some(why) = reading.destructive {
        return Some(Finding::new(text, why));
    }
    if let Some(why) = reading.opaque {
        context.note_opaque(Finding::new(text, why));
    }
    for command in &reading.commands {
        if let Some(found) = analyze(command, Dialect::Posix, depth + 1, cwd.clone(), context) {
            return Some(found);
        }
    }
    for nested in &reading.nested {
        if let Some(found) = analyze_code(nested, language, depth + 1, cwd.clone(), context) {
            return Some(found);
        }
    }
    None
}

/// Walks one lexed text, carrying the folder an earlier `cd` moved to.
struct Walker<'a> {
    heredocs: &'a [String],
    dialect: Dialect,
    depth: usize,
    cwd: Option<String>,
    context: &'a mut Context,
}

impl Walker<'_> {
    fn script(&mut self, script: &Script) -> Option<Finding> {
        script
            .pipelines
            .iter()
            .find_map(|pipeline| self.pipeline(pipeline))
    }

    /// A nested script (a substitution or subshell): a `cd` inside it stays inside it.
    fn nested(&mut self, script: &Script) -> Option<Finding> {
        let saved = self.cwd.clone();
        let found = self.script(script);
        self.cwd = saved;
        found
    }

    /// Each command once, carrying what earlier commands in the pipe feed forward, so a
    /// long pipeline costs linear time.
    fn pipeline(&mut self, pipeline: &Pipeline) -> Option<Finding> {
        if let Some(why) = rules::pipeline_reason(pipeline) {
            return Some(Finding::new(&pipeline_source(pipeline), why));
        }
        let mut hidden_upstream: Option<&'static str> = None;
        for (i, command) in pipeline.commands.iter().enumerate() {
            let step = runners::effective(&command.words);
            if let Some(found) = self.command(command, &step) {
                return Some(found);
            }
            let upstream = &pipeline.commands[i.saturating_sub(PIPED_LISTERS_MAX)..i];
            if let Step::Run { name, args } = &step {
                if let Some(why) = upstream.iter().find_map(|producer| {
                    rules::piped_targets_reason(name, args, producer, self.cwd.as_deref())
                }) {
                    return Some(Finding::new(&pipeline_source(pipeline), why));
                }
                if i > 0
                    && rules::takes_targets_from_input(name, args)
                    && !upstream.iter().any(rules::is_lister)
                {
                    self.context.note_opaque(Finding::new(
                        &pipeline_source(pipeline),
                        "it deletes or changes, recursively, whatever the commands before it print",
                    ));
                }
            }
            if let Step::Stdin { language } = step
                && i > 0
                && let Some(found) = self.piped_into_code(
                    hidden_upstream,
                    &pipeline.commands[..i],
                    language,
                    pipeline,
                )
            {
                return Some(found);
            }
            hidden_upstream = hidden_upstream.or_else(|| feeds::hidden_source(command));
        }
        None
    }

    fn command(&mut self, command: &Command, step: &Step<'_>) -> Option<Finding> {
        for group in &command.groups {
            if let Some(found) = self.nested(group) {
                return Some(found);
            }
        }
        let stdin_words = command.stdin.iter().filter_map(|stdin| match stdin {
            Stdin::HereString(word) => Some(word),
            Stdin::HereDoc { .. } => None,
        });
        let redirect_words = command.redirects.iter().map(|r| &r.target);
        for word in command
            .words
            .iter()
            .chain(redirect_words)
            .chain(stdin_words)
        {
            for substitution in &word.substitutions {
                if let Some(found) = self.nested(substitution) {
                    return Some(found);
                }
            }
        }
        for redirect in command.redirects.iter().filter(|r| r.output) {
            // A relative target is in the folder an earlier `cd` moved to.
            let target = match &self.cwd {
                Some(cwd) if !redirect.target.text.starts_with(['/', '\\']) => {
                    format!("{cwd}/{}", redirect.target.text)
                }
                _ => redirect.target.text.clone(),
            };
            if let Some(why) = rules::written(&target) {
                return Some(Finding::new(&command.source, why));
            }
            if targets::is_startup_file(&redirect.target.text) {
                self.context
                    .note_opaque(Finding::new(&command.source, STARTUP_FILE));
            }
        }
        if let Some(text) = runners::hook_code(&command.words)
            && let Some(found) = analyze(
                &text,
                Dialect::Posix,
                self.depth + 1,
                self.cwd.clone(),
                self.context,
            )
        {
            return Some(found);
        }
        if let Some(found) = self.expanding_heredocs(command) {
            return Some(found);
        }
        match step {
            Step::Nothing => None,
            Step::Run { name, args } => {
                if !matches!(
                    name.as_str(),
                    "cat"
                        | "less"
                        | "more"
                        | "head"
                        | "tail"
                        | "grep"
                        | "diff"
                        | "wc"
                        | "ls"
                        | "stat"
                        | "file"
                        | "rm"
                        | "unlink"
                        | "rmdir"
                        | "test"
                        | "["
                ) && args.iter().any(|w| {
                    let value = w.text.split_once('=').map_or(w.text.as_str(), |(_, v)| v);
                    targets::is_startup_file(value)
                }) {
                    self.context
                        .note_opaque(Finding::new(&command.source, STARTUP_FILE));
                }
                if rules::takes_targets_from_input(name, args)
                    && let Some(found) = self.written_input(command)
                {
                    return Some(found);
                }
                if let Some(target) = rules::cd_target(&command.words) {
                    // Somewhere nobody can know: what a relative delete then reaches is as
                    // unknown as a variable's value (`cd $D && rm -rf *` is `rm -rf ~/*` when
                    // `D` is empty).
                    let length = self.cwd.as_ref().map_or(0, String::len);
                    self.cwd = Some(match target {
                        // A folder path longer than any real one is as unknown as a variable,
                        // and keeps each later check short.
                        Some(t) if t.len() + length <= CWD_CHARS_MAX => self.join_cwd(&t),
                        _ => lexer::VARIABLE.to_string(),
                    });
                    return None;
                }
                if name == "find" {
                    for text in rules::find_exec_commands(args) {
                        let found = analyze(
                            &text,
                            Dialect::Posix,
                            self.depth + 1,
                            self.cwd.clone(),
                            self.context,
                        );
                        if found.is_some() {
                            return found;
                        }
                    }
                }
                if let Some(why) = rules::destructive(name, args, self.cwd.as_deref()) {
                    return Some(Finding::new(&command.source, why));
                }
                if rules::hands_over_a_device(name, args) {
                    self.context.note_opaque(Finding::new(
                        &command.source,
                        "it gives a disk or a kernel control to a program that may write it",
                    ));
                }
                None
            }
            Step::Code {
                language,
                text,
                words,
            } => {
                if let Some(found) = self.code_sources(command, words, *language) {
                    return Some(found);
                }
                analyze_code(
                    text,
                    *language,
                    self.depth + 1,
                    self.cwd.clone(),
                    self.context,
                )
            }
            Step::Script { language, word } => {
                self.code_sources(command, std::slice::from_ref(*word), *language)
            }
            Step::Stdin { language } => self.stdin_code(command, *language),
            Step::Unknown(why) => {
                self.context
                    .note_opaque(Finding::new(&command.source, *why));
                None
            }
            Step::Hidden(why) => Some(Finding::new(&command.source, *why)),
        }
    }

    /// A delete fed by input written in the command: a here-string or here-document lists
    /// its targets; `< <(…)` is a listing like a pipe's.
    fn written_input(&mut self, command: &Command) -> Option<Finding> {
        for stdin in &command.stdin {
            let text = match stdin {
                Stdin::HereDoc { slot, .. } => {
                    self.heredocs.get(*slot).cloned().unwrap_or_default()
                }
                Stdin::HereString(word) => word.text.clone(),
            };
            if let Some(why) = rules::input_targets_reason(&text, self.cwd.as_deref()) {
                return Some(Finding::new(&command.source, why));
            }
        }
        let step = runners::effective(&command.words);
        let Step::Run { name, args } = &step else {
            return None;
        };
        for redirect in command.redirects.iter().filter(|r| !r.output) {
            for script in &redirect.target.substitutions {
                let producers = script.pipelines.iter().filter_map(|p| p.commands.last());
                for producer in producers {
                    if let Some(why) =
                        rules::piped_targets_reason(name, args, producer, self.cwd.as_deref())
                    {
                        return Some(Finding::new(&command.source, why));
                    }
                }
            }
        }
        None
    }

    /// Commands in a `cd` target are resolved against the folder we are already in.
    fn join_cwd(&self, target: &str) -> String {
        let absolute = target.starts_with(['/', '\\', lexer::HOME])
            || target.as_bytes().get(1) == Some(&b':')
            || target.starts_with('%')
            || target.starts_with('$');
        match (&self.cwd, absolute) {
            (_, true) => target.to_string(),
            (Some(cwd), false) => format!("{cwd}/{target}"),
            (None, false) => format!("./{target}"),
        }
    }

    /// Where a code runner's code comes from, when it is a nested command: a download or a
    /// decoder is refused; literal text (`<(echo …)`, `"$(printf …)"`) is checked as code.
    fn code_sources(
        &mut self,
        command: &Command,
        words: &[Word],
        language: Language,
    ) -> Option<Finding> {
        for word in words {
            for substitution in &word.substitutions {
                if let Some(kind) = substitution
                    .pipelines
                    .iter()
                    .flat_map(|p| &p.commands)
                    .find_map(feeds::hidden_source)
                {
                    return Some(Finding::new(
                        &command.source,
                        format!("runs {kind} as code"),
                    ));
                }
                if let Some(text) = feeds::script_literal_output(substitution, self.heredocs)
                    && let Some(found) = analyze_code(
                        &text,
                        language,
                        self.depth + 1,
                        self.cwd.clone(),
                        self.context,
                    )
                {
                    return Some(found);
                }
            }
        }
        None
    }

    /// A shell or interpreter reading code from standard input: here-documents,
    /// here-strings and `< <(…)` are its code.
    fn stdin_code(&mut self, command: &Command, language: Language) -> Option<Finding> {
        if let Some(redirect) = command
            .redirects
            .iter()
            .find(|r| targets::is_network_device(&r.target.text))
        {
            let why = format!(
                "connects a shell or interpreter to the network through `{}`",
                redirect.target.text
            );
            return Some(Finding::new(&command.source, why));
        }
        let inputs: Vec<&Word> = command
            .redirects
            .iter()
            .filter(|r| !r.output)
            .map(|r| &r.target)
            .collect();
        for word in inputs {
            if let Some(found) = self.code_sources(command, std::slice::from_ref(word), language) {
                return Some(found);
            }
        }
        for stdin in &command.stdin {
            let text = match stdin {
                Stdin::HereDoc { slot, .. } => {
                    self.heredocs.get(*slot).cloned().unwrap_or_default()
                }
                Stdin::HereString(word) => {
                    if let Some(found) =
                        self.code_sources(command, std::slice::from_ref(word), language)
                    {
                        return Some(found);
                    }
                    word.text.clone()
                }
            };
            if let Some(found) = analyze_code(
                &text,
                language,
                self.depth + 1,
                self.cwd.clone(),
                self.context,
            ) {
                return Some(found);
            }
        }
        None
    }

    /// A here-document whose delimiter is unquoted runs the `$(…)` and backticks in its body
    /// whatever command reads it, so such a body is checked as commands.
    fn expanding_heredocs(&mut self, command: &Command) -> Option<Finding> {
        for stdin in &command.stdin {
            if let Stdin::HereDoc {
                slot,
                expands: true,
            } = stdin
                && let Some(body) = self.heredocs.get(*slot)
                && (body.contains("$(") || body.contains('`'))
            {
                let body = body.clone();
                if let Some(found) = analyze(
                    &body,
                    Dialect::Posix,
                    self.depth + 1,
                    self.cwd.clone(),
                    self.context,
                ) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// A pipe into a shell: what runs is whatever the commands before it print. `hidden` is
    /// the first download or decoder upstream; `before` the commands before the shell. Text
    /// passes through `cat`, `head`, `tee`, `sort` and the like unchanged; a file `cat` reads
    /// is a script (like `bash x.sh`); any other producer's output cannot be read here.
    fn piped_into_code(
        &mut self,
        hidden: Option<&'static str>,
        before: &[Command],
        language: Language,
        pipeline: &Pipeline,
    ) -> Option<Finding> {
        if let Some(kind) = hidden {
            let windows = language == Language::Shell(Dialect::Windows);
            let sink = if windows || self.dialect == Dialect::Windows {
                "a shell or Invoke-Expression"
            } else {
                "a shell"
            };
            let why = format!("pipes {kind} into {sink}");
            return Some(Finding::new(&pipeline_source(pipeline), why));
        }
        for producer in before.iter().rev() {
            if let Some(text) = feeds::literal_output(producer, self.heredocs) {
                return analyze_code(
                    &text,
                    language,
                    self.depth + 1,
                    self.cwd.clone(),
                    self.context,
                );
            }
            match feeds::passes_through(producer) {
                feeds::Through::Unchanged => continue,
                feeds::Through::File => return None,
                feeds::Through::Other => break,
            }
        }
        self.context.note_opaque(Finding::new(
            &pipeline_source(pipeline),
            "it pipes another command's output into a shell or interpreter",
        ));
        None
    }
}

fn pipeline_source(pipeline: &Pipeline) -> String {
    pipeline
        .commands
        .iter()
        .map(|c| c.source.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_quote_the_segment_and_say_why() {
        let reason = destructive_reason("echo hi && rm -rf ~").unwrap_or_default();
        assert_eq!(
            reason,
            "`rm -rf ~` is on the destructive-command deny-list: recursive delete of the home folder"
        );
    }

    #[test]
    fn over_long_commands_are_refused() {
        let long = "a".repeat(COMMAND_BYTES_MAX + 1);
        assert!(destructive_reason(&long).is_some());
        assert!(destructive_reason(&"echo a; ".repeat(COMMAND_BYTES_MAX / 8)).is_none());
    }
}
