//! A small shell lexer for the deny-list: splits a command line into scripts, pipelines and
//! simple commands of unquoted words, the way a shell would, so that rules look at words and
//! never at raw text.
//!
//! Two dialects share the code. `Posix` follows sh/bash: `\` escapes, `'…'`, `"…"`, `$'…'`,
//! `$VAR`, `${VAR}`, `$(…)`, backticks, `<(…)`, here-documents and here-strings. `Windows`
//! covers cmd.exe and PowerShell: `^` and `` ` `` escape, `\` is a path separator, `(…)`,
//! `$(…)` and `{…}` hold nested commands, `%VAR%` and `$env:VAR` stay as written for the
//! target rules to read.
//!
//! Values the lexer cannot know are replaced by marker characters from the private-use area,
//! so a rule can tell "the home folder" from "some variable" from "some command's output"
//! without guessing. Work is bounded by a shared [`Budget`]: every character consumed costs
//! one step, and nesting is limited, so no input can make it slow or overflow the stack.

mod words;

pub(crate) use words::unescape_c;

/// Stands for the home folder: `~`, `~user`, `$HOME`, `${HOME}` (and PowerShell's `$HOME`).
pub(crate) const HOME: char = '\u{E000}';
/// Stands for a variable whose value is unknown (`$X`, `${X:-y}`, `$1`, `$((…))`).
pub(crate) const VARIABLE: char = '\u{E001}';
/// Stands for the output of a nested command (`$(…)`, backticks, `<(…)`, PowerShell `(…)`).
pub(crate) const SUBSTITUTION: char = '\u{E002}';

/// `text` single-quoted for a POSIX shell, so that reading it again gives one word.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// How deeply commands may nest (substitutions inside substitutions, `bash -c` inside
/// `bash -c`) before the whole command is refused as too complex to check.
pub(crate) const NESTING_DEPTH_MAX: usize = 12;

/// Which family of shells a text is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Posix,
    Windows,
}

/// Commands separated by `;`, `&`, `&&`, `||` or newlines.
#[derive(Debug, Default)]
pub(crate) struct Script {
    pub(crate) pipelines: Vec<Pipeline>,
}

/// Commands joined by `|`: each one's output is the next one's input.
#[derive(Debug, Default)]
pub(crate) struct Pipeline {
    pub(crate) commands: Vec<Command>,
}

/// One simple command: its words after quote removal, its redirections, the subshells
/// written in its place, and what it reads on standard input when that is written inline.
#[derive(Debug, Default)]
pub(crate) struct Command {
    pub(crate) words: Vec<Word>,
    pub(crate) redirects: Vec<Redirect>,
    pub(crate) groups: Vec<Script>,
    pub(crate) stdin: Vec<Stdin>,
    /// The command as written, for reasons a person reads.
    pub(crate) source: String,
}

/// One word after quote removal. `text` holds marker characters where values are unknown;
/// `substitutions` holds the commands whose output the word contains.
#[derive(Debug, Default)]
pub(crate) struct Word {
    pub(crate) text: String,
    pub(crate) substitutions: Vec<Script>,
    /// The shell computes part of this word as it runs: a variable, a substitution, an
    /// unquoted glob or brace list. As a command's first word, nobody can tell what it runs.
    /// A PowerShell or cmd.exe group written in a command's place (`(…)`, `{…}`) is not.
    pub(crate) computed: bool,
}

/// A redirection: `> target`, `>> target`, `< target`, ...
#[derive(Debug)]
pub(crate) struct Redirect {
    /// Whether the command writes to the target (`>`, `>>`, `>|`, `<>`, `&>`).
    pub(crate) output: bool,
    pub(crate) target: Word,
}

/// Text a command reads on standard input, written inline.
#[derive(Debug)]
pub(crate) enum Stdin {
    /// A here-document: its body is `Parsed::heredocs[slot]`. `expands` is false when the
    /// delimiter was quoted (`<<'EOF'`), which turns off substitutions in the body.
    HereDoc { slot: usize, expands: bool },
    /// A here-string: `<<< word`.
    HereString(Word),
}

/// The result of lexing one text.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) script: Script,
    pub(crate) heredocs: Vec<String>,
    /// The text with everything inside quotes left out: what the shell reads as syntax.
    /// The fork-bomb rule scans it, so a bomb inside `echo '…'` is not one.
    pub(crate) skeleton: String,
}

