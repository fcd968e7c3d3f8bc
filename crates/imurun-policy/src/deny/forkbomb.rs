//! Fork bombs: a shell function that starts copies of itself in a pipe or in the background
//! (`:(){ :|:& };:`), and cmd's `%0|%0`. Read from the lexer's skeleton (the text outside
//! quotes), so a bomb quoted as data (`echo ':(){ :|:& };:'`) is not one.

/// How many function definitions one text may have examined; past it the rest are skipped,
/// which keeps the scan linear in the text's length times this bound.
const DEFINITIONS_MAX: usize = 64;

/// Why `skeleton` holds a fork bomb, or `None`.
pub(crate) fn fork_bomb(skeleton: &str) -> Option<String> {
    let squeezed: String = skeleton
        .chars()
        .filter(|c| !matches!(c, ' ' | '\t' | '\r'))
        .collect();
    if squeezed.contains("%0|%0") {
        return Some(
            "a fork bomb: `%0|%0` starts copies of itself until the machine runs out of processes"
                .into(),
        );
    }
    let chars: Vec<char> = squeezed.chars().collect();
    let mut examined = 0;
    for (at, name) in definitions(&chars) {
        examined += 1;
        if examined > DEFINITIONS_MAX {
            break;
        }
        if spawns_itself(&name, &body(&chars, at)) {
            return Some(format!(
                "a fork bomb: the function `{name}` starts copies of itself until the machine runs out of processes"
            ));
        }
    }
    None
}

/// Function definitions as (index of the body's `{` in `squeezed`, name), in both forms:
/// `name(){` and `function name {` (which squeezing turns into `functionname{`). Each
/// character is looked at a bounded number of times, and at most `DEFINITIONS_MAX + 1`
/// definitions are returned.
fn definitions(squeezed: &[char]) -> Vec<(usize, String)> {
    const KEYWORD: [char; 8] = ['f', 'u', 'n', 'c', 't', 'i', 'o', 'n'];
    let mut found = Vec::new();
    let mut name_start = 0;
    let mut i = 0;
    while i < squeezed.len() && found.len() <= DEFINITIONS_MAX {
        if squeezed[i..].starts_with(&['(', ')', '{']) && i > name_start {
            let name: String = squeezed[name_start..i].iter().collect();
            let name = name
                .strip_prefix("function")
                .filter(|n| !n.is_empty())
                .unwrap_or(&name);
            found.push((i + 2, name.to_string()));
        } else if i == name_start && squeezed[i..].starts_with(&KEYWORD) {
            let from = i + KEYWORD.len();
            let length = squeezed[from..]
                .iter()
                .position(|c| is_delimiter(*c) || *c == '(')
                .unwrap_or(squeezed.len() - from);
            let name: String = squeezed[from..from + length].iter().collect();
            let mut open = from + length;
            if squeezed[open..].starts_with(&['(', ')']) {
                open += 2;
            }
            if !name.is_empty() && squeezed.get(open) == Some(&'{') {
                found.push((open, name));
            }
        }
        if is_delimiter(squeezed[i]) {
            name_start = i + 1;
        }
        i += 1;
    }
    found
}

fn is_delimiter(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '{' | '}' | '\n')
}

/// The body from the `{` at `open` to its matching `}` (or the end of the text).
fn body(chars: &[char], open: usize) -> Vec<char> {
    let mut depth = 0usize;
    for (i, c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return chars[open + 1..i].to_vec();
                }
            }
            _ => {}
        }
    }
    chars[(open + 1).min(chars.len())..].to_vec()
}

/// Whether the body calls `name` as a command that is piped or sent to the background.
/// Names are compared only where a command starts, and a comparison never reads past the
/// command it starts, so the scan is linear in the body's length.
fn spawns_itself(name: &str, body: &[char]) -> bool {
    let name: Vec<char> = name.chars().collect();
    let mut i = 0;
    while i < body.len() {
        let starts_command = i == 0 || is_delimiter(body[i - 1]);
        if starts_command && body[i..].starts_with(&name) {
            let before = if i == 0 { None } else { Some(body[i - 1]) };
            let after = body.get(i + name.len()).copied();
            let after_next = body.get(i + name.len() + 1).copied();
            let ends_command = after.is_none_or(is_delimiter);
            let piped_in = before == Some('|') && (i < 2 || body[i - 2] != '|');
            let piped_out = after == Some('|') && after_next != Some('|');
            let piped = piped_in || piped_out;
            let backgrounded = after == Some('&') && after_next != Some('&');
            if ends_command && (piped || backgrounded) {
                return true;
            }
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bombs_and_look_alikes() {
        let cases = [
            (":(){ :|:& };:", true),
            (":() { : | : & }; :", true),
            ("bomb(){ bomb|bomb& }; bomb", true),
            ("function f { f | f & }; f", true),
            ("f() {\n f & f\n}\nf", true),
            ("%0|%0", true),
            ("f(){ echo hi; }; f", false),
            ("f(){ f2 | cat; }; f", false),
            ("a || b && c", false),
            ("echo _", false),
        ];
        for (text, expect) in cases {
            assert_eq!(fork_bomb(text).is_some(), expect, "{text}");
        }
    }
}
