//! `imurun --version`: imurun's version and the llama.cpp it runs, as the release notes and
//! a crash report need them.

use crate::support::run_imurun;

/// The version cargo resolved for `name` in the workspace's `Cargo.lock`.
fn locked_version(name: &str) -> String {
    let lock =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
    let mut lines = lock.lines();
    lines
        .find(|line| line.trim() == format!("name = \"{name}\""))
        .unwrap();
    lines
        .next()
        .unwrap()
        .trim()
        .strip_prefix("version = ")
        .unwrap()
        .trim_matches('"')
        .to_owned()
}

#[test]
fn version_names_imurun_and_the_llama_cpp_it_runs() {
    let output = run_imurun(&["--version"], "", &[]);
    assert!(output.status.success(), "{output:?}");
    let printed = String::from_utf8(output.stdout).unwrap();
    let expected = format!(
        "imurun {} (llama.cpp from llama-cpp-sys-2 {})\n",
        env!("CARGO_PKG_VERSION"),
        locked_version("llama-cpp-sys-2")
    );
    assert_eq!(printed, expected);
}
