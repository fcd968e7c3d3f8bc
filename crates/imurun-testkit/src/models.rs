//! Where the default model file is, for the tests that run it.

use std::path::PathBuf;

/// The CPU threads each test gives llama.cpp (the embedded model, `imurun` through
/// `IMURUN_THREADS`, llama-server through `--threads`). A test binary runs two tests at once
/// on CI's two cores, and llama.cpp's threads spin-wait for each other at every step: two
/// models of two threads each on two cores burn about half the CPU waiting. One thread each
/// never waits for a thread that is not running: the `imurun` binary's tests took 544 s with
/// all cores per model and 407 s with one (350 s with the everyday suite on two servers).
/// Greedy replies are the same with one thread or many.
pub const MODEL_TEST_THREADS: u32 = 1;

/// The default model's file name.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The default model: `IMURUN_MODEL`, else where `scripts/fetch-model.sh` puts it
/// (`$IMURUN_HOME/models/`, else `~/.imurun/models/`). Panics with what to run when it is not
/// there: tests of the real model fail without it, they never skip.
pub fn default_model_path() -> PathBuf {
    if let Some(path) = std::env::var_os("IMURUN_MODEL") {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("IMURUN_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".imurun")));
    let candidate = home.map(|home| home.join("models").join(DEFAULT_MODEL_FILE));
    match candidate {
        Some(path) if path.is_file() => path,
        _ => panic!(
            "the default model {DEFAULT_MODEL_FILE} was not found (IMURUN_MODEL, \
             $IMURUN_HOME/models/, ~/.imurun/models/): run scripts/fetch-model.sh"
        ),
    }
}
