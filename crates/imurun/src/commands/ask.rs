//! `imurun ask`: one prompt through the real turn loop, or with `--dry-run` the model's
//! parsed tool calls of the first step, without running them. With `--jsonl`, one
//! `{"id", "prompt"}` per input line and one result per output line.

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use imurun_agent::{AgentLoop, ModelSource, SkillStore, TurnRequest, take_skills};
use imurun_calls::ParseKind;
use imurun_core::{Clock, FixedClock, Model, NullEvents, SystemClock, TurnStatus};
use imurun_policy::Mode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CallingArgs, read_tools};
use crate::config::{ConfigFlags, Environment, ResolvedConfig, parse_max_steps};
use crate::model_spec::{ModelSpec, load};
use crate::wiring::{Plan, Tools, Wiring};

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
    /// Do not look up what the prompt plainly asks for (the time, the weather, a web search,
    /// the workspace's files, a named file, a sum) before the model reads it.
    #[arg(long)]
    no_prefetch: bool,
    /// Offer these tools (a JSON array of {name, description, parameters}) instead of the
    /// built-ins. They have no implementation: use them with --dry-run.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Steps per turn, 1 to 20 (default: the configuration's, 6 unless set; 1 turns tools
    /// off).
    #[arg(long, value_parser = parse_max_steps)]
    max_steps: Option<usize>,
    /// The permission mode for the built-in tools (default: the configuration's). Nobody can
    /// approve a call from here, so a call that asks is declined: allow what the turn may do
    /// with the mode.
    #[arg(long)]
    mode: Option<Mode>,
    /// The workspace folder for the built-in tools (default: the configuration's).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Freeze the clock at TIME for this run (the prompt's date and `get_time`), for
    /// reproducible runs: RFC 3339 (`2026-12-01T09:30:00Z`), or with an IANA zone that "local"
    /// then means (`2026-12-01T18:30:00+09:00[Asia/Tokyo]`).
    #[arg(long, value_name = "TIME", value_parser = parse_clock)]
    clock: Option<FixedClock>,
    #[command(flatten)]
    calling: CallingArgs,
}

#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    id: Value,
    prompt: String,
}

pub(crate) fn run(
    args: &AskArgs,
    config_flag: Option<&std::path::Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let flags = ConfigFlags {
        model: args.model.clone(),
        max_steps: args.max_steps,
        mode: args.mode,
        workspace: args.workspace.clone(),
        ..ConfigFlags::default()
    };
    let config = ResolvedConfig::load(config_flag, &flags, environment)?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let (asker, wiring) = build(args, config).await?;
        let asked = ask(args, &asker).await;
        // Every call the turns made is in the audit before the command ends.
        wiring.close().await?;
        asked
    })
}

async fn ask(args: &AskArgs, agent: &Asker) -> Result<ExitCode> {
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
        return one(agent, Value::Null, prompt, false).await;
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
                failed |= one(agent, id, prompt, true).await? != ExitCode::SUCCESS
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
            json!({"id": id, "answer": result.answer, "status": status, "tool_calls": result.tool_calls, "lookups": result.lookups, "error": error})
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

/// The loop over the configured model and tools, through the one wiring path.
async fn build(args: &AskArgs, config: ResolvedConfig) -> Result<(Asker, Wiring)> {
    let loaded = load(&ModelSpec::parse(&config.model), &config.variables).await?;
    let clock: Arc<dyn Clock> = match &args.clock {
        Some(frozen) => Arc::new(frozen.clone()),
        None => Arc::new(SystemClock),
    };
    // `run_agent`'s helpers run on the model built below for this tool set.
    let helper_model: Arc<OnceLock<Arc<dyn Model>>> = Arc::default();
    let helpers: ModelSource = {
        let helper_model = Arc::clone(&helper_model);
        Arc::new(move || helper_model.get().cloned())
    };
    let (tools, helpers) = match &args.tools {
        // Tools from a file have no implementation, so there is nothing for a helper to do.
        Some(file) => (Tools::SpecsOnly(read_tools(file)?), None),
        None => (Tools::Builtin, Some(helpers)),
    };
    let grammar = args.calling.grammar(config.agent.grammar);
    let wiring = Wiring::build(
        config,
        Plan {
            tools,
            mcp: false,
            events: Arc::new(NullEvents),
            helpers,
            clock,
        },
    )
    .await?;
    let model = loaded.for_tools(&wiring.executor.registry().callable_index(), grammar);
    let _first = helper_model.set(Arc::clone(&model));
    let config = args
        .calling
        .apply(wiring.agent.clone())
        .with_prefetch(wiring.agent.prefetch && !args.no_prefetch);
    // The skills `imurun serve` keeps, invoked with `/<id>` as in a served prompt; a missing
    // folder means none.
    let skills_dir = wiring.config.paths.data_dir.join("skills");
    let skills = if skills_dir.is_dir() {
        Some(wiring.skills()?)
    } else {
        None
    };
    let asker = Asker {
        agent: wiring.agent_loop(model, Arc::new(NullEvents), config),
        skills,
        dry_run: args.dry_run,
    };
    Ok((asker, wiring))
}

/// `--clock`: an RFC 3339 instant, or an RFC 9557 one whose bracketed IANA zone pins "local".
fn parse_clock(text: &str) -> Result<FixedClock, String> {
    let text = text.trim();
    if text.ends_with(']') {
        let zoned: jiff::Zoned = text
            .parse()
            .map_err(|error| format!("`{text}` is not a time with a zone: {error}"))?;
        let zone = zoned.time_zone().iana_name().map(str::to_owned);
        return Ok(FixedClock {
            at: zoned.timestamp().into(),
            zone,
        });
    }
    let instant: jiff::Timestamp = text.parse().map_err(|error| {
        format!("`{text}` is not an RFC 3339 time such as 2026-12-01T09:30:00Z: {error}")
    })?;
    Ok(FixedClock::new(instant.into()))
}
