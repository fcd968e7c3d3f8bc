//! How a reply given as whole text is cut into the pieces it streams.

/// Cuts `text` into the pieces a `"text"` reply streams: each piece is a run of white space
/// followed by the word after it (`"Hello, big world"` → `"Hello,"`, `" big"`, `" world"`),
/// so the pieces look like a tokenizer's and join back to `text` exactly. White space at the
/// end becomes a piece of its own; empty text has no pieces.
pub fn split_pieces(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut previous_is_space = true;
    for (at, character) in text.char_indices() {
        let is_space = character.is_whitespace();
        // A word ends where white space begins; that white space opens the next piece.
        if is_space && !previous_is_space {
            pieces.push(text[start..at].to_owned());
            start = at;
        }
        previous_is_space = is_space;
    }
    if start < text.len() {
        pieces.push(text[start..].to_owned());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: &[&str]) {
        let pieces = split_pieces(text);
        assert_eq!(pieces, expect, "pieces of {text:?}");
        assert_eq!(pieces.concat(), text, "the pieces of {text:?} join back");
    }

    #[test]
    fn text_is_cut_before_each_run_of_white_space() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("word", &["word"]),
            ("Hello, big world", &["Hello,", " big", " world"]),
            ("  leading", &["  leading"]),
            ("trailing  ", &["trailing", "  "]),
            ("   ", &["   "]),
            ("a\n\nb", &["a", "\n\nb"]),
            ("two\tspaces  here", &["two", "\tspaces", "  here"]),
            (
                "```tool\n{\"name\": \"x\"}\n```",
                &["```tool", "\n{\"name\":", " \"x\"}", "\n```"],
            ),
            ("héllo wörld", &["héllo", " wörld"]),
            ("no\u{a0}break", &["no", "\u{a0}break"]),
        ];
        for (text, expect) in cases {
            check(text, expect);
        }
    }
}
