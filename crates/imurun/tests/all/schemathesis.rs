//! The OpenAPI document against a running `imurun serve`, judged by schemathesis: every request
//! the document allows is accepted, every request it refuses is refused, every answer (its
//! status, headers and body) is one the document describes, and the links lead from a created
//! object to the routes that read it.
//!
//! schemathesis comes from the Python environment `scripts/setup` makes
//! (`${IMURUN_VENV:-$HOME/.cache/imurun-venv}`), at the version pinned there. Without it the
//! test fails, saying to run `scripts/setup`: a check that skips itself is a check nobody runs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serve_cli::Server;

/// Operations left out, each with its reason. No check is left out, and nothing else is.
const EXCLUDED_PATHS: [(&str, &str); 2] = [
    // A stream that never ends: every request would wait for the request timeout.
    ("/api/events", "the live event stream never ends"),
    // It runs tools, shell commands included, on this machine with generated arguments.
    ("/api/tools/run", "it runs tools on this machine"),
];

/// Examples per operation and phase beside the coverage phase, which tries each bound on its
/// own: with some ninety operations, 30 keep the run near a minute on two cores while the
/// other tests run.
const EXAMPLES_PER_OPERATION: u32 = 30;

/// A bound on the whole run, so that a hang fails the test instead of stalling it.
const RUN_TIME_MAX: Duration = Duration::from_secs(600);

/// 413 is this API's answer for a value past its bound (`too_large`, docs/api.md), a refusal
/// like 400; schemathesis' default list of refusals lacks it. The facade's one rule JSON
/// Schema cannot state, "the last message is the user's", may refuse a request the schema
/// allows, with a 400 (docs/api.md says so); every other operation must accept what its
/// schema allows. Everything else is the default.
const CONFIG: &str = r#"[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]

[[operations]]
include-path = "/v1/chat/completions"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
"#;

/// schemathesis' command line, started from Python so that `ast.parse` can be serialised
/// first. CPython 3.11 keeps the AST constructor's recursion depth in state shared by every
/// thread; hypothesis parses source (to describe its strategies) from both workers at once, and
/// two parses that overlap fail with "AST constructor recursion depth mismatch" — a runtime
/// error of the tool that says nothing about the server. One lock around the parse removes it.
const BOOTSTRAP: &str = "\
import ast, sys, threading
_lock = threading.Lock()
_parse = ast.parse
def _serial_parse(*args, **kwargs):
    with _lock:
        return _parse(*args, **kwargs)
ast.parse = _serial_parse
from schemathesis.cli import schemathesis
sys.argv[0] = 'schemathesis'
sys.exit(schemathesis())
";

#[test]
fn schemathesis_finds_no_request_the_document_and_the_server_disagree_on() {
    let python = python_with_schemathesis();
    let home = tempfile::tempdir().unwrap();
    // Every prompt is answered at once, so that turns end and sessions can be deleted.
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        json!({"replies": [], "fallback": {"text": "An answer."}}).to_string(),
    )
    .unwrap();
    let server = Server::start(home.path(), &format!("scripted:{}", script.display()));
    let (_, document) = server.get("/api/openapi.json");
    let operations = operation_count(&document);
    let config = home.path().join("schemathesis.toml");
    std::fs::write(&config, CONFIG).unwrap();

    let mut command = Command::new(&python);
    command
        .arg("-c")
        .arg(BOOTSTRAP)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("http://{}/api/openapi.json", server.addr))
        .args(["--checks", "all"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--max-examples", &EXAMPLES_PER_OPERATION.to_string()])
        .args(["--workers", "2"])
        .args(["--request-timeout", "30"])
        // `--checks all` bounds each response at 10 s by default: a timing assertion, which a
        // loaded two-core machine broke on a plain 400. The bound is the request timeout's
        // instead, so the check only finds a request that hangs; speed is measured by benches.
        .args(["--max-response-time", "30"])
        .args(["--generation-database", "none"])
        .arg("--no-color");
    for (path, _why) in EXCLUDED_PATHS {
        command.args(["--exclude-path", path]);
    }
    // Its working files (reports, caches) go to the temporary directory, not the repository.
    command.current_dir(home.path());
    let started = Instant::now();
    let output = run_bounded(command, RUN_TIME_MAX);
    let elapsed = started.elapsed();
    drop(server);

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report = format!(
        "schemathesis ran for {elapsed:.0?} and exited with {}.\n--- stdout ---\n{stdout}\n--- \
         stderr ---\n{stderr}",
        output.status
    );
    assert!(output.status.success(), "{report}");
    // Every operation but the excluded ones was tested: a filter that matched nothing, or a
    // document schemathesis could not read, would also end in 0 failures. schemathesis also
    // leaves out, by itself, the operation that serves the document it reads.
    let tested = operations - EXCLUDED_PATHS.len() - 1;
    assert!(
        stdout.contains(&format!("Tested: {tested}\n")),
        "expected {tested} operations tested\n{report}"
    );
    for phase in ["Coverage", "Fuzzing", "Stateful"] {
        assert!(
            stdout.contains(&format!("✅ {phase}")),
            "the {phase} phase did not pass\n{report}"
        );
    }
    println!("{report}");
}

/// The Python of the environment `scripts/setup` makes, once it holds the schemathesis version
/// pinned there.
fn python_with_schemathesis() -> PathBuf {
    let venv = match std::env::var_os("IMURUN_VENV") {
        Some(venv) => PathBuf::from(venv),
        None => {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/imurun-venv")
        }
    };
    let python = venv.join("bin/python");
    let pinned = pinned_version();
    let installed = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('schemathesis'))",
        ])
        .output();
    let installed = match installed {
        Ok(output) if output.status.success() => {
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
        Ok(output) => panic!(
            "schemathesis is not installed in {}: run scripts/setup\n{}",
            venv.display(),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!(
            "cannot run {} ({error}): run scripts/setup, which makes the Python environment \
             with schemathesis (or point IMURUN_VENV at one)",
            python.display()
        ),
    };
    assert_eq!(
        installed,
        pinned,
        "{} holds schemathesis {installed}, scripts/setup pins {pinned}: run scripts/setup",
        venv.display()
    );
    python
}

/// The version `scripts/setup` installs (`schemathesis_version=...`).
fn pinned_version() -> String {
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup");
    let text = std::fs::read_to_string(&setup).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("schemathesis_version="))
        .unwrap_or_else(|| panic!("{} pins no schemathesis_version", setup.display()))
        .trim()
        .to_owned()
}

/// How many operations the document lists.
fn operation_count(document: &Value) -> usize {
    const METHODS: [&str; 8] = [
        "get", "put", "post", "delete", "options", "head", "patch", "trace",
    ];
    document["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| {
            METHODS
                .iter()
                .filter(|method| item.get(**method).is_some())
                .count()
        })
        .sum()
}

/// Runs `command` to its end, or kills it after `limit`; its output is read as it comes, so a
/// full pipe never stalls it.
fn run_bounded(mut command: Command, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).map(|_| bytes)
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stderr.read_to_end(&mut bytes).map(|_| bytes)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            let stdout = out.join().unwrap().unwrap_or_default();
            panic!(
                "schemathesis did not finish in {limit:?}\n{}",
                String::from_utf8_lossy(&stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}
