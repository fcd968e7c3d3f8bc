//! Capturing a command's output within a fixed number of characters: the head and the tail
//! are kept, the middle is counted and replaced by a marker that says how much was cut.
//!
//! The output is decoded as UTF-8 as it streams in (a character split between two reads is
//! carried over; invalid bytes become U+FFFD), so the cap counts characters exactly, and
//! memory stays bounded however much a command prints.

use std::borrow::Cow;

/// The most characters of a command's output the shell tool returns, head and tail together.
pub const OUTPUT_CHARS_MAX: usize = 20_000;

/// Characters kept from the start; the rest of [`OUTPUT_CHARS_MAX`] is kept from the end.
const HEAD_CHARS: usize = OUTPUT_CHARS_MAX / 2;
const TAIL_CHARS: usize = OUTPUT_CHARS_MAX - HEAD_CHARS;

/// The longest incomplete UTF-8 sequence carried between reads.
const CARRY_BYTES_MAX: usize = 3;

/// Collects output, keeping the first `HEAD_CHARS` and the last `TAIL_CHARS` characters.
#[derive(Debug, Default)]
pub struct OutputCollector {
    head: String,
    head_chars: usize,
    /// The characters after the head, trimmed from the front whenever it holds more than
    /// twice `TAIL_CHARS`, so trimming costs amortised constant time per character.
    tail: String,
    tail_chars: usize,
    total_chars: u64,
    /// The start of a character whose remaining bytes have not arrived yet.
    carry: Vec<u8>,
}

impl OutputCollector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds raw bytes as they came from the pipe.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        let joined: Cow<'_, [u8]> = if self.carry.is_empty() {
            Cow::Borrowed(bytes)
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(bytes);
            Cow::Owned(joined)
        };
        let mut rest: &[u8] = &joined;
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.push_str(text);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    self.push_str(&String::from_utf8_lossy(valid));
                    match error.error_len() {
                        Some(bad) => {
                            self.push_str("\u{FFFD}");
                            rest = &after[bad..];
                        }
                        // An incomplete character at the end: wait for its other bytes.
                        None if after.len() <= CARRY_BYTES_MAX => {
                            self.carry = after.to_vec();
                            break;
                        }
                        None => {
                            self.push_str("\u{FFFD}");
                            break;
                        }
                    }
                }
            }
        }
    }

    fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let chars = text.chars().count();
        self.total_chars = self.total_chars.saturating_add(chars as u64);
        let mut rest = text;
        if self.head_chars < HEAD_CHARS {
            let room = HEAD_CHARS - self.head_chars;
            let split = rest
                .char_indices()
                .nth(room)
                .map_or(rest.len(), |(at, _)| at);
            let (head, after) = rest.split_at(split);
            self.head.push_str(head);
            self.head_chars += head.chars().count();
            rest = after;
        }
        if rest.is_empty() {
            return;
        }
        self.tail.push_str(rest);
        self.tail_chars += rest.chars().count();
        if self.tail_chars > 2 * TAIL_CHARS {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        let excess = self.tail_chars.saturating_sub(TAIL_CHARS);
        if excess == 0 {
            return;
        }
        let cut_at = self
            .tail
            .char_indices()
            .nth(excess)
            .map_or(self.tail.len(), |(at, _)| at);
        self.tail.drain(..cut_at);
        self.tail_chars -= excess;
    }

    /// The kept output: everything when it fits in [`OUTPUT_CHARS_MAX`] characters, else the
    /// first and last halves with a marker between them.
    pub fn finish(mut self) -> String {
        if !self.carry.is_empty() {
            self.carry.clear();
            self.push_str("\u{FFFD}");
        }
        self.trim_tail();
        let kept = (self.head_chars + self.tail_chars) as u64;
        let cut = self.total_chars.saturating_sub(kept);
        if cut == 0 {
            return self.head + &self.tail;
        }
        format!(
            "{}\n[… {cut} characters cut: the output had {} characters; the first {HEAD_CHARS} and the last {TAIL_CHARS} are shown …]\n{}",
            self.head, self.total_chars, self.tail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` one by one and returns the collected text.
    fn check(chunks: &[&[u8]]) -> String {
        let mut collector = OutputCollector::new();
        for chunk in chunks {
            collector.push_bytes(chunk);
        }
        collector.finish()
    }

    #[test]
    fn short_output_is_kept_whole() {
        let cases: &[(&[&[u8]], &str)] = &[
            (&[b"hello\n"], "hello\n"),
            (&[b"he", b"llo"], "hello"),
            (&[], ""),
            // A character split between reads is put back together.
            (
                &["é".as_bytes()[..1].as_ref(), "é".as_bytes()[1..].as_ref()],
                "é",
            ),
            // Invalid bytes become U+FFFD; an unfinished character at the end too.
            (&[b"a\xffb"], "a\u{FFFD}b"),
            (&[b"a\xe2\x82"], "a\u{FFFD}"),
        ];
        for (chunks, expected) in cases {
            assert_eq!(check(chunks), *expected);
        }
    }

    #[test]
    fn exactly_the_cap_is_kept_whole() {
        let text = "x".repeat(OUTPUT_CHARS_MAX);
        assert_eq!(check(&[text.as_bytes()]), text);
    }

    #[test]
    fn long_output_keeps_exactly_head_and_tail_in_characters() {
        for total in [OUTPUT_CHARS_MAX + 1, 30_000, 250_000] {
            // Multi-byte characters, fed in odd-sized chunks that split them.
            let text: String = (0..total)
                .map(|i| if i % 7 == 0 { 'é' } else { 'a' })
                .collect();
            let bytes = text.as_bytes();
            let chunks: Vec<&[u8]> = bytes.chunks(4093).collect();
            let got = check(&chunks);
            let head: String = text.chars().take(HEAD_CHARS).collect();
            let tail: String = text.chars().skip(total - TAIL_CHARS).collect();
            let cut = total - OUTPUT_CHARS_MAX;
            assert!(
                got.starts_with(&format!("{head}\n[… {cut} characters cut")),
                "{total}"
            );
            assert!(got.ends_with(&format!("shown …]\n{tail}")), "{total}");
        }
    }
}
