//! `imurun parse`: how people debug a model's output and how conformance is measured.
//!
//! Reads one raw model output on stdin and prints one JSON object
//! `{"kind", "calls", "visible", "thought", "retry"}`; `--jsonl` reads one JSON string per
//! line; `--stream` reads a JSON array of tokens instead and adds `"streamed"`, the text the
//! stream guard released.

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use imurun_calls::{Parsed, StreamGuard, parse_tool_calls};
use imurun_core::ToolIndex;

use super::read_tools;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, clap::Args)]
pub(crate) struct ParseArgs {
    /// A JSON array of `{name, description, parameters}`: the tools that exist for this
    /// parse, all runnable and offered. Without it, imurun's built-in tool set.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Read one JSON string per input line and print one result per line.
    #[arg(long)]
    jsonl: bool,
    /// Read a JSON array of token strings (one per line with --jsonl), feed them to the
    /// stream guard one by one, and add "streamed": the text it released.
    #[arg(long)]
    stream: bool,
}

#[derive(Debug, Serialize)]
struct Output<'a> {
    #[serde(flatten)]
    parsed: &'a Parsed,
    #[serde(skip_serializing_if = "Option::is_none")]
    streamed: Option<String>,
}

pub(crate) fn run(args: &ParseArgs) -> Result<ExitCode> {
    let index = match &args.tools {
        Some(path) => ToolIndex::offering(read_tools(path)?),
        None => ToolIndex::offering(imurun_core::builtin::specs()),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if !args.jsonl {
        let mut input = String::new();
        io::stdin()
            .read_to_string(&mut input)
            .context("reading stdin")?;
        let line = parse_input(&input, args.stream, &index)?;
        writeln!(out, "{line}")?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }

    // One result line per input line, always: a bad line prints an error object in its
    // place so the output stays aligned with the input, and the exit code reports it.
    let mut failures = 0usize;
    for (number, line) in io::stdin().lock().lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let result = serde_json::from_str::<Value>(&line)
            .with_context(|| format!("line {}: not JSON", number + 1))
            .and_then(|value| jsonl_item(value, args.stream, number + 1))
            .and_then(|text| parse_input(&text, args.stream, &index));
        match result {
            Ok(printed) => writeln!(out, "{printed}")?,
            Err(error) => {
                failures += 1;
                let message = format!("{error:#}");
                writeln!(out, "{}", serde_json::json!({"error": message}))?;
            }
        }
    }
    out.flush()?;
    if failures > 0 {
        eprintln!("imurun parse: {failures} line(s) could not be read");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// One `--jsonl` line as the text `parse_input` takes: a JSON string, or with `--stream`
/// the token array re-encoded.
fn jsonl_item(value: Value, stream: bool, number: usize) -> Result<String> {
    match (value, stream) {
        (Value::String(text), false) => Ok(text),
        (tokens @ Value::Array(_), true) => Ok(tokens.to_string()),
        (_, false) => bail!("line {number}: expected a JSON string"),
        (_, true) => bail!("line {number}: expected a JSON array of token strings"),
    }
}

fn parse_input(input: &str, stream: bool, index: &ToolIndex) -> Result<String> {
    if !stream {
        let parsed = parse_tool_calls(input, index);
        return Ok(serde_json::to_string(&Output {
            parsed: &parsed,
            streamed: None,
        })?);
    }
    let tokens: Vec<String> =
        serde_json::from_str(input).context("--stream expects a JSON array of token strings")?;
    let mut guard = StreamGuard::new();
    let mut streamed = String::new();
    for token in &tokens {
        streamed.push_str(&guard.push(token));
    }
    let raw = tokens.concat();
    let parsed = parse_tool_calls(&raw, index);
    streamed.push_str(&guard.finish(&parsed));
    Ok(serde_json::to_string(&Output {
        parsed: &parsed,
        streamed: Some(streamed),
    })?)
}
