//! `imurun ask`: one prompt through the real turn loop, or with `--dry-run` the model's
//! parsed tool calls of the first step, without running them. With `--jsonl`, one
//! `{"id", "prompt"}` per input line and one result per output line.

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use imurun_agent::{
    AgentConfig, AgentLoop, ModelSource, RunAgentTool, SkillStore, TurnRequest, take_skills,
};
use imurun_calls::ParseKind;
use imurun_core::{Model, NullAudit, NullEvents, TurnStatus};
use imurun_policy::Mode;
use imurun_tools::{Registry, UnconfiguredTool};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CallingArgs, read_tools};
use crate::model_spec::{ModelSpec, load};
use crate::paths::{Paths, builtin_registry, executor_over, max_steps_from_env};

#[derive(Debug, clap::Args)]
pub(crate) struct AskArgs {
    /// The prompt (read from stdin when absent and --jsonl is not given).
    prompt: Vec<String>,
    /// A GGUF path, openai:URL, ollama:URL or scripted:FILE (default: IMURUN_MODEL, else
    /// ~/.imurun/models/SmolLM2-135M-Instruct.Q4_1.gguf).
    #[arg(long)]
    model: Option<String>,
    /// Read JSON lines {"id", "prompt"} on stdin; print one JSON result per line.
    #[arg(long)]
    jsonl: bool,
    /// Print the first step's parsed calls instead of running the turn:
    /// {"id", "calls": [{"name", "args"}], "answer"}.
    #[arg(long)]
    dry_run: bool,
    /// Do not look up what the prompt asks about the present (the time, the weather, a web
    /// search) before the model reads it.
    #[arg(long)]
    no_prefetch: bool,
    /// Offer these tools (a JSON array of {name, description, parameters}) instead of the
    /// built-ins. They have no implementation: use them with --dry-run.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Steps per turn, 1 to 20 (default: IMURUN_MAX_STEPS, else 6; 1 turns tools off).
    #[arg(long)]
    max_steps: Option<usize>,
    /// The permission mode for the built-in tools. Nobody can approve a call from here, so a
    /// call that asks is declined: allow what the turn may do with the mode.
    #[arg(long, default_value = "allow-reads")]
    mode: Mode,
    /// The workspace folder for the built-in tools.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    calling: CallingArgs,
}

#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    id: Value,
    prompt: String,
}

pub(crate) fn run(args: &AskArgs, paths: &Paths) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(ask(args, paths))
}

