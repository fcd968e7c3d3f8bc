//! `fetch_url` against local pages: HTML to text, caps, content types, and the address rule
//! that keeps it off loopback, private and link-local addresses (and off them again after a
//! redirect) — every address and URL spelling of imurun-net's deny matrix included.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use imurun_core::{Availability, Tool, ToolCategory};
use imurun_net::http::Url;
use imurun_net::{AddressClass, classify, parse_http_url};
use imurun_tools::{FETCH_REDIRECTS_MAX, FetchConfig, FetchUrl};
use serde_json::{Value, json};

use crate::replay::{Recorded, ReplayServer, Reply, assert_failed, assert_ok, run};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Allows the test server's address, and only it.
fn test_config() -> FetchConfig {
    FetchConfig {
        private_addresses_allowed: vec![LOCALHOST],
        timeout: Duration::from_secs(2),
        ..FetchConfig::default()
    }
}

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Release notes &ndash; Example</title>
  <style>body { font-family: sans-serif; } p::after { content: "<p>"; }</style>
  <script>window.secret = "do not show"; if (a < b) { document.write("<p>tracking</p>"); }</script>
</head>
<body>
  <!-- a comment nobody reads -->
  <nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>
  <h1>Version 2.0</h1>
  <p>Faster   builds &amp; smaller
     binaries &mdash; see &quot;changes&quot; &#8220;below&#8221;.</p>
  <ul><li>One</li><li>Two&nbsp;items</li></ul>
  <script type="module">import "./app.js";</script>
  <noscript>Enable JavaScript</noscript>
</body>
</html>"#;

#[tokio::test]
async fn html_becomes_readable_text() {
    let server = ReplayServer::always(Reply::html(200, PAGE)).await;
    let tool = FetchUrl::new(test_config());
    let output = run(&tool, json!({"url": server.url("/notes")})).await;
    assert_ok(
        &output,
        &[
            "(text/html)",
            "Release notes – Example",
            "Version 2.0",
            "Faster builds & smaller binaries — see \"changes\" “below”.",
            "One\nTwo items",
        ],
    );
    for hidden in [
        "do not show",
        "tracking",
        "font-family",
        "comment",
        "app.js",
        "Enable JavaScript",
        "<p>",
        "&amp;",
    ] {
        assert!(
            !output.text.contains(hidden),
            "{hidden:?} in {}",
            output.text
        );
    }
    assert!(output.untrusted, "page text is from the web");
    assert_eq!(server.only_request().method, "GET");
}

