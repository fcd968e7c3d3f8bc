//! `imurun serve --tls-cert FILE --tls-key FILE` serves HTTPS with the operator's certificate:
//! a client that trusts it gets answers, plain HTTP on the port gets none, and a key that cannot
//! be read stops the start with the file's name.

use std::process::{Command, Stdio};

use crate::serve_cli::{script, spawn_serve};

#[test]
fn serve_answers_over_https_with_the_certificate_it_is_given() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (cert, key, der) = imurun_testkit::self_signed_pem("localhost");
    let (cert_file, key_file) = (home.join("cert.pem"), home.join("key.pem"));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    let model = script(home, &serde_json::json!([{"text": "Hello."}]));
    let (cert_arg, key_arg) = (cert_file.to_str().unwrap(), key_file.to_str().unwrap());
    let (mut child, addr) = spawn_serve(
        home,
        &model,
        &["--tls-cert", cert_arg, "--tls-key", key_arg],
        &[],
        "https",
    );
    let port = addr.rsplit(':').next().unwrap().to_owned();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (status, body) = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_der(&der).unwrap())
            .build()
            .unwrap();
        let answer = client
            .get(format!("https://localhost:{port}/api/health"))
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    });
    assert_eq!(status, 200, "{body}");
    // Plain HTTP on the same port is no conversation: the TLS listener answers it nothing.
    let plain = runtime.block_on(async {
        reqwest::Client::new()
            .get(format!("http://127.0.0.1:{port}/api/health"))
            .timeout(std::time::Duration::from_secs(15))
            .send()
            .await
            .map(|answer| answer.status().as_u16())
    });
    assert!(plain.is_err(), "plain HTTP was answered: {plain:?}");
    let _ = child.kill();
    let _ = child.wait();

    // A key that is not there stops the start, naming it.
    let output = Command::new(env!("CARGO_BIN_EXE_imurun"))
        .args([
            "serve",
            "--model",
            &model,
            "--addr",
            "127.0.0.1:0",
            "--tls-cert",
        ])
        .arg(&cert_file)
        .arg("--tls-key")
        .arg(home.join("missing.pem"))
        .env("IMURUN_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("missing.pem"), "{stderr}");
}
