//! `shell`: runs one command line with `sh -c` in the workspace root, or in the workspace
//! folder its `cwd` argument names (confined like a file tool's path: the executor hands it
//! to the policy as the call's path argument, and the tool resolves it again).
//!
//! What this tool guarantees: stdin is closed, credential variables are removed from the
//! environment, the destructive-command deny-list is checked here again (so a direct `run`
//! cannot skip it), and the command runs in the OS sandbox where the machine has one (Landlock
//! on Linux: writes only in the workspace and a private temporary folder, which is its
//! `TMPDIR`; no TCP while the `network` toggle is off). Reads are not confined: a command can
//! read every file the user can, which is why the policy asks below `allow-all`. Output is
//! capped at [`OUTPUT_CHARS_MAX`](crate::OUTPUT_CHARS_MAX) characters keeping head and tail,
//! and the timeout or the turn's Stop ends the command and every process it started.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_policy::{Target, Workspace, destructive_reason};
use serde_json::{Map, Value};

use super::{optional_integer, optional_string, required_string};
use crate::process::{Ending, ShellRequest, ShellResult, run_shell};

/// Seconds a command may run when the call does not say.
pub const SHELL_TIMEOUT_DEFAULT_S: u64 = 60;

/// The longest timeout a call may ask for, in seconds; longer requests are lowered to it.
/// Ten minutes covers a build or a test run; anything longer is not one tool call.
pub const SHELL_TIMEOUT_MAX_S: u64 = 600;

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::shell()
}

/// What the shell tool starts from.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// The environment commands start from. Credential-looking variables are removed from it
    /// at every run. The binary passes its own environment: it is the only part of imurun
    /// that reads environment variables.
    pub environment: Vec<(OsString, OsString)>,
    /// Where each run's private temporary folder is made: the system's temporary folder,
    /// which the binary resolves.
    pub temp_parent: PathBuf,
}

impl Default for ShellConfig {
    /// An empty environment; private temporary folders under `/tmp`.
    fn default() -> Self {
        Self {
            environment: Vec::new(),
            temp_parent: PathBuf::from("/tmp"),
        }
    }
}

/// Runs shell commands in the workspace.
#[derive(Debug)]
pub struct Shell {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
    config: ShellConfig,
}

impl Shell {
    pub fn new(workspace: Arc<Workspace>, config: ShellConfig) -> Self {
        Self {
            spec: spec(),
            workspace,
            config,
        }
    }
}

impl Tool for Shell {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Shell
    }

    fn command_argument(&self) -> Option<&str> {
        Some("command")
    }

    fn path_arguments(&self) -> &[&str] {
        &["cwd"]
    }

    fn run<'a>(
        &'a self,
        context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let command = match required_string(args, "command") {
                Ok(command) => command,
                Err(failure) => return failure,
            };
            if command.trim().is_empty() {
                return ToolOutput::failed("the command is empty");
            }
            // Checked again here, whatever the executor decided: a direct call must not skip it.
            if let Some(reason) = destructive_reason(command) {
                return ToolOutput::failed(format!("refused: {reason}"));
            }
            let timeout_s = match optional_integer(args, "timeout") {
                Ok(None) => SHELL_TIMEOUT_DEFAULT_S,
                Ok(Some(seconds)) if seconds >= 1 => u64::try_from(seconds)
                    .map_or(SHELL_TIMEOUT_MAX_S, |s| s.min(SHELL_TIMEOUT_MAX_S)),
                Ok(Some(_)) => return ToolOutput::failed("`timeout` must be at least 1 second"),
                Err(failure) => return failure,
            };
            let folder = match optional_string(args, "cwd") {
                Ok(None) => self.workspace.root().to_path_buf(),
                Ok(Some(cwd)) => match working_folder(&self.workspace, cwd) {
                    Ok(folder) => folder,
                    Err(failure) => return failure,
                },
                Err(failure) => return failure,
            };
            let request = ShellRequest {
                command,
                folder: &folder,
                workspace: self.workspace.root(),
                environment: &self.config.environment,
                timeout: Duration::from_secs(timeout_s),
                stop: &context.stop,
                temp_parent: &self.config.temp_parent,
                network: context.network,
            };
            match run_shell(request).await {
                Ok(result) => report(result, timeout_s),
                Err(error) => {
                    ToolOutput::failed(format!("the shell could not be started: {error}"))
                }
            }
        })
    }
}

/// The folder `cwd` names, under the same confinement as a file tool's path (outside the
/// workspace, through a symlink out, `.git`, protected names: refused); it must be a folder.
fn working_folder(workspace: &Workspace, cwd: &str) -> Result<PathBuf, ToolOutput> {
    let checked = workspace
        .check_path(cwd, Target::Follow)
        .map_err(|denial| ToolOutput::failed(format!("`cwd`: {denial}")))?;
    if !checked.absolute().is_dir() {
        return Err(ToolOutput::failed(format!(
            "`cwd`: `{cwd}` is not a folder in the workspace"
        )));
    }
    Ok(checked.absolute().to_path_buf())
}

fn report(result: ShellResult, timeout_s: u64) -> ToolOutput {
    let output = if result.output.is_empty() {
        "(no output)".to_string()
    } else {
        result.output
    };
    let leftovers = if result.all_ended {
        ""
    } else {
        "\n(some of its processes could not be killed)"
    };
    match result.ending {
        // A non-zero exit is not a tool failure: the command ran and said something (grep finds
        // nothing, a test fails). The model reads the code and the output.
        Ending::Exited(status) => {
            let code = match (
                status.code(),
                std::os::unix::process::ExitStatusExt::signal(&status),
            ) {
                (Some(code), _) => code.to_string(),
                (None, Some(signal)) => format!("none (killed by signal {signal})"),
                (None, None) => "unknown".to_string(),
            };
            ToolOutput::ok(format!("exit code: {code}{leftovers}\n{output}"))
        }
        Ending::TimedOut => ToolOutput::failed(format!(
            "the command did not finish within {timeout_s} s and was killed with every process it \
             started{leftovers}. Output before that:\n{output}"
        )),
        Ending::Stopped => ToolOutput::failed(format!(
            "the turn was stopped; the command was killed with every process it started{leftovers}. \
             Output before that:\n{output}"
        )),
    }
}
