//! The precedence order, the file's errors and the bind rule.

use super::*;

/// Resolves with `env` as the whole environment, `file` as the config file's text (at
/// `/etc/imurun/config.toml`) and `flags`.
fn check(env: &[(&str, &str)], file: Option<&str>, flags: &ConfigFlags) -> Result<ResolvedConfig> {
    let environment = Environment::from_pairs(env);
    let paths = Paths {
        home: Some(PathBuf::from("/home/ada")),
        data_dir: PathBuf::from("/home/ada/.imurun"),
    };
    let sources = Sources {
        config_flag: None,
        flags,
        environment: &environment,
        paths: &paths,
    };
    let path = Path::new("/etc/imurun/config.toml");
    resolve_with_file(&sources, file.map(|text| (path, text)))
}

/// An environment, as (name, value) pairs.
type Env<'a> = &'a [(&'a str, &'a str)];

fn error_of(result: Result<ResolvedConfig>) -> String {
    format!("{:#}", result.expect_err("expected an error"))
}

#[test]
fn each_layer_outranks_the_ones_below_it() {
    let file = "[server]\naddr = \"127.0.0.1:1000\"\n[agent]\nmax_steps = 3\n";
    let flag = ConfigFlags {
        addr: Some("127.0.0.1:3000".parse().unwrap()),
        max_steps: Some(9),
        ..ConfigFlags::default()
    };
    let env: Env<'_> = &[("IMURUN_ADDR", "127.0.0.1:2000"), ("IMURUN_MAX_STEPS", "7")];
    let empty: Env<'_> = &[];
    let none = ConfigFlags::default();
    // (environment, file, flags) -> (addr port, max_steps, origin of the addr)
    let cases = [
        (empty, None, &none, 8484, MAX_STEPS_DEFAULT, Origin::Default),
        (empty, Some(file), &none, 1000, 3, Origin::File),
        (env, Some(file), &none, 2000, 7, Origin::Env("IMURUN_ADDR")),
        (env, Some(file), &flag, 3000, 9, Origin::Flag("--addr")),
    ];
    for (env, file, flags, port, steps, origin) in cases {
        let config = check(env, file, flags).unwrap();
        assert_eq!(config.server.addr.port(), port, "{origin}");
        assert_eq!(config.agent.max_steps, steps, "{origin}");
        assert_eq!(config.origin("server.addr"), origin);
    }
}

