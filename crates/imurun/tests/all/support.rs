//! Running the `imurun` binary from tests.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs `imurun ARGS` with `input` on stdin and `envs` set.
pub(crate) fn run_imurun(args: &[&str], input: &str, envs: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_imurun"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.env(
        "IMURUN_THREADS",
        imurun_testkit::MODEL_TEST_THREADS.to_string(),
    );
    for (name, value) in envs {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The default model, found as every test finds it ([`imurun_testkit::default_model_path`]).
pub(crate) fn model_path() -> PathBuf {
    imurun_testkit::default_model_path()
}

/// Every audit row in the database under `home` (an `IMURUN_HOME`), oldest first, as
/// `(tool, source, decision, outcome)`.
pub(crate) fn audit_rows(home: &std::path::Path) -> Vec<(String, String, String, String)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = imurun_store::Store::open(home.join("imurun.db"))
            .await
            .unwrap();
        let mut rows = store.recent_audit(1000).await.unwrap();
        store.close().await;
        rows.sort_by_key(|row| row.id);
        rows.into_iter()
            .map(|row| {
                (
                    row.tool,
                    row.source.to_string(),
                    row.decision.as_str().to_owned(),
                    row.outcome,
                )
            })
            .collect()
    })
}
