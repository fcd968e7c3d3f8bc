//! Benchmarks: a policy decision for a file tool (real paths included) through the executor
//! against `imurun_policy::check` alone, a 1 KB shell command's decision, and the shell tool's
//! overhead against a bare `sh -c true` spawn measured in the same run.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use imurun_core::{
    CallSource, NullAudit, NullEvents, StopFlag, Tool, ToolCall, ToolCategory, ToolContext,
};
use imurun_exec::{Caller, OnAsk, Registry, ToolExecutor};
use imurun_policy::{CallFacts, Mode, Settings, Workspace, WorkspaceConfig};
use imurun_tools::{BuiltinConfig, Confinement, Shell, ShellConfig, builtin_tools, spawn_confined};
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: Arc<Workspace>,
    executor: ToolExecutor,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = std::fs::canonicalize(dir.path()).expect("canonical temp dir");
    let config = WorkspaceConfig {
        root: base.join("ws"),
        home: Some(base.join("home")),
        guarded: Vec::new(),
    };
    let workspace = Arc::new(Workspace::open(&config).expect("workspace"));
    std::fs::create_dir_all(workspace.root().join("notes/deep")).expect("folders");
    std::fs::write(workspace.root().join("notes/deep/today.md"), "hello").expect("file");
    let shell = ShellConfig {
        environment: std::env::vars_os().collect(),
        temp_parent: std::env::temp_dir(),
    };
    let config = BuiltinConfig {
        shell,
        ..BuiltinConfig::default()
    };
    let mut registry = Registry::new();
    for tool in builtin_tools(&workspace, config) {
        registry.insert(tool, true);
    }
    let settings = Settings {
        mode: Mode::AllowAll,
        ..Settings::default()
    };
    let executor = ToolExecutor::new(
        registry,
        Arc::clone(&workspace),
        settings,
        Arc::new(NullEvents),
        Arc::new(NullAudit),
    );
    Fixture {
        _dir: dir,
        workspace,
        executor,
    }
}

fn policy(c: &mut Criterion) {
    let f = fixture();
    let settings = Settings {
        mode: Mode::AllowAll,
        ..Settings::default()
    };
    let path = "notes/deep/today.md";
    let facts = CallFacts::new(ToolCategory::Read).path(path);
    let read = ToolCall::new(
        "file_read",
        json!({"path": path})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let caller = Caller::user(None, OnAsk::Report);
    let mut group = c.benchmark_group("policy");
    group.bench_function("file_read: imurun_policy::check alone", |b| {
        b.iter(|| imurun_policy::check(&f.workspace, &settings, black_box(&facts)))
    });
    group.bench_function(
        "file_read: executor check (lookup, validation, policy)",
        |b| b.iter(|| f.executor.check(black_box(&read), &caller)),
    );
    let runtime = runtime();
    let outside = ToolCall::new(
        "file_read",
        json!({"path": "../elsewhere/x"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    group.bench_function(
        "file_read: executor execute, denied (no run; events and audit)",
        |b| b.iter(|| runtime.block_on(f.executor.execute(black_box(&outside), &caller))),
    );
    let command = format!(
        "grep -rn \"{}\" notes | sort | head -n 20 && echo done",
        "x".repeat(960)
    );
    let shell_facts = CallFacts::new(ToolCategory::Shell).command(command.clone());
    group.bench_function("shell 1 KB command: imurun_policy::check alone", |b| {
        b.iter(|| imurun_policy::check(&f.workspace, &settings, black_box(&shell_facts)))
    });
    group.finish();
}

fn shell(c: &mut Criterion) {
    let f = fixture();
    let runtime = runtime();
    let shell = Shell::new(
        Arc::clone(&f.workspace),
        ShellConfig {
            environment: std::env::vars_os().collect(),
            temp_parent: std::env::temp_dir(),
        },
    );
    let context = ToolContext {
        workspace_root: f.workspace.root().to_path_buf(),
        source: CallSource::User,
        depth: 0,
        stop: StopFlag::new(),
        session_id: None,
        allowed_tools: None,
        events: Arc::new(NullEvents),
        network: true,
    };
    let args = json!({"command": "true"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let call = ToolCall::new("shell", args.clone());
    let caller = Caller::user(None, OnAsk::Report);
    let mut group = c.benchmark_group("shell");
    group.bench_function("bare tokio spawn of sh -c true", |b| {
        b.iter(|| {
            runtime.block_on(async {
                tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg("true")
                    .status()
                    .await
                    .expect("sh runs")
            })
        })
    });
    let environment: Vec<_> = std::env::vars_os().collect();
    let root = f.workspace.root().to_path_buf();
    let command = || {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg("true")
            .current_dir(&root)
            .env_clear()
            .envs(environment.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0);
        command
    };
    group.bench_function(
        "tokio spawn of sh -c true, piped, own group, env, cwd",
        |b| b.iter(|| runtime.block_on(async { command().output().await.expect("sh runs") })),
    );
    // The same start inside the OS sandbox (Landlock on Linux, as `imurun_tools::sandbox_status`
    // reports): the ruleset built, applied to a thread of its own, and the process started
    // from it. Against the line above, in the same run: the sandbox's own cost per command.
    let temp = tempfile::tempdir().expect("a temporary folder");
    let writable = [root.as_path(), temp.path()];
    let confinement = Confinement {
        writable: &writable,
        network: false,
    };
    group.bench_function(
        "tokio spawn of sh -c true, piped, own group, env, cwd, sandboxed",
        |b| {
            b.iter(|| {
                runtime.block_on(async {
                    spawn_confined(&mut command(), &confinement)
                        .expect("sh starts")
                        .wait_with_output()
                        .await
                        .expect("sh runs")
                })
            })
        },
    );
    group.bench_function("Shell::run of true", |b| {
        b.iter(|| runtime.block_on(shell.run(&context, black_box(&args))))
    });
    group.bench_function("executor execute of shell true", |b| {
        b.iter(|| runtime.block_on(f.executor.execute(black_box(&call), &caller)))
    });
    group.finish();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

criterion_group!(benches, policy, shell);
criterion_main!(benches);
