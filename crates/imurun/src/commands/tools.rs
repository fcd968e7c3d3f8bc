//! `imurun tools`: the tools this host has, and running one by hand through the executor —
//! the same lookup, validation, policy, approval and audit a model's call goes through.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use imurun_core::{Availability, Decision, ToolCall};
use imurun_exec::{Caller, OnAsk};
use imurun_policy::Mode;
use serde_json::{Map, Value, json};

use crate::config::{ConfigFlags, Environment, ResolvedConfig};
use crate::wiring::{Plan, Tools, Wiring};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ToolsCommand {
    /// List the tools, with their category and whether they can run now.
    List {
        /// Print one JSON object per tool instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool through the executor, asking on the terminal when the mode asks.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The tool's name (aliases such as `read_file` work too).
    name: String,
    /// The arguments as a JSON object.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    args: String,
    /// The workspace folder (default: the configuration's, ~/.imurun/workspace unless set).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The permission mode: ask, allow-reads, allow-edits or allow-all (default: the
    /// configuration's, allow-reads unless set).
    #[arg(long)]
    mode: Option<Mode>,
    /// Approve the call without asking when the mode asks (hard denials still hold).
    #[arg(long)]
    yes: bool,
}

pub(crate) fn run(
    command: &ToolsCommand,
    config_flag: Option<&std::path::Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let flags = match command {
        ToolsCommand::List { .. } => ConfigFlags::default(),
        ToolsCommand::Run(args) => ConfigFlags {
            mode: args.mode,
            workspace: args.workspace.clone(),
            ..ConfigFlags::default()
        },
    };
    let config = ResolvedConfig::load(config_flag, &flags, environment)?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let wiring = Wiring::build(config, Plan::quiet(Tools::Builtin)).await?;
        let result = match command {
            ToolsCommand::List { json } => list(*json, &wiring),
            ToolsCommand::Run(args) => run_tool(args, &wiring).await,
        };
        // The run's audit row is written before the command ends.
        wiring.close().await?;
        result
    })
}

fn list(as_json: bool, wiring: &Wiring) -> Result<ExitCode> {
    let registry = wiring.executor.registry();
    let mut out = io::stdout().lock();
    for tool in registry.tools() {
        let spec = tool.spec();
        let availability = tool.available();
        if as_json {
            let line = json!({
                "name": spec.name,
                "category": tool.category(),
                "available": availability,
                "description": spec.description,
                "parameters": spec.parameters,
            });
            writeln!(out, "{line}")?;
        } else {
            let status = match &availability {
                Availability::Ready => "ready".to_owned(),
                Availability::Unavailable(reason) => format!("unavailable: {reason}"),
            };
            writeln!(
                out,
                "{:<12} {:<8} {}\n{:<21} {}",
                spec.name,
                tool.category().as_str(),
                spec.description,
                "",
                status
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_tool(args: &RunArgs, wiring: &Wiring) -> Result<ExitCode> {
    let call_args: Map<String, Value> = match serde_json::from_str(&args.args) {
        Ok(Value::Object(map)) => map,
        Ok(_) => bail!("--args must be a JSON object, such as '{{\"path\": \"notes.txt\"}}'"),
        Err(error) => bail!("--args is not valid JSON: {error}"),
    };
    let executor = &wiring.executor;
    let call = ToolCall::new(args.name.clone(), call_args);

    // Decide first, so a call that asks is shown to the person before it runs, and each run
    // leaves exactly one audit row.
    let report = Caller::user(None, OnAsk::Report);
    let on_ask = match executor.check(&call, &report) {
        Ok(checked) if checked.verdict.decision == Decision::Ask => {
            if args.yes || ask(&checked.tool, &call.args, &checked.verdict.reason)? {
                OnAsk::Approved
            } else {
                OnAsk::Declined
            }
        }
        // Allowed, denied, or refused before the policy: the executor says so itself.
        _ => OnAsk::Report,
    };
    let execution = executor.execute(&call, &Caller::user(None, on_ask)).await;
    println!("{}", execution.output.text);
    Ok(if execution.output.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Shows the call and asks y/N on the terminal. Without a terminal nobody can answer, so
/// the call is declined, as a turn with no client connected is.
fn ask(tool: &str, args: &Map<String, Value>, reason: &str) -> Result<bool> {
    if !io::stdin().is_terminal() {
        eprintln!(
            "`{tool}` needs approval and there is no terminal to ask on: declined (use --yes to approve)"
        );
        return Ok(false);
    }
    let mut err = io::stderr().lock();
    writeln!(
        err,
        "`{tool}` wants to run with {}",
        Value::Object(args.clone())
    )?;
    writeln!(err, "({reason})")?;
    write!(err, "Approve? [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}
