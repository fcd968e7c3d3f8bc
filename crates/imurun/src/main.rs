//! The `imurun` command: CLI, configuration and wiring. Domain logic lives in the library
//! crates; this binary reads arguments and the environment and connects the parts.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod config;
mod model_spec;
mod paths;

/// imurun: a local-first agent runtime.
#[derive(Debug, Parser)]
#[command(name = "imurun", version, about, long_about = None)]
struct Cli {
    /// The configuration file (default: IMURUN_CONFIG, else ~/.imurun/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read one raw model output on stdin and print how imurun reads it, as JSON.
    Parse(commands::parse::ParseArgs),
    /// The permission policy's decisions, as the executor makes them.
    #[command(subcommand)]
    Policy(commands::policy::PolicyCommand),
    /// List the tools, or run one through the executor.
    #[command(subcommand)]
    Tools(commands::tools::ToolsCommand),
    /// Ask one prompt (or JSON lines of them) through the turn loop.
    Ask(commands::ask::AskArgs),
    /// Inspect a model file.
    #[command(subcommand)]
    Model(commands::model::ModelCommand),
    /// Evaluate a model's tool calling.
    #[command(subcommand)]
    Eval(commands::eval::EvalCommand),
    /// Show the configuration.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Chat with a running imurun server in this terminal.
    Chat(commands::chat::ChatArgs),
    /// Serve the HTTP API and live events with the configured model (default: the embedded
    /// SmolLM2-135M) on 127.0.0.1:8484.
    Serve(commands::serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Parse(args) => commands::parse::run(&args),
        Command::Policy(command) => {
            paths::Paths::from_env().and_then(|paths| commands::policy::run(&command, &paths))
        }
        Command::Tools(command) => {
            paths::Paths::from_env().and_then(|paths| commands::tools::run(&command, &paths))
        }
        Command::Ask(args) => {
            paths::Paths::from_env().and_then(|paths| commands::ask::run(&args, &paths))
        }
        Command::Model(command) => commands::model::run(&command),
        Command::Eval(command) => {
            paths::Paths::from_env().and_then(|paths| commands::eval::run(&command, &paths))
        }
        Command::Config(command) => paths::Paths::from_env()
            .and_then(|paths| commands::config::run(&command, cli.config.as_deref(), &paths)),
        Command::Chat(args) => paths::Paths::from_env()
            .and_then(|paths| commands::chat::run(&args, cli.config.as_deref(), &paths)),
        Command::Serve(args) => paths::Paths::from_env()
            .and_then(|paths| commands::serve::run(&args, cli.config.as_deref(), &paths)),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`imurun parse | head`): nothing left to say, as other
        // command-line tools behave.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("imurun: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
