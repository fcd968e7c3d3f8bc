//! The MCP client against real MCP servers from npm (`tests/mcp`, installed by
//! `scripts/setup`): `server-everything` over stdio and streamable HTTP, and
//! `server-filesystem` over stdio; then their tools through the executor, under the policy.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use imurun_core::{
    Availability, CallSource, Decision, DenyReason, Event, SandboxStatus, StopFlag, Tool,
    ToolCategory, ToolOutput,
};
use imurun_exec::{AUDIT_MARK, Caller, OnAsk, Outcome, Registry, ToolExecutor};
use imurun_integrations::{
    McpHub, McpServerConfig, McpServerState, McpServerStatus, McpTransport, StdioBase,
};
use imurun_policy::{Mode, Settings, Toggles};
use imurun_testkit::{
    RecordingAudit, RecordingEvents, TempWorkspace, call, context, is_gone, object,
};
use imurun_tools::sandbox_status;
use serde_json::{Value, json};

use crate::support::register_mcp;

/// Where `scripts/setup` installs the servers.
fn server_script(package: &str) -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        script.is_file(),
        "{} is missing: run scripts/setup (it installs the MCP test servers with npm)",
        script.display()
    );
    script
}

/// The environment servers start from: a `PATH` that finds `node`, one credential that must
/// not reach them, and one ordinary variable that must.
fn environment() -> Vec<(OsString, OsString)> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    vec![
        ("PATH".into(), path),
        ("HOME".into(), std::env::temp_dir().into()),
        ("IMURUN_TEST_GITHUB_TOKEN".into(), "tok-parent-123".into()),
        ("IMURUN_TEST_PLAIN".into(), "plain-456".into()),
    ]
}

fn everything(name: &str) -> McpServerConfig {
    let script = server_script("server-everything");
    McpServerConfig::stdio(name, "node", &[script.to_str().unwrap(), "stdio"])
}

fn filesystem(name: &str, root: &std::path::Path) -> McpServerConfig {
    let script = server_script("server-filesystem");
    McpServerConfig::stdio(
        name,
        "node",
        &[script.to_str().unwrap(), root.to_str().unwrap()],
    )
}

/// Connects `configs` with the system's temporary folder as the workspace: these servers may
/// write anywhere the tests put their files. The sandbox's own test narrows it.
async fn connect(configs: &[McpServerConfig]) -> McpHub {
    connect_in(configs, &std::env::temp_dir()).await
}

/// Connects `configs` with `workspace` as the one folder (besides their own) they may write in.
async fn connect_in(configs: &[McpServerConfig], workspace: &std::path::Path) -> McpHub {
    let base = StdioBase {
        environment: environment(),
        workspace: workspace.to_path_buf(),
        temp_parent: std::env::temp_dir(),
    };
    McpHub::connect_all(configs, &base).await
}

fn status<'a>(statuses: &'a [McpServerStatus], name: &str) -> &'a McpServerStatus {
    statuses
        .iter()
        .find(|status| status.name == name)
        .unwrap_or_else(|| panic!("no status for `{name}`: {statuses:?}"))
}

fn tool(hub: &McpHub, name: &str) -> Arc<dyn Tool> {
    hub.tools()
        .into_iter()
        .find(|tool| tool.spec().name == name)
        .unwrap_or_else(|| panic!("no tool `{name}`: {:?}", hub.servers()))
}

async fn run(hub: &McpHub, name: &str, arguments: Value) -> ToolOutput {
    tool(hub, name)
        .run(&context(StopFlag::new()), &object(arguments))
        .await
}

#[tokio::test]
async fn stdio_server_tools_are_listed_namespaced_and_called() {
    let hub = connect(&[everything("everything")]).await;
    let servers = hub.servers();
    let server = status(&servers, "everything");
    assert_eq!(server.state, McpServerState::Connected, "{server:?}");
    assert_eq!(server.transport, "stdio");
    assert!(server.pid.is_some());
    let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "everything__echo",
        "everything__get_env",
        "everything__get_sum",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = tool(&hub, "everything__echo");
    assert_eq!(echo.category(), ToolCategory::External);
    assert_eq!(echo.available(), Availability::Ready);
    assert_eq!(echo.spec().description, "Echoes back the input string");
    assert_eq!(echo.spec().required(), ["message"]);
    let echo_status = server
        .tools
        .iter()
        .find(|t| t.name == "everything__echo")
        .unwrap();
    assert_eq!(echo_status.remote_name, "echo");

    let output = run(
        &hub,
        "everything__echo",
        json!({"message": "hello over stdio"}),
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::ok("Echo: hello over stdio").untrusted(),
        "text from an outside program is untrusted"
    );
    let image = run(&hub, "everything__get_tiny_image", json!({})).await;
    assert!(image.ok, "{}", image.text);
    assert!(
        image.text.contains("[an image (image/png, "),
        "{}",
        image.text
    );
    hub.shutdown().await;
}

