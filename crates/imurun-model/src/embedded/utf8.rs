//! Turning a stream of token bytes into text pieces. A token is a run of bytes, not of
//! characters: an emoji or a CJK character is often split over two or three tokens, so a
//! piece may end inside a character. `Utf8Stream` holds such a tail back until the bytes
//! that complete it arrive, and never emits half a character.

/// An incremental UTF-8 decoder for token bytes.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    /// Bytes of a character not yet complete: at most 3.
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Appends `bytes` and returns the text that is now complete (possibly empty). Bytes
    /// that can never be valid UTF-8 come out as U+FFFD, as `String::from_utf8_lossy` does.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut text = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    rest = &[];
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // `valid` is valid UTF-8 by `valid_up_to`'s contract.
                    text.push_str(&String::from_utf8_lossy(valid));
                    match error.error_len() {
                        // An invalid sequence: replace it and go on after it.
                        Some(invalid) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[invalid..];
                        }
                        // A character cut at the end: keep it for the next push.
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        text
    }

    /// Ends the stream: a character still incomplete comes out as U+FFFD.
    pub(crate) fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    fn check(chunks: &[&[u8]], expected_pieces: &[&str]) {
        let mut stream = Utf8Stream::default();
        let mut pieces: Vec<String> = chunks.iter().map(|chunk| stream.push(chunk)).collect();
        pieces.push(stream.finish());
        assert_eq!(pieces, expected_pieces);
    }

    #[test]
    fn characters_split_across_tokens_come_out_whole() {
        let smile = "😀".as_bytes(); // 4 bytes
        check(
            &[b"a", &smile[..1], &smile[1..3], &smile[3..], b"b"],
            &["a", "", "", "😀", "b", ""],
        );
        let e_acute = "é".as_bytes();
        check(&[&e_acute[..1], &[e_acute[1], b'x']], &["", "éx", ""]);
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        check(&[b"a\xffb"], &["a\u{fffd}b", ""]);
        // A cut character at the very end is replaced when the stream ends.
        check(&[b"a\xe2\x82"], &["a", "\u{fffd}"]);
    }
}
