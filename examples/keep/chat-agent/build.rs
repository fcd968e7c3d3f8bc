//! Builds the fetch tool (`examples/keep/fetch-tool`) for `wasm32-wasip2` and leaves its
//! component in `OUT_DIR/fetch_tool.wasm`, so the agent carries the bytes of the tool it
//! proposes (`include_bytes!` in `src/lib.rs`).
//!
//! The tool is built by a nested `cargo` in a target folder of its own under `OUT_DIR`: the
//! outer build holds the lock on its own target folder, so sharing it would wait for ever. The
//! nested build runs `--offline` (this crate depends on exactly the fetch tool's crates, so the
//! outer build fetched them all before it ran this script) and `--locked` (it never writes the
//! lockfile the outer build read). Whatever the outer build set for itself (its target, target
//! folder, flags, profile settings, the package's own variables, clippy's wrapper) is removed
//! from the nested one's environment: the tool is built exactly as the guests' workspace
//! builds it. The jobserver (`CARGO_MAKEFLAGS`) is kept, so the nested build shares the outer
//! one's job slots rather than adding its own.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Variables starting with `CARGO_` that are the person's own settings, not the outer build's.
const CARGO_VARIABLES_KEPT: &[&str] = &[
    "CARGO_HOME",
    "CARGO_MAKEFLAGS",
    "CARGO_NET_",
    "CARGO_HTTP_",
    "CARGO_REGISTRIES_",
    "CARGO_REGISTRY_",
    "CARGO_TERM_",
];

/// Other variables the outer build sets for its build scripts or compilers.
const VARIABLES_REMOVED: &[&str] = &[
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_LINKER",
    "TARGET",
    "HOST",
    "OUT_DIR",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
    "NUM_JOBS",
];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let keep = manifest_dir
        .parent()
        .expect("chat-agent lives in examples/keep")
        .to_path_buf();
    let fetch_tool = keep.join("fetch-tool");
    let wit = keep.join("../../crates/imurun-cell/wit");
    for input in [
        fetch_tool.clone(),
        wit,
        keep.join("Cargo.toml"),
        keep.join("Cargo.lock"),
        manifest_dir.join("build.rs"),
    ] {
        println!("cargo:rerun-if-changed={}", input.display());
    }

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target_dir = out_dir.join("fetch-tool-target");
    build_fetch_tool(&keep, &target_dir);
    let built = target_dir.join("wasm32-wasip2/release/fetch_tool.wasm");
    let kept = out_dir.join("fetch_tool.wasm");
    std::fs::copy(&built, &kept).unwrap_or_else(|error| {
        panic!("copying {} to {}: {error}", built.display(), kept.display())
    });
}

fn build_fetch_tool(keep: &Path, target_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(cargo);
    command
        .current_dir(keep)
        .args(["build", "--release", "--quiet", "--offline", "--locked"])
        .args(["--target", "wasm32-wasip2", "-p", "fetch-tool"])
        .arg("--manifest-path")
        .arg(keep.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    for (name, _) in env::vars_os() {
        if let Some(name) = name.to_str()
            && leaks_from_outer_build(name)
        {
            command.env_remove(name);
        }
    }
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("running cargo to build the fetch tool: {error}"));
    if !output.status.success() {
        panic!(
            "building the fetch tool (examples/keep/fetch-tool) for wasm32-wasip2 failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Whether `name` is one of the outer build's own settings, to keep out of the nested build.
fn leaks_from_outer_build(name: &str) -> bool {
    if name.starts_with("__CARGO") {
        return true;
    }
    if name.starts_with("CARGO_") {
        return !CARGO_VARIABLES_KEPT
            .iter()
            .any(|kept| name == *kept || (kept.ends_with('_') && name.starts_with(kept)));
    }
    VARIABLES_REMOVED.contains(&name)
}