/// The work all lexing for one decision may do, shared by every nested lex.
#[derive(Debug)]
pub(crate) struct Budget {
    steps_left: usize,
    exhausted: bool,
}

impl Budget {
    pub(crate) fn new(steps: usize) -> Self {
        Self {
            steps_left: steps,
            exhausted: false,
        }
    }

    /// Whether the work ran out or nesting went too deep: the text was not fully read.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted
    }

    pub(crate) fn exhaust(&mut self) {
        self.exhausted = true;
        self.steps_left = 0;
    }

    fn spend(&mut self) -> bool {
        if self.steps_left == 0 {
            self.exhausted = true;
            return false;
        }
        self.steps_left -= 1;
        true
    }
}

/// Lexes `text` as `dialect`, starting at nesting `depth`.
pub(crate) fn parse(text: &str, dialect: Dialect, depth: usize, budget: &mut Budget) -> Parsed {
    let mut lexer = Lexer::new(text, dialect, depth, budget, Vec::new());
    let script = lexer.parse_script(None);
    Parsed {
        script,
        heredocs: lexer.heredocs,
        skeleton: lexer.skeleton,
    }
}

struct PendingHereDoc {
    delimiter: String,
    strip_tabs: bool,
    slot: usize,
}

struct Lexer<'b> {
    chars: Vec<char>,
    pos: usize,
    dialect: Dialect,
    depth: usize,
    budget: &'b mut Budget,
    heredocs: Vec<String>,
    pending: Vec<PendingHereDoc>,
    skeleton: String,
    /// How many quotes we are inside; the skeleton only keeps characters outside quotes.
    quoted: u32,
    /// Whether the word being read is a command's first word (PowerShell's `IEX(…)` is the
    /// command `IEX` with an argument, not one word).
    command_word: bool,
}

