//! HTML as readable text, without an HTML parser: drop what is never read (scripts, styles,
//! comments), turn block elements into line breaks, drop the other tags, decode entities and
//! collapse whitespace. Good enough for a model to read a page or a search snippet; not a
//! renderer (tables lose their grid, `<pre>` its layout).

/// Elements whose content is never text a reader sees.
const SKIPPED_ELEMENTS: &[&str] = &["script", "style", "noscript", "template", "svg", "iframe"];

/// Elements that start a new line.
const BLOCK_ELEMENTS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "title",
    "tr",
    "ul",
];

/// Elements that separate words without starting a line.
const SPACED_ELEMENTS: &[&str] = &["td", "th", "img", "input", "button", "option", "label"];

/// A whole page as lines of text.
pub(crate) fn html_to_text(html: &str) -> String {
    let mut raw = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        push_text(&mut raw, &rest[..start]);
        let tag = &rest[start..];
        if let Some(comment) = tag.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            continue;
        }
        let Some(end) = tag_end(tag) else {
            // An unclosed `<` at the end of a cut page: what follows is not text.
            rest = "";
            break;
        };
        let (closing, name) = tag_name(&tag[1..end]);
        rest = &tag[end + 1..];
        if !closing && SKIPPED_ELEMENTS.contains(&name.as_str()) {
            rest = after_closing_tag(rest, &name);
        } else if BLOCK_ELEMENTS.contains(&name.as_str()) {
            raw.push('\n');
        } else if SPACED_ELEMENTS.contains(&name.as_str()) {
            raw.push(' ');
        }
    }
    push_text(&mut raw, rest);
    collapse_lines(&raw)
}

/// A fragment (a snippet, a title) as one line of text.
pub(crate) fn inline_text(fragment: &str) -> String {
    html_to_text(fragment)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Decodes character references: the common named ones, `&#NN;` and `&#xHH;`. An unknown or
/// malformed reference stays as written.
pub(crate) fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let candidate = &rest[start + 1..];
        // Entity names are short; a `;` further away than this is not ours.
        let decoded = candidate
            .char_indices()
            .take(12)
            .find(|(_, c)| *c == ';')
            .and_then(|(end, _)| Some((decode_entity(&candidate[..end])?, end)));
        match decoded {
            Some((character, end)) => {
                out.push(character);
                rest = &candidate[end + 1..];
            }
            None => {
                out.push('&');
                rest = candidate;
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    let character = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "deg" => '°',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "times" => '×',
        "divide" => '÷',
        _ => return None,
    };
    Some(character)
}

/// Appends text between tags: its line breaks are only whitespace in HTML.
fn push_text(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    let spaced: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    out.push_str(&decode_entities(&spaced));
}

/// The index of the `>` that closes the tag at the start of `tag`, skipping quoted values.
pub(crate) fn tag_end(tag: &str) -> Option<usize> {
    let mut quote = None;
    for (index, c) in tag.char_indices().skip(1) {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(index),
            (None, _) => {}
        }
    }
    None
}

/// Whether the tag closes an element, and the element's lower-case name.
fn tag_name(inside: &str) -> (bool, String) {
    let (closing, inside) = match inside.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, inside),
    };
    let name = inside
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    (closing, name)
}

/// What follows `</name ...>`, or nothing when the element is never closed.
fn after_closing_tag<'a>(text: &'a str, name: &str) -> &'a str {
    let needle = format!("</{name}");
    let Some(start) = find_ascii_case_insensitive(text, &needle) else {
        return "";
    };
    let closing = &text[start..];
    closing.find('>').map_or("", |end| &closing[end + 1..])
}

/// Where `needle` first occurs in `haystack`, ASCII letters compared without case. An empty
/// needle is found at the start, as with `str::find` (`windows(0)` would panic).
pub(crate) fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// One space between words, no blank lines, no space at either end of a line. Blank lines
/// would carry no meaning here: every block element's start and end already breaks the line.
fn collapse_lines(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&words.join(" "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_become_lines() {
        let cases = [
            ("<p>One</p><p>Two</p>", "One\nTwo"),
            ("a<script>var x = '<p>';</script>b", "ab"),
            ("<STYLE>p { }</STYLE>text", "text"),
            ("<!-- hidden -->shown", "shown"),
            ("<b>bold</b>ly  spaced\n\nwords", "boldly spaced words"),
            (
                "Fish &amp; chips &lt;3 &#8212; &#x2014; &eacute;",
                "Fish & chips <3 — — &eacute;",
            ),
            ("<a href=\"x>y\">link</a>", "link"),
            ("<td>a</td><td>b</td>", "a b"),
            ("unclosed <script>forever", "unclosed"),
            ("cut <a hr", "cut"),
            ("&amp", "&amp"),
            ("<div><br><br><br>x</div>", "x"),
        ];
        for (html, expected) in cases {
            assert_eq!(html_to_text(html), expected, "{html}");
        }
    }

    #[test]
    fn an_empty_needle_is_found_at_the_start() {
        // Regression: `windows(0)` panicked when the needle was empty.
        assert_eq!(find_ascii_case_insensitive("abc", ""), Some(0));
        assert_eq!(find_ascii_case_insensitive("", ""), Some(0));
        assert_eq!(find_ascii_case_insensitive("aBc", "bC"), Some(1));
        assert_eq!(find_ascii_case_insensitive("ab", "abc"), None);
    }

    #[test]
    fn snippets_become_one_line() {
        assert_eq!(
            inline_text("A <b>fast</b>\n   language &mdash; safe"),
            "A fast language — safe"
        );
    }
}
