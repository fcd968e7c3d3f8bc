//! The web page: its files are served with their types, `no-cache` and the CSP; and the page
//! itself, in Debian's chromium driven by `web/tests/e2e.mjs`, streams answers, shows tool
//! steps, takes approvals by click and by keyboard, stops a turn, keeps a setting over a
//! reload, passes axe-core and fits 360 px.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use imurun_server::{CONTENT_SECURITY_POLICY, ServerOptions, asset_names};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::api_support::{Dirs, Reply, TestModel, TestServer, WAIT_MAX, tool_reply, write_file};

/// `GET path`: the status, the response head (lower case) and the body's length.
async fn get_raw(server: &TestServer, path: &str) -> (u16, String, usize) {
    let exchange = async {
        let mut stream = TcpStream::connect(server.addr).await.expect("connect");
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            server.addr
        );
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.expect("read");
        response
    };
    let response = tokio::time::timeout(WAIT_MAX, exchange)
        .await
        .expect("an answer in time");
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    (status, head, response.len() - split - 4)
}

/// The value of header `name` in a lower-cased head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_their_types_and_the_csp() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let cases = [
        ("/", "text/html; charset=utf-8"),
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/chat.js", "text/javascript; charset=utf-8"),
        ("/assets/style.css", "text/css; charset=utf-8"),
        ("/assets/icon.svg", "image/svg+xml"),
    ];
    for (path, content_type) in cases {
        let (status, head, length) = get_raw(&server, path).await;
        assert_eq!(status, 200, "{path}: {head}");
        assert_eq!(header(&head, "content-type"), Some(content_type), "{path}");
        assert_eq!(header(&head, "cache-control"), Some("no-cache"), "{path}");
        assert_eq!(
            header(&head, "content-security-policy"),
            Some(CONTENT_SECURITY_POLICY.to_ascii_lowercase().as_str()),
            "{path}"
        );
        assert_eq!(header(&head, "x-content-type-options"), Some("nosniff"));
        assert!(length > 0, "{path} is empty");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_csp_refuses_inline_scripts_and_other_origins() {
    for directive in [
        "default-src 'self'",
        "script-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(
            CONTENT_SECURITY_POLICY.contains(directive),
            "{directive} is missing"
        );
    }
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    // The page keeps to it: no inline script or style, no handler attributes.
    let index = std::fs::read_to_string(web_dir().join("index.html")).expect("index.html");
    assert!(!index.contains("<script>") && !index.contains("<style"));
    let handler_attributes: Vec<&str> = index
        .split_whitespace()
        .filter(|word| word.starts_with("on") && word.contains('='))
        .collect();
    assert!(handler_attributes.is_empty(), "{handler_attributes:?}");
}

#[tokio::test]
async fn unknown_assets_are_404_in_the_api_s_shape() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    for path in [
        "/assets/nope.js",
        "/assets/",
        "/assets/../Cargo.toml",
        "/index.html",
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"]["code"], "not_found", "{path}");
    }
    let (status, _) = server.post("/", json!({})).await;
    assert_eq!(status, 405);
    server.stop().await;
}

/// Every file of `web/` the page loads is embedded, and every embedded file exists.
#[test]
fn every_page_file_is_embedded() {
    let mut on_disk: Vec<String> = std::fs::read_dir(web_dir())
        .expect("web/")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .filter(|name| name != "index.html" && name != "tests")
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = asset_names().into_iter().map(str::to_owned).collect();
    embedded.sort();
    assert_eq!(
        on_disk, embedded,
        "web/ and the asset table in routes/page.rs differ"
    );
}

fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

/// The title of the session `e2e.mjs` creates to open the `queued` scenario's gate.
const OPEN_THE_GATE: &str = "open the gate";

