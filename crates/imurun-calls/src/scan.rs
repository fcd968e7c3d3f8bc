//! Finding calls in visible text: one left-to-right pass that knows markdown code (inline
//! spans and fenced blocks, where a marker is only an example) and every call dialect.
//!
//! Strong markers (a ```` ```tool ```` fence, `<tool_call>`, `<|python_tag|>`, `<function=`,
//! `[TOOL_CALLS]`) are calls whatever follows: what cannot be read becomes a problem for the
//! retry message. Weak candidates (a bare `{...}` or `[{...}]`, a ```` ```json ```` block)
//! are calls only when they name a runnable tool; otherwise they are ordinary answer text.
//!
//! Every candidate is read once and the scan resumes after what it read, so the pass is
//! linear in the text; see `Scanner::limited` for the one case that needs care.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::json::Json;
use imurun_core::{ToolCall, ToolIndex};
use memchr::{memchr, memchr3, memmem};

use crate::json::{Dialect, Read, owned_entries, read_value, skip_space};
use crate::pythonic::{read_python_call, read_python_list};
use crate::shape::{Args, Found, Verdict, found_in_object, judge, names_runnable};
use crate::work::Work;

/// More calls than this in one output are not read: the loop runs at most 3 per step, and
/// the bound keeps a runaway generation from allocating without end.
pub const CALLS_MAX: usize = 64;

/// Fence info strings that mark a call.
const TOOL_FENCES: &[&str] = &["tool", "tool_call", "tool_calls", "tool_code", "tools"];

/// Fence info strings whose block is a call when it names a runnable tool with arguments.
const JSON_FENCES: &[&str] = &["json", "json5", "jsonc"];

/// Why a marker produced no call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A marker with nothing usable after it.
    Unusable(String),
    /// A call to a name no runnable tool has.
    UnknownTool(String),
}

/// What the scan found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The offset of the first marker that produced a call or a problem.
    pub(crate) first_marker: Option<usize>,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) problem: Option<Problem>,
}

/// How a candidate was introduced, which decides what an unreadable one means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    /// A call marker: anything unreadable or unknown is a problem.
    Strong,
    /// A ```` ```json ```` block: a call only with a runnable name and an argument key.
    JsonFence,
    /// Bare JSON in prose: a call only with a runnable name.
    Bare,
}

pub(crate) fn scan(text: &str, index: &ToolIndex, work: &mut Work) -> Scan {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        index,
        work,
        found: Scan::default(),
        limited: false,
        backticks: None,
        mistral: Next::new("[TOOL_CALLS]"),
        closers: Vec::new(),
    };
    scanner.run();
    scanner.found
}

struct Scanner<'t, 'i, 'w> {
    text: &'t str,
    bytes: &'t [u8],
    index: &'i ToolIndex,
    work: &'w mut Work,
    found: Scan,
    /// Set once a string ran to the end of the text inside a marker whose closing tag exists.
    /// From then on every marker is read only up to its own closing tag, so the text is
    /// never re-read from many markers to its end (which would be quadratic). Before that,
    /// a closing tag inside an argument string is just text.
    limited: bool,
    /// Runs of backticks, built on first need.
    backticks: Option<Backticks>,
    mistral: Next,
    /// Closing tags looked up so far (at most three kinds).
    closers: Vec<Next>,
}

impl<'t> Scanner<'t, '_, '_> {
    fn done(&self) -> bool {
        self.found.problem.is_some() || self.found.calls.len() >= CALLS_MAX
    }

    fn run(&mut self) {
        let mut pos = 0;
        // Llama 3.2 answers with a list of calls and nothing else.
        let start = skip_space(self.text, 0, self.work);
        if self.bytes.get(start) == Some(&b'[')
            && let Some(end) = self.bare_list(start)
        {
            pos = end;
        }
        while pos < self.bytes.len() && !self.done() {
            let rest = &self.bytes[pos..];
            let special = memchr3(b'`', b'<', b'{', rest).map(|offset| pos + offset);
            let mistral = self.mistral.find(self.text, pos, self.work);
            let at = match (special, mistral) {
                (_, Some(tag)) if special.is_none_or(|special| tag < special) => {
                    self.work.add(tag - pos);
                    pos = self.mistral_tag(tag);
                    continue;
                }
                (Some(at), _) => at,
                (None, _) => {
                    self.work.add(rest.len());
                    break;
                }
            };
            self.work.add(at - pos + 1);
            pos = match self.bytes[at] {
                b'`' => self.backtick(at),
                b'<' => self.angle(at),
                _ => self.brace(at),
            };
        }
    }