async fn ask(args: &AskArgs, paths: &Paths) -> Result<ExitCode> {
    let agent = build_agent(args, paths).await?;
    // The skills `imurun serve` keeps, invoked with `/<id>` as in a served prompt; a missing
    // folder means none.
    let skills_dir = paths.data_dir.join("skills");
    let skills = if skills_dir.is_dir() {
        Some(
            SkillStore::open(&skills_dir)
                .with_context(|| format!("opening the skill directory {}", skills_dir.display()))?,
        )
    } else {
        None
    };
    let agent = Asker {
        agent,
        skills,
        dry_run: args.dry_run,
    };
    if !args.jsonl {
        let prompt = if args.prompt.is_empty() {
            let mut text = String::new();
            io::stdin()
                .read_to_string(&mut text)
                .context("reading the prompt from stdin")?;
            text
        } else {
            args.prompt.join(" ")
        };
        if prompt.trim().is_empty() {
            bail!("no prompt: pass it as arguments or on stdin");
        }
        return one(&agent, Value::Null, prompt, false).await;
    }
    let mut failed = false;
    let lines: Vec<String> = io::stdin()
        .lock()
        .lines()
        .collect::<Result<_, _>>()
        .context("reading stdin")?;
    for (number, line) in lines
        .iter()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
    {
        match serde_json::from_str::<Line>(line) {
            Ok(Line { id, prompt }) => {
                failed |= one(&agent, id, prompt, true).await? != ExitCode::SUCCESS
            }
            Err(error) => {
                failed = true;
                println!(
                    "{}",
                    json!({"error": format!("line {}: expected {{\"id\", \"prompt\"}}: {error}", number + 1)})
                );
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The loop, with what `imurun ask` adds to each prompt.
struct Asker {
    agent: AgentLoop,
    skills: Option<SkillStore>,
    dry_run: bool,
}

impl Asker {
    /// The turn for `prompt`: its `/<id>` skill tokens taken out and their skills attached.
    fn request(&self, prompt: String) -> TurnRequest {
        match &self.skills {
            Some(store) => {
                let (prompt, skills) = take_skills(&prompt, store);
                TurnRequest {
                    skills,
                    ..TurnRequest::new(prompt)
                }
            }
            None => TurnRequest::new(prompt),
        }
    }
}

async fn one(asker: &Asker, id: Value, prompt: String, as_json: bool) -> Result<ExitCode> {
    let agent = &asker.agent;
    let request = asker.request(prompt);
    let mut out = io::stdout().lock();
    if asker.dry_run {
        return Ok(match agent.plan(request).await {
            Ok(parsed) => {
                let answer = if parsed.kind == ParseKind::Answer {
                    parsed.visible.as_str()
                } else {
                    ""
                };
                writeln!(
                    out,
                    "{}",
                    json!({"id": id, "calls": parsed.calls, "answer": answer})
                )?;
                ExitCode::SUCCESS
            }
            Err(error) => {
                writeln!(out, "{}", json!({"id": id, "error": error.to_string()}))?;
                ExitCode::from(1)
            }
        });
    }
    let result = agent.run(request).await;
    let status = serde_json::to_value(result.status)?;
    if as_json {
        let error = result.error.as_ref().map(ToString::to_string);
        writeln!(
            out,
            "{}",
            json!({"id": id, "answer": result.answer, "status": status, "tool_calls": result.tool_calls, "error": error})
        )?;
    } else {
        writeln!(out, "{}", result.answer)?;
        if let Some(error) = &result.error {
            eprintln!("imurun ask: {error}");
        } else if result.status != TurnStatus::Done {
            eprintln!("imurun ask: the turn ended with status {status}");
        }
    }
    Ok(if result.status == TurnStatus::Error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn build_agent(args: &AskArgs, paths: &Paths) -> Result<AgentLoop> {
    let loaded = load(&ModelSpec::resolve(args.model.as_deref(), paths)).await?;
    let workspace = paths.open_workspace(args.workspace.clone())?;
    let max_steps = match args.max_steps {
        Some(steps) => steps,
        None => max_steps_from_env()?.unwrap_or(AgentConfig::default().max_steps),
    };
    let config = args
        .calling
        .apply(AgentConfig::default().with_max_steps(max_steps))
        .with_prefetch(!args.no_prefetch);
    let helper_model: Arc<OnceLock<Arc<dyn Model>>> = Arc::default();
    let mut sub_agents = None;
    let executor = match &args.tools {
        Some(file) => {
            let mut registry = Registry::new();
            for spec in read_tools(file)? {
                registry.insert(Arc::new(UnconfiguredTool::spec_only(spec)), true);
            }
            executor_over(
                registry,
                Arc::new(workspace),
                args.mode,
                Arc::new(NullAudit),
            )
        }
        None => {
            // The real `run_agent`: its model is the one built below for this tool set.
            let workspace = Arc::new(workspace);
            let mut registry = builtin_registry(&workspace);
            let source: ModelSource = {
                let helper_model = Arc::clone(&helper_model);
                Arc::new(move || helper_model.get().cloned())
            };
            let tool = RunAgentTool::with_model_source(source, Arc::new(NullEvents), &config)
                .install(&mut registry);
            sub_agents = Some(tool);
            executor_over(registry, workspace, args.mode, Arc::new(NullAudit))
        }
    };
    let model = loaded.for_tools(
        &executor.registry().callable_index(),
        !args.calling.no_grammar,
    );
    let _first = helper_model.set(Arc::clone(&model));
    let executor = Arc::new(executor);
    if let Some(tool) = sub_agents {
        tool.bind(&executor);
    }
    Ok(AgentLoop::new(model, executor, Arc::new(NullEvents)).with_config(config))
}
