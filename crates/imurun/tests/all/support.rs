//! Running the `imurun` binary from tests.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `imurun ARGS` with `input` on stdin and `envs` set.
pub(crate) fn run_imurun(args: &[&str], input: &str, envs: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_imurun"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in envs {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