    // ---- recording -------------------------------------------------------------------

    fn mark(&mut self, at: usize) {
        if self.found.first_marker.is_none_or(|first| at < first) {
            self.found.first_marker = Some(at);
        }
    }

    fn problem(&mut self, at: usize, problem: Problem) {
        if self.found.problem.is_none() {
            self.mark(at);
            self.found.problem = Some(problem);
        }
    }

    /// Records one found call; returns whether it counted as a call (or a problem).
    fn record(&mut self, at: usize, found: Found, strength: Strength) -> bool {
        let qualifies = match strength {
            Strength::Strong => true,
            Strength::JsonFence => found.has_argument_key && names_runnable(&found, self.index),
            Strength::Bare => names_runnable(&found, self.index),
        };
        if !qualifies {
            return false;
        }
        match judge(found, self.index) {
            Verdict::Call(call) => {
                self.mark(at);
                if self.found.calls.len() < CALLS_MAX {
                    self.found.calls.push(call);
                }
            }
            Verdict::Unknown(name) => self.problem(at, Problem::UnknownTool(name)),
            Verdict::Unusable(detail) => self.problem(at, Problem::Unusable(detail)),
        }
        true
    }

    /// Records every call a read value holds: one call object or an array of them. For a
    /// weak candidate either all of them qualify or none is recorded.
    fn record_value(
        &mut self,
        at: usize,
        value: Json<'t>,
        strength: Strength,
    ) -> Result<(), String> {
        let items: Vec<Json> = match value {
            Json::Array(items) if !items.is_empty() => items,
            Json::Array(_) => return Err("an empty list where calls were expected".into()),
            other => vec![other],
        };
        let mut found = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Json::Object(object) => match found_in_object(object) {
                    Some(call) => found.push(call),
                    None => return Err("a JSON object without a tool name".into()),
                },
                other => {
                    let kind = kind_of(&other);
                    return Err(format!("{kind} where a JSON object was expected"));
                }
            }
        }
        if strength != Strength::Strong {
            let all_qualify = found.iter().all(|call| {
                names_runnable(call, self.index)
                    && (strength != Strength::JsonFence || call.has_argument_key)
            });
            if !all_qualify {
                return Err("not a call".into());
            }
        }
        for call in found {
            self.record(at, call, strength);
        }
        Ok(())
    }

    // ---- markers ---------------------------------------------------------------------

    fn angle(&mut self, at: usize) -> usize {
        let rest = &self.text[at..];
        if rest.starts_with("<tool_call>") {
            return self.marker_body(at, at + "<tool_call>".len(), Some("</tool_call>"));
        }
        if rest.starts_with("<|python_tag|>") {
            let end = self.marker_body(at, at + "<|python_tag|>".len(), None);
            return self.skip_literal(end, &["<|eom_id|>", "<|eot_id|>"]);
        }
        if rest.starts_with("<function=") {
            return self.function_tag(at);
        }
        at + 1
    }

    /// Reads the calls after a strong marker: JSON objects or arrays, or Python-style
    /// calls, separated by white space, commas or semicolons; then the closing tag.
    fn marker_body(&mut self, at: usize, body: usize, closer: Option<&'static str>) -> usize {
        let mut limit = self.limit_for(body, closer);
        let mut cursor = body;
        let mut read_any = false;
        loop {
            cursor = skip_space(&self.text[..limit], cursor, self.work);
            if cursor >= limit || closer.is_some_and(|tag| self.text[cursor..].starts_with(tag)) {
                break;
            }
            let byte = self.bytes[cursor];
            if read_any && !matches!(byte, b'{' | b'[') && !byte.is_ascii_alphabetic() {
                break;
            }
            if byte.is_ascii_alphabetic() {
                if let Some((found, end)) = read_python_call(self.text, cursor, limit, self.work) {
                    self.record(at, found, Strength::Strong);
                    read_any = true;
                    cursor = self.skip_separators(end, limit);
                    continue;
                }
                if read_any {
                    break;
                }
            }
            let read = match read_value(self.text, cursor, limit, Dialect::Json, self.work) {
                Ok(read) => read,
                Err(error) => {
                    if !read_any {
                        self.problem(at, Problem::Unusable(error.kind.describe().into()));
                    }
                    return error.at.max(char_after(self.text, cursor));
                }
            };
            let (read, new_limit) = self.reread_if_runaway(read, cursor, body, closer);
            limit = new_limit;
            if let Err(detail) = self.record_value(at, read.value, Strength::Strong) {
                self.problem(at, Problem::Unusable(detail));
                return read.end;
            }
            read_any = true;
            cursor = self.skip_separators(read.end, limit);
        }
        if !read_any {
            self.problem(
                at,
                Problem::Unusable("nothing after the call marker".into()),
            );
        }
        match closer {
            Some(tag) => self.skip_literal(cursor, &[tag]),
            None => cursor,
        }
    }

    /// When a string ran to the end of the text but the marker's closing tag exists, the
    /// string was really cut short: read again up to the tag, and from now on read every
    /// marker up to its tag (see `limited`). Returns the read and the limit it used.
    fn reread_if_runaway(
        &mut self,
        read: Read<'t>,
        cursor: usize,
        body: usize,
        closer: Option<&'static str>,
    ) -> (Read<'t>, usize) {
        let full = self.bytes.len();
        if !read.repairs.string_closed_at_end || self.limited {
            return (read, full.min(self.limit_for(body, closer)));
        }
        let Some(tag) = closer else {
            return (read, full);
        };
        let Some(tag_at) = self.closer_after(tag, cursor) else {
            return (read, full);
        };
        self.limited = true;
        match read_value(self.text, cursor, tag_at, Dialect::Json, self.work) {
            Ok(reread) => (reread, tag_at),
            Err(_) => (read, full),
        }
    }

    fn limit_for(&mut self, body: usize, closer: Option<&'static str>) -> usize {
        match closer {
            Some(tag) if self.limited => self.closer_after(tag, body).unwrap_or(self.bytes.len()),
            _ => self.bytes.len(),
        }
    }

    fn closer_after(&mut self, tag: &'static str, from: usize) -> Option<usize> {
        let slot = match self.closers.iter().position(|next| next.tag == tag) {
            Some(slot) => slot,
            None => {
                self.closers.push(Next::new(tag));
                self.closers.len() - 1
            }
        };
        self.closers[slot].find(self.text, from, self.work)
    }

    fn skip_separators(&mut self, mut cursor: usize, limit: usize) -> usize {
        loop {
            cursor = skip_space(&self.text[..limit], cursor, self.work);
            match self.bytes.get(cursor) {
                Some(b',' | b';') if cursor < limit => cursor += 1,
                _ => return cursor,
            }
        }
    }

    /// Skips white space and then one of `tags`, if one is there.
    fn skip_literal(&mut self, cursor: usize, tags: &[&str]) -> usize {
        let after_space = skip_space(self.text, cursor, self.work);
        match tags
            .iter()
            .find(|tag| self.text[after_space..].starts_with(**tag))
        {
            Some(tag) => after_space + tag.len(),
            None => cursor,
        }
    }

    /// `<function=NAME>{json}</function>` or `<function=NAME><parameter=KEY>value</parameter>…`.
    fn function_tag(&mut self, at: usize) -> usize {
        let name_start = at + "<function=".len();
        let name_len = self.bytes[name_start..]
            .iter()
            .take(128)
            .take_while(|&&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
            .count();
        let name_end = name_start + name_len;
        self.work.add(name_len);
        if name_len == 0 || self.bytes.get(name_end) != Some(&b'>') {
            self.problem(
                at,
                Problem::Unusable("a `<function=` tag without a name".into()),
            );
            return name_end.max(at + 1);
        }
        let name = self.text[name_start..name_end].to_owned();
        let body = skip_space(self.text, name_end + 1, self.work);
        let (args, end): (Json, usize) = if self.bytes.get(body) == Some(&b'{') {
            match read_value(self.text, body, self.bytes.len(), Dialect::Json, self.work) {
                Ok(read) => (read.value, read.end),
                Err(error) => {
                    self.problem(at, Problem::Unusable(error.kind.describe().into()));
                    return error.at.max(char_after(self.text, body));
                }
            }
        } else if self.text[body..].starts_with("<parameter=") {
            self.parameter_tags(body)
        } else {
            (Json::Object(Vec::new()), body)
        };
        let found = match args {
            Json::Object(entries) => Found {
                written_name: name,
                args: Args::Object(owned_entries(entries)),
                has_argument_key: true,
            },
            other => Found {
                written_name: name,
                args: Args::Other(other.into_value()),
                has_argument_key: true,
            },
        };
        self.record(at, found, Strength::Strong);
        self.skip_literal(end, &["</function>"])
    }

    /// Qwen's `<parameter=KEY>value</parameter>` list; values are text, typed by coercion.
    fn parameter_tags(&mut self, mut cursor: usize) -> (Json<'t>, usize) {
        let mut entries = Vec::new();
        let close = memmem::Finder::new("</parameter>");
        while self.text[cursor..].starts_with("<parameter=") {
            let key_start = cursor + "<parameter=".len();
            let Some(key_len) = memchr(b'>', &self.bytes[key_start..]) else {
                break;
            };
            let value_start = key_start + key_len + 1;
            let value_len = close
                .find(&self.bytes[value_start..])
                .unwrap_or(self.bytes.len() - value_start);
            self.work.add(key_len + value_len);
            let key = self.text[key_start..key_start + key_len].trim().to_owned();
            let value = self.text[value_start..value_start + value_len]
                .trim()
                .to_owned();
            entries.push((key.into(), Json::String(value.into())));
            cursor = (value_start + value_len + "</parameter>".len()).min(self.bytes.len());
            cursor = skip_space(self.text, cursor, self.work);
        }
        (Json::Object(entries), cursor)
    }

    /// Mistral: `[TOOL_CALLS] [{"name", "arguments"}]` or `[TOOL_CALLS]name[ARGS]{...}`.
    fn mistral_tag(&mut self, at: usize) -> usize {
        let body = at + "[TOOL_CALLS]".len();
        let cursor = skip_space(self.text, body, self.work);
        let name_len = self.bytes[cursor..]
            .iter()
            .take(128)
            .take_while(|&&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
            .count();
        let args_at = cursor + name_len;
        if name_len > 0 && self.text[args_at..].starts_with("[ARGS]") {
            let name = self.text[cursor..args_at].to_owned();
            let args_start = args_at + "[ARGS]".len();
            return match read_value(
                self.text,
                args_start,
                self.bytes.len(),
                Dialect::Json,
                self.work,
            ) {
                Ok(read) => {
                    let args = match read.value {
                        Json::Object(entries) => Args::Object(owned_entries(entries)),
                        other => Args::Other(other.into_value()),
                    };
                    let found = Found {
                        written_name: name,
                        args,
                        has_argument_key: true,
                    };
                    self.record(at, found, Strength::Strong);
                    read.end
                }
                Err(error) => {
                    self.problem(at, Problem::Unusable(error.kind.describe().into()));
                    error.at.max(args_start)
                }
            };
        }
        self.marker_body(at, body, None)
    }

    // ---- code --------------------------------------------------------------------------

    fn backtick(&mut self, at: usize) -> usize {
        let run = self.bytes[at..]
            .iter()
            .take_while(|&&byte| byte == b'`')
            .count();
        self.work.add(run);
        let after_run = at + run;
        if run < 3 {
            return self.inline_span(at, run);
        }
        let info_len = self.bytes[after_run..]
            .iter()
            .take(32)
            // ASCII only, so the slice below always ends on a character boundary.
            .take_while(|&&byte| byte.is_ascii_graphic() && byte != b'{' && byte != b'`')
            .count();
        let info = self.text[after_run..after_run + info_len].to_ascii_lowercase();
        if TOOL_FENCES.contains(&info.as_str()) {
            let end = self.marker_body(at, after_run + info_len, Some("```"));
            // A closing fence longer than three backticks.
            return end
                + self.bytes[end..]
                    .iter()
                    .take_while(|&&byte| byte == b'`')
                    .count();
        }
        if !self.at_line_start(at) {
            return self.inline_span(at, run);
        }
        // A fenced block: markers inside are examples, never calls. A `json` block is a
        // call only when it names a runnable tool and carries an argument key.
        let content = memchr(b'\n', &self.bytes[after_run..])
            .map_or(self.bytes.len(), |nl| after_run + nl + 1);
        self.work.add(content - after_run);
        let (close_at, close_end) = self.closing_fence(content, run);
        if JSON_FENCES.contains(&info.as_str()) {
            let start = skip_space(&self.text[..close_at], content, self.work);
            if matches!(self.bytes.get(start), Some(b'{' | b'['))
                && let Ok(read) = read_value(self.text, start, close_at, Dialect::Json, self.work)
            {
                // Not a call: then it is ordinary JSON in the answer, which is fine.
                let _not_a_call = self.record_value(at, read.value, Strength::JsonFence);
            }
        }
        close_end
    }

    fn at_line_start(&mut self, at: usize) -> bool {
        at_line_start(self.bytes, at, self.work)
    }

    /// An inline code span opened by `run` backticks at `at`: it ends at the next run of
    /// exactly that many backticks; with none, the backticks are literal text.
    fn inline_span(&mut self, at: usize, run: usize) -> usize {
        let from = at + run;
        match self.backticks().next_of_length(from, run) {
            Some(close) => close + run,
            None => from,
        }
    }

    /// The closing fence of a block opened with `run` backticks: a line holding at least
    /// that many. Returns where it starts and where the scan resumes; the end of the text
    /// when the block is never closed.
    fn closing_fence(&mut self, from: usize, run: usize) -> (usize, usize) {
        let len = self.bytes.len();
        self.backticks();
        let Some(backticks) = &self.backticks else {
            return (len, len);
        };
        for (start, length) in backticks.runs_from(from) {
            self.work.add(1);
            // A closing fence is a line of backticks alone: "```tool" inside a block is
            // an example of the format, not the end of the block.
            if length >= run
                && at_line_start(self.bytes, start, self.work)
                && line_is_blank_after(self.bytes, start + length)
            {
                return (start, start + length);
            }
        }
        (len, len)
    }

    fn backticks(&mut self) -> &Backticks {
        if self.backticks.is_none() {
            self.work.add(self.bytes.len());
        }
        self.backticks
            .get_or_insert_with(|| Backticks::new(self.bytes))
    }

    // ---- bare JSON ---------------------------------------------------------------------

    fn brace(&mut self, at: usize) -> usize {
        // Only an object that opens with a key can name a tool; `{{`, `{}` and `{ x + 1 }`
        // are skipped without reading.
        let key_at = at
            + 1
            + self.bytes[at + 1..]
                .iter()
                .take(16)
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        let starts_key = match self.bytes.get(key_at) {
            Some(&byte) => {
                byte.is_ascii_alphabetic() || byte == b'"' || byte == b'\'' || byte == 0xE2
            }
            None => false,
        };
        self.work.add(key_at - at);
        if !starts_key {
            return at + 1;
        }
        if let Some(open) = self.list_opening_before(at)
            && let Some(end) = self.bare_list(open)
        {
            return end;
        }
        match read_value(self.text, at, self.bytes.len(), Dialect::Json, self.work) {
            Ok(read) => {
                if let Json::Object(object) = read.value
                    && let Some(found) = found_in_object(object)
                {
                    self.record(at, found, Strength::Bare);
                }
                read.end
            }
            Err(error) => error.at.max(at + 1),
        }
    }

    /// The `[` just before `at` (only white space between), if any.
    fn list_opening_before(&mut self, at: usize) -> Option<usize> {
        let before = &self.bytes[..at];
        let space = before
            .iter()
            .rev()
            .take(16)
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        self.work.add(space);
        let open = at.checked_sub(space + 1)?;
        (before[open] == b'[').then_some(open)
    }

    /// A bare list of calls at `open`: JSON call objects or Python-style calls, all naming
    /// runnable tools. Returns where it ends when it was one.
    fn bare_list(&mut self, open: usize) -> Option<usize> {
        let len = self.bytes.len();
        if let Some((calls, end)) = read_python_list(self.text, open, len, self.work)
            && calls.iter().all(|call| names_runnable(call, self.index))
        {
            for call in calls {
                self.record(open, call, Strength::Bare);
            }
            return Some(end);
        }
        let read = read_value(self.text, open, len, Dialect::Json, self.work).ok()?;
        self.record_value(open, read.value, Strength::Bare)
            .ok()
            .map(|()| read.end)
    }
}

/// The offset just past the character at `at`: where a scan resumes after refusing it.
fn char_after(text: &str, at: usize) -> usize {
    text[at..]
        .chars()
        .next()
        .map_or(text.len(), |ch| at + ch.len_utf8())
}

/// Whether only spaces or tabs stand between the previous newline and `at`.
fn at_line_start(bytes: &[u8], at: usize, work: &mut Work) -> bool {
    let before = &bytes[..at];
    let indent = before
        .iter()
        .rev()
        .take_while(|&&byte| byte == b' ' || byte == b'\t')
        .count();
    work.add(indent);
    let line_start = at - indent;
    line_start == 0 || before[line_start - 1] == b'\n'
}

/// Whether only spaces or tabs follow `at` up to the end of its line.
fn line_is_blank_after(bytes: &[u8], at: usize) -> bool {
    bytes[at..]
        .iter()
        .take_while(|&&byte| byte != b'\n')
        .all(|&byte| byte == b' ' || byte == b'\t' || byte == b'\r')
}

fn kind_of(value: &Json) -> &'static str {
    match value {
        Json::String(_) => "text",
        Json::Number(_) => "a number",
        Json::Bool(_) => "a boolean",
        Json::Null => "null",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// The next occurrence of a fixed tag at or after a position, remembered so that repeated
/// look-ups from increasing positions cost one pass over the text in all.
#[derive(Debug)]
struct Next {
    tag: &'static str,
    finder: &'static memmem::Finder<'static>,
    /// The last answer and the position it was looked up from.
    cached: Option<(usize, Option<usize>)>,
}

impl Next {
    fn new(tag: &'static str) -> Self {
        Self {
            tag,
            finder: finder_for(tag),
            cached: None,
        }
    }

    fn find(&mut self, text: &str, from: usize, work: &mut Work) -> Option<usize> {
        if let Some((searched_from, answer)) = self.cached
            && from >= searched_from
        {
            match answer {
                None => return None,
                Some(at) if at >= from => return Some(at),
                Some(_) => {}
            }
        }
        let answer = self
            .finder
            .find(&text.as_bytes()[from..])
            .map(|offset| from + offset);
        work.add(answer.map_or(text.len() - from, |at| at - from));
        self.cached = Some((from, answer));
        answer
    }
}

// Built once: a finder's set-up costs more than searching a short answer.
static MISTRAL: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new("[TOOL_CALLS]"));
static TOOL_CALL_END: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new("</tool_call>"));
static FENCE: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new("```"));

