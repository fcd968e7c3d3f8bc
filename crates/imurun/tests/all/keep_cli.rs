//! Keep mode as an operator sets it up: `imurun keep init`, tokens and signatures from the
//! command line, `imurun serve --keep` as a process, and the journal checked afterwards. A
//! canary put in the vault is in no answer, no log line and no byte of the database files.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};

use crate::serve_cli::{Server, script};
use crate::support::run_imurun;

const CANARY: &str = "canary-process-0e5c-vault";

fn imurun(home: &Path, args: &[&str]) -> (i32, String, String) {
    let output = run_imurun(args, "", &[("IMURUN_HOME", home.as_os_str())]);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|error| panic!("{text:?}: {error}"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn an_operator_sets_up_keep_and_serves_it() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (code, out, err) = imurun(home, &["keep", "init"]);
    assert_eq!(code, 0, "{out}{err}");
    let operator = out
        .lines()
        .find(|line| line.starts_with("imk_"))
        .expect("the operator token is printed")
        .to_owned();
    let keep = home.join("keep");
    assert_eq!(mode(&keep), 0o700);
    for file in [
        "policy.key",
        "signer.key",
        "host.key",
        "vault.key",
        "trust-root.json",
    ] {
        assert_eq!(mode(&keep.join(file)), 0o600, "{file}");
    }
    let (code, _, err) = imurun(home, &["keep", "init"]);
    assert_ne!(code, 0);
    assert!(err.contains("nothing is overwritten"), "{err}");

    let (code, out, err) = imurun(home, &["keep", "token", "create", "--user", "alice"]);
    assert_eq!(code, 0, "{err}");
    let alice = json_of(&out)["token"].as_str().expect("token").to_owned();

    // A bundle and a policy, signed with the command line's own tools.
    let mut bundle = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
    bundle.extend_from_slice(b"a helper component");
    std::fs::write(home.join("helper.wasm"), &bundle).unwrap();
    let signer = keep.join("signer.key");
    let (code, out, err) = imurun(
        home,
        &[
            "keep",
            "sign",
            "--key",
            signer.to_str().unwrap(),
            "--bundle",
            home.join("helper.wasm").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let bundle_signature = json_of(&out);
    std::fs::write(home.join("bundle.sig"), &out).unwrap();
    let signer_public = json_of(&std::fs::read_to_string(&signer).unwrap())["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, out, _) = imurun(
        home,
        &[
            "keep",
            "verify",
            "--public-key",
            &signer_public,
            "--bundle-signature",
            home.join("bundle.sig").to_str().unwrap(),
            home.join("helper.wasm").to_str().unwrap(),
        ],
    );
    assert_eq!(
        (code, json_of(&out)["valid"].as_bool()),
        (0, Some(true)),
        "{out}"
    );
    bundle[10] ^= 1;
    std::fs::write(home.join("changed.wasm"), &bundle).unwrap();
    let (code, out, _) = imurun(
        home,
        &[
            "keep",
            "verify",
            "--public-key",
            &signer_public,
            "--bundle-signature",
            home.join("bundle.sig").to_str().unwrap(),
            home.join("changed.wasm").to_str().unwrap(),
        ],
    );
    assert_eq!(
        (code, json_of(&out)["valid"].as_bool()),
        (1, Some(false)),
        "{out}"
    );
    bundle[10] ^= 1;

    let policy = json!({
        "type": "imurun.policy", "agent": "helper", "version": 1,
        "expires_at": 4_000_000_000_i64,
        "bundle_sha256": sha256_hex(&bundle),
        "manifest": {"name": "helper", "version": 1,
            "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000},
            "approval_timeout_s": 30}
    });
    std::fs::write(home.join("policy.json"), policy.to_string()).unwrap();
    let (code, out, err) = imurun(
        home,
        &[
            "keep",
            "sign",
            "--key",
            keep.join("policy.key").to_str().unwrap(),
            home.join("policy.json").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let signed_policy = json_of(&out);
    std::fs::write(
        home.join("duplicate.json"),
        r#"{"type":"imurun.policy","type":"imurun.ceiling"}"#,
    )
    .unwrap();
    let (code, _, err) = imurun(
        home,
        &[
            "keep",
            "sign",
            "--key",
            keep.join("policy.key").to_str().unwrap(),
            home.join("duplicate.json").to_str().unwrap(),
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("appears twice"), "{err}");

    let model = script(home, &json!([{"text": "Hello."}]));
    let server = Server::start_as(home, &model, &["--keep"], &[], Some(&operator));
    assert_eq!(server.request_as(None, "GET", "/api/health", None).0, 401);
    assert_eq!(
        server
            .request_as(Some(&alice), "GET", "/api/health", None)
            .0,
        200
    );
    assert_eq!(server.request_as(None, "GET", "/v1/whoami", None).0, 401);
    assert_eq!(
        server
            .request_as(Some(&alice), "GET", "/api/sessions", None)
            .0,
        403
    );
    assert_eq!(
        server.get("/api/sessions").0,
        200,
        "the operator reaches the assistant"
    );
    let deploy = json!({
        "bundle": base64_of(&bundle),
        "bundle_signature": bundle_signature,
        "policy": signed_policy,
    });
    // Refused before the body is read (so it is not sent: a server may close a connection
    // whose body it never read, which resets it).
    let (status, _, answer) = server.request_as(Some(&alice), "POST", "/v1/agents", None);
    assert_eq!(status, 403, "{answer}");
    let (status, agent) = server.post("/v1/agents", deploy);
    assert_eq!(status, 201, "{agent}");
    let (status, _, stored) = server.request_as(
        Some(&alice),
        "PUT",
        "/v1/vault/github",
        Some(&json!({"value": CANARY})),
    );
    assert_eq!(status, 200, "{stored}");
    let mut answers = String::new();
    for (token, path) in [
        (&alice, "/v1/vault"),
        (&alice, "/v1/journal"),
        (&operator, "/v1/journal"),
        (&alice, "/v1/agents"),
    ] {
        answers.push_str(&server.request_as(Some(token), "GET", path, None).1);
    }
    assert!(
        answers.contains("github") && answers.contains("helper"),
        "{answers}"
    );
    assert!(!answers.contains(CANARY), "{answers}");
    let wal_seen = scan(home)
        .iter()
        .any(|path| path.to_string_lossy().ends_with("-wal"));
    assert!(
        wal_seen,
        "the write-ahead log was scanned while the host ran"
    );
    assert!(server.terminate().success());
    let scanned = scan(home);
    assert!(
        scanned
            .iter()
            .any(|path| path.to_string_lossy().contains("logs")),
        "{scanned:?}"
    );

    let (code, out, err) = imurun(home, &["keep", "journal", "verify"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(json_of(&out)["first_bad"], Value::Null);
}

/// Every file under `folder` (the database, its WAL and shared memory, the logs, the keys),
/// checked for the canary; the files scanned.
fn scan(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut scanned = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes
                        .windows(CANARY.len())
                        .any(|window| window == CANARY.as_bytes()),
                    "{}",
                    path.display()
                );
                scanned.push(path);
            }
        }
    }
    scanned
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    imurun_keep::keys::sha256_hex(bytes)
}

pub(crate) fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The egress broker's table of cases, as the command reads them (without `name` and
/// `expect`).
fn egress_table() -> Vec<Value> {
    include_str!("../../../imurun-cell/testdata/egress.jsonl")
        .lines()
        .map(json_of)
        .collect()
}

#[test]
fn egress_check_answers_every_case_of_the_brokers_table_as_the_broker_does() {
    let rows = egress_table();
    let input: String = rows
        .iter()
        .map(|row| {
            let mut question = row.clone();
            let object = question.as_object_mut().unwrap();
            object.remove("name");
            object.remove("expect");
            format!("{question}\n")
        })
        .collect();
    let output = run_imurun(&["keep", "egress", "check"], &input, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<Value> = stdout.lines().map(json_of).collect();
    assert_eq!(answers.len(), rows.len());
    let own = imurun_net::own_addresses();
    for (row, answer) in rows.iter().zip(&answers) {
        let expect = &row["expect"];
        assert_eq!(
            answer["decision"], expect["decision"],
            "{}: {answer}",
            row["name"]
        );
        if let Some(rule) = expect["rule"].as_str() {
            assert_eq!(answer["rule"], rule, "{}: {answer}", row["name"]);
        }
        // The broker's own function, asked the same question, answers the same.
        let mut question = row.clone();
        question.as_object_mut().unwrap().remove("name");
        question.as_object_mut().unwrap().remove("expect");
        let asked: imurun_cell::egress::Question = serde_json::from_value(question).unwrap();
        let broker = serde_json::to_value(imurun_cell::egress::decide(&asked, &own)).unwrap();
        assert_eq!(answer, &broker, "{}", row["name"]);
    }
    assert!(
        answers
            .iter()
            .all(|answer| answer["reason"].as_str().is_some_and(|r| !r.is_empty()))
    );
}

#[test]
fn egress_check_names_a_line_it_cannot_read_and_exits_1() {
    let input = "{\"rules\": [], \"method\": \"GET\", \"url\": \"https://a.example/\", \"resolved\": [\"93.184.216.34\"]}\nnot json\n{\"rules\": [], \"auto_approve\": true}\n";
    let output = run_imurun(&["keep", "egress", "check"], input, &[]);
    assert_eq!(output.status.code(), Some(1));
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(json_of)
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["decision"], "deny");
    assert_eq!(lines[0]["rule"], "scheme");
    assert!(
        lines[1]["error"].as_str().unwrap().starts_with("line 2:"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2]["error"].as_str().unwrap().contains("auto_approve"),
        "{}",
        lines[2]
    );
}

/// `keep canonical` prints the bytes `keep sign` signs, exactly: members sorted, no white
/// space, non-ASCII text as UTF-8 and escapes as RFC 8785 writes them, and no newline.
#[test]
fn keep_canonical_prints_exactly_the_bytes_keep_sign_signs() {
    let dir = tempfile::tempdir().unwrap();
    let document = dir.path().join("document.json");
    std::fs::write(
        &document,
        "{ \"type\" : \"imurun.policy\",\n  \"name\": \"caf\u{e9} \u{2615}\",\n  \
         \"b\": [ 3, 1 ],\n  \"a\": { \"z\": \"\\u00e9\\n\", \"y\": -2 } }\n",
    )
    .unwrap();
    let expected = "{\"a\":{\"y\":-2,\"z\":\"\u{e9}\\n\"},\"b\":[3,1],\"name\":\"caf\u{e9} \u{2615}\",\"type\":\"imurun.policy\"}";
    let path = document.to_str().unwrap();
    for (args, input) in [
        (["keep", "canonical", path], ""),
        (
            ["keep", "canonical", "-"],
            &*std::fs::read_to_string(&document).unwrap(),
        ),
    ] {
        let output = run_imurun(&args, input, &[]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.stdout, expected.as_bytes(), "{args:?}");
    }

    // `keep sign` signs those bytes: the envelope's signature checks over them.
    let key = dir.path().join("signer.key");
    let output = run_imurun(&["keep", "keygen", "--out", key.to_str().unwrap()], "", &[]);
    assert_eq!(output.status.code(), Some(0));
    let public_key = json_of(&String::from_utf8_lossy(&output.stdout))["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let output = run_imurun(
        &["keep", "sign", "--key", key.to_str().unwrap(), path],
        "",
        &[],
    );
    assert_eq!(output.status.code(), Some(0));
    let envelope = json_of(&String::from_utf8_lossy(&output.stdout));
    imurun_keep::keys::PublicKey::from_hex(&public_key)
        .unwrap()
        .verify(
            expected.as_bytes(),
            envelope["signature"]["sig"].as_str().unwrap(),
        )
        .expect("the signature covers the canonical bytes");

    // What `keep sign` refuses, `keep canonical` refuses alike, on stderr.
    std::fs::write(
        &document,
        "{\"type\": \"imurun.policy\", \"a\": 1, \"a\": 2}",
    )
    .unwrap();
    let output = run_imurun(&["keep", "canonical", path], "", &[]);
    assert_ne!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("appears twice"), "{stderr}");
}

#[test]
fn serving_keep_with_the_apis_own_port_opened_to_cells_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (code, out, err) = imurun(home, &["keep", "init"]);
    assert_eq!(code, 0, "{out}{err}");
    let model = script(home, &json!(["unused"]));
    // A port free a moment ago: the server binds it and then reads the ports opened to cells.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ports = format!("{port},9");
    let addr = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_imurun"))
        .args(["serve", "--keep", "--model", &model, "--addr", &addr])
        .env("IMURUN_HOME", home)
        .env("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", &ports)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A server that starts anyway would run until killed: give it a while, then fail.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the server started with its own port opened to cells");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("egress_loopback_ports") && stderr.contains(&port.to_string()),
        "{stderr}"
    );
}
