//! DuckDuckGo's keyless HTML endpoint: `POST q=..` as a form, and results read out of the
//! page — each `a.result__a` is a title whose `href` is the result (often wrapped in a
//! `//duckduckgo.com/l/?uddg=<url>` redirect), followed by its `a.result__snippet`.
//!
//! DuckDuckGo answers some networks with a bot check (the "anomaly" page) instead of results;
//! that is a failure naming the variables that switch to a keyed provider, never "no results".

use imurun_net::Door;
use imurun_net::http::Method;
use imurun_net::http::Url;

use super::{
    BRAVE_API_KEY_VAR, SEARXNG_URL_VAR, SERPER_API_KEY_VAR, SearchConfig, SearchHit,
    TAVILY_API_KEY_VAR, common_status_failure, endpoint, send,
};
use crate::builtin::html_text::{
    decode_entities, find_ascii_case_insensitive, inline_text, tag_end,
};

/// Text that appears only on DuckDuckGo's bot-check page.
const BOT_CHECK_MARKERS: &[&str] = &[
    "anomaly-modal",
    "anomaly.js",
    "challenge-form",
    "bots use duckduckgo too",
    "please complete the following challenge",
];

/// What a DuckDuckGo page turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Page {
    Results(Vec<SearchHit>),
    /// The page says, in its own markup, that nothing matched.
    NoResults,
    BotCheck,
    /// Neither results nor a "no results" notice: the markup changed or the page is not ours.
    Unreadable,
}

pub(super) async fn search(
    door: &Door,
    config: &SearchConfig,
    query: &str,
) -> Result<Vec<SearchHit>, String> {
    let provider = config.provider.name();
    let request = door
        .request(Method::POST, endpoint(config)?)
        .map_err(|error| error.to_string())?
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "text/html")
        .body(format!("q={}", form_encode(query)));
    let (status, retry_after, body) = send(door, request, config).await?;
    let html = String::from_utf8_lossy(&body);
    // The bot check comes with 200, 202 or 403 depending on the day; the page says what it is.
    let page = parse_page(&html);
    if page == Page::BotCheck || matches!(status, 403 | 418 | 429) {
        return Err(blocked(status));
    }
    if !(200..300).contains(&status) {
        return Err(common_status_failure(provider, status, &retry_after));
    }
    match page {
        Page::Results(hits) => Ok(hits),
        Page::NoResults => Ok(Vec::new()),
        Page::BotCheck | Page::Unreadable => Err(format!(
            "{provider} answered with a page that has neither results nor a \"no results\" \
             notice; its page may have changed. Set {BRAVE_API_KEY_VAR}, {TAVILY_API_KEY_VAR}, \
             {SERPER_API_KEY_VAR} or {SEARXNG_URL_VAR} to search through another provider"
        )),
    }
}

fn blocked(status: u16) -> String {
    format!(
        "DuckDuckGo answered with a bot check instead of results (HTTP {status}): it blocks \
         automated searches from some networks, so this says nothing about what exists. To \
         search reliably, set one of {BRAVE_API_KEY_VAR}, {TAVILY_API_KEY_VAR}, \
         {SERPER_API_KEY_VAR} or {SEARXNG_URL_VAR}"
    )
}

/// Reads a result page: its bot check, its results, or its "no results" notice.
pub(super) fn parse_page(html: &str) -> Page {
    let lower = html.to_ascii_lowercase();
    if BOT_CHECK_MARKERS
        .iter()
        .any(|marker| lower.contains(marker))
    {
        return Page::BotCheck;
    }
    let hits = result_links(html);
    if !hits.is_empty() {
        Page::Results(hits)
    } else if lower.contains("no-results") || lower.contains("no results.") {
        Page::NoResults
    } else {
        Page::Unreadable
    }
}

/// Every `a.result__a` with the `a.result__snippet` that follows it, ads left out.
fn result_links(html: &str) -> Vec<SearchHit> {
    let mut hits: Vec<SearchHit> = Vec::new();
    let mut rest = html;
    while let Some(start) = find_ascii_case_insensitive(rest, "<a") {
        let tag = &rest[start..];
        let Some(end) = tag_end(tag) else { break };
        #[cfg(test)]
        tests::TAG_BYTES_SCANNED.with(|scanned| scanned.set(scanned.get() + end));
        let opening = &tag[2..end];
        let after_tag = &tag[end + 1..];
        // `<abbr>`, `<area>`: not an anchor. Skip the whole tag, not just `<a`: a page of
        // `<ab<ab<ab...>` would otherwise scan to the same `>` once per fragment.
        if !opening.starts_with(|c: char| c.is_ascii_whitespace()) {
            rest = after_tag;
            continue;
        }
        let inner_end = find_ascii_case_insensitive(after_tag, "</a").unwrap_or(after_tag.len());
        let inner = &after_tag[..inner_end];
        rest = &after_tag[inner_end..];
        let class = attribute(opening, "class").unwrap_or_default();
        let has_class = |name: &str| class.split_whitespace().any(|token| token == name);
        if has_class("result__a") {
            let href = attribute(opening, "href").unwrap_or_default();
            match result_target(&href) {
                Some(url) => hits.push(SearchHit {
                    title: inline_text(inner),
                    url,
                    snippet: String::new(),
                }),
                // An ad or an internal link: drop it, and keep its snippet off the last result.
                None => hits.push(SearchHit {
                    title: String::new(),
                    url: String::new(),
                    snippet: String::new(),
                }),
            }
        } else if has_class("result__snippet")
            && let Some(last) = hits.last_mut()
            && last.snippet.is_empty()
        {
            last.snippet = inline_text(inner);
        }
    }
    hits.retain(|hit| !hit.url.is_empty());
    hits
}

