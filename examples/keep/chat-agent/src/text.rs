//! Cutting text to a bound without splitting a character.

/// `text` cut to at most `chars_max` characters, the last one `…` when it was cut.
pub fn cut_chars(text: &str, chars_max: usize) -> String {
    if text.chars().count() <= chars_max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(chars_max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// `text` cut to at most `bytes_max` bytes, on a character boundary.
pub fn cut_bytes(text: &str, bytes_max: usize) -> &str {
    if text.len() <= bytes_max {
        return text;
    }
    let mut end = bytes_max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` with control characters (but newline and tab) dropped and runs of spaces and tabs
/// made one space.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c == ' ' || c == '\t' {
            space = true;
            continue;
        }
        if c.is_control() && c != '\n' {
            continue;
        }
        if space && !out.is_empty() && c != '\n' {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_characters() {
        assert_eq!(cut_chars("abc", 3), "abc");
        assert_eq!(cut_chars("abcd", 3), "ab…");
        assert_eq!(cut_chars("ab cd", 4), "ab…");
        assert_eq!(cut_chars("ééé", 2), "é…");
        assert_eq!(cut_bytes("éé", 3), "é");
        assert_eq!(cut_bytes("abc", 10), "abc");
    }

    #[test]
    fn plain_drops_controls_and_folds_spaces() {
        assert_eq!(plain("  a\u{1b}[31m  b\tc "), "a[31m b c");
        assert_eq!(plain("a\nb"), "a\nb");
    }
}