/// The test model's script, in the order `e2e.mjs` runs its scenarios; the last reply waits
/// for a gate nobody opens, so only the Stop button ends its turn.
fn page_script(queued_gate: &Arc<Semaphore>, never: &Arc<Semaphore>) -> Vec<Reply> {
    let read = || tool_reply("file_read", json!({"path": "notes.txt"}));
    vec![
        // stream
        Reply::text("Hello from the page test."),
        // tool, with a thought before the call
        Reply::text(&format!(
            "<think>The notes are in notes.txt.</think>\n{}",
            read()
        )),
        Reply::text("Your notes say: remember the milk."),
        // approve (the settings scenario has set the mode to ask)
        Reply::text(&read()),
        Reply::text("I read them with your approval."),
        // deny
        Reply::text(&read()),
        Reply::text("Then I will not read them."),
        // keyboard
        Reply::text(&read()),
        Reply::text("I read them after your key press."),
        // remember: approved for the session, then read again without a card
        Reply::text(&read()),
        Reply::text("Read, and I may again."),
        Reply::text(&read()),
        Reply::text("Read again without asking."),
        // queued: the first answer waits until the page has seen its second prompt queued
        Reply::gated("First things first.", queued_gate),
        Reply::text("And now the second."),
        // stop
        Reply::gated("This never arrives.", never),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_works_in_a_real_browser() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "remember the milk\n");
    let queued_gate = Arc::new(Semaphore::new(0));
    let never = Arc::new(Semaphore::new(0));
    let model = TestModel::new(page_script(&queued_gate, &never));
    let server = TestServer::start(&dirs, Some(model)).await;
    // The `queued` scenario signals through the API that its second prompt shows as queued:
    // it creates a session with this title, and the gate of the first answer opens.
    let mut events = server.events(None).await;
    let opener = tokio::spawn(async move {
        while let Some(message) = events.next_event().await {
            let event = message.data();
            if event["type"] == "session.created" && event["session"]["title"] == OPEN_THE_GATE {
                queued_gate.add_permits(1);
                return;
            }
        }
    });
    let output = run_e2e(&server, &[], None).await;
    println!("{output}");
    opener.abort();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_api_token_once() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::text("Hello behind a token.")]);
    let options = ServerOptions {
        api_token: Some("page-test-token".to_owned()),
        ..ServerOptions::default()
    };
    let server = TestServer::start_with(&dirs, Some(model), options).await;
    let output = run_e2e(&server, &["token"], Some("page-test-token")).await;
    println!("{output}");
    server.stop().await;
}

/// Runs `web/tests/e2e.mjs` against `server` (these scenarios, or all) and returns its output;
/// fails the test with the script's output when a check failed.
async fn run_e2e(server: &TestServer, scenarios: &[&str], token: Option<&str>) -> String {
    let web = web_dir();
    assert!(
        web.join("tests/node_modules/playwright-core").is_dir()
            && web.join("tests/node_modules/axe-core").is_dir(),
        "web/tests/node_modules lacks playwright-core or axe-core: run scripts/setup"
    );
    assert!(
        std::path::Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: run scripts/setup (it installs Debian's chromium)"
    );
    let mut command =
        Command::new(std::env::var_os("IMURUN_NODE").unwrap_or_else(|| "node".into()));
    command
        .arg(web.join("tests/e2e.mjs"))
        .arg(format!("http://{}/", server.addr))
        .arg(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("page-screenshots"))
        .args(scenarios);
    if let Some(token) = token {
        command.env("IMURUN_PAGE_TOKEN", token);
    }
    let started = std::time::Instant::now();
    let run = tokio::task::spawn_blocking(move || {
        command.output().unwrap_or_else(|error| {
            panic!("cannot run node ({error}): install Node.js 20 or later, then scripts/setup")
        })
    });
    let output = tokio::time::timeout(WAIT_MAX * 9, run)
        .await
        .expect("the browser checks end in time")
        .expect("the browser checks' task");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the page's browser checks failed ({}) after {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status,
        started.elapsed()
    );
    stdout.into_owned()
}
