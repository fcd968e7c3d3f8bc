//! Keep mode's guests (`examples/keep/`), built for `wasm32-wasip2` once per test process and
//! shared by every suite that starts cells.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A guest component for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guest {
    /// Replies `echo: <message>`; imports only WASI.
    Echo,
    /// Tries every door out of its cell; imports `http`.
    Doors,
    /// A tool that fetches a URL; imports `http`.
    FetchTool,
    /// A tool with no authority: echoes its arguments, sleeps on request, tries to propose.
    PureTool,
    /// A tool importing signing and token-minting interfaces no host offers.
    KeyTool,
    /// The pure tool with `memory`: `{"memory": true}` answers the entries it may read.
    MemoryTool,
    /// The pure tool with `model`: `{"generate": [...]}` answers the model's reply.
    ModelTool,
    /// The scripted agent with only `events`.
    Scripted,
    /// The scripted agent with `events` and `http`.
    ScriptedHttp,
    /// The scripted agent with every import: `events`, `http`, `model`, `memory`, `tools`.
    ScriptedFull,
    /// The agent a person talks to in plain words (the example pack `helper`); imports `model`,
    /// `tools` and `events`, and carries the fetch tool it proposes.
    Chat,
}

impl Guest {
    /// Every guest, each once.
    pub const ALL: [Guest; 11] = [
        Guest::Echo,
        Guest::Doors,
        Guest::FetchTool,
        Guest::PureTool,
        Guest::KeyTool,
        Guest::MemoryTool,
        Guest::ModelTool,
        Guest::Scripted,
        Guest::ScriptedHttp,
        Guest::ScriptedFull,
        Guest::Chat,
    ];

    /// The component's file, as the guests' workspace builds it (each variant with more
    /// imports is a package of its own there, `examples/keep/Cargo.toml`).
    pub fn file_name(self) -> &'static str {
        match self {
            Guest::Echo => "echo_agent.wasm",
            Guest::Doors => "door_agent.wasm",
            Guest::FetchTool => "fetch_tool.wasm",
            Guest::PureTool => "pure_tool.wasm",
            Guest::KeyTool => "key_tool.wasm",
            Guest::MemoryTool => "pure_tool_memory.wasm",
            Guest::ModelTool => "pure_tool_model.wasm",
            Guest::Scripted => "scripted_agent.wasm",
            Guest::ScriptedHttp => "scripted_agent_http.wasm",
            Guest::ScriptedFull => "scripted_agent_full.wasm",
            Guest::Chat => "chat_agent.wasm",
        }
    }

    /// The component's bytes (built on first use).
    pub fn bytes(self) -> Vec<u8> {
        let path = guests_dir().join(self.file_name());
        std::fs::read(&path).unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
    }
}

/// The folder the built guests are in, building them first if this process has not.
pub fn guests_dir() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_guests)
}

fn repo_root() -> PathBuf {
    crate::repository()
}

fn build_guests() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
        .join("keep-guests");
    let out = target.join("out");
    std::fs::create_dir_all(&out).expect("creating the guests' folder");
    // Test processes run side by side: one builds and copies at a time. Every guest is a
    // package of its own, so when nothing changed the build compiles nothing.
    let lock = std::fs::File::create(target.join(".lock")).expect("creating the guests' lock");
    lock.lock().expect("locking the guests' folder");
    cargo_build(&target);
    let built = target.join("wasm32-wasip2/release");
    for guest in Guest::ALL {
        let name = guest.file_name();
        std::fs::copy(built.join(name), out.join(name))
            .unwrap_or_else(|error| panic!("copying {name}: {error}"));
    }
    drop(lock);
    out
}

fn cargo_build(target: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--target", "wasm32-wasip2"])
        .arg("--manifest-path")
        .arg(repo_root().join("examples/keep/Cargo.toml"))
        .arg("--target-dir")
        .arg(target)
        // The suite's own build settings are not the guests'.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("running cargo to build Keep's guests");
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("wasm32-wasip2") && stderr.contains("target may not be installed") {
            panic!(
                "building Keep's guests needs Rust's wasm32-wasip2 target, which is not \
                 installed: run `rustup target add wasm32-wasip2` (scripts/setup does)\n{stderr}"
            );
        }
        panic!("building Keep's guests for wasm32-wasip2 failed:\n{stderr}");
    }
}