#[test]
fn every_key_reads_the_file_and_its_variable() {
    let file = r#"
model = "scripted:demo.json"
[server]
addr = "127.0.0.1:9000"
api_token = "file-token"
tls_cert = "tls/cert.pem"
tls_key = "/etc/ssl/key.pem"
[agent]
max_steps = 4
persona = "You are terse."
summarise_history = false
call_prefill = "always"
tool_examples = false
grammar = false
prefetch = false
[permissions]
mode = "ask"
workspace_root = "~/work"
approval_timeout_s = 30
[permissions.toggles]
read_files = false
write_files = false
run_shell = false
network = false
[keep]
enabled = true
dir = "~/keep-host"
egress_loopback_ports = [8080, 9090]
host_id = "keep-a:8484"
[database]
url = "postgres://imurun@db/imurun"
"#;
    let config = check(&[], Some(file), &ConfigFlags::default()).unwrap();
    assert!(config.keep.enabled);
    assert_eq!(config.keep.dir, Path::new("/home/ada/keep-host"));
    assert_eq!(config.keep.egress_loopback_ports, [8080, 9090]);
    assert_eq!(config.keep.host_id.as_deref(), Some("keep-a:8484"));
    assert_eq!(config.model, "scripted:/etc/imurun/demo.json");
    assert_eq!(config.server.api_token, Some(ApiToken::new("file-token")));
    // A relative path in the file is relative to the file.
    assert_eq!(
        config.server.tls,
        Some(TlsFiles {
            cert: "/etc/imurun/tls/cert.pem".into(),
            key: "/etc/ssl/key.pem".into(),
        })
    );
    assert_eq!(
        config.agent,
        AgentSettings {
            max_steps: 4,
            max_steps_asked: None,
            persona: Some("You are terse.".into()),
            summarise_history: false,
            call_prefill: CallPrefill::Always,
            tool_examples: false,
            grammar: false,
            prefetch: false,
        }
    );
    assert_eq!(config.permissions.mode, Mode::Ask);
    assert_eq!(
        config.permissions.workspace_root,
        Path::new("/home/ada/work")
    );
    assert_eq!(config.permissions.approval_timeout_s, 30);
    assert!(!config.permissions.toggles.network);
    assert!(
        config
            .origins
            .values()
            .all(|origin| *origin == Origin::File)
    );

    let env = [
        ("IMURUN_MODEL", "ollama:"),
        ("IMURUN_API_TOKEN", "env-token"),
        ("IMURUN_PERSONA", "You are kind."),
        ("IMURUN_SUMMARISE_HISTORY", "yes"),
        ("IMURUN_CALL_PREFILL", "off"),
        ("IMURUN_TOOL_EXAMPLES", "1"),
        ("IMURUN_GRAMMAR", "on"),
        ("IMURUN_MODE", "allow-edits"),
        ("IMURUN_WORKSPACE", "/srv/ws"),
        ("IMURUN_APPROVAL_TIMEOUT_S", "60"),
        ("IMURUN_READ_FILES", "true"),
        ("IMURUN_WRITE_FILES", "true"),
        ("IMURUN_RUN_SHELL", "true"),
        ("IMURUN_NETWORK", "true"),
        ("IMURUN_KEEP", "false"),
        ("IMURUN_KEEP_DIR", "/srv/keep"),
        ("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", "7000, 7001"),
        ("IMURUN_DATABASE_URL", "sqlite:///srv/imurun.db"),
        ("IMURUN_TLS_CERT", "/srv/cert.pem"),
        ("IMURUN_TLS_KEY", "/srv/key.pem"),
    ];
    let config = check(&env, Some(file), &ConfigFlags::default()).unwrap();
    assert!(!config.keep.enabled);
    assert_eq!(config.keep.dir, Path::new("/srv/keep"));
    assert_eq!(config.keep.egress_loopback_ports, [7000, 7001]);
    assert_eq!(
        config.database_url.as_ref().map(DatabaseUrl::secret),
        Some("sqlite:///srv/imurun.db")
    );
    assert_eq!(config.model, "ollama:");
    assert_eq!(config.server.api_token, Some(ApiToken::new("env-token")));
    assert_eq!(
        config.server.tls.as_ref().map(|tls| (&tls.cert, &tls.key)),
        Some((&"/srv/cert.pem".into(), &"/srv/key.pem".into()))
    );
    // A certificate without its key is refused, naming both settings.
    let error = check(
        &[("IMURUN_TLS_CERT", "/srv/cert.pem")],
        None,
        &ConfigFlags::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("server.tls_key"), "{error}");
    assert_eq!(config.agent.persona.as_deref(), Some("You are kind."));
    assert!(config.agent.summarise_history && config.agent.grammar);
    assert_eq!(config.agent.call_prefill, CallPrefill::Off);
    assert_eq!(config.permissions.mode, Mode::AllowEdits);
    assert_eq!(config.permissions.workspace_root, Path::new("/srv/ws"));
    assert_eq!(config.permissions.approval_timeout_s, 60);
    assert_eq!(config.permissions.toggles, Toggles::default());
    assert_eq!(config.origin("agent.max_steps"), Origin::File);
    assert_eq!(
        config.origin("permissions.mode"),
        Origin::Env("IMURUN_MODE")
    );
}

#[test]
fn defaults_live_in_the_data_folder_and_bind_loopback() {
    let config = check(&[("IMURUN_ADDR", "  ")], None, &ConfigFlags::default()).unwrap();
    assert_eq!(config.server.addr, ADDR_DEFAULT);
    assert_eq!(
        config.model,
        format!("/home/ada/.imurun/models/{DEFAULT_MODEL_FILE}")
    );
    assert_eq!(
        config.permissions.workspace_root,
        Path::new("/home/ada/.imurun/workspace")
    );
    assert_eq!(config.permissions.mode, Mode::AllowReads);
    assert_eq!(
        config.permissions.approval_timeout_s,
        APPROVAL_TIMEOUT_S_DEFAULT
    );
    assert_eq!(config.agent.persona, None);
    assert!(config.server.api_token.is_none());
    assert_eq!(config.origin("server.addr"), Origin::Default);
}

#[test]
fn an_unknown_key_is_named_with_the_file_and_line() {
    let error = error_of(check(
        &[],
        Some("[agent]\nmax_steps = 3\nmax_step = 4\n"),
        &ConfigFlags::default(),
    ));
    assert!(error.contains("/etc/imurun/config.toml"), "{error}");
    assert!(error.contains("line 3"), "{error}");
    assert!(error.contains("max_step`"), "{error}");
    let error = error_of(check(&[], Some("modle = \"x\"\n"), &ConfigFlags::default()));
    assert!(error.contains("modle"), "{error}");
}

