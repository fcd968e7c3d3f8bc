//! The web page: its files are served with their types, `no-cache` and the CSP; the vendored
//! Markdown renderer and sanitiser are exactly their pinned packages' files; and the page
//! itself, in Debian's chromium driven by `web/tests/e2e.mjs`, opens ready to type, renders
//! answers as inert Markdown while they stream, shows tool steps and grounded answers, takes
//! approvals by click and by keyboard, stops a turn, keeps a setting over a reload, passes
//! axe-core and fits 360 px.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use imurun_core::SandboxStatus;
use imurun_server::{CONTENT_SECURITY_POLICY, ServerOptions, asset_names, asset_paths};
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
        ("/assets/markdown.js", "text/javascript; charset=utf-8"),
        ("/assets/marked.esm.js", "text/javascript; charset=utf-8"),
        ("/assets/purify.es.mjs", "text/javascript; charset=utf-8"),
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

/// The page reads a step's call lines by the starts the loop writes them with: a start the
/// loop gained and the page lacks would show a call that never ran as prose.
#[test]
fn the_page_reads_every_call_line_the_loop_writes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/chat.js");
    let script = std::fs::read_to_string(&path).expect("reading web/chat.js");
    let pattern = script
        .lines()
        .find(|line| line.starts_with("const CALL_LINE = "))
        .expect("chat.js has CALL_LINE");
    for start in imurun_agent::CALL_LINE_STARTS {
        let word = start.trim_end_matches('`').trim_end();
        assert!(
            pattern.contains(&format!("({word}|"))
                || pattern.contains(&format!("|{word})"))
                || pattern.contains(&format!("|{word}|")),
            "{pattern} lacks {word:?}"
        );
    }
    let reason = format!(
        "const EXAMPLE_VALUE_REASON = '{}';",
        imurun_agent::EXAMPLE_VALUE_REASON
    );
    assert!(script.contains(&reason), "chat.js lacks {reason}");
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
        "/assets/vendor/marked.esm.js",
        "/assets/LICENSE-marked",
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

/// The files of `web/` that are not the page's: its tests, and the vendored libraries'
/// licences and notes (each served script keeps its own licence header).
const NOT_SERVED: &[&str] = &[
    "tests",
    "vendor/README.md",
    "vendor/LICENSE-marked",
    "vendor/LICENSE-dompurify",
];

/// Every file of `web/` the page loads is embedded, every embedded file exists, and each is
/// served under one name.
#[test]
fn every_page_file_is_embedded() {
    let mut on_disk = Vec::new();
    files_under(&web_dir(), "", &mut on_disk);
    on_disk.retain(|path| path != "index.html" && !NOT_SERVED.contains(&path.as_str()));
    on_disk.sort();
    let mut embedded: Vec<String> = asset_paths().into_iter().map(str::to_owned).collect();
    embedded.sort();
    assert_eq!(
        on_disk, embedded,
        "web/ and the asset table in routes/page.rs differ"
    );
    let mut names = asset_names();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), embedded.len(), "two assets share a name");
}

/// The paths of the files under `dir`, relative to `web/` (`prefix` is `dir`'s), not entering
/// the directories `NOT_SERVED` names.
fn files_under(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("a directory of web/") {
        let entry = entry.expect("an entry");
        let name = entry.file_name().into_string().expect("UTF-8");
        let path = format!("{prefix}{name}");
        if entry.file_type().expect("a file type").is_dir() {
            if !NOT_SERVED.contains(&path.as_str()) {
                files_under(&entry.path(), &format!("{path}/"), out);
            }
        } else {
            out.push(path);
        }
    }
}

fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

/// One vendored file: the npm package and version it comes from, its path in the package,
/// and its path under `web/`.
struct Vendored {
    package: &'static str,
    version: &'static str,
    in_package: &'static str,
    in_web: &'static str,
}

/// What `web/vendor/` holds (its README says the same).
const VENDORED: &[Vendored] = &[
    Vendored {
        package: "marked",
        version: "18.2.1",
        in_package: "lib/marked.esm.js",
        in_web: "vendor/marked.esm.js",
    },
    Vendored {
        package: "marked",
        version: "18.2.1",
        in_package: "LICENSE",
        in_web: "vendor/LICENSE-marked",
    },
    Vendored {
        package: "dompurify",
        version: "3.5.0",
        in_package: "dist/purify.es.mjs",
        in_web: "vendor/purify.es.mjs",
    },
    Vendored {
        package: "dompurify",
        version: "3.5.0",
        in_package: "LICENSE",
        in_web: "vendor/LICENSE-dompurify",
    },
];

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()))
}

