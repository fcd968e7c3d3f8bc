//! The `imurun` command: CLI, configuration and wiring. Domain logic lives in the library
//! crates; this binary reads arguments and the environment and connects the parts.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod config;
mod logging;
mod model_spec;
mod wiring;

/// What `imurun --version` prints: imurun's version and the llama.cpp the embedded back-end
/// runs, named by the `llama-cpp-sys-2` crate that vendors it (build.rs reads it).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (llama.cpp from llama-cpp-sys-2 ",
    env!("IMURUN_LLAMA_CPP_SYS_VERSION"),
    ")"
);

/// imurun: a local-first agent runtime.
#[derive(Debug, Parser)]
#[command(name = "imurun", version = VERSION, about, long_about = None)]
struct Cli {
    /// The configuration file (default: IMURUN_CONFIG, else ~/.imurun/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// How log lines on stderr look: `human` or `json` (one JSON object per line). Which
    /// lines are written is IMURUN_LOG (else RUST_LOG), such as `debug` or `imurun_server=debug`.
    #[arg(long, global = true, value_name = "FORMAT", default_value = "human")]
    log_format: logging::LogFormat,
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
    /// Keep mode: set-up, tokens, enrolment codes, keys, signatures, decisions, the journal.
    #[command(subcommand)]
    Keep(commands::keep::KeepCommand),
    /// Chat with a running imurun server in this terminal.
    Chat(commands::chat::ChatArgs),
    /// Serve the HTTP API and live events with the configured model (default: the embedded
    /// SmolLM2-135M) on 127.0.0.1:8484.
    Serve(commands::serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let environment = config::Environment::of_process();
    if let Err(error) = start_logging(&cli, &environment) {
        eprintln!("imurun: {error:#}");
        return ExitCode::from(2);
    }
    let file = cli.config.as_deref();
    let result = match cli.command {
        Command::Parse(args) => commands::parse::run(&args),
        Command::Policy(command) => commands::policy::run(&command, file, &environment),
        Command::Tools(command) => commands::tools::run(&command, file, &environment),
        Command::Ask(args) => commands::ask::run(&args, file, &environment),
        Command::Model(command) => commands::model::run(&command),
        Command::Eval(command) => commands::eval::run(&command, file, &environment),
        Command::Config(command) => commands::config::run(&command, file, &environment),
        Command::Keep(command) => commands::keep::run(&command, file, &environment),
        Command::Chat(args) => commands::chat::run(&args, file, &environment),
        Command::Serve(args) => commands::serve::run(&args, file, &environment),
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

/// The subscriber for this command, and a panic hook that logs before the default one
/// prints. `imurun serve` also writes to its log files and says more by default.
fn start_logging(cli: &Cli, environment: &config::Environment) -> anyhow::Result<()> {
    let serving = matches!(cli.command, Command::Serve(_));
    let file_dir = if serving {
        environment.paths().ok().map(|paths| paths.logs())
    } else {
        None
    };
    logging::init(&logging::LogSetup {
        filter: environment.log_filter(),
        format: cli.log_format,
        file_dir,
        default_level: if serving { "info" } else { "warn" },
    })?;
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let place = info
            .location()
            .map(|location| format!("{}:{}", location.file(), location.line()))
            .unwrap_or_default();
        tracing::error!(%place, "a panic: {}", panic_message(info.payload()));
        default_hook(info);
    }));
    Ok(())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
