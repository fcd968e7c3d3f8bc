//! Credential scrubbing for child processes: which names are stripped and which are kept.

use imurun_policy::{is_credential_env, without_credentials};

const STRIP: &[&str] = &[
    "GITHUB_TOKEN",
    "github_token",
    "TOKENIZER_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "CLIENT_SECRET",
    "PGPASSWORD",
    "DB_PASSWD",
    "MYSQL_PWD_PASSWORD",
    "MYSQL_PWD",
    "OPENAI_API_KEY",
    "openai_api_key",
    "STRIPE_APIKEY",
    "SSH_KEY",
    "GPG_KEY",
    "KEY",
    "KEY_LAYOUT",
    "ACCESS_KEYS",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "NPM_CONFIG_COOKIE",
    "SESSION_ID",
    "XDG_SESSION_ID",
    "DBUS_SESSION_BUS_ADDRESS",
    "SMTP_PASS",
    "BASIC_AUTH",
    "SSH_AUTH_SOCK",
    "SENTRY_DSN",
    "GPG_PASSPHRASE",
    "IMURUN_BRAVE_API_KEY",
    "my-private-key",
];

const KEEP: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "USER",
    "SHELL",
    "PWD",
    "OLDPWD",
    "TMPDIR",
    "KEYBOARD",
    "MONKEY",
    "XKB_KEYMAP",
    "TURKEY_COUNT",
    "EDITOR",
    "RUST_LOG",
    "CARGO_HOME",
    "PASSENGER_COUNT",
    "AUTHOR",
    "XAUTHORITY",
];

fn check(name: &str, strip: bool) -> Result<(), String> {
    if is_credential_env(name) == strip {
        Ok(())
    } else {
        Err(format!("{name}: expected strip={strip}"))
    }
}

#[test]
fn names() {
    let failures: Vec<String> = STRIP
        .iter()
        .map(|n| (*n, true))
        .chain(KEEP.iter().map(|n| (*n, false)))
        .filter_map(|(name, strip)| check(name, strip).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn scrubbing_keeps_order_and_values() {
    let env = vec![
        ("PATH".to_string(), "/bin".to_string()),
        ("API_TOKEN".into(), "x".into()),
        ("LANG".into(), "C".into()),
    ];
    let kept: Vec<(String, String)> = without_credentials(env).collect();
    assert_eq!(
        kept,
        [
            ("PATH".to_string(), "/bin".to_string()),
            ("LANG".into(), "C".into())
        ]
    );
}
