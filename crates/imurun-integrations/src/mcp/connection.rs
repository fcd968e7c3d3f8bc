//! One live connection to an MCP server: starting it (a child process over stdio, or the
//! streamable-HTTP client), the initialize handshake, listing its tools page by page, its
//! health, calls with a timeout and the turn's Stop, and closing it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use imurun_core::StopFlag;
use imurun_net::http::Url;
use imurun_net::http::header::{HeaderName, HeaderValue};
use imurun_net::{AddressRule, Door, DoorConfig, error_chain};
use imurun_tools::{StdioCommand, StdioServer, spawn_stdio_server};
use rmcp::Peer;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    PaginatedRequestParams, Tool as RemoteTool,
};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;

use super::config::{McpServerConfig, McpTransport};
use super::hub::StdioBase;

/// Pages of `tools/list` followed before the rest is ignored: a server that keeps handing out
/// cursors must not keep imurun listing forever.
const LIST_PAGES_MAX: usize = 16;

/// Tools taken from one server. More would crowd the prompt and the model's choices.
pub(crate) const SERVER_TOOLS_MAX: usize = 128;

/// Characters kept from the end of a stdio server's stderr, to explain why it failed.
const STDERR_CHARS_MAX: usize = 2_000;

/// Characters of that tail quoted in an error message.
const STDERR_QUOTED_CHARS_MAX: usize = 300;

/// How long closing a connection may take before a stdio server's process group is killed.
const CLOSE_TIMEOUT_MS: u64 = 5_000;

type Client = RunningService<RoleClient, ClientConfig>;

/// A connected server.
pub(crate) struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<Client>>,
    /// Why the connection can no longer be used, once a call found out.
    broken: Mutex<Option<String>>,
    stderr: Option<Arc<StderrTail>>,
    /// A stdio server's process (its group ends with it); taken when the connection closes.
    process: tokio::sync::Mutex<Option<StdioServer>>,
    pid: Option<u32>,
    timeout: Duration,
    /// `name version` from the server's initialize answer.
    pub(crate) server_info: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("pid", &self.pid)
            .field("timeout", &self.timeout)
            .field("health", &self.health())
            .finish_non_exhaustive()
    }
}

/// Why a call did not produce a result.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The connection was already down; the reason is ours.
    Unavailable(String),
    TimedOut(Duration),
    Stopped,
    /// The server answered with a JSON-RPC error: its own words.
    Server(String),
    /// The connection failed during the call.
    Transport(String),
}

