//! Test builds keep line tables for the workspace (Cargo.toml's `[profile.dev]`): a failing
//! test's backtrace must still name the file and line of each of its frames, not only the
//! panic's own location (which a panic carries with no debug information at all).

use std::process::Command;

const PROBE: &str = "IMURUN_BACKTRACE_PROBE";

#[inline(never)]
fn a_frame_of_this_file() {
    panic!("the backtrace probe panics on purpose");
}

/// Run alone with `IMURUN_BACKTRACE_PROBE` set, it panics (the other test starts it so);
/// otherwise it does nothing.
#[test]
fn backtrace_probe() {
    if std::env::var_os(PROBE).is_some() {
        a_frame_of_this_file();
    }
}

#[test]
fn a_failing_tests_backtrace_names_the_files_and_lines_of_its_frames() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "backtrace::backtrace_probe", "--test-threads=1"])
        .env(PROBE, "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!output.status.success(), "the probe was meant to fail");
    // libtest prints a failing test's captured output, backtrace included, on stdout.
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // A frame is printed as "  N: path::to::function" and, when line tables are there,
    // "             at crates/imurun/tests/all/backtrace.rs:LINE:COLUMN" under it.
    let lines: Vec<&str> = printed.lines().collect();
    let frame = lines
        .iter()
        .position(|line| line.trim_end().ends_with("backtrace::a_frame_of_this_file"))
        .unwrap_or_else(|| panic!("no frame of the probe's function in:\n{printed}"));
    let location = lines.get(frame + 1).map(|line| line.trim()).unwrap_or("");
    assert!(
        location.starts_with("at ") && location.contains("tests/all/backtrace.rs:"),
        "the frame names no file and line: {location:?} in:\n{printed}"
    );
}
