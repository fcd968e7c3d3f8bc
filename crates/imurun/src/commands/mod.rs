//! One module per subcommand, and what several of them read.

use std::path::Path;

use std::str::FromStr;

use anyhow::{Context, Result, bail};
use imurun_agent::{AgentConfig, CallPrefill};
use imurun_core::ToolSpec;

pub(crate) mod ask;
pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod eval;
pub(crate) mod keep;
pub(crate) mod keep_client;
pub(crate) mod keep_operator;
pub(crate) mod model;
pub(crate) mod parse;
pub(crate) mod policy;
pub(crate) mod serve;
pub(crate) mod tools;

/// A tools file: a JSON array of `{name, description, parameters}`.
pub(crate) fn read_tools(path: &Path) -> Result<Vec<ToolSpec>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the tools file {}", path.display()))?;
    let specs: Vec<ToolSpec> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: expected a JSON array of {{name, description, parameters}}",
            path.display()
        )
    })?;
    if let Some(bad) = specs.iter().find(|spec| spec.name.trim().is_empty()) {
        bail!("{}: a tool has an empty name ({bad:?})", path.display());
    }
    Ok(specs)
}

/// How the model is helped to call tools: the options `imurun ask` and `imurun eval` share,
/// so an evaluation measures exactly what a turn does. Each one changes the configuration's
/// value only when given.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CallingArgs {
    /// Do not constrain a started call to the tools' grammar (embedded models only).
    #[arg(long)]
    pub(crate) no_grammar: bool,
    /// Leave the two worked examples out of the tool prompt.
    #[arg(long)]
    pub(crate) no_examples: bool,
    /// When the loop starts the reply with the call marker: `off`, `live` (prompts about the
    /// present) or `always` (default: the configuration's, `live` unless set). Only back-ends
    /// that continue a started reply (embedded) use it.
    #[arg(long, value_parser = CallPrefill::from_str)]
    pub(crate) call_prefill: Option<CallPrefill>,
    /// The most tokens one step generates (default: the context's reply reserve, 1024).
    #[arg(long, value_name = "N")]
    pub(crate) max_tokens: Option<usize>,
    /// Let the model write its first reply whole instead of choosing call or answer, the
    /// tool and the values by likelihood (embedded models only).
    #[arg(long)]
    pub(crate) no_likelihood: bool,
}

impl CallingArgs {
    /// `config` with these options applied.
    pub(crate) fn apply(&self, config: AgentConfig) -> AgentConfig {
        let examples = config.tool_examples && !self.no_examples;
        let prefill = self.call_prefill.unwrap_or(config.call_prefill);
        let likelihood = config.likelihood && !self.no_likelihood;
        config
            .with_tool_examples(examples)
            .with_call_prefill(prefill)
            .with_step_tokens_max(self.max_tokens)
            .with_likelihood(likelihood)
    }

    /// Whether a started call is held to the tools' grammar, given the configuration's
    /// `agent.grammar`.
    pub(crate) fn grammar(&self, configured: bool) -> bool {
        configured && !self.no_grammar
    }
}

/// A line describing how calls are helped, for reports: `grammar on, examples on, call
/// prefill live`.
/// The async runtime of a command that runs turns or tools: two workers, as many as the
/// embedded model leaves free on a small machine.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

pub(crate) fn describe_calling(config: &AgentConfig, grammar: bool) -> String {
    format!(
        "grammar {}, examples {}, call prefill {}, likelihood {}",
        on_off(grammar),
        on_off(config.tool_examples),
        config.call_prefill.as_str(),
        on_off(config.likelihood)
    )
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// Answers each JSON line of stdin with one JSON line on stdout: `answer` for a line that
/// reads as a `T`, `{"error": "line N: expected <shape>: ..."}` for one that does not. Blank
/// lines are skipped. The exit status is 1 when any line could not be read.
pub(crate) fn answer_json_lines<T: serde::de::DeserializeOwned>(
    shape: &str,
    mut answer: impl FnMut(T) -> Result<serde_json::Value>,
) -> Result<std::process::ExitCode> {
    use std::io::{BufRead, Write};
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failures = 0usize;
    for (number, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let printed = match serde_json::from_str::<T>(&line) {
            Ok(question) => answer(question)?,
            Err(error) => {
                failures += 1;
                serde_json::json!({"error": format!("line {}: expected {shape}: {error}", number + 1)})
            }
        };
        writeln!(out, "{printed}")?;
    }
    out.flush()?;
    Ok(if failures > 0 {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    })
}
