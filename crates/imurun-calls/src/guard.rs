//! `StreamGuard`: passes streamed answer tokens through, but holds everything back from the
//! moment a call marker appears, so call JSON never flashes in the answer, and from a copied
//! or invented tool-result header (`[tool result: name]`) on, which is never released: the
//! loop checks such an answer and publishes what holds.
//!
//! A token boundary can fall anywhere, including inside a marker (```` ``` ```` + `to` +
//! `ol`), so the guard keeps back any tail that could still grow into a marker and decides
//! when the next token arrives. Thoughts pass through (the page splits them off), and a
//! marker inside an open thought does not hold the stream, since calls there never run.

use memchr::memmem;

use crate::parse::{ParseKind, Parsed};

/// The most white space a bare-object marker may have between `{` and its first key.
const MARKER_SPACE_MAX: usize = 8;

/// The longest Python-style function name the guard waits for at the start of an answer.
const PYTHON_NAME_MAX: usize = 64;

/// Literal markers: the text, what it means, and whether case matters.
const LITERALS: &[(&str, Hit, bool)] = &[
    ("<think>", Hit::ThinkOpen, true),
    ("</think>", Hit::ThinkClose, true),
    ("<tool_call>", Hit::Call, true),
    ("<|python_tag|>", Hit::Call, true),
    ("<function=", Hit::Call, true),
    ("[TOOL_CALLS]", Hit::Call, true),
    ("```tool", Hit::Call, false),
    ("```json", Hit::Call, false),
    (RESULT_MARKER, Hit::Result, false),
];

/// The header of a tool result as the loop writes it; in a model's answer it is a copied or
/// an invented result, and the stream stops there for good.
pub const RESULT_MARKER: &str = "[tool result:";

/// The call markers the guard holds at, for documentation and tests: the literal ones,
/// plus `{` followed by a quoted `name` key, `[` followed by such an object, and (at the
/// start of an answer) `[` followed by a Python-style call.
pub const CALL_MARKERS: &[&str] = &[
    "<tool_call>",
    "<|python_tag|>",
    "<function=",
    "[TOOL_CALLS]",
    "```tool",
    "```json",
    "{\"name\"",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hit {
    Call,
    Result,
    ThinkOpen,
    ThinkClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// No marker starts here.
    No,
    /// A marker may start here; more text is needed to tell.
    Maybe,
    /// This marker starts here and is this many bytes long.
    Yes(Hit, usize),
}

/// Holds back streamed text from the first call marker on. Feed tokens with `push`, which
/// returns what may be shown now; at the end, `finish` releases held text that turned out
/// not to be a call.
#[derive(Debug, Default)]
pub struct StreamGuard {
    /// Received and not yet released: a tail that may grow into a marker, or, while
    /// holding, everything from the marker on.
    pending: String,
    /// Bytes released so far.
    released: usize,
    holding: bool,
    in_thought: bool,
    seen_think_open: bool,
    /// Nothing but white space is visible yet (since the start or the end of a thought):
    /// where Llama's list of Python-style calls may begin.
    at_answer_start: bool,
    /// While holding: where the search for an orphan `</think>` resumes.
    hold_searched: usize,
    /// A tool-result header appeared: nothing from it on is released, even by `finish`.
    result_seen: bool,
}

impl StreamGuard {
    pub fn new() -> Self {
        Self {
            at_answer_start: true,
            ..Self::default()
        }
    }

    /// Whether the guard is holding text back because a call marker appeared.
    pub fn is_holding(&self) -> bool {
        self.holding
    }

    /// Feeds one token; returns the text that may be shown now (often all of it).
    pub fn push(&mut self, token: &str) -> String {
        self.pending.push_str(token);
        let mut out = String::new();
        self.advance(&mut out);
        self.released += out.len();
        out
    }

    /// Whether a tool-result header appeared in the answer: the rest of it was withheld.
    pub fn saw_result_header(&self) -> bool {
        self.result_seen
    }

    /// Ends the stream. `parsed` is the parse of the whole output: for an answer every
    /// held byte is released; for calls or a retry, only the text before the first marker.
    /// Nothing from a tool-result header on is ever released.
    pub fn finish(mut self, parsed: &Parsed) -> String {
        let rest = std::mem::take(&mut self.pending);
        if self.result_seen {
            return String::new();
        }
        match (parsed.kind, parsed.marker_offset) {
            (ParseKind::Answer, _) | (_, None) => rest,
            (_, Some(marker)) => {
                let keep = marker.saturating_sub(self.released);
                rest.get(..keep).unwrap_or(&rest).to_owned()
            }
        }
    }

    fn advance(&mut self, out: &mut String) {
        loop {
            if self.holding {
                if self.in_thought || self.seen_think_open || !self.release_orphan_thought(out) {
                    return;
                }
                continue;
            }
            if !self.scan(out) {
                return;
            }
        }
    }

    /// While holding: an orphan `</think>` (the template opened the thought) means the
    /// held marker was inside a thought after all. Releases through the tag if so.
    fn release_orphan_thought(&mut self, out: &mut String) -> bool {
        let from = self.hold_searched;
        let Some(offset) = memmem::find(&self.pending.as_bytes()[from..], b"</think>") else {
            self.hold_searched = self.pending.len().saturating_sub("</think>".len() - 1);
            return false;
        };
        let end = from + offset + "</think>".len();
        out.push_str(&self.pending[..end]);
        self.pending.drain(..end);
        self.holding = false;
        self.result_seen = false;
        self.at_answer_start = true;
        true
    }

    /// Scans `pending` outside a hold. Releases what cannot start a marker; returns true
    /// when a hold began (so the caller checks the held text), false when it needs more.
    fn scan(&mut self, out: &mut String) -> bool {
        let bytes = self.pending.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let byte = bytes[at];
            if !matches!(byte, b'`' | b'<' | b'{' | b'[') {
                if !self.in_thought && !byte.is_ascii_whitespace() {
                    self.at_answer_start = false;
                }
                at += 1;
                continue;
            }
            match probe(
                &self.pending[at..],
                self.at_answer_start && !self.in_thought,
            ) {
                Probe::No => {
                    if !self.in_thought {
                        self.at_answer_start = false;
                    }
                    at += 1;
                }
                Probe::Maybe => {
                    out.push_str(&self.pending[..at]);
                    self.pending.drain(..at);
                    return false;
                }
                Probe::Yes(Hit::ThinkOpen, len) => {
                    self.in_thought = true;
                    self.seen_think_open = true;
                    at += len;
                }
                Probe::Yes(Hit::ThinkClose, len) => {
                    self.in_thought = false;
                    self.at_answer_start = true;
                    at += len;
                }
                Probe::Yes(Hit::Call | Hit::Result, len) if self.in_thought => at += len,
                Probe::Yes(Hit::Result, _) => {
                    out.push_str(&self.pending[..at]);
                    self.pending.drain(..at);
                    self.holding = true;
                    self.result_seen = true;
                    self.hold_searched = 0;
                    return true;
                }
                Probe::Yes(Hit::Call, _) => {
                    out.push_str(&self.pending[..at]);
                    self.pending.drain(..at);
                    self.holding = true;
                    self.hold_searched = 0;
                    return true;
                }
            }
        }
        out.push_str(&self.pending);
        self.pending.clear();
        false
    }
}

