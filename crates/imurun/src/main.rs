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
        Err(error) => {
            eprintln!("imurun: {error:#}");
            ExitCode::from(2)
        }
    }
}