#[test]
fn a_bad_value_is_named_with_where_it_came_from() {
    let cases: [(Env<'_>, Option<&str>, &[&str]); 7] = [
        (
            &[],
            Some("[permissions]\nmode = \"yolo\""),
            &["line 2", "yolo"],
        ),
        (
            &[],
            Some("[agent]\nmax_steps = 0"),
            &["line 2", "agent.max_steps", "at least 1"],
        ),
        (
            &[],
            Some("[server]\naddr = \"example.com\""),
            &["line 2", "server.addr"],
        ),
        (
            &[],
            Some("[agent]\ngrammar = \"yes\""),
            &["line 2", "grammar"],
        ),
        (&[], Some("model = \"unclosed"), &["line 1", "config.toml"]),
        (&[("IMURUN_MODE", "yolo")], None, &["IMURUN_MODE", "yolo"]),
        (
            &[("IMURUN_APPROVAL_TIMEOUT_S", "0")],
            None,
            &["IMURUN_APPROVAL_TIMEOUT_S", "1 to 3600"],
        ),
    ];
    for (env, file, expect) in cases {
        let error = error_of(check(env, file, &ConfigFlags::default()));
        for part in expect {
            assert!(error.contains(part), "{part:?} not in {error}");
        }
    }
    let error = error_of(check(
        &[("IMURUN_MAX_STEPS", "0")],
        None,
        &ConfigFlags::default(),
    ));
    assert!(
        error.contains("IMURUN_MAX_STEPS must be a whole number of at least 1")
            || error.contains("IMURUN_MAX_STEPS: must be a whole number of at least 1"),
        "{error}"
    );
}

/// The seed caps a turn at 20 steps: more is lowered to 20, wherever it was asked, and the
/// asked value is kept for `config show`'s note.
#[test]
fn max_steps_above_the_cap_is_capped_not_refused() {
    let flags = ConfigFlags {
        max_steps: Some(99),
        ..ConfigFlags::default()
    };
    let cases = [
        check(
            &[],
            Some("[agent]\nmax_steps = 50"),
            &ConfigFlags::default(),
        ),
        check(&[("IMURUN_MAX_STEPS", "50")], None, &ConfigFlags::default()),
        check(&[], None, &flags),
    ];
    for (config, asked) in cases.into_iter().zip([50, 50, 99]) {
        let agent = config.unwrap().agent;
        assert_eq!((agent.max_steps, agent.max_steps_asked), (20, Some(asked)));
    }
    let agent = check(&[("IMURUN_MAX_STEPS", "20")], None, &ConfigFlags::default())
        .unwrap()
        .agent;
    assert_eq!((agent.max_steps, agent.max_steps_asked), (20, None));
}

#[test]
fn a_server_beyond_loopback_needs_a_token() {
    let token = [("IMURUN_API_TOKEN", "s3cret")];
    // (environment, whether validate accepts it)
    let cases: [(&[(&str, &str)], bool); 5] = [
        (&[("IMURUN_ADDR", "127.0.0.1:8484")], true),
        (&[("IMURUN_ADDR", "[::1]:8484")], true),
        (&[("IMURUN_ADDR", "0.0.0.0:8484")], false),
        (
            &[
                ("IMURUN_ADDR", "192.168.1.20:8484"),
                ("IMURUN_API_TOKEN", " "),
            ],
            false,
        ),
        (&[("IMURUN_ADDR", "0.0.0.0:8484"), token[0]], true),
    ];
    for (env, accepted) in cases {
        let config = check(env, None, &ConfigFlags::default()).unwrap();
        let result = config.validate();
        assert_eq!(result.is_ok(), accepted, "{env:?}: {result:?}");
        if let Err(error) = result {
            let error = error.to_string();
            assert!(error.contains("shell commands"), "{error}");
            assert!(error.contains("IMURUN_API_TOKEN"), "{error}");
            assert!(error.contains("environment IMURUN_ADDR"), "{error}");
        }
    }
}

#[test]
fn the_config_file_is_found_by_flag_variable_or_default() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("home");
    let named = dir.path().join("named.toml");
    std::fs::write(&named, "[agent]\nmax_steps = 2\n").unwrap();
    let missing = dir.path().join("missing.toml");
    let flags = ConfigFlags::default();
    let paths = Paths {
        home: None,
        data_dir: data_dir.clone(),
    };
    let run = |config_flag: Option<&Path>, env: Option<&Path>| {
        let value = env.map(|path| path.to_string_lossy().into_owned());
        let pairs: Vec<(&str, &str)> = value
            .iter()
            .map(|value| ("IMURUN_CONFIG", value.as_str()))
            .collect();
        let environment = Environment::from_pairs(&pairs);
        resolve(&Sources {
            config_flag,
            flags: &flags,
            environment: &environment,
            paths: &paths,
        })
    };
    // No default file: fine.
    assert_eq!(run(None, None).unwrap().file, None);
    assert_eq!(run(Some(&named), None).unwrap().agent.max_steps, 2);
    assert_eq!(run(None, Some(&named)).unwrap().agent.max_steps, 2);
    // The flag outranks the variable.
    assert_eq!(
        run(Some(&named), Some(&missing)).unwrap().file.as_deref(),
        Some(named.as_path())
    );
    for (flag, env) in [
        (Some(missing.as_path()), None),
        (None, Some(missing.as_path())),
    ] {
        let error = error_of(run(flag, env));
        assert!(error.contains("missing.toml"), "{error}");
    }
}