impl Connection {
    /// Starts or reaches the server, initializes, and lists its tools, each step within the
    /// server's startup timeout.
    pub(crate) async fn open(
        config: &McpServerConfig,
        base: &StdioBase,
    ) -> Result<(Connection, Vec<RemoteTool>), String> {
        let timeout = Duration::from_secs(config.startup_timeout_s);
        let client_info = client_config();
        let (client, stderr, process) = match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                writable,
            } => {
                let writable: Vec<&Path> = std::iter::once(base.workspace.as_path())
                    .chain(cwd.as_deref())
                    .chain(writable.iter().map(PathBuf::as_path))
                    .collect();
                let mut server = spawn_stdio_server(&StdioCommand {
                    command,
                    args,
                    environment: &base.environment,
                    env,
                    cwd: cwd.as_deref(),
                    writable: &writable,
                    temp_parent: &base.temp_parent,
                })
                .map_err(|error| format!("cannot start `{command}`: {error}"))?;
                let stderr = Arc::new(StderrTail::default());
                if let Some(pipe) = server.stderr.take() {
                    tokio::spawn(Arc::clone(&stderr).collect(pipe));
                }
                let (Some(stdout), Some(stdin)) = (server.stdout.take(), server.stdin.take())
                else {
                    return Err(format!("`{command}` started without its pipes"));
                };
                // On a failed handshake `server` is dropped, which kills its whole group.
                let client =
                    handshake(client_info, (stdout, stdin), timeout, Some(&stderr)).await?;
                (client, Some(stderr), Some(server))
            }
            McpTransport::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    // Checked by `validate`; a bad one here is skipped rather than trusted.
                    if let (Ok(name), Ok(value)) = (
                        HeaderName::from_bytes(name.as_bytes()),
                        HeaderValue::from_str(value),
                    ) {
                        custom.insert(name, value);
                    }
                }
                let door = http_door(url, timeout)?;
                let transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::with_client(
                    door.client().clone(),
                    transport_config,
                );
                let client = handshake(client_info, transport, timeout, None).await?;
                (client, None, None)
            }
        };
        let peer = client.peer().clone();
        let server_info = peer.peer_info().and_then(|info| {
            info.server_info
                .as_ref()
                .map(|server| format!("{} {}", server.name, server.version))
        });
        let connection = Connection {
            server: config.name.clone(),
            peer,
            service: tokio::sync::Mutex::new(Some(client)),
            broken: Mutex::new(None),
            stderr,
            pid: process.as_ref().map(StdioServer::pid),
            process: tokio::sync::Mutex::new(process),
            timeout: Duration::from_secs(config.timeout_s),
            server_info,
        };
        match tokio::time::timeout(timeout, connection.list_tools()).await {
            Ok(Ok(tools)) => Ok((connection, tools)),
            Ok(Err(error)) => {
                connection.close().await;
                Err(format!("listing its tools failed: {error}"))
            }
            Err(_) => {
                connection.close().await;
                Err(format!(
                    "listing its tools took longer than {} s",
                    timeout.as_secs()
                ))
            }
        }
    }

    /// Every page of `tools/list`, at most [`LIST_PAGES_MAX`] pages.
    async fn list_tools(&self) -> Result<Vec<RemoteTool>, ServiceError> {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..LIST_PAGES_MAX {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = self.peer.list_tools(Some(params)).await?;
            tools.extend(page.tools);
            cursor = page.next_cursor;
            if cursor.is_none() || tools.len() >= SERVER_TOOLS_MAX {
                break;
            }
        }
        Ok(tools)
    }

    /// The server's process id, for a stdio server.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// `Ok` while the connection can carry calls; otherwise why not.
    pub(crate) fn health(&self) -> Result<(), String> {
        if let Some(reason) = self.broken_reason() {
            return Err(reason);
        }
        if self.peer.is_transport_closed() {
            let how = if self.stderr.is_some() {
                "its process exited or closed its output"
            } else {
                "the connection ended"
            };
            return Err(format!(
                "the MCP server `{}` is no longer connected ({how}){}",
                self.server,
                self.stderr_note()
            ));
        }
        Ok(())
    }

    /// Calls `tool` with `args`, within the server's timeout, until `stop` is set.
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        stop: &StopFlag,
    ) -> Result<CallToolResult, CallError> {
        self.health().map_err(CallError::Unavailable)?;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args.clone());
        // Dropping the call's future on a timeout or a stop sends `notifications/cancelled`.
        let answer = tokio::select! {
            answer = self.peer.call_tool(params) => answer,
            () = tokio::time::sleep(self.timeout) => return Err(CallError::TimedOut(self.timeout)),
            () = stop.stopped() => return Err(CallError::Stopped),
        };
        answer.map_err(|error| self.call_error(error))
    }

    fn call_error(&self, error: ServiceError) -> CallError {
        match error {
            ServiceError::McpError(error) => CallError::Server(error.message.into_owned()),
            ServiceError::Timeout { timeout } => CallError::TimedOut(timeout),
            ServiceError::Cancelled { .. } => CallError::Stopped,
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let what = match &error {
                    ServiceError::TransportSend(sent) => error_chain(sent.error.as_ref()),
                    _ => "the connection closed".to_owned(),
                };
                let reason = format!(
                    "the connection to the MCP server `{}` failed: {what}{}",
                    self.server,
                    self.stderr_note()
                );
                *self.broken.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
                CallError::Transport(reason)
            }
            other => CallError::Transport(format!(
                "the MCP server `{}` answered in a way imurun cannot use: {other}",
                self.server
            )),
        }
    }

    /// Closes the connection: a stdio server's stdin is closed and the process given a few
    /// seconds to exit; then whatever is left of its process group (the server itself after
    /// the timeout, anything it started in any case) is killed. Idempotent.
    pub(crate) async fn close(&self) {
        let taken = self.service.lock().await.take();
        if let Some(mut client) = taken {
            let grace = Duration::from_millis(CLOSE_TIMEOUT_MS);
            // Closing the client closes the server's stdin; a stdio server then gets the
            // rest of the grace to exit before its whole group is killed.
            let _ = client.close_with_timeout(grace).await;
            drop(client);
            if let Some(process) = self.process.lock().await.take() {
                process.end(grace).await;
            }
        }
        let mut broken = self.broken.lock().unwrap_or_else(PoisonError::into_inner);
        if broken.is_none() {
            *broken = Some(format!("the MCP server `{}` was shut down", self.server));
        }
    }

    fn broken_reason(&self) -> Option<String> {
        self.broken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `; it last wrote: ...` with the end of the server's stderr, or nothing.
    fn stderr_note(&self) -> String {
        self.stderr
            .as_ref()
            .map(|tail| tail.note())
            .unwrap_or_default()
    }
}

