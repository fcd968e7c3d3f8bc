//! `imurun config show` through the binary: every layer of the precedence order, the redacted
//! token, and the file's and the bind rule's errors.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `imurun ARGS` with only `HOME`, `IMURUN_HOME` (both `home`) and `envs` set, so that
/// the developer's own `IMURUN_*` variables cannot leak into the test.
fn imurun(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_imurun"));
    command
        .env_clear()
        .env("HOME", home)
        .env("IMURUN_HOME", home)
        .args(args)
        .stdin(Stdio::null());
    for (name, value) in envs {
        command.env(name, value);
    }
    command.output().unwrap()
}

type Args<'a> = &'a [&'a str];
type Env<'a> = &'a [(&'a str, &'a str)];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn config_show_prints_each_value_with_where_it_came_from() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "model = \"scripted:demo.json\"\n[server]\napi_token = \"s3cret\"\n[agent]\nmax_steps = 3\ngrammar = false\n[permissions]\nmode = \"allow-all\"\n",
    )
    .unwrap();
    let output = imurun(
        home.path(),
        &["config", "show", "--max-steps", "5"],
        &[("IMURUN_MODE", "ask")],
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let expect = [
        "max_steps = 5  # flag --max-steps".to_owned(),
        "mode = \"ask\"  # environment IMURUN_MODE".to_owned(),
        "grammar = false  # config file".to_owned(),
        "api_token = \"<redacted>\"  # config file".to_owned(),
        "addr = \"127.0.0.1:8484\"  # default".to_owned(),
        format!(
            "model = \"scripted:{}\"  # config file",
            home.path().join("demo.json").display()
        ),
        format!(
            "# config file: {}",
            home.path().join("config.toml").display()
        ),
    ];
    for line in &expect {
        assert!(stdout.contains(line.as_str()), "{line:?} not in\n{stdout}");
    }
    assert!(!stdout.contains("s3cret"), "{stdout}");
    let table: toml::Table = stdout.parse().unwrap();
    assert_eq!(table["agent"]["max_steps"].as_integer(), Some(5));
    assert!(!stdout.contains("was asked"), "{stdout}");
    // What the kernel enforces on shell commands is said, whatever it is.
    let sandbox = stdout
        .lines()
        .find(|line| line.starts_with("# OS sandbox for shell commands and stdio MCP servers: "))
        .unwrap_or_else(|| panic!("no sandbox line in\n{stdout}"));
    assert!(
        sandbox.contains("Landlock ABI") || sandbox.contains("none: "),
        "{sandbox}"
    );
}

/// Above the seed's cap of 20, the value is lowered to 20 and `config show` says so.
#[test]
fn config_show_notes_max_steps_capped_at_20() {
    let home = tempfile::tempdir().unwrap();
    let output = imurun(home.path(), &["config", "show", "--max-steps", "50"], &[]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains("max_steps = 20  # flag --max-steps"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "# agent.max_steps: 50 was asked; a turn takes at most 20 steps, so 20 is used."
        ),
        "{stdout}"
    );
    let table: toml::Table = stdout.parse().unwrap();
    assert_eq!(table["agent"]["max_steps"].as_integer(), Some(20));
}

#[test]
fn a_file_named_by_flag_outranks_the_variable_and_the_default() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "[agent]\nmax_steps = 2\n").unwrap();
    let named = home.path().join("named.toml");
    std::fs::write(&named, "[agent]\nmax_steps = 4\n").unwrap();
    let by_env = home.path().join("by-env.toml");
    std::fs::write(&by_env, "[agent]\nmax_steps = 8\n").unwrap();
    let by_env_text = by_env.to_str().unwrap();
    let cases: [(Args<'_>, Env<'_>, &str); 3] = [
        (&["config", "show"], &[], "max_steps = 2  # config file"),
        (
            &["config", "show"],
            &[("IMURUN_CONFIG", by_env_text)],
            "max_steps = 8  # config file",
        ),
        (
            &["--config", named.to_str().unwrap(), "config", "show"],
            &[("IMURUN_CONFIG", by_env_text)],
            "max_steps = 4  # config file",
        ),
    ];
    for (args, envs, expect) in cases {
        let output = imurun(home.path(), args, envs);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(text(&output.stdout).contains(expect), "{args:?} {envs:?}");
    }
}

#[test]
fn config_errors_name_the_file_the_line_and_the_key() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("nope.toml");
    let output = imurun(
        home.path(),
        &["--config", missing.to_str().unwrap(), "config", "show"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("nope.toml"),
        "{}",
        text(&output.stderr)
    );

    let file = home.path().join("config.toml");
    std::fs::write(&file, "[server]\naddr = \"127.0.0.1:1\"\ntoken = \"x\"\n").unwrap();
    let output = imurun(home.path(), &["config", "show"], &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for part in [file.to_str().unwrap(), "line 3", "token"] {
        assert!(stderr.contains(part), "{part:?} not in {stderr}");
    }
}

#[test]
fn binding_beyond_loopback_without_a_token_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let output = imurun(
        home.path(),
        &["config", "show", "--addr", "0.0.0.0:8484"],
        &[],
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(stderr.contains("shell commands"), "{stderr}");
    let output = imurun(
        home.path(),
        &["config", "show", "--addr", "0.0.0.0:8484"],
        &[("IMURUN_API_TOKEN", "s3cret")],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
}
