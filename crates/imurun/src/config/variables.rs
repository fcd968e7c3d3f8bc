//! What the environment says beyond the configuration keys: the model back-ends' credentials
//! and names, the search provider, the connectors' tokens and addresses, the log filter, and
//! the environment child processes start from. Read here, once, so no other part of imurun
//! reads a variable.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use imurun_integrations::Connectors;
use imurun_tools::SearchConfig;

use super::environment::Environment;

/// The most CPU threads `IMURUN_THREADS` may ask of llama.cpp: far past any machine's cores,
/// short of a number that is surely a typing mistake.
const THREADS_MAX: u32 = 1024;

/// Values from environment variables that are not configuration keys.
#[derive(Clone)]
pub(crate) struct Variables {
    /// `IMURUN_REPEAT_PENALTY`: the embedded model's repetition penalty.
    pub(crate) repeat_penalty: Option<f32>,
    /// `IMURUN_THREADS`: the embedded model's CPU threads (all cores when unset).
    pub(crate) threads: Option<u32>,
    /// `IMURUN_OPENAI_API_KEY`, else `OPENAI_API_KEY`.
    pub(crate) openai_api_key: Option<String>,
    /// `IMURUN_OPENAI_MODEL`.
    pub(crate) openai_model: Option<String>,
    /// `IMURUN_OLLAMA_MODEL`.
    pub(crate) ollama_model: Option<String>,
    /// `IMURUN_OLLAMA_API_KEY`.
    pub(crate) ollama_api_key: Option<String>,
    /// `web_search`'s provider: `IMURUN_BRAVE_API_KEY`, `IMURUN_TAVILY_API_KEY`,
    /// `IMURUN_SERPER_API_KEY`, `IMURUN_SEARXNG_URL`, else keyless DuckDuckGo.
    pub(crate) search: SearchConfig,
    /// The connectors' tokens and base URLs (`IMURUN_GITHUB_TOKEN`, ...).
    pub(crate) connectors: Connectors,
    /// `IMURUN_LOG`, else `RUST_LOG`: which log lines are written.
    pub(crate) log_filter: Option<String>,
    /// The whole environment, for the shell and stdio MCP servers (credential-looking
    /// variables are removed per child).
    pub(crate) children: Arc<[(OsString, OsString)]>,
    /// `TMPDIR` when it is an absolute path, else `/tmp`: where each shell run's private
    /// temporary folder is made.
    pub(crate) temp_dir: PathBuf,
}

impl Variables {
    pub(crate) fn read(environment: &Environment) -> Result<Self> {
        let get = |name: &str| environment.get(name).map(|value| value.trim().to_owned());
        let repeat_penalty = match get("IMURUN_REPEAT_PENALTY") {
            Some(text) => Some(
                text.parse::<f32>()
                    .ok()
                    .filter(|value| value.is_finite() && *value > 0.0)
                    .ok_or_else(|| {
                        anyhow!("IMURUN_REPEAT_PENALTY: expected a positive number, not `{text}`")
                    })?,
            ),
            None => None,
        };
        let threads = match get("IMURUN_THREADS") {
            Some(text) => Some(
                text.parse::<u32>()
                    .ok()
                    .filter(|threads| (1..=THREADS_MAX).contains(threads))
                    .ok_or_else(|| {
                        anyhow!(
                            "IMURUN_THREADS: expected a whole number of threads from 1 to \
                             {THREADS_MAX}, not `{text}`"
                        )
                    })?,
            ),
            None => None,
        };
        Ok(Self {
            repeat_penalty,
            threads,
            openai_api_key: get("IMURUN_OPENAI_API_KEY").or_else(|| get("OPENAI_API_KEY")),
            openai_model: get("IMURUN_OPENAI_MODEL"),
            ollama_model: get("IMURUN_OLLAMA_MODEL"),
            ollama_api_key: get("IMURUN_OLLAMA_API_KEY"),
            search: SearchConfig::from_lookup(get),
            connectors: Connectors::from_lookup(get),
            log_filter: environment.log_filter(),
            children: environment.all().into(),
            temp_dir: get("TMPDIR")
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
                .unwrap_or_else(|| PathBuf::from("/tmp")),
        })
    }
}

// Keys and tokens never reach a log through `{:?}`.
impl fmt::Debug for Variables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |value: &Option<String>| value.as_ref().map(|_| "<set>");
        f.debug_struct("Variables")
            .field("repeat_penalty", &self.repeat_penalty)
            .field("threads", &self.threads)
            .field("openai_api_key", &set(&self.openai_api_key))
            .field("openai_model", &self.openai_model)
            .field("ollama_model", &self.ollama_model)
            .field("ollama_api_key", &set(&self.ollama_api_key))
            .field("search", &self.search)
            .field("connectors", &self.connectors)
            .field("temp_dir", &self.temp_dir)
            .field("log_filter", &self.log_filter)
            .field("children", &self.children.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads(value: &str) -> Result<Option<u32>> {
        Variables::read(&Environment::from_pairs(&[("IMURUN_THREADS", value)]))
            .map(|variables| variables.threads)
    }

    #[test]
    fn threads_are_a_whole_number_from_one_up() {
        assert_eq!(
            Variables::read(&Environment::from_pairs(&[]))
                .unwrap()
                .threads,
            None
        );
        assert_eq!(threads("1").unwrap(), Some(1));
        assert_eq!(threads(" 4 ").unwrap(), Some(4));
        for bad in ["0", "-1", "two", "1.5", "1025"] {
            let error = threads(bad).unwrap_err().to_string();
            assert!(
                error.starts_with("IMURUN_THREADS: expected a whole number") && error.contains(bad),
                "{bad:?}: {error}"
            );
        }
    }
}