/// The door an MCP server over HTTP is reached through: the configured server's host is
/// trusted (the person named it), every redirect elsewhere public only.
fn http_door(url: &str, timeout: Duration) -> Result<Door, String> {
    let parsed = Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
    let door = Door::new(DoorConfig {
        rule: AddressRule::public_and_endpoints([url]),
        timeout,
        redirects_max: imurun_net::REDIRECTS_MAX_DEFAULT,
    })
    .map_err(|error| error.to_string())?;
    door.check_url(&parsed).map_err(|error| error.to_string())?;
    Ok(door)
}

/// Initializes within `timeout`, saying what went wrong in words a person can act on.
async fn handshake<T, E, A>(
    client_info: ClientConfig,
    transport: T,
    timeout: Duration,
    stderr: Option<&Arc<StderrTail>>,
) -> Result<Client, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let note = || stderr.map(|tail| tail.note()).unwrap_or_default();
    match tokio::time::timeout(timeout, client_info.serve(transport)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) => {
            // Give the stderr reader a moment to catch the last words of a dying process.
            if stderr.is_some() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let what = match &error {
                ClientInitializeError::TransportError { error, context } => {
                    format!("{} ({context})", error_chain(error.error.as_ref()))
                }
                other => other.to_string(),
            };
            Err(format!("the initialize handshake failed: {what}{}", note()))
        }
        Err(_) => Err(format!(
            "no answer to initialize within {} s{}",
            timeout.as_secs(),
            note()
        )),
    }
}

/// Who imurun says it is; no sampling, roots or elicitation offered.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("imurun", env!("CARGO_PKG_VERSION")),
    )
}

/// The end of a server's stderr, kept within [`STDERR_CHARS_MAX`].
#[derive(Debug, Default)]
struct StderrTail(Mutex<String>);

impl StderrTail {
    async fn collect(self: Arc<Self>, mut pipe: tokio::process::ChildStderr) {
        let mut buffer = vec![0_u8; 4096];
        while let Ok(count @ 1..) = pipe.read(&mut buffer).await {
            let text = String::from_utf8_lossy(&buffer[..count]);
            let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            tail.push_str(&text);
            let chars = tail.chars().count();
            if chars > STDERR_CHARS_MAX {
                *tail = tail.chars().skip(chars - STDERR_CHARS_MAX).collect();
            }
        }
    }

    fn note(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let trimmed = tail.trim();
        if trimmed.is_empty() {
            return String::new();
        }
        let chars = trimmed.chars().count();
        let quoted: String = trimmed
            .chars()
            .skip(chars.saturating_sub(STDERR_QUOTED_CHARS_MAX))
            .collect();
        format!("; it last wrote: {}", quoted.replace('\n', " | "))
    }
}
