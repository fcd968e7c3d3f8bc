//! `imurun model info PATH`: what a GGUF file holds, read from its metadata without loading
//! the weights.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use imurun_model::GgufInfo;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ModelCommand {
    /// Print a GGUF file's architecture, parameters, quantisation, context length and chat
    /// template.
    Info {
        path: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(command: &ModelCommand) -> Result<ExitCode> {
    let ModelCommand::Info { path, json } = command;
    let info = GgufInfo::read(path).with_context(|| format!("reading {}", path.display()))?;
    let context = info
        .trained_context_length
        .map_or_else(|| "unknown".to_owned(), |length| length.to_string());
    if *json {
        let value = serde_json::json!({
            "path": info.path,
            "name": info.name,
            "architecture": info.architecture,
            "parameters": info.parameter_count,
            "quantisation": info.file_type,
            "context_length": info.trained_context_length,
            "chat_template": info.chat_template,
        });
        println!("{value}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("file:           {}", info.path.display());
    if let Some(name) = &info.name {
        println!("name:           {name}");
    }
    println!("architecture:   {}", info.architecture);
    println!("parameters:     {}", info.parameter_count_label());
    println!("quantisation:   {}", info.file_type);
    println!("context length: {context}");
    match &info.chat_template {
        Some(template) => println!("chat template:\n{template}"),
        None => println!("chat template:  none (ChatML is used)"),
    }
    Ok(ExitCode::SUCCESS)
}
