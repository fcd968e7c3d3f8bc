//! The addresses in a message: where each one is (without the punctuation after it) and, for
//! an `http` or `https` URL a tool could be made for, its scheme, host and port.

/// Characters of an address.
const URL_CHARS_MAX: usize = 2_048;

/// An `http` or `https` address found in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The address to fetch: as written, without its fragment (never sent).
    pub text: String,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// Lower case; an IPv6 literal in brackets.
    pub host: String,
    /// As written, or the scheme's default (80, 443).
    pub port: u16,
}

impl Url {
    /// `host:port`, as a person reads it.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The byte spans of the addresses in `message`, each without the punctuation after it.
pub(super) fn address_spans(message: &str) -> Vec<(usize, usize)> {
    let lower = message.to_ascii_lowercase();
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find("http") {
        let start = from + found;
        from = start + 4;
        let rest = &lower[start..];
        if !(rest.starts_with("http://") || rest.starts_with("https://")) {
            continue;
        }
        let preceded_by_word = lower[..start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        if preceded_by_word {
            continue;
        }
        let length = message[start..]
            .find(|c: char| c.is_whitespace() || "<>\"`|{}“”‘’«»".contains(c))
            .unwrap_or(message.len() - start);
        let mut end = start + length;
        // Trailing punctuation goes, and so does a closing bracket with no opening one in the
        // address: counted once, then kept up to date, so a run of them costs a pass, not one
        // per character.
        let span = &message[start..end];
        let mut parens = (span.matches('(').count(), span.matches(')').count());
        let mut squares = (span.matches('[').count(), span.matches(']').count());
        while let Some(last) = message[start..end].chars().next_back() {
            let trailing = match last {
                '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '*' => true,
                ')' => parens.0 < parens.1,
                ']' => squares.0 < squares.1,
                _ => false,
            };
            if !trailing {
                break;
            }
            match last {
                ')' => parens.1 -= 1,
                ']' => squares.1 -= 1,
                _ => {}
            }
            end -= last.len_utf8();
        }
        spans.push((start, end));
        from = end.max(start + 4);
    }
    spans
}

/// An address, if it is an `http` or `https` URL a tool could be made for.
pub(super) fn parse_url(text: &str) -> Option<Url> {
    if text.chars().count() > URL_CHARS_MAX {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let (scheme, rest) = if lower.starts_with("https://") {
        ("https", &text[8..])
    } else if lower.starts_with("http://") {
        ("http", &text[7..])
    } else {
        return None;
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if authority.contains('@') {
        return None;
    }
    let (host, port) = if let Some(inside) = authority.strip_prefix('[') {
        let close = inside.find(']')?;
        let literal = &inside[..close];
        if literal.is_empty()
            || !literal
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return None;
        }
        let tail = &inside[close + 1..];
        let port = if tail.is_empty() {
            None
        } else {
            Some(tail.strip_prefix(':')?)
        };
        (&authority[..close + 2], port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let host_ok = !host.is_empty()
        && (host.starts_with('[')
            || host
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_')));
    if !host_ok {
        return None;
    }
    let default_port = if scheme == "https" { 443 } else { 80 };
    let port = match port {
        None | Some("") => default_port,
        Some(digits) => {
            if digits.len() > 5 || !digits.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            match digits.parse::<u16>() {
                Ok(0) | Err(_) => return None,
                Ok(port) => port,
            }
        }
    };
    let path = &rest[authority_end..];
    let path = path.split('#').next().unwrap_or_default();
    Some(Url {
        text: format!("{scheme}://{authority}{path}"),
        scheme,
        host: host.to_lowercase(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_brackets_after_an_address_are_trimmed_in_one_pass() {
        let message = format!("fetch (http://a.example/x){}", ")".repeat(60_000));
        let spans = address_spans(&message);
        assert_eq!(spans.len(), 1);
        assert_eq!(&message[spans[0].0..spans[0].1], "http://a.example/x");
        let kept = "see http://a.example/wiki/Rust_(language).";
        let spans = address_spans(kept);
        assert_eq!(
            &kept[spans[0].0..spans[0].1],
            "http://a.example/wiki/Rust_(language)"
        );
    }

    #[test]
    fn addresses_give_their_scheme_host_and_port() {
        let url = |text: &str| parse_url(text).map(|url| (url.scheme, url.host, url.port));
        assert_eq!(
            url("http://127.0.0.1:8080/weather"),
            Some(("http", "127.0.0.1".into(), 8080))
        );
        assert_eq!(
            url("https://Example.com/x"),
            Some(("https", "example.com".into(), 443))
        );
        assert_eq!(
            url("http://example.com"),
            Some(("http", "example.com".into(), 80))
        );
        assert_eq!(
            url("http://example.com:/x"),
            Some(("http", "example.com".into(), 80))
        );
        assert_eq!(
            url("http://[::1]:9000/"),
            Some(("http", "[::1]".into(), 9000))
        );
        assert_eq!(url("https://[::1]"), Some(("https", "[::1]".into(), 443)));
        assert_eq!(
            url("https://bücher.example/"),
            Some(("https", "bücher.example".into(), 443))
        );
        for refused in [
            "http://",
            "http://:80/",
            "http://x:0/",
            "http://x:65536/",
            "http://x:8o/",
            "http://u@x/",
            "http://[zz]/",
            "http://[::1]x/",
            "http://a b/",
            "ftp://x/",
            "http://x%41/",
        ] {
            assert_eq!(url(refused), None, "{refused}");
        }
        assert_eq!(
            parse_url("http://x/a#b").map(|url| url.text),
            Some("http://x/a".to_owned())
        );
        assert_eq!(
            Url {
                text: String::new(),
                scheme: "http",
                host: "[::1]".into(),
                port: 80
            }
            .authority(),
            "[::1]:80"
        );
    }

    #[test]
    fn address_spans_end_before_punctuation() {
        let spans = |message: &str| -> Vec<String> {
            address_spans(message)
                .into_iter()
                .map(|(start, end)| message[start..end].to_owned())
                .collect()
        };
        assert_eq!(spans("see https://x.example/a."), ["https://x.example/a"]);
        assert_eq!(
            spans("(https://x.example/a_(b))"),
            ["https://x.example/a_(b)"]
        );
        assert_eq!(
            spans("“https://x.example”, and http://y:1/"),
            ["https://x.example", "http://y:1/"]
        );
        assert_eq!(spans("xhttps://no and http only"), Vec::<String>::new());
        assert_eq!(spans("https://é.example/ü!"), ["https://é.example/ü"]);
    }
}
