//! The command-line flags that set configuration keys, and the parsers every layer (flag,
//! variable, file, stored setting) shares, so a value means the same wherever it was written.

use std::net::SocketAddr;
use std::path::PathBuf;

use imurun_agent::MAX_STEPS_CAP;
use imurun_policy::Mode;

use super::APPROVAL_TIMEOUT_S_MAX;

/// The command-line flags that set configuration keys. Commands that use the configuration
/// flatten this into their arguments, so every command spells a key the same way.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ConfigFlags {
    /// The model: a GGUF path, openai:URL, ollama:URL or scripted:FILE.
    #[arg(long, value_name = "SPEC")]
    pub(crate) model: Option<String>,
    /// The address the server binds (a non-loopback address needs an API token).
    #[arg(long, value_name = "IP:PORT", value_parser = parse_addr)]
    pub(crate) addr: Option<SocketAddr>,
    /// The API token clients must send. Prefer IMURUN_API_TOKEN or the config file: a flag is
    /// visible to every user of this machine in the process list.
    #[arg(long, value_name = "TOKEN")]
    pub(crate) api_token: Option<String>,
    /// Serve HTTPS with this certificate chain (PEM), with --tls-key: what a browser on
    /// another machine needs to use a Keep host (docs/keep/tls.md).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM), with --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Steps per turn, 1 to 20.
    #[arg(long, value_parser = parse_max_steps)]
    pub(crate) max_steps: Option<usize>,
    /// The permission mode: ask, allow-reads, allow-edits or allow-all.
    #[arg(long)]
    pub(crate) mode: Option<Mode>,
    /// The workspace folder the tools work in.
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
    /// The database: postgres://user:password@host/database (which several Keep hosts may
    /// share) or sqlite://path. Default: the SQLite file <IMURUN_HOME>/imurun.db. Prefer
    /// IMURUN_DATABASE_URL or the config file for a URL with a password.
    #[arg(long, value_name = "URL")]
    pub(crate) database: Option<String>,
    /// Seconds an approval card waits for an answer, 1 to 3600.
    #[arg(long, value_name = "SECONDS", value_parser = parse_approval_timeout_s)]
    pub(crate) approval_timeout_s: Option<u64>,
}

/// `IP:PORT`; `localhost` is read as 127.0.0.1, since the server binds addresses, not names.
pub(crate) fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    let expanded = match text.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => text.to_owned(),
    };
    expanded.parse().map_err(|_| {
        format!("`{text}` is not an address to bind: expected IP:PORT, such as 127.0.0.1:8484")
    })
}

pub(crate) fn parse_max_steps(text: &str) -> Result<usize, String> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| format!("must be a whole number of at least 1, not `{text}`"))
        .and_then(check_max_steps)
}

/// A step count as asked: at least 1. More than `MAX_STEPS_CAP` is accepted here and capped
/// where the agent settings are resolved, which remembers what was asked for `config show`.
pub(super) fn check_max_steps(steps: i64) -> Result<usize, String> {
    usize::try_from(steps)
        .ok()
        .filter(|steps| *steps >= 1)
        .ok_or_else(|| {
            format!(
                "must be a whole number of at least 1 (above {MAX_STEPS_CAP} counts as \
                 {MAX_STEPS_CAP}), not {steps}"
            )
        })
}

pub(crate) fn parse_approval_timeout_s(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| {
            format!(
                "must be a whole number of seconds from 1 to {APPROVAL_TIMEOUT_S_MAX}, not `{text}`"
            )
        })
        .and_then(check_approval_timeout_s)
}

pub(super) fn check_approval_timeout_s(seconds: i64) -> Result<u64, String> {
    u64::try_from(seconds)
        .ok()
        .filter(|seconds| (1..=APPROVAL_TIMEOUT_S_MAX).contains(seconds))
        .ok_or_else(|| {
            format!(
                "must be a whole number of seconds from 1 to {APPROVAL_TIMEOUT_S_MAX}, not {seconds}"
            )
        })
}

/// `true`/`false`, and the spellings people put in environment variables.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!("expected true or false, not `{text}`")),
    }
}
