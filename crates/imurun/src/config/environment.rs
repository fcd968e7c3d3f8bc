//! The process environment, read once at start: the binary's only reader of environment
//! variables. Everything else gets values from here through [`super::ResolvedConfig`].

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Result, bail};

/// The environment imurun was started with.
#[derive(Clone, Default)]
pub(crate) struct Environment {
    vars: Vec<(OsString, OsString)>,
}

impl Environment {
    /// This process's environment.
    pub(crate) fn of_process() -> Self {
        Self {
            vars: std::env::vars_os().collect(),
        }
    }

    /// An environment of exactly these variables (tests).
    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Self {
            vars: pairs
                .iter()
                .map(|(name, value)| (OsString::from(name), OsString::from(value)))
                .collect(),
        }
    }

    /// A variable's value, when it is set, valid UTF-8 and not blank.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.vars
            .iter()
            .find(|(key, _)| key == name)
            .and_then(|(_, value)| value.to_str())
            .filter(|value| !value.trim().is_empty())
            .map(str::to_owned)
    }

    /// `IMURUN_LOG`, else `RUST_LOG`: which log lines are written.
    pub(crate) fn log_filter(&self) -> Option<String> {
        self.get("IMURUN_LOG").or_else(|| self.get("RUST_LOG"))
    }

    /// Every variable: what a child process (the shell, a stdio MCP server) starts from,
    /// before credential-looking ones are removed.
    pub(crate) fn all(&self) -> &[(OsString, OsString)] {
        &self.vars
    }

    /// imurun's folders: the data folder (`IMURUN_HOME`, default `~/.imurun`).
    pub(crate) fn paths(&self) -> Result<Paths> {
        let home = self
            .vars
            .iter()
            .find(|(key, value)| key == "HOME" && !value.is_empty())
            .map(|(_, value)| PathBuf::from(value));
        let data_dir = match (self.get("IMURUN_HOME"), &home) {
            (Some(dir), _) => PathBuf::from(dir),
            (None, Some(home)) => home.join(".imurun"),
            (None, None) => bail!(
                "neither HOME nor IMURUN_HOME is set: imurun does not know where to keep its files"
            ),
        };
        Ok(Paths { home, data_dir })
    }
}

// Values may be secrets: only names are shown.
impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("variables", &self.vars.len())
            .finish()
    }
}

/// Where imurun keeps its files.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// `HOME`, for `~/` in the config file's paths and the workspace's guard.
    pub(crate) home: Option<PathBuf>,
    /// `IMURUN_HOME`, default `~/.imurun`: the config file, the database, models, skills, logs.
    pub(crate) data_dir: PathBuf,
}

impl Paths {
    /// The database: settings, sessions, transcripts and the audit.
    pub(crate) fn database(&self) -> PathBuf {
        self.data_dir.join("imurun.db")
    }

    /// Where `imurun serve` writes its log files.
    pub(crate) fn logs(&self) -> PathBuf {
        self.data_dir.join("logs")
    }
}