impl<'b> Lexer<'b> {
    fn new(
        text: &str,
        dialect: Dialect,
        depth: usize,
        budget: &'b mut Budget,
        heredocs: Vec<String>,
    ) -> Self {
        Self {
            chars: text.chars().collect(),
            pos: 0,
            dialect,
            depth,
            budget,
            heredocs,
            pending: Vec::new(),
            skeleton: String::new(),
            quoted: 0,
            command_word: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// Consumes one character. When the budget runs out the rest of the input is skipped,
    /// so every loop ends.
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        if !self.budget.spend() {
            self.pos = self.chars.len();
            return None;
        }
        self.pos += 1;
        if self.quoted == 0 {
            self.skeleton.push(c);
        }
        Some(c)
    }

    fn posix(&self) -> bool {
        self.dialect == Dialect::Posix
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                // To sh a carriage return is part of a word, not a blank (`x\r#` is a word).
                ' ' | '\t' => {
                    self.bump();
                }
                '\r' if !self.posix() => {
                    self.bump();
                }
                '\\' if self.posix() && self.peek_at(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                '`' | '^' if !self.posix() && self.peek_at(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                _ => break,
            }
        }
    }

    fn is_separator(&self, c: char) -> bool {
        matches!(c, '\n' | ';' | '|' | '&')
    }

    fn is_word_end(&self, c: char, close: Option<char>) -> bool {
        if Some(c) == close {
            return true;
        }
        match self.dialect {
            Dialect::Posix => {
                matches!(
                    c,
                    ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
                )
            }
            Dialect::Windows => {
                matches!(
                    c,
                    ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | ')' | '}'
                )
            }
        }
    }

    fn parse_script(&mut self, close: Option<char>) -> Script {
        let mut script = Script::default();
        loop {
            self.skip_blanks();
            match self.peek() {
                None => break,
                Some(c) if Some(c) == close => {
                    self.bump();
                    break;
                }
                Some('\n') => self.consume_newline(),
                Some(';' | '&' | '|') => {
                    self.bump();
                }
                Some(_) => {
                    let pipeline = self.parse_pipeline(close);
                    if !pipeline.commands.is_empty() {
                        script.pipelines.push(pipeline);
                    }
                }
            }
        }
        script
    }

    fn parse_pipeline(&mut self, close: Option<char>) -> Pipeline {
        let mut pipeline = Pipeline::default();
        loop {
            let command = self.parse_command(close);
            let empty = command.words.is_empty()
                && command.groups.is_empty()
                && command.redirects.is_empty();
            if !empty {
                pipeline.commands.push(command);
            }
            match self.peek() {
                Some('|') if self.peek_at(1) == Some('|') => {
                    self.bump();
                    self.bump();
                    return pipeline;
                }
                Some('|') => {
                    self.bump();
                    if self.peek() == Some('&') {
                        self.bump();
                    }
                }
                Some('\n') => {
                    self.consume_newline();
                    return pipeline;
                }
                Some(';' | '&') => {
                    while matches!(self.peek(), Some(';' | '&')) {
                        self.bump();
                    }
                    return pipeline;
                }
                _ => return pipeline,
            }
        }
    }

    fn parse_command(&mut self, close: Option<char>) -> Command {
        let start = self.pos;
        let mut command = Command::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            if Some(c) == close || (self.is_separator(c) && !self.starts_and_redirect()) {
                break;
            }
            match c {
                '#' => self.skip_comment(),
                '(' if self.posix() => {
                    self.bump();
                    if self.peek() == Some(')') {
                        // `name()`: a function definition; the body follows as a group or
                        // as words, and is checked like any other command, from its first
                        // word (the name is not a command).
                        self.bump();
                        command.words.clear();
                    } else {
                        let group = self.parse_nested(')');
                        command.groups.push(group);
                    }
                }
                ')' | '}' => {
                    // A closer with no opener: a `case` pattern's `x)` (the words before it are
                    // the pattern, not a command, and the command starts after it, as in
                    // `case x in x) rm -rf /;; esac`), or a stray brace.
                    self.bump();
                    if c == ')' && self.posix() {
                        // The pattern's own substitutions still run: keep them as groups.
                        for word in command.words.drain(..) {
                            command.groups.extend(word.substitutions);
                        }
                    }
                }
                '<' | '>' => self.parse_redirect(&mut command, close),
                '&' => {
                    // `&>` and `&>>`: both output streams to a file.
                    self.bump();
                    self.parse_redirect(&mut command, close);
                }
                _ => {
                    self.command_word = command.words.is_empty();
                    let word = self.parse_word(close);
                    self.command_word = false;
                    if self.starts_powershell_assignment(&command, &word) {
                        // `$x = Get-Thing …`: the value after `=` is the command that runs.
                        continue;
                    }
                    let is_fd = !word.text.is_empty()
                        && word.text.chars().all(|d| d.is_ascii_digit())
                        && matches!(self.peek(), Some('<' | '>'));
                    if is_fd {
                        self.parse_redirect(&mut command, close);
                    } else {
                        command.words.push(word);
                    }
                }
            }
        }
        if !self.posix()
            && command.redirects.is_empty()
            && let [only] = command.words.as_slice()
            && only.computed
            && (only.text.starts_with(VARIABLE) || only.text.starts_with('$'))
        {
            // A PowerShell variable alone (`$files.Count`) is a value printed, not a command.
            command.words.clear();
        }
        command.source = self.chars[start..self.pos.min(self.chars.len())]
            .iter()
            .collect::<String>()
            .trim()
            .to_string();
        command
    }

    /// In PowerShell, `$name = …` (or `+=`, `-=`, …) at a command's start assigns the value
    /// of what follows; consumes the operator when it is one.
    fn starts_powershell_assignment(&mut self, command: &Command, word: &Word) -> bool {
        if self.posix() || !command.words.is_empty() || word.text != VARIABLE.to_string() {
            return false;
        }
        self.skip_blanks();
        let operator = match (self.peek(), self.peek_at(1)) {
            (Some('='), Some('=')) => 0,
            (Some('='), _) => 1,
            (Some('+' | '-' | '*' | '/' | '%'), Some('=')) => 2,
            _ => 0,
        };
        for _ in 0..operator {
            self.bump();
        }
        operator > 0
    }

