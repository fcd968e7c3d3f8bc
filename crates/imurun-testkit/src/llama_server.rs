//! llama.cpp's own `llama-server`, built by `scripts/build-llama-server.sh` from the llama.cpp
//! the embedded back-end runs, serving a GGUF on a free local port for as long as the value
//! lives.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a server may take to load its model and answer `/health`.
const READY_WAIT_MAX: Duration = Duration::from_secs(180);

/// The `llama-server` binary: `IMURUN_LLAMA_SERVER`, else what
/// `scripts/build-llama-server.sh` prints (it builds the server the first time, about seven
/// minutes on two cores, and answers from its cache after that; `scripts/setup` runs it
/// first). `manifest_dir` is a crate's `CARGO_MANIFEST_DIR`, to find the repository. Panics
/// with the build's own words when it fails: tests of the real server never skip.
pub fn llama_server_binary(manifest_dir: &str) -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("IMURUN_LLAMA_SERVER") {
                return PathBuf::from(path);
            }
            let script = Path::new(manifest_dir)
                .ancestors()
                .map(|dir| dir.join("scripts").join("build-llama-server.sh"))
                .find(|script| script.is_file())
                .unwrap_or_else(|| {
                    panic!("scripts/build-llama-server.sh not found above {manifest_dir}")
                });
            let output = Command::new(&script)
                .stderr(Stdio::inherit())
                .output()
                .unwrap_or_else(|error| panic!("{}: {error}", script.display()));
            let stdout = String::from_utf8_lossy(&output.stdout);
            let path = stdout.lines().last().unwrap_or("").trim();
            assert!(
                output.status.success() && Path::new(path).is_file(),
                "{} failed ({}): see its output above",
                script.display(),
                output.status
            );
            PathBuf::from(path)
        })
        .clone()
}

/// A running `llama-server`, stopped when dropped.
#[derive(Debug)]
pub struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LlamaServer {
    /// Starts `binary` serving `model` on a free port of 127.0.0.1 with `args` added (such as
    /// `-c 1024` or `--jinja`) and [`MODEL_TEST_THREADS`](crate::MODEL_TEST_THREADS) threads,
    /// and waits until `/health` answers 200. Panics with the
    /// server's log when it exits or is not ready within three minutes.
    pub fn start(binary: &Path, model: &Path, args: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("a free local port");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let log = dir.path().join("llama-server.log");
        let log_file = File::create(&log).expect("the server's log file");
        let child = Command::new(binary)
            .arg("--model")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--threads", &crate::MODEL_TEST_THREADS.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("the log file"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|error| panic!("{}: {error}", binary.display()));
        let mut server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        };
        server.wait_until_ready(port);
        server
    }

    /// What the server has written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_until_ready(&mut self, port: u16) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("llama-server exited ({status}):\n{}", self.log());
            }
            if health_is_ok(port) {
                return;
            }
            assert!(
                started.elapsed() < READY_WAIT_MAX,
                "llama-server was not ready after {READY_WAIT_MAX:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `GET /health` answers 200 (503 while the model loads).
fn health_is_ok(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}