#[test]
fn the_token_is_never_shown() {
    let config = check(
        &[("IMURUN_API_TOKEN", "s3cret")],
        None,
        &ConfigFlags::default(),
    )
    .unwrap();
    assert!(!format!("{config:?}").contains("s3cret"));
    let shown = config.to_annotated_toml();
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("api_token = \"<redacted>\"  # environment IMURUN_API_TOKEN"),
        "{shown}"
    );
    // What is shown is TOML with the same tables as the file.
    let table: toml::Table = shown.parse().unwrap();
    assert_eq!(table["server"]["addr"].as_str(), Some("127.0.0.1:8484"));
    assert_eq!(
        table["permissions"]["toggles"]["run_shell"].as_bool(),
        Some(true)
    );
}

#[test]
fn only_file_and_default_values_yield_to_stored_settings() {
    let config = check(
        &[("IMURUN_MODE", "ask")],
        Some("[agent]\nmax_steps = 3\n"),
        &ConfigFlags {
            approval_timeout_s: Some(20),
            ..ConfigFlags::default()
        },
    )
    .unwrap();
    let yields = |key| config.origin(key).yields_to_stored_settings();
    assert!(!yields("permissions.mode"));
    assert!(!yields("permissions.approval_timeout_s"));
    assert!(yields("agent.max_steps"));
    assert!(yields("agent.persona"));
}

#[test]
fn the_docs_table_names_every_stored_setting() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
    )
    .unwrap();
    for (key, setting) in STORED_SETTINGS {
        let row = docs
            .lines()
            .find(|line| line.starts_with(&format!("| `{key}` |")))
            .unwrap_or_else(|| panic!("no row for {key} in docs/configuration.md"));
        assert!(row.ends_with(&format!("| `{setting}` |")), "{row}");
    }
}

#[test]
fn loopback_ports_are_ports_and_off_by_default() {
    let none = ConfigFlags::default();
    let config = check(&[], None, &none).unwrap();
    assert!(config.keep.egress_loopback_ports.is_empty());
    for bad in ["0", "65536", "8080,http"] {
        let error = error_of(check(
            &[("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", bad)],
            None,
            &none,
        ));
        assert!(
            error.contains("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS") && error.contains("not a port"),
            "{bad}: {error}"
        );
    }
    let error = error_of(check(
        &[],
        Some("[keep]\negress_loopback_ports = [0]\n"),
        &none,
    ));
    assert!(error.contains("egress_loopback_ports"), "{error}");
}

#[test]
fn the_database_url_comes_from_flag_variable_or_file_and_its_password_is_never_shown() {
    let file = "[database]\nurl = \"postgres://file:pw-file@db/imurun\"\n";
    let from_file = check(&[], Some(file), &ConfigFlags::default()).unwrap();
    assert_eq!(
        from_file.database_url.as_ref().map(DatabaseUrl::secret),
        Some("postgres://file:pw-file@db/imurun")
    );
    assert_eq!(from_file.origin("database.url"), Origin::File);
    let env: Env<'_> = &[("IMURUN_DATABASE_URL", "postgres://env:pw-env@db/imurun")];
    let from_env = check(env, Some(file), &ConfigFlags::default()).unwrap();
    assert_eq!(
        from_env.database_url.as_ref().map(DatabaseUrl::secret),
        Some("postgres://env:pw-env@db/imurun")
    );
    let flags = ConfigFlags {
        database: Some("sqlite:///srv/imurun.db".to_owned()),
        ..ConfigFlags::default()
    };
    let from_flag = check(env, Some(file), &flags).unwrap();
    assert_eq!(from_flag.origin("database.url"), Origin::Flag("--database"));
    let default = check(&[], None, &ConfigFlags::default()).unwrap();
    assert_eq!(default.database_url, None);

    let shown = from_env.to_annotated_toml();
    assert!(!shown.contains("pw-env"), "{shown}");
    assert!(!format!("{from_env:?}").contains("pw-env"));
    let table: toml::Table = shown.parse().unwrap();
    assert_eq!(
        table["database"]["url"].as_str(),
        Some("postgres://env:***@db/imurun")
    );
    assert_eq!(table["keep"]["enabled"].as_bool(), Some(false));
}