fn finder_for(tag: &'static str) -> &'static memmem::Finder<'static> {
    match tag {
        "[TOOL_CALLS]" => &MISTRAL,
        "</tool_call>" => &TOOL_CALL_END,
        "```" => &FENCE,
        // Only the tags above are ever looked up; the fence finder is a safe default.
        _ => &FENCE,
    }
}

/// Every run of backticks in the text, by position and by length, so that matching code
/// spans costs a binary search instead of a scan to the end for every unmatched opener.
#[derive(Debug)]
struct Backticks {
    runs: Vec<(usize, usize)>,
    by_length: HashMap<usize, Vec<usize>>,
}

impl Backticks {
    fn new(bytes: &[u8]) -> Self {
        let mut runs = Vec::new();
        let mut by_length: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut pos = 0;
        while let Some(offset) = memchr(b'`', &bytes[pos..]) {
            let start = pos + offset;
            let length = bytes[start..]
                .iter()
                .take_while(|&&byte| byte == b'`')
                .count();
            runs.push((start, length));
            by_length.entry(length).or_default().push(start);
            pos = start + length;
        }
        Self { runs, by_length }
    }

    fn next_of_length(&self, from: usize, length: usize) -> Option<usize> {
        let starts = self.by_length.get(&length)?;
        let slot = starts.partition_point(|&start| start < from);
        starts.get(slot).copied()
    }

    fn runs_from(&self, from: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let slot = self.runs.partition_point(|&(start, _)| start < from);
        self.runs[slot..].iter().copied()
    }
}
