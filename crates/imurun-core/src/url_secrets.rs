//! Where a URL keeps a password: the userinfo's (`scheme://user:PASSWORD@host`, the password
//! may hold an unencoded `/`) and query parameters such as PostgreSQL's `?password=`. The
//! store shows database URLs without them; the policy keeps URLs with them out of a child
//! process's environment.

use std::ops::Range;

/// Query parameters that carry a password.
const PASSWORD_PARAMETERS: &[&str] = &["password", "sslpassword", "pass", "pwd", "secret"];

/// `url` as a URL's reader reads it: without ASCII tabs and line breaks, which it drops
/// wherever they are (`postgres:/<TAB>/user:pw@db` is `postgres://user:pw@db`).
fn as_read(url: &str) -> std::borrow::Cow<'_, str> {
    if url.contains(['\t', '\n', '\r']) {
        std::borrow::Cow::Owned(url.replace(['\t', '\n', '\r'], ""))
    } else {
        std::borrow::Cow::Borrowed(url)
    }
}

/// Whether `url` holds a non-empty password, as a URL's reader would find it.
pub fn url_has_password(url: &str) -> bool {
    !url_password_spans(&as_read(url)).is_empty()
}

/// The byte ranges of `url` that hold a password (each non-empty), in order, read literally
/// (see [`url_has_password`] and [`url_without_passwords`] for a URL as its reader reads it).
/// A text that is not `scheme://...` has none. A password parameter's value runs to the next
/// `&`, past a `#`: a password holding one is masked whole.
pub fn url_password_spans(url: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let Some(scheme_end) = url.find("://") else {
        return spans;
    };
    let scheme = &url[..scheme_end];
    let plausible = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.' | ':'));
    if !plausible {
        return spans;
    }
    let rest_start = scheme_end + 3;
    let query_start = url[rest_start..]
        .find(['?', '#'])
        .map_or(url.len(), |at| rest_start + at);
    // The last `@` before the query ends the userinfo: a password may hold `/` or `@`.
    if let Some(at) = url[rest_start..query_start].rfind('@') {
        let userinfo = rest_start..rest_start + at;
        if let Some(colon) = url[userinfo.clone()].find(':') {
            let password = userinfo.start + colon + 1..userinfo.end;
            if !password.is_empty() {
                spans.push(password);
            }
        }
    }
    if url[query_start..].starts_with('?') {
        let mut at = query_start + 1;
        let end = url[at..].find('#').map_or(url.len(), |hash| at + hash);
        while at < end {
            let pair_end = url[at..end].find('&').map_or(end, |amp| at + amp);
            if let Some(eq) = url[at..pair_end].find('=') {
                // A URL's reader decodes the name (`pass%77ord` is `password`): so does this.
                let name =
                    String::from_utf8_lossy(&crate::percent_decoded_bytes(&url[at..at + eq]))
                        .to_ascii_lowercase();
                if PASSWORD_PARAMETERS.contains(&name.as_str()) && at + eq + 1 < pair_end {
                    let value_end = url[pair_end..]
                        .find('&')
                        .map_or(url.len(), |amp| pair_end + amp);
                    spans.push(at + eq + 1..value_end);
                    if value_end > end {
                        break;
                    }
                }
            }
            at = pair_end + 1;
        }
    }
    spans
}

/// `url` as its reader reads it (without tabs and line breaks), with every password replaced
/// by `***`.
pub fn url_without_passwords(url: &str) -> String {
    let url = &*as_read(url);
    let mut shown = String::with_capacity(url.len());
    let mut from = 0;
    for span in url_password_spans(url) {
        shown.push_str(&url[from..span.start]);
        shown.push_str("***");
        from = span.end;
    }
    shown.push_str(&url[from..]);
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_found_in_the_userinfo_and_the_query() {
        let cases = [
            (
                "postgres://keep:s3cret@db:5432/imurun",
                "postgres://keep:***@db:5432/imurun",
            ),
            (
                "postgres://keep:a/b@c@db/imurun",
                "postgres://keep:***@db/imurun",
            ),
            (
                "postgres://keep@db/imurun?password=s3cret&sslmode=require",
                "postgres://keep@db/imurun?password=***&sslmode=require",
            ),
            (
                "postgres://db/imurun?sslmode=require&sslpassword=x",
                "postgres://db/imurun?sslmode=require&sslpassword=***",
            ),
            (
                "postgres:/\t/imurun:SECRET@127.0.0.1:1/db",
                "postgres://imurun:***@127.0.0.1:1/db",
            ),
            (
                "postgres://u@db/imurun?sslmode=require&password=SE#CRET",
                "postgres://u@db/imurun?sslmode=require&password=***",
            ),
            (
                "postgres://u@db/imurun?password=SE#CR&ET",
                "postgres://u@db/imurun?password=***&ET",
            ),
            (
                "postgres://u@db/imurun?pass%77ord=SECRET&PASS%57ORD=x&%70wd=y&pass%=z",
                "postgres://u@db/imurun?pass%77ord=***&PASS%57ORD=***&%70wd=***&pass%=z",
            ),
            ("postgres://keep@db/imurun", "postgres://keep@db/imurun"),
            ("postgres://keep:@db/imurun", "postgres://keep:@db/imurun"),
            (
                "https://example.org/path?q=1#password=x",
                "https://example.org/path?q=1#password=x",
            ),
            ("not a url: a:b@c", "not a url: a:b@c"),
            ("sqlite:///srv/imurun.db", "sqlite:///srv/imurun.db"),
        ];
        for (url, shown) in cases {
            assert_eq!(url_without_passwords(url), shown, "{url}");
            assert_eq!(url_has_password(url), shown.contains("***"), "{url}");
        }
    }
}