/// The result's real address: the `uddg` parameter of a DuckDuckGo redirect, or the link
/// itself. `None` for ads (`/y.js`) and anything that is not http(s).
fn result_target(href: &str) -> Option<String> {
    let href = decode_entities(href.trim());
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else if href.starts_with('/') {
        format!("https://duckduckgo.com{href}")
    } else {
        href
    };
    let url = Url::parse(&absolute).ok()?;
    let on_duckduckgo = url
        .host_str()
        .is_some_and(|host| host == "duckduckgo.com" || host.ends_with(".duckduckgo.com"));
    let target = if on_duckduckgo {
        if url.path() != "/l/" {
            return None;
        }
        let (_, target) = url.query_pairs().find(|(name, _)| name == "uddg")?;
        Url::parse(&target).ok()?
    } else {
        url
    };
    matches!(target.scheme(), "http" | "https").then(|| target.to_string())
}

/// The value of attribute `name` in a tag's attribute text, entity references left as they are.
fn attribute(opening: &str, name: &str) -> Option<String> {
    let mut rest = opening;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
        if rest.is_empty() {
            return None;
        }
        let name_end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '=')
            .unwrap_or(rest.len());
        let attribute_name = &rest[..name_end];
        rest = rest[name_end..].trim_start();
        let value = if let Some(after_equals) = rest.strip_prefix('=') {
            let after_equals = after_equals.trim_start();
            let (value, remaining) = match after_equals.chars().next() {
                Some(quote @ ('"' | '\'')) => {
                    let quoted = &after_equals[1..];
                    let close = quoted.find(quote).unwrap_or(quoted.len());
                    (&quoted[..close], quoted.get(close + 1..).unwrap_or(""))
                }
                _ => {
                    let close = after_equals
                        .find(|c: char| c.is_ascii_whitespace())
                        .unwrap_or(after_equals.len());
                    (&after_equals[..close], &after_equals[close..])
                }
            };
            rest = remaining;
            value
        } else {
            ""
        };
        if attribute_name.eq_ignore_ascii_case(name) {
            return Some(value.to_owned());
        }
    }
}

/// `application/x-www-form-urlencoded` for one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Bytes `result_links` has scanned looking for tag ends, to check its work is linear.
        pub(super) static TAG_BYTES_SCANNED: Cell<usize> = const { Cell::new(0) };
    }

    #[test]
    fn non_anchor_tags_are_skipped_whole() {
        // Regression: every `<ab` fragment scanned on to the one `>` at the end, so a page of
        // them took quadratic time.
        let html = format!("{}>", "<ab".repeat(20_000));
        TAG_BYTES_SCANNED.with(|scanned| scanned.set(0));
        assert_eq!(parse_page(&html), Page::Unreadable);
        let scanned = TAG_BYTES_SCANNED.with(Cell::get);
        assert!(scanned <= html.len(), "scanned {scanned} of {}", html.len());
    }

    #[test]
    fn a_result_after_an_abbr_is_found() {
        let html =
            r#"<abbr title="x">y</abbr><a class="result__a" href="https://example.org/">Ex</a>"#;
        let Page::Results(hits) = parse_page(html) else {
            panic!("no results in {html}");
        };
        assert_eq!(hits[0].url, "https://example.org/");
        assert_eq!(hits[0].title, "Ex");
    }

    #[test]
    fn result_targets() {
        let cases = [
            (
                "//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2Flearn&amp;rut=abc",
                Some("https://www.rust-lang.org/learn"),
            ),
            ("https://example.org/page", Some("https://example.org/page")),
            ("https://duckduckgo.com/y.js?ad_domain=shop.example", None),
            ("javascript:alert(1)", None),
            ("//duckduckgo.com/l/?rut=abc", None),
        ];
        for (href, expected) in cases {
            assert_eq!(result_target(href).as_deref(), expected, "{href}");
        }
    }

    #[test]
    fn attributes_and_form_values() {
        let tag = r#" rel="nofollow" class='result__a big' data-x=1 href="//a?b=1&amp;c=2""#;
        assert_eq!(attribute(tag, "class").as_deref(), Some("result__a big"));
        assert_eq!(attribute(tag, "data-x").as_deref(), Some("1"));
        assert_eq!(attribute(tag, "href").as_deref(), Some("//a?b=1&amp;c=2"));
        assert_eq!(attribute(tag, "id"), None);
        assert_eq!(form_encode("rust 1.95 & café"), "rust+1.95+%26+caf%C3%A9");
    }
}
