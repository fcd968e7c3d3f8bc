//! Load benchmark of the HTTP server: N sessions prompting over HTTP while M SSE clients watch,
//! all in this process against the real server on 127.0.0.1:0. What runs, what is measured and
//! what counts as an error is documented in `load/driver.rs`.
//!
//! ```text
//! nice -n 10 cargo bench -p imurun-server --bench load
//! IMURUN_LOAD_SESSIONS=50 IMURUN_LOAD_SUBSCRIBERS=300 cargo bench -p imurun-server --bench load
//! ```
//!
//! Environment (all optional): `IMURUN_LOAD_SESSIONS` (200), `IMURUN_LOAD_SUBSCRIBERS` (1000),
//! `IMURUN_LOAD_GLOBAL_SUBSCRIBERS` (a tenth of the subscribers), `IMURUN_LOAD_PROMPTS` (prompts
//! per session, 5), `IMURUN_LOAD_MODEL_DELAY_MS` (2), `IMURUN_LOAD_WAIT_S` (300). It prints a
//! table and exits with status 1 if any error occurred, 2 if it cannot run.

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "load/driver.rs"]
mod driver;

use std::process::ExitCode;
use std::time::Duration;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use crate::driver::{LoadConfig, run};

fn main() -> ExitCode {
    // `cargo test --benches` runs bench binaries without `--bench`: stay quick then.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("load bench: pass --bench (cargo bench) to run it");
        return ExitCode::SUCCESS;
    }
    let config = match config_from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("load bench: {error}");
            return ExitCode::from(2);
        }
    };
    if let Err(error) = raise_open_file_limit(fds_needed(&config)) {
        eprintln!("load bench: {error}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("load bench: no Tokio runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let report = runtime.block_on(run(&config));
    print!("{}", report.table());
    if report.error_count() > 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn config_from_env() -> Result<LoadConfig, String> {
    let sessions = env_number("IMURUN_LOAD_SESSIONS")?.unwrap_or(200);
    let subscribers = env_number("IMURUN_LOAD_SUBSCRIBERS")?.unwrap_or(1000);
    let mut config = LoadConfig::new(sessions, subscribers);
    if let Some(global) = env_number("IMURUN_LOAD_GLOBAL_SUBSCRIBERS")? {
        config.global_subscribers = global;
    }
    if let Some(prompts) = env_number("IMURUN_LOAD_PROMPTS")? {
        config.prompts_per_session = prompts;
    }
    if let Some(delay_ms) = env_number("IMURUN_LOAD_MODEL_DELAY_MS")? {
        config.model_delay = Duration::from_millis(delay_ms as u64);
    }
    if let Some(wait_s) = env_number("IMURUN_LOAD_WAIT_S")? {
        config.wait_max = Duration::from_secs(wait_s as u64);
    }
    config.check()?;
    Ok(config)
}

fn env_number(name: &str) -> Result<Option<usize>, String> {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{name}={value:?} is not a whole number")),
        Err(_) => Ok(None),
    }
}

/// File descriptors the run needs at most: both ends of every connection (the server runs in
/// this process), plus room for the store, the runtime and the standard streams.
fn fds_needed(config: &LoadConfig) -> u64 {
    let connections = (config.subscribers + config.sessions) as u64;
    2 * connections + 256
}

/// Raises the soft limit on open files to the hard limit, and fails when even that is below
/// `needed`: a thousand SSE connections are two thousand descriptors (both ends live in this
/// process), past the usual soft limit of 1024.
fn raise_open_file_limit(needed: u64) -> Result<(), String> {
    let limit = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if raised.current != limit.current
        && let Err(error) = setrlimit(Resource::Nofile, raised)
    {
        return Err(format!("cannot raise the open-file limit: {error}"));
    }
    // `None` is "unlimited".
    match getrlimit(Resource::Nofile).current {
        Some(current) if current < needed => Err(format!(
            "the open-file limit is {current} (hard limit {}), and this run needs about \
             {needed}; raise it (`ulimit -n {needed}`) or lower IMURUN_LOAD_SUBSCRIBERS",
            limit
                .maximum
                .map_or_else(|| "unlimited".to_owned(), |maximum| maximum.to_string())
        )),
        _ => Ok(()),
    }
}
