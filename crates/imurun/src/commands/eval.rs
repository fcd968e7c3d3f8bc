//! `imurun eval bfcl`: the Berkeley Function Calling Leaderboard's categories through the
//! same dry-run machinery as `imurun ask --dry-run`, scored with BFCL's AST rules. This is how
//! a person picks the local model that works best with imurun's tools.
//!
//! A case the model (or the connection to it) fails on is an error: counted wrong in every
//! category — a dead model server would otherwise score 100% in `irrelevance`, where "no
//! call" is right — reported per category, and the command exits 1 when more than
//! `--max-error-share` of all cases failed.

use std::collections::HashMap;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use imurun_agent::{AgentConfig, AgentLoop, Likelihood, TurnRequest};
use imurun_calls::{ParseKind, parse_tool_calls};
use imurun_core::{GenerateRequest, Message, Model, NullEvents};
use imurun_eval::{
    CATEGORIES, Case, Category, CategoryScore, Prediction, load_category, score_case,
};
use imurun_model::{OpenAiModel, ToolMode};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

use super::{CallingArgs, describe_calling};
use crate::config::{ConfigFlags, Environment, ResolvedConfig};
use crate::model_spec::{Loaded, ModelSpec, connect_openai, load};
use crate::wiring::{Plan, Tools, Wiring};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum EvalCommand {
    /// Run BFCL's categories and print the accuracy of each.
    Bfcl(BfclArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct BfclArgs {
    /// The folder holding BFCL_v4_*.json and possible_answer/.
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// A GGUF path, openai:URL, ollama:URL or scripted:FILE (default as for `imurun ask`).
    #[arg(long)]
    model: Option<String>,
    /// Run only the first N cases of each category.
    #[arg(long)]
    limit: Option<usize>,
    /// Run one half of each category, by the number in the case's id: `even` (for tuning)
    /// or `odd` (for reporting). Both by default.
    #[arg(long, value_name = "HALF", value_parser = ["even", "odd"])]
    half: Option<String>,
    /// Write the predictions as JSON lines {"id", "calls"} to this file. A run stopped part way
    /// goes on where it stopped when started again with the same file and settings: the cases
    /// already answered are scored from the file, not asked again (failed ones are).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Start the --out file over instead of going on from what it holds.
    #[arg(long, requires = "out")]
    fresh: bool,
    #[command(flatten)]
    calling: CallingArgs,
    /// Only these categories (simple_python, multiple, parallel, parallel_multiple,
    /// irrelevance); all of them by default.
    #[arg(long = "category", value_name = "NAME")]
    categories: Vec<String>,
    /// Offer each case's functions through the server's own tool calling (`openai:URL`
    /// models, such as llama.cpp's `llama-server --jinja`): the question goes as it is,
    /// without imurun's tool prompt, worked examples, prefill or grammar, and the calls are
    /// the ones the server parsed. The baseline imurun's text mode is measured against.
    #[arg(long)]
    native_tools: bool,
    /// The share of cases (0 to 1) the model may fail on before the run counts as failed
    /// (exit code 1): its scores would say more about the failures than about the model.
    #[arg(long, value_name = "SHARE", default_value = "0.1", value_parser = parse_share)]
    max_error_share: f64,
}

fn parse_share(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|share| (0.0..=1.0).contains(share))
        .ok_or_else(|| format!("`{text}` is not a share from 0 to 1"))
}

pub(crate) fn run(
    command: &EvalCommand,
    config_flag: Option<&std::path::Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let EvalCommand::Bfcl(args) = command;
    let categories = chosen(&args.categories)?;
    let flags = ConfigFlags {
        model: args.model.clone(),
        ..ConfigFlags::default()
    };
    let config = ResolvedConfig::load(config_flag, &flags, environment)?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let spec = ModelSpec::parse(&config.model);
        let native = match (&spec, args.native_tools) {
            (_, false) => None,
            (ModelSpec::OpenAi(url), true) => Some(connect_openai(url, &config.variables).await?),
            (_, true) => bail!(
                "--native-tools needs an openai:URL model: a server with its own tool calling, \
                 such as llama.cpp's llama-server started with --jinja"
            ),
        };
        let model = load(&spec, &config.variables).await?;
        let grammar = args.calling.grammar(config.agent.grammar);
        let wiring = Wiring::build(config, Plan::quiet(Tools::SpecsOnly(Vec::new()))).await?;
        let agent = args.calling.apply(wiring.agent.clone());
        let calling = if native.is_some() {
            "native tool calls".to_owned()
        } else {
            describe_calling(&agent, grammar)
        };
        let setup = Setup {
            wiring: &wiring,
            model: &model,
            native: native.as_ref(),
            agent: &agent,
            grammar,
        };
        let run = RunHeader {
            model: model.name(),
            calling,
            max_tokens: agent.step_tokens_max,
        };
        let mut out = match &args.out {
            Some(path) => Some(Predictions::open(path, &run, args.fresh)?),
            None => None,
        };
        println!("model: {} ({})", run.model, run.calling);
        if let Some(out) = out.as_ref().filter(|out| !out.earlier.is_empty()) {
            println!(
                "going on from {}: {} cases answered before are scored from it",
                out.path.display(),
                out.earlier.len()
            );
        }
        let mut all = CategoryScore::default();
        for category in categories {
            let mut cases = load_category(&args.data, category, args.limit)?;
            if let Some(half) = &args.half {
                let even = half == "even";
                cases.retain(|case| case_number(&case.id).is_some_and(|n| (n % 2 == 0) == even));
            }
            let (score, first_error) = run_category(&setup, &cases, out.as_mut()).await?;
            println!("{}", score_line(category.name(), score));
            if let Some(error) = first_error {
                println!("{:<18} first error: {error}", "");
            }
            all.correct += score.correct;
            all.total += score.total;
            all.errors += score.errors;
        }
        wiring.close().await?;
        if all.error_share() > args.max_error_share {
            eprintln!(
                "imurun eval: the model failed on {} of {} cases ({:.1}%, more than the {:.1}% \
                 --max-error-share allows): these scores measure the failures, not the model",
                all.errors,
                all.total,
                all.error_share() * 100.0,
                args.max_error_share * 100.0
            );
            return Ok(ExitCode::from(1));
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The number a case's id ends with (`simple_python_12` → 12).
fn case_number(id: &str) -> Option<u64> {
    id.rsplit('_').next()?.parse().ok()
}

fn chosen(names: &[String]) -> Result<Vec<Category>> {
    if names.is_empty() {
        return Ok(CATEGORIES.to_vec());
    }
    names
        .iter()
        .map(|name| {
            CATEGORIES
                .into_iter()
                .find(|category| category.name() == name)
                .with_context(|| {
                    let known: Vec<&str> =
                        CATEGORIES.iter().map(|category| category.name()).collect();
                    format!("unknown category `{name}` (known: {})", known.join(", "))
                })
        })
        .collect()
}

/// What every case runs on.
struct Setup<'a> {
    wiring: &'a Wiring,
    model: &'a Loaded,
    /// With `--native-tools`: the server asked with each case's functions as its `tools`.
    native: Option<&'a OpenAiModel>,
    agent: &'a AgentConfig,
    grammar: bool,
}

/// `simple_python        8/20    40.0%  2 errors`: the errors are among the wrong ones.
fn score_line(name: &str, score: CategoryScore) -> String {
    let errors = match score.errors {
        0 => String::new(),
        1 => "  1 error".to_owned(),
        n => format!("  {n} errors"),
    };
    format!(
        "{name:<18} {:>4}/{:<4} {:>6.1}%{errors}",
        score.correct,
        score.total,
        score.percent()
    )
}

/// The category's score and the first error's message, if there was one.
async fn run_category(
    setup: &Setup<'_>,
    cases: &[Case],
    mut out: Option<&mut Predictions>,
) -> Result<(CategoryScore, Option<String>)> {
    let bar = ProgressBar::new(cases.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:18} [{bar:30}] {pos}/{len} {elapsed}, about {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    if let Some(first) = cases.first() {
        bar.set_message(first.category.name());
    }
    let mut score = CategoryScore::default();
    let mut first_error = None;
    for case in cases {
        if let Some(earlier) = out.as_ref().and_then(|out| out.earlier.get(&case.id)) {
            score.add(score_case(case, &earlier.calls).is_ok());
            bar.inc(1);
            continue;
        }
        let prediction = match predict(setup, case).await {
            Ok((calls, answer, likelihood)) => {
                let correct = score_case(case, &calls).is_ok();
                score.add(correct);
                Prediction {
                    correct: Some(correct),
                    id: case.id.clone(),
                    calls,
                    answer,
                    error: None,
                    margin: likelihood.as_ref().map(|decided| decided.margin),
                    features: likelihood.map(|decided| {
                        Value::Object(
                            decided
                                .features
                                .into_iter()
                                .map(|(name, value)| (name, json!(value)))
                                .collect(),
                        )
                    }),
                }
            }
            Err(error) => {
                score.add_error();
                first_error.get_or_insert_with(|| error.clone());
                Prediction {
                    id: case.id.clone(),
                    calls: Vec::new(),
                    answer: None,
                    error: Some(error),
                    margin: None,
                    features: None,
                    correct: None,
                }
            }
        };
        if let Some(out) = out.as_mut() {
            out.write_line(&prediction)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok((score, first_error))
}

/// What a predictions file was made with: its first line. A file is continued only by a run
/// with the same settings, so that one file never mixes two models' answers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct RunHeader {
    model: String,
    calling: String,
    max_tokens: Option<usize>,
}

/// The `--out` file: the predictions it held when the run started (failed ones left out, so
/// that they are asked again), and the file open for appending, each line written whole.
struct Predictions {
    path: PathBuf,
    earlier: HashMap<String, Prediction>,
    file: std::fs::File,
}

impl Predictions {
    fn open(path: &Path, run: &RunHeader, fresh: bool) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) if !fresh => text,
            Ok(_) => String::new(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => {
                return Err(error).with_context(|| format!("reading {}", path.display()));
            }
        };
        // A line cut short by a stopped run is dropped; the case is asked again.
        let whole = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
        let mut lines = whole.lines();
        let mut earlier = HashMap::new();
        match lines.next() {
            None => {}
            Some(first) => {
                let header = serde_json::from_str::<Value>(first)
                    .ok()
                    .and_then(|line| line.get("run").cloned())
                    .and_then(|header| serde_json::from_value::<RunHeader>(header).ok());
                let Some(header) = header else {
                    bail!(
                        "{} is not a predictions file of `imurun eval bfcl` (its first line \
                         names no run): pass --fresh to write over it, or choose another file",
                        path.display()
                    );
                };
                if &header != run {
                    bail!(
                        "{} holds a run of {} ({}, max tokens {}), not of this one: pass --fresh \
                         to start it over, or choose another file",
                        path.display(),
                        header.model,
                        header.calling,
                        header
                            .max_tokens
                            .map_or_else(|| "default".to_owned(), |tokens| tokens.to_string())
                    );
                }
                for (index, line) in lines.enumerate() {
                    let prediction: Prediction = serde_json::from_str(line).with_context(|| {
                        format!(
                            "line {} of {} is not a prediction: pass --fresh to start it over",
                            index + 2,
                            path.display()
                        )
                    })?;
                    if prediction.error.is_none() {
                        earlier.insert(prediction.id.clone(), prediction);
                    }
                }
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        file.set_len(whole.len() as u64)
            .with_context(|| format!("writing {}", path.display()))?;
        file.seek(std::io::SeekFrom::End(0))?;
        let mut predictions = Self {
            path: path.to_owned(),
            earlier,
            file,
        };
        if whole.is_empty() {
            predictions.write_line(&json!({ "run": run }))?;
        }
        Ok(predictions)
    }

    /// One whole line per write, so that a stopped run leaves at most one line cut short.
    fn write_line(&mut self, value: &impl serde::Serialize) -> Result<()> {
        let mut line = serde_json::to_string(value)?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

/// The calls the model makes for a case: its first step, read and not run. An answer or a
/// call that could not be read is "no call", with what the model wrote instead; a failed
/// generation is an error.
async fn predict(
    setup: &Setup<'_>,
    case: &Case,
) -> Result<
    (
        Vec<imurun_core::ToolCall>,
        Option<String>,
        Option<Likelihood>,
    ),
    String,
> {
    let executor = setup.wiring.executor_over_specs(&case.tools);
    let index = executor.registry().callable_index();
    let Some(((_, question), earlier)) = case.messages.split_last() else {
        return Ok((Vec::new(), None, None));
    };
    let mut decided = None;
    let history: Vec<Message> = earlier
        .iter()
        .filter_map(|(role, content)| match role.as_str() {
            "user" => Some(Message::user(content.clone())),
            "assistant" => Some(Message::assistant(content.clone())),
            _ => None,
        })
        .collect();
    let parsed = match setup.native {
        Some(native) => {
            let model = native
                .clone()
                .with_tool_mode(ToolMode::Native(case.tools.clone()));
            let mut messages = history;
            messages.push(Message::user(question.clone()));
            let mut request = GenerateRequest::new(messages);
            request.max_tokens = setup.agent.step_tokens_max;
            let reply = model
                .generate(&request, &mut |_: &str| {})
                .await
                .map_err(|error| error.to_string())?;
            parse_tool_calls(&reply, &index)
        }
        None => {
            let model = setup.model.for_tools(&index, setup.grammar);
            let agent = AgentLoop::new(model, executor, Arc::new(NullEvents))
                .with_config(setup.agent.clone())
                .with_clock(Arc::clone(&setup.wiring.clock));
            let request = TurnRequest {
                history,
                ..TurnRequest::new(question.clone())
            };
            let (parsed, likelihood) = agent
                .plan_detailed(request)
                .await
                .map_err(|error| error.to_string())?;
            decided = likelihood;
            parsed
        }
    };
    if parsed.kind == ParseKind::Calls {
        Ok((parsed.calls, None, decided))
    } else {
        Ok((Vec::new(), Some(parsed.visible), decided))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_chosen_by_name() {
        assert_eq!(chosen(&[]).unwrap().len(), 5);
        assert_eq!(
            chosen(&["parallel".into()]).unwrap(),
            vec![Category::Parallel]
        );
        assert!(
            chosen(&["nope".into()])
                .unwrap_err()
                .to_string()
                .contains("simple_python")
        );
    }
}
