//! The one place in imurun that spawns processes: `sh -c COMMAND` in a folder, with stdin
//! closed, credential-looking variables removed from its environment, in a process group of
//! its own, inside the OS sandbox (`sandbox`: writes only in the workspace and a private
//! temporary folder), its output captured within a bound, and a timeout and a stop signal that
//! end it and everything it started.
//!
//! stdout and stderr share one pipe, so the output is interleaved in the order the command
//! wrote it, as `2>&1` would give. No process of a run outlives it: when the shell exits,
//! whatever it left running in the background is ended too (see `tree`), because a command
//! that outlived its call would also outlive its timeout.

mod output;
mod sandbox;
mod stdio;
mod tree;

use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use imurun_core::StopFlag;
use imurun_policy::without_credentials;
use tokio::io::AsyncReadExt;

pub use output::{OUTPUT_CHARS_MAX, OutputCollector};
pub use sandbox::{Confinement, sandbox_status, spawn_confined};
pub use stdio::{StdioCommand, StdioServer, spawn_stdio_server};

use tree::ProcessTree;

/// The shell. An absolute path, so a `PATH` in the environment cannot swap it.
const SHELL_PATH: &str = "/bin/sh";

/// How long processes get between SIGTERM and SIGKILL.
const KILL_GRACE_MS: u64 = 500;

/// How long output is still read after every process of the run has been ended. Only a
/// process that escaped the kill can hold the pipe open longer.
const DRAIN_MS_MAX: u64 = 500;

/// Bytes read from the pipe at a time.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// What to run.
#[derive(Debug)]
pub(crate) struct ShellRequest<'a> {
    pub(crate) command: &'a str,
    pub(crate) folder: &'a Path,
    /// The workspace root: with the private temporary folder, the only place the run may
    /// write (where the OS sandbox holds).
    pub(crate) workspace: &'a Path,
    /// The environment to start from; credential-looking variables are removed from it.
    pub(crate) environment: &'a [(OsString, OsString)],
    pub(crate) timeout: Duration,
    pub(crate) stop: &'a StopFlag,
    /// Where the run's private temporary folder is made (its `TMPDIR`, removed afterwards).
    pub(crate) temp_parent: &'a Path,
    /// Whether the run may open TCP connections (the `network` toggle).
    pub(crate) network: bool,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Stopped,
}

/// A finished run: how it ended, its capped output, and whether every process is gone.
#[derive(Debug)]
pub(crate) struct ShellResult {
    pub(crate) ending: Ending,
    pub(crate) output: String,
    pub(crate) all_ended: bool,
}

/// Runs the command to its end, its timeout, or the stop flag, and ends every process it
/// started. If this future is dropped midway, the processes are killed at once.
pub(crate) async fn run_shell(request: ShellRequest<'_>) -> std::io::Result<ShellResult> {
    let tag = tree::new_tag();
    let (sender, mut receiver) = tokio::net::unix::pipe::pipe()?;
    // The child writes with ordinary blocking writes; only our end is non-blocking.
    let stdout = sender.into_blocking_fd()?;
    let stderr = stdout.try_clone()?;
    let mut command = tokio::process::Command::new(SHELL_PATH);
    command
        .arg("-c")
        .arg(request.command)
        .current_dir(request.folder)
        .env_clear()
        .envs(without_credentials(
            request.environment.iter().map(|(k, v)| (k, v)),
        ))
        .env(tree::RUN_TAG_VAR, &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    // The one folder outside the workspace the run may write in lives until the run ends
    // (`_private_temp` is dropped at the end of this function).
    let spawned = sandbox::spawn_with_private_temp(
        &mut command,
        &[request.workspace],
        request.network,
        request.temp_parent,
        "imurun-run-",
    );
    // Our copies of the pipe's write end live in `command`: drop them, or the pipe would
    // never report end-of-file.
    drop(command);
    let (mut child, _private_temp) = spawned?;
    let Some(group_id) = child.id() else {
        return Err(std::io::Error::other(
            "the shell exited before it could be tracked",
        ));
    };
    let mut guard = KillOnDrop(Some(ProcessTree::new(group_id, &tag)));

    let mut collector = OutputCollector::new();
    let mut buffer = vec![0_u8; READ_CHUNK_BYTES];
    let mut pipe_open = true;
    let timeout = tokio::time::sleep(request.timeout);
    tokio::pin!(timeout);
    let stopped = request.stop.stopped();
    tokio::pin!(stopped);
    let ending = loop {
        tokio::select! {
            read = receiver.read(&mut buffer), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(count) => collector.push_bytes(&buffer[..count]),
            },
            status = child.wait() => break Ending::Exited(status?),
            () = &mut timeout => break Ending::TimedOut,
            () = &mut stopped => break Ending::Stopped,
        }
    };

    // Whatever is left — the whole tree after a timeout or a stop, background processes
    // after a normal exit — is ended before the output is final.
    let grace = Duration::from_millis(KILL_GRACE_MS);
    let exited = matches!(ending, Ending::Exited(_));
    // The shell is reaped while the tree is ended, so that once it dies it stops counting as
    // a member of its group (where only the group can be seen, a zombie leader would keep
    // the group looking alive until the grace period ran out).
    let reap = async {
        if !exited {
            let _ = child.wait().await;
        }
    };
    let all_ended = match guard.0.as_mut() {
        Some(tree) => tokio::join!(tree.terminate(grace), reap).0,
        None => {
            reap.await;
            true
        }
    };
    guard.0 = None;
    if pipe_open {
        drain(&mut receiver, &mut buffer, &mut collector).await;
    }
    Ok(ShellResult {
        ending,
        output: collector.finish(),
        all_ended,
    })
}

/// Reads what is left in the pipe, for at most `DRAIN_MS_MAX`.
async fn drain(
    receiver: &mut tokio::net::unix::pipe::Receiver,
    buffer: &mut [u8],
    collector: &mut OutputCollector,
) {
    let reading = async {
        while let Ok(count @ 1..) = receiver.read(buffer).await {
            collector.push_bytes(&buffer[..count]);
        }
    };
    // Timing out only means an escaped process still holds the pipe; its output is lost.
    let _ = tokio::time::timeout(Duration::from_millis(DRAIN_MS_MAX), reading).await;
}

/// Kills the run's processes if the run's future is dropped before it ends them itself.
struct KillOnDrop(Option<ProcessTree>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(tree) = self.0.as_mut() {
            tree.kill_now();
        }
    }
}
