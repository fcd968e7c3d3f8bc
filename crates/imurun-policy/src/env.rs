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
//!
//! Agent sockets and tickets are removed by name too, though they hold no secret themselves:
//! each is a door to one (`SSH_AUTH_SOCK`, `GPG_AGENT_INFO`, `KRB5CCNAME`, an askpass helper,
//! a keyring, ...). See [`AGENTS_AND_TICKETS`].
//!
//! A variable is also removed, whatever its name, when its value is a URL with a password in
//! its userinfo (`scheme://user:password@host`): `DATABASE_URL=postgres://u:pw@db/x` and
//! `HTTPS_PROXY=http://u:p@proxy:8080` carry a secret under an ordinary name.

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
    // `GIT_ASKPASS`, `SSH_ASKPASS`, `SUDO_ASKPASS`: programs that hand out passwords.
    "ASKPASS",
];

/// Names that point a program at an agent, a ticket cache or a keyring that holds secrets:
/// removed though their values are only paths, sockets or process ids.
pub const AGENTS_AND_TICKETS: &[&str] = &[
    // The SSH agent (`SSH_AUTH_SOCK` matches the word rule as well).
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    // GnuPG's agent.
    "GPG_AGENT_INFO",
    // Kerberos ticket caches and key tables.
    "KRB5CCNAME",
    "KRB5_KTNAME",
    "KRB5_CLIENT_KTNAME",
    // A desktop keyring.
    "GNOME_KEYRING_CONTROL",
    // Password files by path.
    "PGPASSFILE",
    "NETRC",
    // An editor's Git credential channel.
    "VSCODE_GIT_IPC_HANDLE",
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
    if AGENTS_AND_TICKETS.contains(&upper.as_str()) {
        return true;
    }
    CREDENTIAL_PARTS.iter().any(|part| upper.contains(part))
        || upper
            .split(['_', '-', '.'])
            .any(|word| CREDENTIAL_WORDS.contains(&word))
}

/// Whether `value` is a URL with a non-empty password: in its userinfo
/// (`scheme://user:password@host...`, such as a database URL or an authenticating proxy), or in
/// a query parameter such as PostgreSQL's `?password=`.
pub fn is_credential_url(value: &str) -> bool {
    imurun_core::url_has_password(value.trim())
}

/// The variables of `vars` that are not credentials, in order: neither a credential-looking
/// name nor a URL value with a password. Names and values that are not valid UTF-8 are judged
/// by their lossy form, so an odd byte cannot hide `TOKEN`.
pub fn without_credentials<I, K, V>(vars: I) -> impl Iterator<Item = (K, V)>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    vars.into_iter().filter(|(name, value)| {
        !is_credential_env(&name.as_ref().to_string_lossy())
            && !is_credential_url(&value.as_ref().to_string_lossy())
    })
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

    #[test]
    fn agent_sockets_tickets_and_askpass_helpers_are_removed() {
        for name in [
            "SSH_AUTH_SOCK",
            "SSH_AGENT_PID",
            "GPG_AGENT_INFO",
            "KRB5CCNAME",
            "krb5ccname",
            "KRB5_KTNAME",
            "KRB5_CLIENT_KTNAME",
            "GNOME_KEYRING_CONTROL",
            "PGPASSFILE",
            "NETRC",
            "VSCODE_GIT_IPC_HANDLE",
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            "SUDO_ASKPASS",
            "VSCODE_GIT_ASKPASS_MAIN",
        ] {
            assert!(is_credential_env(name), "{name}");
        }
        for name in [
            "SSH_CONNECTION",
            "KRB5_CONFIG",
            "GPG_TTY",
            "DISPLAY",
            "XDG_RUNTIME_DIR",
        ] {
            assert!(!is_credential_env(name), "{name}");
        }
    }

    #[test]
    fn urls_with_a_password_are_credentials() {
        let cases = [
            ("postgres://u:pw@db/x", true),
            ("http://u:p@proxy:8080", true),
            ("https://user:secret@example.com/path?q=1", true),
            ("jdbc:postgresql://u:pw@db:5432/x", true),
            ("  redis://:pw@cache:6379  ", true),
            ("https://user@example.com/", false),
            ("https://user:@example.com/", false),
            ("http://proxy:8080", false),
            // A password may hold an unencoded `/`, so a path with `:` and a later `@` reads
            // as one too: removing a harmless variable costs less than passing a password.
            ("https://example.com/a:b@c", true),
            ("postgres://keep:a/b@db/x", true),
            ("postgres://db/x?sslmode=require&password=pw", true),
            ("postgres://db/x?password=", false),
            ("https://example.com/?u=a:b@c", false),
            ("not a url: x://y:z@w", false),
            ("/usr/bin:/bin", false),
            ("", false),
        ];
        for (value, expected) in cases {
            assert_eq!(is_credential_url(value), expected, "{value}");
        }
    }

    #[test]
    fn a_password_url_under_an_ordinary_name_is_removed() {
        // Regression: `DATABASE_URL` and `HTTPS_PROXY` passed, their passwords with them.
        let vars = [
            ("DATABASE_URL", "postgres://u:pw@db/x"),
            ("HTTPS_PROXY", "http://u:p@proxy:8080"),
            ("HTTP_PROXY", "http://proxy:8080"),
            ("HOME", "/h"),
        ];
        let kept: Vec<_> = without_credentials(vars).map(|(name, _)| name).collect();
        assert_eq!(kept, ["HTTP_PROXY", "HOME"]);
    }
}
