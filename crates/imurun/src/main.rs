//! The `imurun` command: CLI, configuration and wiring. Domain logic lives in the library
//! crates; this binary reads arguments and the environment and connects the parts.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;

/// imurun: a local-first agent runtime.
#[derive(Debug, Parser)]
#[command(name = "imurun", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read one raw model output on stdin and print how imurun reads it, as JSON.
    Parse(commands::parse::ParseArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Parse(args) => commands::parse::run(&args),
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
