//! `imurun eval bfcl`: the Berkeley Function Calling Leaderboard's categories through the
//! same dry-run machinery as `imurun ask --dry-run`, scored with BFCL's AST rules. This is how
//! a person picks the local model that works best with imurun's tools.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use imurun_agent::{AgentConfig, AgentLoop, TurnRequest};
use imurun_calls::ParseKind;
use imurun_core::{Message, NullAudit, NullEvents};
use imurun_eval::{
    CATEGORIES, Case, Category, CategoryScore, Prediction, load_category, score_case,
};
use imurun_policy::{Mode, Workspace};
use imurun_tools::{Registry, UnconfiguredTool};
use indicatif::{ProgressBar, ProgressStyle};

use super::CallingArgs;
use crate::model_spec::{Loaded, ModelSpec, load};
use crate::paths::{Paths, executor_over};

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
    /// Write the predictions as JSON lines {"id", "calls"} to this file.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    calling: CallingArgs,
    /// Only these categories (simple_python, multiple, parallel, parallel_multiple,
    /// irrelevance); all of them by default.
    #[arg(long = "category", value_name = "NAME")]
    categories: Vec<String>,
}

pub(crate) fn run(command: &EvalCommand, paths: &Paths) -> Result<ExitCode> {
    let EvalCommand::Bfcl(args) = command;
    let categories = chosen(&args.categories)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let model = load(&ModelSpec::resolve(args.model.as_deref(), paths)).await?;
        let workspace = Arc::new(paths.open_workspace(None)?);
        let mut out = match &args.out {
            Some(path) => Some(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?,
            )),
            None => None,
        };
        println!("model: {} ({})", model.name(), args.calling.describe());
        for category in categories {
            let cases = load_category(&args.data, category, args.limit)?;
            let score =
                run_category(&model, &args.calling, &workspace, &cases, out.as_mut()).await?;
            println!(
                "{:<18} {:>4}/{:<4} {:>6.1}%",
                category.name(),
                score.correct,
                score.total,
                score.percent()
            );
        }
        if let Some(out) = out.as_mut() {
            out.flush()?;
        }
        Ok(ExitCode::SUCCESS)
    })
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

async fn run_category(
    model: &Loaded,
    calling: &CallingArgs,
    workspace: &Arc<Workspace>,
    cases: &[Case],
    mut out: Option<&mut std::io::BufWriter<std::fs::File>>,
) -> Result<CategoryScore> {
    let bar = ProgressBar::new(cases.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:18} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    if let Some(first) = cases.first() {
        bar.set_message(first.category.name());
    }
    let mut score = CategoryScore::default();
    for case in cases {
        let calls = predict(model, calling, workspace, case).await;
        score.add(score_case(case, &calls).is_ok());
        if let Some(out) = out.as_mut() {
            let prediction = Prediction {
                id: case.id.clone(),
                calls,
            };
            writeln!(out, "{}", serde_json::to_string(&prediction)?)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(score)
}

/// The calls the model makes for a case: its first step, read and not run. An answer, a
/// retry or a failed generation is "no call".
async fn predict(
    model: &Loaded,
    calling: &CallingArgs,
    workspace: &Arc<Workspace>,
    case: &Case,
) -> Vec<imurun_core::ToolCall> {
    let mut registry = Registry::new();
    for spec in &case.tools {
        registry.insert(Arc::new(UnconfiguredTool::spec_only(spec.clone())), true);
    }
    let executor = executor_over(
        registry,
        Arc::clone(workspace),
        Mode::AllowReads,
        Arc::new(NullAudit),
    );
    let model = model.for_tools(&executor.registry().callable_index(), !calling.no_grammar);
    let agent = AgentLoop::new(model, Arc::new(executor), Arc::new(NullEvents))
        .with_config(calling.apply(AgentConfig::default()));
    let Some((last, earlier)) = case.messages.split_last() else {
        return Vec::new();
    };
    let history = earlier
        .iter()
        .filter_map(|(role, content)| match role.as_str() {
            "user" => Some(Message::user(content.clone())),
            "assistant" => Some(Message::assistant(content.clone())),
            _ => None,
        })
        .collect();
    let request = TurnRequest {
        history,
        ..TurnRequest::new(last.1.clone())
    };
    match agent.plan(request).await {
        Ok(parsed) if parsed.kind == ParseKind::Calls => parsed.calls,
        _ => Vec::new(),
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
