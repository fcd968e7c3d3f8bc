//! Credential scrubbing: which environment variables a child process must not inherit.
//!
//! A name is a credential when, compared case-insensitively, it contains `TOKEN`, `SECRET`,
//! `PASSW`, `PASSPHRASE`, `API_KEY`, `APIKEY`, `CREDENTIAL`, `COOKIE` or `SESSION`, or when one
//! of its words (split on `_`, `-` and `.`) is `KEY`, `KEYS`, `PASS`, `PWD`, `AUTH` or `DSN`
//! — except `PWD` itself, the current folder (`MYSQL_PWD` is a password).
//!
//! The word rule is the seed's `*_KEY` made safe against look-alikes: `KEYBOARD` and
//! `MONKEY` hold `KEY` only inside a word and stay, while `KEY_LAYOUT` has `KEY` as a word
//! and is removed — losing a keyboard setting in a child shell costs nothing, leaking a key
//! does. `PATH`, `HOME`, `LANG`, `PWD` and the like stay.

use std::ffi::OsStr;

/// Parts of a name that make it a credential wherever they appear.
const CREDENTIAL_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSW",
    "PASSPHRASE",
    "API_KEY",
    "APIKEY",
    "CREDENTIAL",
    "COOKIE",
    "SESSION",
];

/// Whole words (between `_`, `-` and `.`) that make a name a credential.
const CREDENTIAL_WORDS: &[&str] = &["KEY", "KEYS", "PASS", "PWD", "AUTH", "DSN"];

/// Names that match a rule but are not credentials: `PWD` is the current folder (while
/// `MYSQL_PWD` is a password).
const NOT_CREDENTIALS: &[&str] = &["PWD"];

/// Whether a variable called `name` may hold a credential and must be removed from a child
/// process's environment.
pub fn is_credential_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if NOT_CREDENTIALS.contains(&upper.as_str()) {
        return false;
    }
    CREDENTIAL_PARTS.iter().any(|part| upper.contains(part))
        || upper
            .split(['_', '-', '.'])
            .any(|word| CREDENTIAL_WORDS.contains(&word))
}

/// The variables of `vars` that are not credentials, in order. Names that are not valid
/// UTF-8 are judged by their lossy form, so an odd byte cannot hide `TOKEN`.
pub fn without_credentials<I, K, V>(vars: I) -> impl Iterator<Item = (K, V)>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
{
    vars.into_iter()
        .filter(|(name, _)| !is_credential_env(&name.as_ref().to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_an_environment_in_order() {
        let vars = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "t"),
            ("HOME", "/h"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ];
        let kept: Vec<_> = without_credentials(vars).map(|(name, _)| name).collect();
        assert_eq!(kept, ["PATH", "HOME"]);
    }
}