/// The vendored renderer and sanitiser are byte for byte the files of the npm packages at the
/// versions pinned in `web/tests/package.json` and its lock file; `scripts/setup` installs
/// those (`npm ci` checks each package's integrity hash), and this compares them.
#[test]
fn the_vendored_files_are_the_pinned_packages_files() {
    let tests = web_dir().join("tests");
    let manifest = read_json(&tests.join("package.json"));
    let lock = read_json(&tests.join("package-lock.json"));
    let readme = std::fs::read_to_string(web_dir().join("vendor/README.md")).expect("README");
    for file in VENDORED {
        let package = file.package;
        assert_eq!(
            manifest["dependencies"][package], file.version,
            "web/tests/package.json must pin {package} at exactly {}",
            file.version
        );
        assert_eq!(
            lock["packages"][format!("node_modules/{package}")]["version"],
            file.version,
            "web/tests/package-lock.json locks another {package}"
        );
        assert!(
            readme.contains(&format!("| `{package}` | {} |", file.version)),
            "web/vendor/README.md does not name {package} {}",
            file.version
        );
        let installed = tests.join("node_modules").join(package);
        let installed_manifest = installed.join("package.json");
        assert!(
            installed_manifest.is_file(),
            "web/tests/node_modules lacks {package}: run scripts/setup"
        );
        assert_eq!(
            read_json(&installed_manifest)["version"],
            file.version,
            "web/tests/node_modules holds another {package}: run scripts/setup"
        );
        let shipped = std::fs::read(installed.join(file.in_package)).expect("the package's file");
        let committed = std::fs::read(web_dir().join(file.in_web)).expect("the vendored file");
        assert!(
            shipped == committed,
            "web/{} is not {package} {}'s {}: copy it again (web/vendor/README.md)",
            file.in_web,
            file.version,
            file.in_package
        );
    }
    // The banners say the same versions.
    let marked = std::fs::read_to_string(web_dir().join("vendor/marked.esm.js")).expect("marked");
    assert!(marked.starts_with("/**\n * marked v18.2.1 "));
    let purify = std::fs::read_to_string(web_dir().join("vendor/purify.es.mjs")).expect("purify");
    assert!(purify.starts_with("/*! @license DOMPurify 3.5.0 "));
}

/// The titles of the sessions `e2e.mjs` creates to open a gate of the script: the `first`
/// scenario's, once it saw the first half of its answer rendered while streaming, and the
/// `queued` scenario's, once it saw its second prompt queued.
const OPEN_THE_STREAM: &str = "open the stream";
const OPEN_THE_GATE: &str = "open the gate";

/// The gates of the page's script, opened by the sessions above; `never` is never opened.
struct Gates {
    stream: Arc<Semaphore>,
    queued: Arc<Semaphore>,
    never: Arc<Semaphore>,
}

impl Gates {
    fn new() -> Gates {
        Gates {
            stream: Arc::new(Semaphore::new(0)),
            queued: Arc::new(Semaphore::new(0)),
            never: Arc::new(Semaphore::new(0)),
        }
    }
}

/// The `first` scenario's answer, in the pieces it streams: a strong phrase and a list, then
/// (once the gate opens) a heading, a numbered list, a table, a code block and a link.
const MARKDOWN_PIECES: &[&str] = &[
    "Here is **what you asked**, with *emphasis*:\n\n",
    "- apples\n",
    "- pears\n\n",
    "## Steps\n\n",
    "1. Open the file\n2. Run `make`\n\n",
    "| name | value |\n| :--- | ---: |\n| alpha | 1 |\n| beta | 2 |\n\n",
    "```rust\nfn main() { println!(\"<b>hi</b>\"); }\n```\n\n",
    "See [the docs](https://example.org/docs).",
];

/// The `inert` scenario's answer: everything that would run, load or style if the page took
/// the model's text as HTML.
const TRICKY_ANSWER: &str = "<script>window.__pwned = 'script'</script>\n\n\
<img src=x onerror=\"window.__pwned = 'img'\">\n\n\
[click me](javascript:window.__pwned='link') and **still Markdown**\n\n\
<a href=\"javascript:window.__pwned='raw'\">raw link</a> and <b onclick=\"window.__pwned='b'\">bold?</b>\n\n\
<iframe src=\"https://example.org/\"></iframe>\n\n\
![a picture](https://example.org/picture.png)\n\n\
<div style=\"color: red\" class=\"approval\" id=\"prompt\">styled</div>";