/// Whether a marker starts at the beginning of `text`.
fn probe(text: &str, at_answer_start: bool) -> Probe {
    let mut maybe = false;
    for &(marker, hit, case_sensitive) in LITERALS {
        match literal(text, marker, case_sensitive) {
            Probe::Yes(_, len) => return Probe::Yes(hit, len),
            Probe::Maybe => maybe = true,
            Probe::No => {}
        }
    }
    let bytes = text.as_bytes();
    let pattern = match bytes.first() {
        Some(b'{') => bare_object(bytes),
        Some(b'[') => {
            let object = after_space(bytes, 1).map_or(Probe::Maybe, |at| match bytes[at] {
                b'{' => match bare_object(&bytes[at..]) {
                    Probe::Yes(_, len) => Probe::Yes(Hit::Call, at + len),
                    other => other,
                },
                _ => Probe::No,
            });
            match (object, at_answer_start) {
                (Probe::No, true) => python_list(bytes),
                (found, _) => found,
            }
        }
        _ => Probe::No,
    };
    match pattern {
        Probe::No if maybe => Probe::Maybe,
        other => other,
    }
}

fn literal(text: &str, marker: &str, case_sensitive: bool) -> Probe {
    let len = text.len().min(marker.len());
    let (head, want) = (&text.as_bytes()[..len], &marker.as_bytes()[..len]);
    let same = if case_sensitive {
        head == want
    } else {
        head.eq_ignore_ascii_case(want)
    };
    match (same, len == marker.len()) {
        (false, _) => Probe::No,
        (true, true) => Probe::Yes(Hit::Call, marker.len()),
        (true, false) => Probe::Maybe,
    }
}