#[tokio::test]
async fn plain_text_and_json_are_read_as_they_are() {
    let server = ReplayServer::start(|request: &Recorded| match request.path.as_str() {
        "/a.txt" => Reply::new(200, "text/plain; charset=utf-8", "line one\nline two"),
        _ => Reply::new(200, "application/json", r#"{"a": [1, 2]}"#),
    })
    .await;
    let tool = FetchUrl::new(test_config());
    let output = run(&tool, json!({"url": server.url("/a.txt")})).await;
    assert_ok(&output, &["line one\nline two"]);
    assert!(output.untrusted);
    let output = run(&tool, json!({"url": server.url("/a.json")})).await;
    assert_ok(&output, &[r#"{"a": [1, 2]}"#]);
}

#[tokio::test]
async fn long_text_is_cut_and_large_downloads_are_capped() {
    let long = format!("<p>{}</p>", "word ".repeat(10_000));
    let server = ReplayServer::start(move |request: &Recorded| match request.path.as_str() {
        "/long" => Reply::html(200, &long),
        _ => Reply::new(200, "text/plain", vec![b'q'; 3 * 1024 * 1024]),
    })
    .await;
    let tool = FetchUrl::new(test_config());
    let output = run(&tool, json!({"url": server.url("/long")})).await;
    assert_ok(
        &output,
        &["[cut: the text is 49999 characters; only the first 20000 are shown]"],
    );
    assert!(
        output.text.chars().count() < 20_300,
        "{}",
        output.text.len()
    );

    let output = run(&tool, json!({"url": server.url("/huge")})).await;
    assert_ok(
        &output,
        &["the page is larger than 2097152 bytes; only that much was read"],
    );
    assert!(output.text.len() < 21_000);

    let small = FetchUrl::new(FetchConfig {
        body_bytes_max: 1_000,
        text_chars_max: 100_000,
        ..test_config()
    });
    let output = run(&small, json!({"url": server.url("/huge")})).await;
    assert_ok(&output, &["larger than 1000 bytes"]);
    assert_eq!(
        output.text.matches('q').count(),
        1_000,
        "exactly the cap is read"
    );
}

#[tokio::test]
async fn non_text_is_refused_naming_its_type() {
    let server = ReplayServer::start(|request: &Recorded| match request.path.as_str() {
        "/logo.png" => Reply::new(200, "image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        "/report.pdf" => Reply::new(200, "application/pdf", "%PDF-1.7"),
        _ => Reply {
            headers: Vec::new(),
            ..Reply::new(200, "", b"\0\x01binary".to_vec())
        },
    })
    .await;
    let tool = FetchUrl::new(test_config());
    for (path, kind) in [
        ("/logo.png", "image/png"),
        ("/report.pdf", "application/pdf"),
        ("/blob", "not text"),
    ] {
        let output = run(&tool, json!({"url": server.url(path)})).await;
        assert_failed(&output, &[kind]);
        assert!(output.untrusted);
    }
}

#[tokio::test]
async fn loopback_is_refused_by_default() {
    let server = ReplayServer::always(Reply::html(200, PAGE)).await;
    let tool = FetchUrl::new(FetchConfig::default());
    assert_eq!(tool.available(), Availability::Ready);
    assert_eq!(tool.category(), ToolCategory::Network);
    let port = server.addr.port();
    for url in [
        server.url("/"),
        format!("http://localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://192.168.1.1/".to_owned(),
    ] {
        let output = run(&tool, json!({"url": url})).await;
        assert_failed(
            &output,
            &[
                "refused",
                "only public addresses are reached unless a person allows more",
            ],
        );
        assert!(output.untrusted);
    }
    assert!(server.requests().is_empty(), "the server was never reached");
}

#[tokio::test]
async fn allow_private_hosts_lets_it_read_the_local_machine() {
    let server = ReplayServer::always(Reply::html(200, PAGE)).await;
    let tool = FetchUrl::new(FetchConfig {
        allow_private_hosts: true,
        ..FetchConfig::default()
    });
    let output = run(
        &tool,
        json!({"url": format!("http://localhost:{}/", server.addr.port())}),
    )
    .await;
    assert_ok(&output, &["Version 2.0"]);
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_is_refused() {
    let target = ReplayServer::always(Reply::html(200, "<p>internal admin page</p>")).await;
    let target_port = target.addr.port();
    let server = ReplayServer::start(move |request: &Recorded| match request.path.as_str() {
        "/metadata" => Reply::redirect("http://169.254.169.254/latest/meta-data/iam/"),
        // 127.0.0.2 is loopback too, but not the one address the config allows.
        "/other-loopback" => Reply::redirect(&format!("http://127.0.0.2:{target_port}/")),
        "/relative" => Reply::redirect("/final"),
        _ => Reply::html(200, "<p>final page</p>"),
    })
    .await;
    let tool = FetchUrl::new(test_config());
    let output = run(&tool, json!({"url": server.url("/metadata")})).await;
    assert_failed(&output, &["refused", "169.254.169.254"]);
    let output = run(&tool, json!({"url": server.url("/other-loopback")})).await;
    assert_failed(&output, &["refused", "127.0.0.2"]);
    assert!(target.requests().is_empty());

    let output = run(&tool, json!({"url": server.url("/relative")})).await;
    assert_ok(&output, &["/final (text/html)", "final page"]);
}

#[tokio::test]
async fn a_3xx_without_a_target_is_an_answer_not_a_redirect() {
    // Regression: 300 and 304 were read as redirects "without a target".
    let server = ReplayServer::start(|request: &Recorded| match request.path.as_str() {
        "/choices" => Reply::html(300, "<p>pick one</p>"),
        _ => Reply::html(304, ""),
    })
    .await;
    let tool = FetchUrl::new(test_config());
    let output = run(&tool, json!({"url": server.url("/choices")})).await;
    assert_failed(&output, &["answered HTTP 300"]);
    assert!(!output.text.contains("without a target"), "{}", output.text);
    let output = run(&tool, json!({"url": server.url("/unchanged")})).await;
    assert_failed(&output, &["answered HTTP 304"]);
}

#[tokio::test]
async fn an_ipv4_mapped_allowance_allows_the_ipv4_address() {
    let server = ReplayServer::always(Reply::html(200, PAGE)).await;
    let tool = FetchUrl::new(FetchConfig {
        private_addresses_allowed: vec!["::ffff:127.0.0.1".parse().unwrap()],
        ..test_config()
    });
    let output = run(&tool, json!({"url": server.url("/")})).await;
    assert_ok(&output, &["Version 2.0"]);
}

#[tokio::test]
async fn redirects_stop_after_the_limit() {
    let server = ReplayServer::start(|request: &Recorded| {
        let hop: usize = request
            .path
            .trim_start_matches("/hop/")
            .parse()
            .unwrap_or(0);
        Reply::redirect(&format!("/hop/{}", hop + 1))
    })
    .await;
    let tool = FetchUrl::new(test_config());
    let output = run(&tool, json!({"url": server.url("/hop/0")})).await;
    assert_failed(
        &output,
        &[&format!("redirected more than {FETCH_REDIRECTS_MAX} times")],
    );
    assert_eq!(server.requests().len(), FETCH_REDIRECTS_MAX + 1);
}

#[tokio::test]
async fn bad_urls_errors_and_hangs_fail() {
    let server = ReplayServer::start(|request: &Recorded| match request.path.as_str() {
        "/missing" => Reply::html(404, "<h1>Not Found</h1>"),
        _ => Reply::html(200, PAGE).after(Duration::from_secs(10)),
    })
    .await;
    let tool = FetchUrl::new(FetchConfig {
        timeout: Duration::from_millis(400),
        ..test_config()
    });
    for (url, expected) in [
        ("file:///etc/passwd".to_owned(), "only http and https"),
        ("ftp://example.org/".to_owned(), "only http and https"),
        ("not a url".to_owned(), "is not a URL"),
        (server.url("/missing"), "HTTP 404"),
        (server.url("/slow"), "within 400 ms"),
    ] {
        let output = run(&tool, json!({"url": url})).await;
        assert_failed(&output, &[expected]);
        assert!(output.untrusted);
    }
}

/// The deny matrix as data, the same file imurun-net's classifier tests read: one table of
/// addresses and URL spellings drives the rule's tests and the tool's.
fn address_table() -> Value {
    serde_json::from_str(include_str!("../../../imurun-net/testdata/addresses.json")).unwrap()
}

/// `http://{address}/`, an IPv6 address in brackets.
fn url_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => format!("http://{v4}/"),
        IpAddr::V6(v6) => format!("http://[{v6}]/"),
    }
}

/// `url` with its port set to `port`, the host kept exactly as written (parsing and
/// printing the URL would normalise `127.1` to `127.0.0.1`).
fn with_port(url: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = match authority.rsplit_once(':') {
        // A bracketed IPv6 host ends in `]`, so only a real port is all digits.
        Some((host, digits))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            host
        }
        _ => authority,
    };
    format!("{scheme}://{host}:{port}{path}")
}

/// The class the door sees for `url`'s host, which the table writes as an IP in some form.
fn class_of_url(url: &str) -> AddressClass {
    let parsed: Url = parse_http_url(url).unwrap();
    let host = parsed.host_str().unwrap();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = bare
        .parse()
        .unwrap_or_else(|_| panic!("{url}: the table's URLs name IP addresses, not {host}"));
    classify(ip)
}

/// Every URL spelling and every non-public address of the shared table is refused by the
/// real tool with the sentence that names its class, before any connection: each is also
/// tried on the port of a live server on 127.0.0.1, which never hears from it. Every public
/// address passes the tool's rule.
#[tokio::test]
async fn the_shared_deny_matrix_is_refused_before_any_connection() {
    let server = ReplayServer::always(Reply::html(200, PAGE)).await;
    let port = server.addr.port();
    let tool = FetchUrl::new(FetchConfig::default());
    let rule = FetchConfig::default().address_rule();
    let table = address_table();

    let mut refused: Vec<(String, AddressClass)> = Vec::new();
    for row in table["urls"].as_array().unwrap() {
        let url = row["url"].as_str().unwrap();
        let class = class_of_url(url);
        assert_eq!(class.as_str(), row["class"], "{url}");
        refused.push((url.to_owned(), class));
    }
    let mut public = 0;
    for row in table["addresses"].as_array().unwrap() {
        let address = row["address"].as_str().unwrap();
        let ip: IpAddr = address.parse().unwrap();
        let class = classify(ip);
        assert_eq!(class.as_str(), row["class"], "{address}");
        if class.is_public() {
            assert_eq!(rule.refuses(ip), None, "{address}");
            public += 1;
        } else {
            assert_eq!(rule.refuses(ip), Some(class), "{address}");
            refused.push((url_of(ip), class));
        }
    }
    assert!(
        public >= 10 && refused.len() >= 50,
        "{public} {}",
        refused.len()
    );

    for (url, class) in &refused {
        for tried in [url.clone(), with_port(url, port)] {
            let output = run(&tool, json!({"url": tried})).await;
            assert_failed(
                &output,
                &[
                    "refused: ",
                    class.describe(),
                    "only public addresses are reached",
                ],
            );
            assert!(
                output.text.starts_with("FAILED: refused: "),
                "{tried}: {}",
                output.text
            );
            assert!(output.untrusted);
        }
    }
    assert!(server.requests().is_empty(), "{:#?}", server.requests());
}

#[test]
fn ports_are_set_without_respelling_the_host() {
    let cases = [
        ("http://127.1/", "http://127.1:9/"),
        ("http://0.0.0.0:80/", "http://0.0.0.0:9/"),
        ("http://[::1]/", "http://[::1]:9/"),
        ("http://[2002:7f00:1::1]/", "http://[2002:7f00:1::1]:9/"),
        ("http://10.0.0.1:8080/admin", "http://10.0.0.1:9/admin"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "https://169.254.169.254:9/latest/meta-data/",
        ),
    ];
    for (url, expected) in cases {
        assert_eq!(with_port(url, 9), expected, "{url}");
    }
}
