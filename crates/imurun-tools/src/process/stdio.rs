//! Servers spoken to over stdin and stdout (MCP's stdio transport), started here because
//! this is the one place imurun spawns processes: the person's command with credential-looking
//! variables removed from the environment it inherits, in a process group of its own so that
//! ending it ends whatever it started (a server run through `npx` or `sh -c` is a tree).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use imurun_policy::without_credentials;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::sandbox::spawn_with_private_temp;
use super::tree::kill_group;

/// What to start.
#[derive(Debug)]
pub struct StdioCommand<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    /// The environment it starts from; credential-looking variables are removed from it.
    pub environment: &'a [(OsString, OsString)],
    /// Variables set for this server on purpose (kept even when they look like credentials:
    /// the person put them there for it).
    pub env: &'a BTreeMap<String, String>,
    pub cwd: Option<&'a Path>,
    /// Folders it may write in, where the OS sandbox confines writes (besides a private
    /// temporary folder made for it, its `TMPDIR`).
    pub writable: &'a [&'a Path],
    /// Where that private temporary folder is made.
    pub temp_parent: &'a Path,
}

/// A started server: its pipes, and the process group that ends with it.
#[derive(Debug)]
pub struct StdioServer {
    child: Child,
    pid: u32,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    /// Its private temporary folder, removed when the server is dropped.
    _private_temp: tempfile::TempDir,
}

/// Starts `command` with its three pipes.
pub fn spawn_stdio_server(command: &StdioCommand<'_>) -> std::io::Result<StdioServer> {
    let mut process = tokio::process::Command::new(command.command);
    process
        .args(command.args)
        .env_clear()
        .envs(without_credentials(
            command.environment.iter().map(|(k, v)| (k, v)),
        ))
        .envs(command.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = command.cwd {
        process.current_dir(cwd);
    }
    // A server's network is the person's business (its tools are `external` calls, decided
    // by the policy); only its writes are confined.
    let (mut child, private_temp) = spawn_with_private_temp(
        &mut process,
        command.writable,
        true,
        command.temp_parent,
        "imurun-server-",
    )?;
    let Some(pid) = child.id() else {
        return Err(std::io::Error::other(
            "the server exited before it could be tracked",
        ));
    };
    Ok(StdioServer {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pid,
        _private_temp: private_temp,
    })
}

impl StdioServer {
    /// The server's process id, which is also its group's id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits up to `grace` for the server to exit on its own (its stdin closed), then kills
    /// whatever is left of its process group.
    pub async fn end(mut self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.child.wait()).await;
        // The group outlives its leader while a member lives, so its id cannot have been
        // given to anyone else yet.
        kill_group(self.pid);
        let _ = self.child.wait().await;
    }
}

impl Drop for StdioServer {
    /// A server dropped without [`StdioServer::end`] takes its whole group with it, not only
    /// the leader `kill_on_drop` reaches.
    fn drop(&mut self) {
        kill_group(self.pid);
    }
}