/// `{` + up to `MARKER_SPACE_MAX` white space + a quote + `name`.
fn bare_object(bytes: &[u8]) -> Probe {
    let Some(quote_at) = after_space(bytes, 1) else {
        return Probe::Maybe;
    };
    if quote_at > 1 + MARKER_SPACE_MAX {
        return Probe::No;
    }
    let quote_len = match &bytes[quote_at..] {
        [b'"' | b'\'', ..] => 1,
        [0xE2, 0x80, 0x9C | 0x98, ..] => 3,
        [0xE2] | [0xE2, 0x80] => return Probe::Maybe,
        _ => return Probe::No,
    };
    let key_at = quote_at + quote_len;
    let have = &bytes[key_at.min(bytes.len())..];
    let len = have.len().min(4);
    if have[..len] != b"name"[..len] {
        Probe::No
    } else if len < 4 {
        Probe::Maybe
    } else {
        Probe::Yes(Hit::Call, key_at + 4)
    }
}

/// `[` + white space + a function name + `(`, as Llama 3.2 opens an answer.
fn python_list(bytes: &[u8]) -> Probe {
    let Some(name_at) = after_space(bytes, 1) else {
        return Probe::Maybe;
    };
    if !(bytes[name_at].is_ascii_alphabetic() || bytes[name_at] == b'_') {
        return Probe::No;
    }
    for (offset, &byte) in bytes[name_at..].iter().enumerate() {
        if offset > PYTHON_NAME_MAX {
            return Probe::No;
        }
        match byte {
            b'(' => return Probe::Yes(Hit::Call, name_at + offset + 1),
            byte if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.') => {}
            _ => return Probe::No,
        }
    }
    Probe::Maybe
}

/// The first non-white-space offset at or after `from`, if the text goes that far.
fn after_space(bytes: &[u8], from: usize) -> Option<usize> {
    let space = bytes
        .get(from..)?
        .iter()
        .take_while(|byte| byte.is_ascii_whitespace())
        .count();
    let at = from + space;
    (at < bytes.len()).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tokens: &[&str]) -> (Vec<String>, StreamGuard) {
        let mut guard = StreamGuard::new();
        let chunks = tokens.iter().map(|token| guard.push(token)).collect();
        (chunks, guard)
    }

    #[test]
    fn a_marker_split_across_three_tokens_is_held() {
        let (chunks, guard) = stream(&["Let me check.\n``", "`to", "ol\n{\"name\": \"x\"}"]);
        assert_eq!(chunks.concat(), "Let me check.\n");
        assert!(guard.is_holding());
    }

    #[test]
    fn text_that_only_looked_like_a_marker_is_released_at_once() {
        let (chunks, guard) = stream(&["a `", "`", "` b ", "<", "b> [link](x) {x}"]);
        assert_eq!(chunks.concat(), "a ``` b <b> [link](x) {x}");
        assert!(!guard.is_holding());
    }

    #[test]
    fn a_marker_inside_a_thought_does_not_hold() {
        let (chunks, guard) = stream(&["<think>maybe <tool_", "call> no</think>", "Hi!"]);
        assert_eq!(chunks.concat(), "<think>maybe <tool_call> no</think>Hi!");
        assert!(!guard.is_holding());
    }

    #[test]
    fn an_orphan_thought_end_releases_a_hold() {
        let (chunks, guard) = stream(&["plan: <tool_call>{}", " no.</think>", "Hello"]);
        assert_eq!(chunks.concat(), "plan: <tool_call>{} no.</think>Hello");
        assert!(!guard.is_holding());
    }

    #[test]
    fn bare_objects_and_python_lists_hold() {
        let (chunks, _) = stream(&["x { ", "'na", "me': 1}"]);
        assert_eq!(chunks.concat(), "x ");
        let (chunks, _) = stream(&["[get_", "time(timezone='UTC')]"]);
        assert_eq!(chunks.concat(), "");
        let (chunks, _) = stream(&["see [get_time(x)]"]);
        assert_eq!(chunks.concat(), "see [get_time(x)]");
    }

    #[test]
    fn a_tool_result_header_stops_the_stream_for_good() {
        let (chunks, guard) = stream(&["Sure! [tool res", "ult: list_dir] listing.txt", ", a.csv"]);
        assert_eq!(chunks.concat(), "Sure! ");
        assert!(guard.saw_result_header());
        let parsed = crate::parse_tool_calls(
            "Sure! [tool result: list_dir] listing.txt, a.csv",
            &imurun_core::ToolIndex::new(),
        );
        assert_eq!(parsed.kind, ParseKind::Answer);
        assert_eq!(guard.finish(&parsed), "", "not even at the end");
        let (chunks, guard) = stream(&["[Tool Result: x] y"]);
        assert_eq!(chunks.concat(), "");
        assert!(guard.saw_result_header(), "any case");
        let (chunks, guard) = stream(&["see [tool]s and [tool results]"]);
        assert_eq!(chunks.concat(), "see [tool]s and [tool results]");
        assert!(!guard.saw_result_header());
    }
}
