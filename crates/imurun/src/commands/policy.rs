//! `imurun policy`: the policy's decisions from the command line, exactly as the executor
//! makes them before approval.
//!
//! `imurun policy check --workspace DIR [--mode M]` reads JSON lines `{"tool", "args"}` and
//! prints one `{"decision", "reason"}` per line; `imurun policy env NAME...` prints `strip`
//! or `keep` for each environment variable name.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use imurun_core::ToolCall;
use imurun_exec::{Caller, OnAsk, ToolExecutor};
use imurun_policy::{Mode, is_credential_env};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::config::{ConfigFlags, Environment, ResolvedConfig};
use crate::wiring::{Plan, Tools, Wiring};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Read JSON lines {"tool": NAME, "args": {...}} on stdin and print the decision for each.
    Check(CheckArgs),
    /// Print `strip` or `keep` for each environment variable name: whether a child process
    /// would lose it as a credential.
    Env {
        #[arg(required = true)]
        names: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The workspace folder (created if missing; default: the configuration's).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The permission mode: ask, allow-reads, allow-edits or allow-all (default: the
    /// configuration's, allow-reads unless set).
    #[arg(long)]
    mode: Option<Mode>,
}

#[derive(Debug, Deserialize)]
struct Line {
    tool: String,
    #[serde(default)]
    args: Map<String, Value>,
}

pub(crate) fn run(
    command: &PolicyCommand,
    config_flag: Option<&std::path::Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    match command {
        PolicyCommand::Env { names } => {
            let mut out = io::stdout().lock();
            for name in names {
                writeln!(
                    out,
                    "{}",
                    if is_credential_env(name) {
                        "strip"
                    } else {
                        "keep"
                    }
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        PolicyCommand::Check(args) => {
            let flags = ConfigFlags {
                mode: args.mode,
                workspace: args.workspace.clone(),
                ..ConfigFlags::default()
            };
            let config = ResolvedConfig::load(config_flag, &flags, environment)?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(async {
                let wiring = Wiring::build(config, Plan::quiet(Tools::Builtin)).await?;
                let checked = check(&wiring.executor);
                wiring.close().await?;
                checked
            })
        }
    }
}

/// Decides each line of stdin as the executor would before approval; nothing runs, so
/// nothing is audited.
fn check(executor: &ToolExecutor) -> Result<ExitCode> {
    let caller = Caller::user(None, OnAsk::Report);
    super::answer_json_lines(r#"{"tool": NAME, "args": {...}}"#, |Line { tool, args }| {
        Ok(match executor.check(&ToolCall::new(tool, args), &caller) {
            Ok(checked) => {
                json!({"decision": checked.verdict.decision, "reason": checked.verdict.reason})
            }
            // Refused before the policy (unknown tool, invalid arguments): the executor
            // denies these too.
            Err(refusal) => json!({"decision": "deny", "reason": refusal.to_string()}),
        })
    })
}
