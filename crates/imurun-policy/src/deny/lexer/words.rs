//! Words: quotes, escapes, variables and substitutions, read the way each dialect reads
//! them, plus the C-style escape decoding that `$'…'`, `echo -e` and `printf` share.

use super::{Dialect, HOME, Lexer, NESTING_DEPTH_MAX, SUBSTITUTION, VARIABLE, Word};

impl Lexer<'_> {
    pub(super) fn parse_word(&mut self, close: Option<char>) -> Word {
        let mut word = Word::default();
        let mut started = false;
        // An unquoted `{` then `,`: bash's brace expansion (`{rm,-rf,/}`); an unquoted `[`
        // then `]`: a glob's bracket (`r[m]`), while `[` alone is the test command.
        let mut brace_open = false;
        let mut bracket_open = false;
        while let Some(c) = self.peek() {
            if c == '(' && self.posix() && word.text.ends_with('=') && !word.text.contains(' ') {
                // `name=(…)`: an array's values; substitutions in them run.
                self.parse_array(&mut word);
                continue;
            }
            if self.is_word_end(c, close) {
                break;
            }
            match (self.dialect, c) {
                (Dialect::Posix, '\\') => {
                    self.bump();
                    match self.peek() {
                        Some('\n') => {
                            self.bump();
                        }
                        Some(_) => {
                            self.quoted += 1;
                            if let Some(escaped) = self.bump() {
                                word.text.push(escaped);
                            }
                            self.quoted -= 1;
                        }
                        None => {}
                    }
                }
                (Dialect::Windows, '`' | '^') => {
                    self.bump();
                    if let Some(escaped) = self.bump()
                        && escaped != '\n'
                    {
                        word.text.push(escaped);
                    }
                }
                (_, '\'') => self.parse_single_quoted(&mut word),
                (_, '"') => self.parse_double_quoted(&mut word),
                (_, '$') => self.parse_dollar(&mut word, false),
                (Dialect::Posix, '`') => self.parse_backticks(&mut word),
                (_, '~') if !started => {
                    self.bump();
                    while matches!(self.peek(), Some(u) if u.is_ascii_alphanumeric() || matches!(u, '.' | '_' | '-'))
                    {
                        self.bump();
                    }
                    word.text.push(HOME);
                }
                (Dialect::Windows, '(' | '{') if self.command_word && !word.text.is_empty() => {
                    break;
                }
                (Dialect::Windows, '(' | '{') if word.text.is_empty() => {
                    // PowerShell's `(…)`, `{…}` at the start of a word hold commands.
                    self.bump();
                    let script = self.parse_nested(if c == '(' { ')' } else { '}' });
                    word.text.push(SUBSTITUTION);
                    word.substitutions.push(script);
                }
                (Dialect::Windows, '(' | '{') => self.parse_bracketed_literal(&mut word),
                _ => {
                    if self.posix() {
                        word.computed |= matches!(c, '*' | '?')
                            || (brace_open && c == ',')
                            || (bracket_open && c == ']');
                        brace_open |= c == '{';
                        bracket_open |= c == '[';
                    }
                    self.bump();
                    word.text.push(c);
                }
            }
            started = true;
        }
        word
    }

    /// Inside a word, brackets are text (cmd's `Everyone:(F)`, PowerShell's
    /// `.DownloadString('…')`): read through the matching closer so it does not end a
    /// nested script early.
    fn parse_bracketed_literal(&mut self, word: &mut Word) {
        let mut open = 0usize;
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.bump();
            word.text.push(c);
            match c {
                '(' | '{' => open += 1,
                ')' | '}' => {
                    open -= 1;
                    if open == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }

    fn parse_single_quoted(&mut self, word: &mut Word) {
        self.bump();
        self.quoted += 1;
        loop {
            match self.bump() {
                None => break,
                Some('\'') if !self.posix() && self.peek() == Some('\'') => {
                    self.bump();
                    word.text.push('\'');
                }
                Some('\'') => break,
                Some(c) => word.text.push(c),
            }
        }
        self.quoted -= 1;
    }

    fn parse_double_quoted(&mut self, word: &mut Word) {
        self.bump();
        self.quoted += 1;
        while let Some(c) = self.peek() {
            match (self.dialect, c) {
                (Dialect::Windows, '"') => {
                    self.bump();
                    if self.peek() == Some('"') {
                        self.bump();
                        word.text.push('"');
                    } else {
                        break;
                    }
                }
                (_, '"') => {
                    self.bump();
                    break;
                }
                (Dialect::Posix, '\\') => {
                    self.bump();
                    match self.peek() {
                        Some('$' | '`' | '"' | '\\') => {
                            if let Some(escaped) = self.bump() {
                                word.text.push(escaped);
                            }
                        }
                        Some('\n') => {
                            self.bump();
                        }
                        _ => word.text.push('\\'),
                    }
                }
                (Dialect::Windows, '`') => {
                    self.bump();
                    if let Some(escaped) = self.bump() {
                        word.text.push(escaped);
                    }
                }
                (_, '$') => self.parse_dollar(word, true),
                (Dialect::Posix, '`') => self.parse_backticks(word),
                _ => {
                    self.bump();
                    word.text.push(c);
                }
            }
        }
        self.quoted -= 1;
    }

    fn parse_dollar(&mut self, word: &mut Word, in_double_quotes: bool) {
        self.bump();
        let next = self.peek();
        match (self.dialect, next) {
            (Dialect::Posix, Some('\'')) if !in_double_quotes => {
                self.bump();
                self.quoted += 1;
                let mut raw = String::new();
                while let Some(c) = self.bump() {
                    match c {
                        '\'' => break,
                        '\\' => {
                            raw.push('\\');
                            if let Some(escaped) = self.bump() {
                                raw.push(escaped);
                            }
                        }
                        _ => raw.push(c),
                    }
                }
                self.quoted -= 1;
                word.text.push_str(&unescape_c(&raw));
            }
            (Dialect::Posix, Some('"')) if !in_double_quotes => self.parse_double_quoted(word),
            (Dialect::Posix, Some('(')) if self.peek_at(1) == Some('(') => {
                // Arithmetic: its value is a number nobody can predict here; substitutions
                // inside it run.
                self.bump();
                self.bump();
                let mut open = 2usize;
                let mut inner = String::new();
                while let Some(c) = self.bump() {
                    match c {
                        '(' => open += 1,
                        ')' => {
                            open -= 1;
                            if open == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    inner.push(c);
                }
                // The first of the two closing parentheses was kept; it is not arithmetic.
                if inner.ends_with(')') {
                    inner.pop();
                }
                self.substitutions_in(word, &inner);
                word.text.push(VARIABLE);
                word.computed = true;
            }
            (_, Some('(')) => {
                self.bump();
                let script = self.parse_nested(')');
                word.text.push(SUBSTITUTION);
                word.substitutions.push(script);
                word.computed = true;
            }
            (_, Some('{')) => {
                self.bump();
                let mut inner = String::new();
                let mut open = 1usize;
                // Quotes in a default value hold braces: `${X:-'}'}`.
                let mut quote: Option<char> = None;
                while let Some(c) = self.bump() {
                    match (quote, c) {
                        (Some(q), c) if c == q => quote = None,
                        (Some(_), _) => {}
                        (None, '\'' | '"') if self.posix() => quote = Some(c),
                        (None, '{') => open += 1,
                        (None, '}') => {
                            open -= 1;
                            if open == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    inner.push(c);
                }
                // `${X:-$(cmd)}`, `${X:=`cmd`}`: the substitution in the value runs.
                self.substitutions_in(word, &inner);
                self.push_variable(word, &inner, true);
            }
            (_, Some(c)) if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::new();
                while let Some(n) = self.peek() {
                    let windows_scope =
                        !self.posix() && n == ':' && name.eq_ignore_ascii_case("env");
                    if n.is_ascii_alphanumeric() || n == '_' || windows_scope {
                        self.bump();
                        name.push(n);
                    } else {
                        break;
                    }
                }
                self.push_variable(word, &name, false);
            }
            (Dialect::Posix, Some('0'..='9' | '@' | '*' | '#' | '?' | '$' | '!' | '-')) => {
                self.bump();
                word.text.push(VARIABLE);
                word.computed = true;
            }
            _ => word.text.push('$'),
        }
    }

    /// Writes a variable reference into `word`: the home marker for `HOME`, the text as
    /// written for PowerShell's `$env:NAME` (the target rules know those names), and the
    /// unknown-value marker for everything else.
    fn push_variable(&self, word: &mut Word, inner: &str, braced: bool) {
        let windows = !self.posix();
        let name: String = inner
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || (windows && *c == ':'))
            .collect();
        let is_home = match self.dialect {
            Dialect::Posix => name == "HOME",
            Dialect::Windows => name.eq_ignore_ascii_case("home"),
        };
        if is_home {
            word.text.push(HOME);
        } else if !self.posix() && name.to_ascii_lowercase().starts_with("env:") {
            word.text.push('$');
            word.text.push_str(&name);
            word.computed = true;
        } else if braced || !name.is_empty() {
            word.text.push(VARIABLE);
            word.computed = true;
        }
    }

    /// An array assignment's `(…)`, read into the word as text, quotes respected.
    fn parse_array(&mut self, word: &mut Word) {
        self.bump();
        let mut inner = String::new();
        let mut depth = 1usize;
        let mut quote: Option<char> = None;
        while let Some(c) = self.bump() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            inner.push(c);
        }
        self.substitutions_in(word, &inner);
        word.text.push('(');
        word.text.push_str(&inner);
        word.text.push(')');
    }

    /// Lexes a text found inside a `${…}` or `$((…))` for the commands its substitutions run,
    /// and adds them to `word`.
    fn substitutions_in(&mut self, word: &mut Word, inner: &str) {
        if !(inner.contains("$(") || inner.contains('`')) || !self.posix() {
            return;
        }
        if self.depth >= NESTING_DEPTH_MAX {
            self.budget.exhaust();
            return;
        }
        let heredocs = std::mem::take(&mut self.heredocs);
        let mut inner_lexer = Lexer::new(
            inner,
            self.dialect,
            self.depth + 1,
            &mut *self.budget,
            heredocs,
        );
        let script = inner_lexer.parse_script(None);
        self.heredocs = std::mem::take(&mut inner_lexer.heredocs);
        word.substitutions.push(script);
        word.computed = true;
    }

    fn parse_backticks(&mut self, word: &mut Word) {
        self.bump();
        self.quoted += 1;
        let mut inner = String::new();
        while let Some(c) = self.bump() {
            match c {
                '`' => break,
                '\\' => match self.bump() {
                    Some(e @ ('`' | '\\' | '$')) => inner.push(e),
                    Some(e) => {
                        inner.push('\\');
                        inner.push(e);
                    }
                    None => {}
                },
                _ => inner.push(c),
            }
        }
        self.quoted -= 1;
        if self.depth >= NESTING_DEPTH_MAX {
            self.budget.exhaust();
            return;
        }
        let heredocs = std::mem::take(&mut self.heredocs);
        let mut inner_lexer = Lexer::new(
            &inner,
            self.dialect,
            self.depth + 1,
            &mut *self.budget,
            heredocs,
        );
        let script = inner_lexer.parse_script(None);
        let inner_skeleton = std::mem::take(&mut inner_lexer.skeleton);
        self.heredocs = std::mem::take(&mut inner_lexer.heredocs);
        if self.quoted == 0 {
            self.skeleton.push_str(&inner_skeleton);
        }
        word.text.push(SUBSTITUTION);
        word.substitutions.push(script);
        word.computed = true;
    }
}

/// Decodes C-style backslash escapes as bash's `$'…'`, `echo -e` and `printf` do, so that
/// `$'\x72\x6d'` reads as `rm`. Unknown escapes keep their backslash.
pub(crate) fn unescape_c(raw: &str) -> String {
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' | 'u' | 'U' => {
                let digits_max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let (value, used) = read_digits(&chars[i..], 16, digits_max);
                if used == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    i += used;
                    out.extend(char::from_u32(value));
                }
            }
            '0'..='7' => {
                let (value, used) = read_digits(&chars[i - 1..], 8, 3);
                i += used - 1;
                out.extend(char::from_u32(value));
            }
            _ => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

fn read_digits(chars: &[char], radix: u32, digits_max: usize) -> (u32, usize) {
    let mut value = 0u32;
    let mut used = 0;
    for c in chars.iter().take(digits_max) {
        let Some(digit) = c.to_digit(radix) else {
            break;
        };
        value = value.saturating_mul(radix).saturating_add(digit);
        used += 1;
    }
    (value, used)
}