    fn starts_and_redirect(&self) -> bool {
        self.posix() && self.peek() == Some('&') && self.peek_at(1) == Some('>')
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.bump();
        }
    }

    fn parse_nested(&mut self, close: char) -> Script {
        if self.depth >= NESTING_DEPTH_MAX {
            self.budget.exhaust();
            self.pos = self.chars.len();
            return Script::default();
        }
        self.depth += 1;
        let quoted = std::mem::replace(&mut self.quoted, 0);
        let script = self.parse_script(Some(close));
        self.quoted = quoted;
        self.depth -= 1;
        script
    }

    fn parse_redirect(&mut self, command: &mut Command, close: Option<char>) {
        let Some(first) = self.bump() else { return };
        let next = self.peek();
        let mut output = first == '>';
        match (first, next) {
            // Here-documents are read in both dialects: cmd.exe and PowerShell have none, so
            // `<<EOF` in a command is a POSIX one, and its body is data, not commands.
            ('<', Some('<')) => {
                self.bump();
                if self.peek() == Some('<') {
                    self.bump();
                    self.skip_blanks();
                    let word = self.parse_word(close);
                    command.stdin.push(Stdin::HereString(word));
                } else {
                    self.start_heredoc(command, close);
                }
                return;
            }
            ('<' | '>', Some('(')) if self.posix() => {
                // Process substitution: a word that names a nested command's output.
                self.bump();
                let script = self.parse_nested(')');
                let word = Word {
                    text: SUBSTITUTION.to_string(),
                    substitutions: vec![script],
                    computed: true,
                };
                command.words.push(word);
                return;
            }
            (_, Some('&')) => {
                self.bump();
                if matches!(self.peek(), Some('0'..='9' | '-')) {
                    while matches!(self.peek(), Some('0'..='9' | '-')) {
                        self.bump();
                    }
                    return;
                }
                output = true;
            }
            ('<', Some('>')) | ('>', Some('>' | '|')) => {
                self.bump();
                output = true;
            }
            _ => {}
        }
        self.skip_blanks();
        match self.peek() {
            // `> >(tee log)`: a process substitution as the target.
            Some('<' | '>') if self.posix() && self.peek_at(1) == Some('(') => {
                self.bump();
                self.bump();
                let script = self.parse_nested(')');
                let target = Word {
                    text: SUBSTITUTION.to_string(),
                    substitutions: vec![script],
                    computed: true,
                };
                command.redirects.push(Redirect { output, target });
            }
            Some(c) if !self.is_word_end(c, close) => {
                let target = self.parse_word(close);
                command.redirects.push(Redirect { output, target });
            }
            _ => {}
        }
    }

    fn start_heredoc(&mut self, command: &mut Command, close: Option<char>) {
        let strip_tabs = if self.peek() == Some('-') {
            self.bump();
            true
        } else {
            false
        };
        self.skip_blanks();
        let quote_start = self.pos;
        let delimiter = self.parse_word(close).text;
        let expands = !self.chars[quote_start..self.pos.min(self.chars.len())]
            .iter()
            .any(|c| matches!(c, '\'' | '"' | '\\'));
        let slot = self.heredocs.len();
        self.heredocs.push(String::new());
        self.pending.push(PendingHereDoc {
            delimiter,
            strip_tabs,
            slot,
        });
        command.stdin.push(Stdin::HereDoc { slot, expands });
    }

    /// Consumes a newline and then the bodies of the here-documents started on its line.
    fn consume_newline(&mut self) {
        self.bump();
        let pending = std::mem::take(&mut self.pending);
        self.quoted += 1;
        for heredoc in pending {
            let mut body = String::new();
            loop {
                let mut line = String::new();
                let mut ended = true;
                while let Some(c) = self.bump() {
                    if c == '\n' {
                        ended = false;
                        break;
                    }
                    line.push(c);
                }
                let compared = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if compared == heredoc.delimiter {
                    break;
                }
                body.push_str(compared);
                body.push('\n');
                if ended {
                    break;
                }
            }
            if let Some(slot) = self.heredocs.get_mut(heredoc.slot) {
                *slot = body;
            }
        }
        self.quoted -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of every simple command, outermost first, with markers shown as `<H>`,
    /// `<V>` and `<S>`.
    fn words(text: &str, dialect: Dialect) -> Vec<Vec<String>> {
        let mut budget = Budget::new(1 << 20);
        let parsed = parse(text, dialect, 0, &mut budget);
        let mut out = Vec::new();
        collect(&parsed.script, &mut out);
        out
    }

    fn collect(script: &Script, out: &mut Vec<Vec<String>>) {
        for pipeline in &script.pipelines {
            for command in &pipeline.commands {
                out.push(command.words.iter().map(|w| show(&w.text)).collect());
                for group in &command.groups {
                    collect(group, out);
                }
                for word in &command.words {
                    for nested in &word.substitutions {
                        collect(nested, out);
                    }
                }
            }
        }
    }

    fn show(text: &str) -> String {
        text.replace(HOME, "<H>")
            .replace(VARIABLE, "<V>")
            .replace(SUBSTITUTION, "<S>")
    }

    fn check(text: &str, dialect: Dialect, expect: &[&[&str]]) {
        let got = words(text, dialect);
        let expect: Vec<Vec<String>> = expect
            .iter()
            .map(|c| c.iter().map(|w| w.to_string()).collect())
            .collect();
        assert_eq!(got, expect, "lexing {text:?} as {dialect:?}");
    }

    #[test]
    fn posix_words() {
        use Dialect::Posix as P;
        let cases: &[(&str, &[&[&str]])] = &[
            ("rm -rf /", &[&["rm", "-rf", "/"]]),
            ("'r''m' -rf /", &[&["rm", "-rf", "/"]]),
            (r"r\m -rf /", &[&["rm", "-rf", "/"]]),
            ("\"r\"m -rf /", &[&["rm", "-rf", "/"]]),
            ("$'\\x72\\x6d' -rf /", &[&["rm", "-rf", "/"]]),
            (
                "rm -rf ~ $HOME ${HOME} \"$HOME\"/x",
                &[&["rm", "-rf", "<H>", "<H>", "<H>", "<H>/x"]],
            ),
            ("rm -rf \"$DIR/\"", &[&["rm", "-rf", "<V>/"]]),
            (
                "a; b && c || d | e\nf",
                &[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"]],
            ),
            ("echo $(rm -rf /)", &[&["echo", "<S>"], &["rm", "-rf", "/"]]),
            ("echo `rm -rf /`", &[&["echo", "<S>"], &["rm", "-rf", "/"]]),
            ("(cd / && rm x)", &[&[], &["cd", "/"], &["rm", "x"]]),
            ("echo 'a # b' # c", &[&["echo", "a # b"]]),
            ("cat x 2>/dev/null >out", &[&["cat", "x"]]),
            (
                "echo \"$(echo \"inner\")\"",
                &[&["echo", "<S>"], &["echo", "inner"]],
            ),
            ("x=$((1+2)) y", &[&["x=<V>", "y"]]),
        ];
        for (text, expect) in cases {
            check(text, P, expect);
        }
    }

    #[test]
    fn windows_words() {
        use Dialect::Windows as W;
        let cases: &[(&str, &[&[&str]])] = &[
            (r"rd /s /q C:\", &[&["rd", "/s", "/q", r"C:\"]]),
            ("For^mat c:", &[&["Format", "c:"]]),
            (
                "Format`-Volume -DriveLetter C",
                &[&["Format-Volume", "-DriveLetter", "C"]],
            ),
            (
                "Remove-Item -Recurse $env:USERPROFILE",
                &[&["Remove-Item", "-Recurse", "$env:USERPROFILE"]],
            ),
            (
                "iex (iwr http://x)",
                &[&["iex", "<S>"], &["iwr", "http://x"]],
            ),
            (
                "del /s C:\\* & echo hi",
                &[&["del", "/s", "C:\\*"], &["echo", "hi"]],
            ),
        ];
        for (text, expect) in cases {
            check(text, W, expect);
        }
    }

    #[test]
    fn heredoc_body_is_captured_not_lexed() {
        let mut budget = Budget::new(1 << 20);
        let parsed = parse(
            "bash <<EOF\nrm -rf /\nEOF\necho done",
            Dialect::Posix,
            0,
            &mut budget,
        );
        assert_eq!(parsed.heredocs, vec!["rm -rf /\n".to_string()]);
        assert_eq!(parsed.script.pipelines.len(), 2);
        assert!(!parsed.skeleton.contains("rm -rf"));
    }

    #[test]
    fn unescape_c_decodes_hex_octal_and_named() {
        assert_eq!(unescape_c(r"\x72\x6d"), "rm");
        assert_eq!(unescape_c(r"\162\155"), "rm");
        assert_eq!(unescape_c(r"a\tb\q"), "a\tb\\q");
        assert_eq!(unescape_c("trailing\\"), "trailing\\");
    }

    #[test]
    fn budget_stops_runaway_input() {
        let mut budget = Budget::new(10);
        let _ = parse(
            "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Dialect::Posix,
            0,
            &mut budget,
        );
        assert!(budget.exhausted());
    }

    #[test]
    fn nesting_limit_exhausts_instead_of_recursing() {
        let text = "$(".repeat(NESTING_DEPTH_MAX + 5);
        let mut budget = Budget::new(1 << 20);
        let _ = parse(&text, Dialect::Posix, 0, &mut budget);
        assert!(budget.exhausted());
    }
}
