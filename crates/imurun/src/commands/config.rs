//! `imurun config show`: the resolved configuration, as TOML, with where each value came from.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::config::{ConfigFlags, Environment, ResolvedConfig};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the resolved configuration as TOML (the API token redacted), each value with
    /// where it came from: flag, environment, config file or default.
    Show(ShowArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    flags: ConfigFlags,
}

pub(crate) fn run(
    command: &ConfigCommand,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let ConfigCommand::Show(args) = command;
    let config = ResolvedConfig::load(config_flag, &args.flags, environment)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "# imurun configuration. Precedence: flag > environment > settings stored by the server \
         (agent.*, permissions.*; they replace values from the config file or the default) > \
         config file > default."
    )?;
    match &config.file {
        Some(file) => writeln!(out, "# config file: {}", file.display())?,
        None => writeln!(
            out,
            "# config file: none ({} does not exist)",
            config
                .paths
                .data_dir
                .join(crate::config::CONFIG_FILE_NAME)
                .display()
        )?,
    }
    out.write_all(config.to_annotated_toml().as_bytes())?;
    if let Some(asked) = config.agent.max_steps_asked {
        writeln!(
            out,
            "\n# agent.max_steps: {asked} was asked; a turn takes at most {} steps, so {} is used.",
            config.agent.max_steps, config.agent.max_steps
        )?;
    }
    // Not a setting: what this machine's kernel enforces on shell commands and stdio servers.
    writeln!(
        out,
        "\n# OS sandbox for shell commands and stdio MCP servers: {}",
        imurun_tools::sandbox_status().describe()
    )?;
    out.flush()?;
    // The configuration is shown even when the server would refuse it, so that the person
    // can see which value to change; the refusal is the exit status and the last word.
    config.validate()?;
    Ok(ExitCode::SUCCESS)
}