/// The child gets the parent's environment without credentials, plus its configured `env`
/// even where a name looks like a credential (the person put it there for this server).
#[tokio::test]
async fn stdio_servers_start_without_credentials_plus_their_own_env() {
    let mut config = everything("envcheck");
    if let McpTransport::Stdio { env, .. } = &mut config.transport {
        *env = BTreeMap::from([("SERVICE_API_KEY".to_owned(), "configured-789".to_owned())]);
    }
    let hub = connect(&[config]).await;
    let output = run(&hub, "envcheck__get_env", json!({})).await;
    assert!(output.ok, "{}", output.text);
    assert!(output.text.contains("plain-456"), "{}", output.text);
    assert!(output.text.contains("configured-789"), "{}", output.text);
    assert!(!output.text.contains("tok-parent-123"), "{}", output.text);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_error_is_a_failed_result_in_the_servers_words() {
    let hub = connect(&[everything("everything")]).await;
    // A direct run skips the executor's schema check, so the server's own check answers.
    let output = run(&hub, "everything__echo", json!({})).await;
    assert!(!output.ok);
    assert!(output.untrusted);
    assert!(
        output
            .text
            .starts_with("FAILED: the MCP server `everything` reported an error: "),
        "{}",
        output.text
    );
    assert!(output.text.contains("message"), "{}", output.text);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_past_the_timeout_or_after_stop_fails_and_says_so() {
    let config = McpServerConfig {
        timeout_s: 1,
        ..everything("slow")
    };
    let hub = connect(&[config]).await;
    let started = Instant::now();
    let output = run(
        &hub,
        "slow__trigger_long_running_operation",
        json!({"duration": 5, "steps": 5}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(
        output.text,
        "FAILED: the MCP server `slow` did not answer `slow__trigger_long_running_operation` within 1 s"
    );
    let stop = StopFlag::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stopper.stop();
    });
    let output = tool(&hub, "slow__trigger_long_running_operation")
        .run(&context(stop), &object(json!({"duration": 5, "steps": 5})))
        .await;
    assert_eq!(
        output.text,
        "FAILED: `slow__trigger_long_running_operation` was stopped before it finished"
    );
    // The server is still usable after both.
    let output = run(&hub, "slow__echo", json!({"message": "still here"})).await;
    assert_eq!(output.text, "Echo: still here");
    hub.shutdown().await;
}

/// Starts server-everything's streamable HTTP mode on a free port and waits until it listens.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    async fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = tokio::process::Command::new("node")
            .arg(server_script("server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the streamable HTTP server exited before it listened: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the streamable HTTP server never listened on {port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

#[tokio::test]
async fn streamable_http_server_tools_are_listed_and_called() {
    let mut server = HttpServer::start().await;
    let mut config = McpServerConfig::http("remote", server.url.clone());
    if let McpTransport::Http { headers, .. } = &mut config.transport {
        headers.insert("X-Imurun-Test".into(), "yes".into());
    }
    let hub = connect(&[config]).await;
    let servers = hub.servers();
    let remote = status(&servers, "remote");
    assert_eq!(remote.state, McpServerState::Connected, "{remote:?}");
    assert_eq!(remote.transport, "http");
    assert_eq!(remote.target, server.url);
    assert!(remote.pid.is_none());
    assert!(
        remote.tools.iter().any(|t| t.name == "remote__echo"),
        "{remote:?}"
    );
    let output = run(&hub, "remote__echo", json!({"message": "hello over http"})).await;
    assert_eq!(output, ToolOutput::ok("Echo: hello over http").untrusted());
    let sum = run(&hub, "remote__get_sum", json!({"a": 2, "b": 40})).await;
    assert!(sum.ok && sum.text.contains("42"), "{}", sum.text);

    // The server goes away: the next call fails saying which server and what happened, and
    // the tool stops calling itself available.
    server.child.kill().await.unwrap();
    let output = run(&hub, "remote__echo", json!({"message": "anyone?"})).await;
    assert!(
        output
            .text
            .starts_with("FAILED: the connection to the MCP server `remote` failed: "),
        "{}",
        output.text
    );
    assert!(matches!(
        tool(&hub, "remote__echo").available(),
        Availability::Unavailable(_)
    ));
    hub.shutdown().await;
}

/// A call over HTTP may take as long as `timeout_s` allows, however short the startup
/// timeout is.
#[tokio::test]
async fn a_long_call_over_http_is_bounded_by_the_call_timeout_not_the_startup_one() {
    let server = HttpServer::start().await;
    let config = McpServerConfig {
        timeout_s: 20,
        startup_timeout_s: 1,
        ..McpServerConfig::http("remote", server.url.clone())
    };
    let hub = connect(&[config]).await;
    let remote = &hub.servers()[0];
    assert_eq!(remote.state, McpServerState::Connected, "{remote:?}");
    let output = run(
        &hub,
        "remote__trigger_long_running_operation",
        json!({"duration": 3, "steps": 3}),
    )
    .await;
    assert!(output.ok, "{}", output.text);
    hub.shutdown().await;
}

#[tokio::test]
async fn filesystem_server_writes_reads_and_lists_inside_its_root_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let config = McpServerConfig {
        tool_categories: BTreeMap::from([
            ("read_text_file".to_owned(), ToolCategory::Read),
            ("write_file".to_owned(), ToolCategory::Write),
            ("no_such_tool".to_owned(), ToolCategory::Read),
        ]),
        ..filesystem("files", &root)
    };
    let hub = connect(&[config]).await;
    let servers = hub.servers();
    let files = status(&servers, "files");
    assert_eq!(files.state, McpServerState::Connected, "{files:?}");
    assert_eq!(
        files.server_info.as_deref(),
        Some("secure-filesystem-server 0.2.0")
    );
    assert_eq!(
        files.notes,
        ["tool_categories names `no_such_tool`, which the server does not list"]
    );
    assert_eq!(
        tool(&hub, "files__read_text_file").category(),
        ToolCategory::Read
    );
    assert_eq!(
        tool(&hub, "files__write_file").category(),
        ToolCategory::Write
    );
    assert_eq!(
        tool(&hub, "files__list_directory").category(),
        ToolCategory::External
    );

    let note = root.join("note.txt");
    let written = run(
        &hub,
        "files__write_file",
        json!({"path": note, "content": "written through MCP"}),
    )
    .await;
    assert!(written.ok, "{}", written.text);
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "written through MCP"
    );
    let read = run(&hub, "files__read_text_file", json!({"path": note})).await;
    assert_eq!(read.text, "written through MCP");
    let listed = run(&hub, "files__list_directory", json!({"path": root})).await;
    assert!(listed.text.contains("[FILE] note.txt"), "{}", listed.text);
    let outside = run(
        &hub,
        "files__read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert!(!outside.ok);
    assert!(
        outside
            .text
            .starts_with("FAILED: the MCP server `files` reported an error: "),
        "{}",
        outside.text
    );
    hub.shutdown().await;
}

/// A stdio server runs in the OS sandbox: the filesystem server, rooted at a folder outside
/// the workspace, cannot write there; listed under `writable`, it can. Reads are not confined.
#[tokio::test]
async fn a_stdio_server_writes_only_where_the_sandbox_lets_it() {
    if let SandboxStatus::None { reason } = sandbox_status() {
        assert!(
            std::env::var("IMURUN_TEST_NO_LANDLOCK").is_ok_and(|value| value == "1"),
            "no OS sandbox on this machine: {reason}"
        );
        return;
    }
    let workspace = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("kept.txt"), "kept").unwrap();
    let note = root.join("note.txt");
    let write = json!({"path": note, "content": "written through MCP"});

    let hub = connect_in(&[filesystem("files", &root)], workspace.path()).await;
    let read = run(
        &hub,
        "files__read_text_file",
        json!({"path": root.join("kept.txt")}),
    )
    .await;
    assert_eq!(read.text, "kept");
    let refused = run(&hub, "files__write_file", write.clone()).await;
    assert!(!refused.ok, "{}", refused.text);
    assert!(!note.exists());
    hub.shutdown().await;

    let mut config = filesystem("files", &root);
    if let McpTransport::Stdio { writable, .. } = &mut config.transport {
        writable.push(root.clone());
    }
    let hub = connect_in(&[config], workspace.path()).await;
    let written = run(&hub, "files__write_file", write).await;
    assert!(written.ok, "{}", written.text);
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "written through MCP"
    );
    hub.shutdown().await;
}

/// A server that cannot start, one that is misconfigured and one that is disabled each keep
/// their status; the good one works anyway.
#[tokio::test]
async fn a_server_that_fails_does_not_stop_the_others() {
    let closed_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let configs = [
        McpServerConfig::stdio("broken", "imurun-no-such-command-7f3a", &[]),
        McpServerConfig::stdio("Bad Name", "node", &[]),
        McpServerConfig {
            enabled: false,
            ..everything("off")
        },
        everything("good"),
        everything("good"),
        McpServerConfig::stdio(
            "exits",
            "node",
            &["-e", "console.error('no config file'); process.exit(3)"],
        ),
        McpServerConfig {
            startup_timeout_s: 1,
            ..McpServerConfig::stdio("silent", "node", &["-e", "setInterval(() => {}, 1000)"])
        },
        McpServerConfig::http("nohttp", format!("http://127.0.0.1:{closed_port}/mcp")),
    ];
    let hub = connect(&configs).await;
    let servers = hub.servers();
    let states: Vec<(&str, McpServerState)> =
        servers.iter().map(|s| (s.name.as_str(), s.state)).collect();
    assert_eq!(
        states,
        [
            ("broken", McpServerState::Failed),
            ("Bad Name", McpServerState::Failed),
            ("off", McpServerState::Disabled),
            ("good", McpServerState::Connected),
            ("good", McpServerState::Failed),
            ("exits", McpServerState::Failed),
            ("silent", McpServerState::Failed),
            ("nohttp", McpServerState::Failed),
        ]
    );
    let error = |index: usize| servers[index].error.clone().unwrap_or_default();
    assert!(
        error(0).starts_with("cannot start `imurun-no-such-command-7f3a`: "),
        "{}",
        error(0)
    );
    assert!(
        error(1).contains("MCP server name `Bad Name` is invalid"),
        "{}",
        error(1)
    );
    assert!(error(4).contains("is used twice"), "{}", error(4));
    assert!(error(5).contains("no config file"), "{}", error(5));
    assert_eq!(error(6), "no answer to initialize within 1 s");
    assert!(
        error(7).starts_with("the initialize handshake failed: "),
        "{}",
        error(7)
    );
    assert!(servers[0].tools.is_empty());
    assert!(
        hub.tools()
            .iter()
            .all(|t| t.spec().name.starts_with("good__"))
    );
    let output = run(&hub, "good__echo", json!({"message": "fine"})).await;
    assert_eq!(output.text, "Echo: fine");
    let wire = serde_json::to_value(&servers[0]).unwrap();
    assert_eq!(wire["state"], "failed");
    assert_eq!(wire["transport"], "stdio");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_killed_mid_session_makes_its_tools_unavailable() {
    let hub = connect(&[everything("victim"), everything("bystander")]).await;
    let echo = tool(&hub, "victim__echo");
    assert_eq!(
        run(&hub, "victim__echo", json!({"message": "before"}))
            .await
            .text,
        "Echo: before"
    );
    let pid = status(&hub.servers(), "victim").pid.unwrap();
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    while echo.available() == Availability::Ready {
        assert!(Instant::now() < deadline, "the tool still says it is ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Availability::Unavailable(reason) = echo.available() else {
        unreachable!()
    };
    assert!(
        reason.starts_with("the MCP server `victim` is no longer connected"),
        "{reason}"
    );
    let servers = hub.servers();
    let victim = status(&servers, "victim");
    assert_eq!(victim.state, McpServerState::Closed);
    assert!(
        victim
            .tools
            .iter()
            .all(|t| matches!(t.availability, Availability::Unavailable(_)))
    );
    let output = run(&hub, "victim__echo", json!({"message": "after"})).await;
    assert!(
        output.text.starts_with(
            "FAILED: `victim__echo` is unavailable: the MCP server `victim` is no longer connected"
        ),
        "{}",
        output.text
    );
    // Regression: this failure quotes the server's stderr and was not marked untrusted.
    assert!(
        output.untrusted,
        "an unavailable server's failure is untrusted"
    );
    assert_eq!(
        run(&hub, "bystander__echo", json!({"message": "fine"}))
            .await
            .text,
        "Echo: fine"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_the_server_processes() {
    let hub = connect(&[everything("a"), everything("b")]).await;
    let pids: Vec<i32> = hub
        .servers()
        .iter()
        .map(|s| i32::try_from(s.pid.unwrap()).unwrap())
        .collect();
    assert!(pids.iter().all(|pid| !is_gone(*pid)));
    hub.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids.iter().all(|pid| is_gone(*pid)) {
        assert!(Instant::now() < deadline, "a server outlived the shutdown");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let servers = hub.servers();
    assert!(servers.iter().all(|s| s.state == McpServerState::Closed));
    let output = run(&hub, "a__echo", json!({"message": "late"})).await;
    assert!(output.text.contains("was shut down"), "{}", output.text);
    assert!(output.untrusted);
}

/// A stdio server run through `sh -c` that first starts a `sleep` in the background and
/// writes its pid to `pid_file`, then becomes `then` (a real server or a silent one).
fn server_with_a_grandchild(name: &str, pid_file: &std::path::Path, then: &str) -> McpServerConfig {
    let script = format!(
        "sleep 300 & echo $! > '{}'; exec {then}",
        pid_file.display()
    );
    McpServerConfig::stdio(name, "sh", &["-c", &script])
}

fn grandchild_pid(pid_file: &std::path::Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(pid_file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "the server never wrote its child's pid"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_gone_soon(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "{what}: process {pid} is still alive"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Regression: only the server's own pid was killed, so what it started (the real server
/// behind `npx` or `sh -c`) outlived the shutdown, the drop and a failed handshake.
#[tokio::test]
async fn a_servers_whole_process_group_ends_with_it() {
    let folder = TempWorkspace::new();
    let script = server_script("server-everything");
    let everything = format!("node '{}' stdio", script.display());

    let pid_file = folder.base.join("shutdown.pid");
    let hub = connect(&[server_with_a_grandchild("tree", &pid_file, &everything)]).await;
    assert_eq!(
        hub.servers()[0].state,
        McpServerState::Connected,
        "{:?}",
        hub.servers()
    );
    let grandchild = grandchild_pid(&pid_file);
    assert!(!is_gone(grandchild));
    hub.shutdown().await;
    assert_gone_soon(grandchild, "after shutdown");

    let pid_file = folder.base.join("drop.pid");
    let hub = connect(&[server_with_a_grandchild("tree", &pid_file, &everything)]).await;
    assert_eq!(
        hub.servers()[0].state,
        McpServerState::Connected,
        "{:?}",
        hub.servers()
    );
    let grandchild = grandchild_pid(&pid_file);
    drop(hub);
    assert_gone_soon(grandchild, "after the hub was dropped");

    let pid_file = folder.base.join("silent.pid");
    let config = McpServerConfig {
        startup_timeout_s: 1,
        ..server_with_a_grandchild("silent", &pid_file, "sleep 300")
    };
    let hub = connect(&[config]).await;
    assert_eq!(hub.servers()[0].state, McpServerState::Failed);
    assert_gone_soon(grandchild_pid(&pid_file), "after a failed handshake");
}

/// An executor over the hub's tools only, registered as the binary registers them.
fn executor(
    ws: &TempWorkspace,
    hub: &McpHub,
    mode: Mode,
    events: &Arc<RecordingEvents>,
    audit: &Arc<RecordingAudit>,
) -> ToolExecutor {
    let mut registry = Registry::new();
    register_mcp(&mut registry, hub);
    let settings = Settings {
        mode,
        toggles: Toggles::default(),
    };
    ToolExecutor::new(
        registry,
        Arc::clone(&ws.workspace),
        settings,
        events.clone(),
        audit.clone(),
    )
}

/// The executor round trip: an undeclared MCP tool is `external` and asks in allow-reads
/// (denied with no client to ask, reported to a caller who asks first, run once a person
/// approved), runs at once in allow-all, and runs at once where the configuration declares a
/// category that allow-reads allows; each call is one `tool.call`, one `tool.result` and one
/// audit record.
#[tokio::test]
async fn mcp_tools_go_through_the_executor_under_the_policy() {
    let declared = McpServerConfig {
        category: Some(ToolCategory::Compute),
        tool_categories: BTreeMap::from([("get-sum".to_owned(), ToolCategory::Read)]),
        ..everything("declared")
    };
    let hub = connect(&[everything("everything"), declared]).await;
    let ws = TempWorkspace::new();
    let events = RecordingEvents::new(false);
    let audit = Arc::new(RecordingAudit::default());
    let reads = executor(&ws, &hub, Mode::AllowReads, &events, &audit);
    let echo = |message: &str| call("everything__echo", json!({"message": message}));
    let model = Caller::model(Some("s1".into()), StopFlag::new());

    let checked = reads
        .check(&echo("x"), &Caller::user(None, OnAsk::Report))
        .unwrap();
    assert_eq!(checked.category, ToolCategory::External);
    assert_eq!(checked.verdict.decision, Decision::Ask);

    let unattended = reads.execute(&echo("nobody to ask"), &model).await;
    assert_eq!(unattended.outcome, Outcome::Denied(DenyReason::NoClient));
    let reported = reads
        .execute(&echo("ask first"), &Caller::user(None, OnAsk::Report))
        .await;
    assert_eq!(reported.outcome, Outcome::NeedsApproval);
    let approved = reads
        .execute(&echo("approved"), &Caller::user(None, OnAsk::Approved))
        .await;
    assert_eq!(approved.outcome, Outcome::Ok, "{}", approved.output.text);
    assert_eq!(approved.decision, Decision::Ask);
    assert_eq!(
        approved.output,
        ToolOutput::ok("Echo: approved").untrusted()
    );
    let invalid = reads
        .execute(&call("everything__echo", json!({"message": 5})), &model)
        .await;
    assert_eq!(invalid.outcome, Outcome::InvalidArguments);

    let compute = reads
        .execute(
            &call("declared__echo", json!({"message": "declared"})),
            &model,
        )
        .await;
    assert_eq!(
        (compute.decision, compute.outcome),
        (Decision::Allow, Outcome::Ok)
    );
    let sum = reads
        .execute(&call("declared__get_sum", json!({"a": 1, "b": 2})), &model)
        .await;
    assert_eq!((sum.decision, sum.outcome), (Decision::Allow, Outcome::Ok));
    assert!(sum.output.text.contains('3'), "{}", sum.output.text);

    let all_events = RecordingEvents::new(false);
    let all_audit = Arc::new(RecordingAudit::default());
    let all = executor(&ws, &hub, Mode::AllowAll, &all_events, &all_audit);
    let free = all.execute(&echo("allow-all"), &model).await;
    assert_eq!(
        (free.decision, free.outcome),
        (Decision::Allow, Outcome::Ok)
    );
    assert_eq!(all_events.types(), ["tool.call", "tool.result"]);
    let recorded = all_events.all();
    let Event::ToolCall {
        name, args, source, ..
    } = &recorded[0]
    else {
        panic!("{recorded:?}")
    };
    assert_eq!(
        (name.as_str(), args["message"].as_str(), *source),
        ("everything__echo", Some("allow-all"), CallSource::Model)
    );
    let Event::ToolResult { name, ok, text, .. } = &recorded[1] else {
        panic!("{recorded:?}")
    };
    assert_eq!(
        (name.as_str(), *ok, text.as_str()),
        ("everything__echo", true, "Echo: allow-all")
    );

    assert_eq!(
        events.types(),
        [
            "tool.call",
            "tool.denied",
            "tool.result",
            "tool.call",
            "tool.result",
            "tool.call",
            "tool.result",
            "tool.call",
            "tool.result",
            "tool.call",
            "tool.result",
            "tool.call",
            "tool.result",
        ]
    );
    let records: Vec<(&str, String, String, Decision, String)> = audit
        .all()
        .iter()
        .chain(all_audit.all().iter())
        .map(|r| {
            (
                r.mark,
                r.tool.clone(),
                r.source.to_string(),
                r.decision,
                r.outcome.clone(),
            )
        })
        .collect();
    let row = |tool: &str, source: &str, decision, outcome: &str| {
        (
            AUDIT_MARK,
            tool.to_owned(),
            source.to_owned(),
            decision,
            outcome.to_owned(),
        )
    };
    assert_eq!(
        records,
        [
            row(
                "everything__echo",
                "model",
                Decision::Ask,
                "denied: no_client"
            ),
            row("everything__echo", "user", Decision::Ask, "needs approval"),
            row("everything__echo", "user", Decision::Ask, "ok"),
            row(
                "everything__echo",
                "model",
                Decision::Deny,
                "invalid arguments"
            ),
            row("declared__echo", "model", Decision::Allow, "ok"),
            row("declared__get_sum", "model", Decision::Allow, "ok"),
            row("everything__echo", "model", Decision::Allow, "ok"),
        ]
    );
    for record in audit.all() {
        let wire = serde_json::to_string(&record).unwrap();
        assert!(
            !wire.contains("approved") && !wire.contains("nobody"),
            "{wire}"
        );
    }
    hub.shutdown().await;
}