/// The test model's script, in the order `e2e.mjs` runs its scenarios; the last reply waits
/// for a gate nobody opens, so only the Stop button ends its turn. An answer after a read
/// quotes the notes, as a grounded answer must (else the loop asks again and the replies
/// shift).
fn page_script(gates: &Gates) -> Vec<Reply> {
    let read = || tool_reply("file_read", json!({"path": "notes.txt"}));
    vec![
        // first: streamed, the second half held until the page saw the first rendered
        Reply::pieces(MARKDOWN_PIECES).held_before(3, &gates.stream),
        // stream
        Reply::text("Hello from the page test."),
        // tool, with a thought before the call
        Reply::text(&format!(
            "<think>The notes are in notes.txt.</think>\n{}",
            read()
        )),
        Reply::text("Your notes say: remember the milk."),
        // inert: an answer that would run if it were HTML, then a tool step's text that would
        Reply::text(TRICKY_ANSWER),
        Reply::text(&format!(
            "I will look <img src=x onerror=\"window.__pwned = 'step'\"> **carefully**.\n{}",
            read()
        )),
        Reply::text("Your notes say: remember the milk."),
        // approve (the settings scenario has set the mode to ask)
        Reply::text(&read()),
        Reply::text("I read them with your approval: remember the milk."),
        // deny: the turn ends at the No, with the loop's own answer
        Reply::text(&read()),
        // keyboard
        Reply::text(&read()),
        Reply::text("I read them after your key press: remember the milk."),
        // remember: approved for the session, then read again without a card
        Reply::text(&read()),
        Reply::text("Read, and I may again: remember the milk."),
        Reply::text(&read()),
        Reply::text("Read again without asking: remember the milk."),
        // queued: the first answer waits until the page has seen its second prompt queued
        Reply::gated("First things first.", &gates.queued),
        Reply::text("And now the second."),
        // stop
        Reply::gated("This never arrives.", &gates.never),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_works_in_a_real_browser() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "remember the milk\n");
    let gates = Gates::new();
    let model = TestModel::new(page_script(&gates));
    // The settings scenario reads this back from the page.
    let options = ServerOptions {
        sandbox: SandboxStatus::Landlock {
            abi: 6,
            filesystem: true,
            network: true,
            scoped: true,
        },
        ..ServerOptions::default()
    };
    let server = TestServer::start_with(&dirs, Some(model), options).await;
    // The scenarios signal through the API that the page shows what they wait for: each
    // creates a session with a title, and the gate of that title opens.
    let mut openers = HashMap::from([
        (OPEN_THE_STREAM, Arc::clone(&gates.stream)),
        (OPEN_THE_GATE, Arc::clone(&gates.queued)),
    ]);
    let mut events = server.events(None).await;
    let opener = tokio::spawn(async move {
        while let Some(message) = events.next_event().await {
            let event = message.data();
            if event["type"] != "session.created" {
                continue;
            }
            let title = event["session"]["title"].as_str().unwrap_or_default();
            if let Some(gate) = openers.remove(title) {
                gate.add_permits(1);
            }
            if openers.is_empty() {
                return;
            }
        }
    });
    let output = run_e2e(&server, &[], None).await;
    println!("{output}");
    opener.abort();
    server.stop().await;
}

/// A turn that calls `get_time` and answers twice without the time: the loop retries once,
/// then answers from the tool's result; the page's thinking panel shows both, live and after
/// a reload. The first answer comes slowly: while it is held for checking, the page says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_a_grounded_retry_and_fallback() {
    let dirs = Dirs::new();
    // The first answer is slow: it starts three seconds after the server says it is held
    // for checking.
    let slow = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![
        Reply::text(&tool_reply("get_time", json!({}))),
        Reply::gated("It is lunchtime.", &slow),
        Reply::text("Still lunchtime, I think."),
    ]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let mut events = server.events(None).await;
    let opener = tokio::spawn(async move {
        while let Some(message) = events.next_event().await {
            if message.data()["type"] == "answer.checking" {
                tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                slow.add_permits(1);
                return;
            }
        }
    });
    let output = run_e2e(&server, &["grounding"], None).await;
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
