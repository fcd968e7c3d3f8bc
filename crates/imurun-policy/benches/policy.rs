//! Policy decisions: a file tool's call (real-pathing included) and a 1 KB shell command.

// A panic in a benchmark's setup is a failed setup with a location, as in tests.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use imurun_core::ToolCategory;
use imurun_policy::{
    CallFacts, Mode, Settings, Toggles, Workspace, WorkspaceConfig, check, destructive_reason,
};

/// A shell command of about 1 KB, shaped like what agents write: chains, pipes, quotes,
/// substitutions, a `bash -c` and a here-string.
fn shell_command_1kb() -> String {
    let piece = "cd \"$(git rev-parse --show-toplevel)\" && cargo build --release 2>&1 | tail -n 20; \
                 find . -name '*.rs' -not -path './target/*' | xargs grep -n 'TODO' | sort | uniq -c; \
                 bash -c 'for f in src/*.rs; do wc -l \"$f\"; done' && echo \"done: $(date +%s)\" > build.log; ";
    let mut command = String::new();
    while command.len() < 1024 {
        command.push_str(piece);
    }
    command.truncate(command.rfind(';').unwrap_or(command.len()));
    command
}

fn benches(c: &mut Criterion) {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("ws");
    let workspace = Workspace::open(&WorkspaceConfig {
        root: root.clone(),
        home: None,
        guarded: vec![],
    })
    .unwrap();
    std::fs::create_dir_all(root.join("src/policy/deny")).unwrap();
    std::fs::write(root.join("src/policy/deny/rules.rs"), "// rules").unwrap();
    let settings = Settings {
        mode: Mode::AllowReads,
        toggles: Toggles::default(),
    };

    let read = CallFacts::new(ToolCategory::Read).path("src/policy/deny/rules.rs");
    c.bench_function("check: file read of an existing file", |b| {
        b.iter(|| check(&workspace, &settings, black_box(&read)))
    });
    let write = CallFacts::new(ToolCategory::Write).path("src/policy/deny/new/file.rs");
    c.bench_function("check: file write of a new file", |b| {
        b.iter(|| check(&workspace, &settings, black_box(&write)))
    });

    let command = shell_command_1kb();
    assert!(
        destructive_reason(&command).is_none(),
        "the benchmark command must be benign"
    );
    c.bench_function("destructive_reason: 1 KB shell command", |b| {
        b.iter(|| destructive_reason(black_box(&command)))
    });
    let shell = CallFacts::new(ToolCategory::Shell)
        .path(".")
        .command(command.clone());
    c.bench_function("check: 1 KB shell command", |b| {
        b.iter(|| check(&workspace, &settings, black_box(&shell)))
    });
}

criterion_group!(policy, benches);
criterion_main!(policy);
