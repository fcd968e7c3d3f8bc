//! Tells `imurun --version` which llama.cpp the embedded back-end runs: the version of the
//! `llama-cpp-sys-2` crate that vendors it, read from the workspace's `Cargo.lock` (the only
//! place that names the exact version cargo resolved).

use std::path::Path;

fn main() {
    // Cargo runs a build script in its package's folder: the lock is read from this clone,
    // wherever it is (a path fixed when the script was compiled would name another clone's
    // when cargo reuses the compiled script).
    let lock = Path::new("../../Cargo.lock");
    println!("cargo::rerun-if-changed={}", lock.display());
    let version = std::fs::read_to_string(lock)
        .ok()
        .and_then(|text| llama_cpp_sys_version(&text))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo::rustc-env=IMURUN_LLAMA_CPP_SYS_VERSION={version}");
}

/// The `version` line after `name = "llama-cpp-sys-2"` in a `Cargo.lock`.
fn llama_cpp_sys_version(lock: &str) -> Option<String> {
    let mut lines = lock.lines();
    lines.find(|line| line.trim() == r#"name = "llama-cpp-sys-2""#)?;
    let version = lines.next()?.trim().strip_prefix("version = ")?;
    Some(version.trim_matches('"').to_owned())
}
