//! `web_search` against local servers that answer like Brave, Tavily, Serper, SearXNG and
//! DuckDuckGo: results, no results, refused keys, rate limits, hangs and malformed bodies.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use imurun_core::{Availability, Tool, ToolCategory};
use imurun_tools::{SearchConfig, SearchProvider, WebSearch};
use serde_json::json;

use crate::replay::{Recorded, ReplayServer, Reply, assert_failed, assert_ok, run};

/// A test's timeout: long enough for a local answer, short enough that a hang ends fast.
const TEST_TIMEOUT: Duration = Duration::from_millis(400);

/// One keyed or self-hosted provider: how to aim it at a server and what it answers.
struct Provider {
    provider: SearchProvider,
    path: &'static str,
    /// The variable a refused key names (`None` for SearXNG, which has no key).
    key_var: Option<&'static str>,
    results: &'static str,
    empty: &'static str,
    check_request: fn(&Recorded),
}

const BRAVE_RESULTS: &str = r#"{
  "type": "search",
  "query": {"original": "rust release", "more_results_available": true},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
  "web": {"type": "search", "family_friendly": true, "results": [
    {"title": "Announcing <strong>Rust</strong> 1.95.0", "url": "https://blog.rust-lang.org/2026/11/27/Rust-1.95.0/",
     "is_source_local": false, "description": "The Rust team is happy to announce a new version of <strong>Rust</strong>, 1.95.0.",
     "page_age": "2026-11-27T00:00:00", "profile": {"name": "Rust Blog"}, "language": "en", "type": "search_result"},
    {"title": "Rust Programming Language", "url": "https://www.rust-lang.org/",
     "description": "A language empowering everyone to build reliable and efficient software.", "type": "search_result"}
  ]}
}"#;

const TAVILY_RESULTS: &str = r#"{
  "query": "rust release",
  "follow_up_questions": null,
  "answer": null,
  "images": [],
  "results": [
    {"title": "Announcing Rust 1.95.0", "url": "https://blog.rust-lang.org/2026/11/27/Rust-1.95.0/",
     "content": "The Rust team is happy to announce a new version of Rust, 1.95.0.", "score": 0.93, "raw_content": null},
    {"title": "Rust Programming Language", "url": "https://www.rust-lang.org/",
     "content": "A language empowering everyone to build reliable and efficient software.", "score": 0.81, "raw_content": null}
  ],
  "response_time": 1.02
}"#;

const SERPER_RESULTS: &str = r#"{
  "searchParameters": {"q": "rust release", "type": "search", "engine": "google"},
  "organic": [
    {"title": "Announcing Rust 1.95.0", "link": "https://blog.rust-lang.org/2026/11/27/Rust-1.95.0/",
     "snippet": "The Rust team is happy to announce a new version of Rust, 1.95.0.", "date": "3 days ago", "position": 1},
    {"title": "Rust Programming Language", "link": "https://www.rust-lang.org/",
     "snippet": "A language empowering everyone to build reliable and efficient software.", "position": 2}
  ],
  "peopleAlsoAsk": [],
  "credits": 1
}"#;

const SEARXNG_RESULTS: &str = r#"{
  "query": "rust release",
  "number_of_results": 0,
  "results": [
    {"url": "https://blog.rust-lang.org/2026/11/27/Rust-1.95.0/", "title": "Announcing Rust 1.95.0",
     "content": "The Rust team is happy to announce a new version of Rust, 1.95.0.", "engine": "duckduckgo",
     "parsed_url": ["https", "blog.rust-lang.org", "/2026/11/27/Rust-1.95.0/", "", "", ""],
     "engines": ["duckduckgo", "brave"], "positions": [1, 1], "score": 4.0, "category": "general"},
    {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
     "content": "A language empowering everyone to build reliable and efficient software.", "engine": "brave",
     "engines": ["brave"], "positions": [2], "score": 1.0, "category": "general"}
  ],
  "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []
}"#;

fn providers() -> Vec<Provider> {
    vec![
        Provider {
            provider: SearchProvider::Brave {
                api_key: "brave-key".into(),
            },
            path: "/res/v1/web/search",
            key_var: Some("IMURUN_BRAVE_API_KEY"),
            results: BRAVE_RESULTS,
            empty: r#"{"type": "search", "query": {"original": "zzqx"}, "mixed": {"type": "mixed", "main": []}}"#,
            check_request: |request| {
                assert_eq!(request.method, "GET");
                assert_eq!(request.headers["x-subscription-token"], "brave-key");
                assert_eq!(request.query["q"], "rust release");
                assert_eq!(request.query["count"], "5");
            },
        },
        Provider {
            provider: SearchProvider::Tavily {
                api_key: "tavily-key".into(),
            },
            path: "/search",
            key_var: Some("IMURUN_TAVILY_API_KEY"),
            results: TAVILY_RESULTS,
            empty: r#"{"query": "zzqx", "answer": null, "images": [], "results": [], "response_time": 0.4}"#,
            check_request: |request| {
                assert_eq!(request.method, "POST");
                assert_eq!(request.headers["authorization"], "Bearer tavily-key");
                let body: serde_json::Value = serde_json::from_str(&request.body).unwrap();
                assert_eq!(body, json!({"query": "rust release", "max_results": 5}));
            },
        },
        Provider {
            provider: SearchProvider::Serper {
                api_key: "serper-key".into(),
            },
            path: "/search",
            key_var: Some("IMURUN_SERPER_API_KEY"),
            results: SERPER_RESULTS,
            empty: r#"{"searchParameters": {"q": "zzqx", "type": "search"}, "organic": [], "credits": 1}"#,
            check_request: |request| {
                assert_eq!(request.method, "POST");
                assert_eq!(request.headers["x-api-key"], "serper-key");
                let body: serde_json::Value = serde_json::from_str(&request.body).unwrap();
                assert_eq!(body, json!({"q": "rust release", "num": 5}));
            },
        },
        Provider {
            provider: SearchProvider::Searxng,
            path: "/search",
            key_var: None,
            results: SEARXNG_RESULTS,
            empty: r#"{"query": "zzqx", "number_of_results": 0, "results": [], "answers": [], "suggestions": []}"#,
            check_request: |request| {
                assert_eq!(request.method, "GET");
                assert_eq!(request.path, "/search");
                assert_eq!(request.query["q"], "rust release");
                assert_eq!(request.query["format"], "json");
            },
        },
    ]
}

fn search_tool(provider: &SearchProvider, server: &ReplayServer, path: &str) -> WebSearch {
    WebSearch::new(SearchConfig {
        provider: provider.clone(),
        endpoint: server.url(path),
        timeout: TEST_TIMEOUT,
    })
}

async fn search_once(provider: &Provider, reply: Reply) -> (imurun_core::ToolOutput, ReplayServer) {
    let server = ReplayServer::always(reply).await;
    let tool = search_tool(&provider.provider, &server, provider.path);
    let output = run(&tool, json!({"query": "rust release"})).await;
    (output, server)
}

#[tokio::test]
async fn every_provider_turns_results_into_a_numbered_list() {
    for provider in providers() {
        let name = provider.provider.name();
        let (output, server) = search_once(&provider, Reply::json(200, provider.results)).await;
        assert_ok(
            &output,
            &[
                name,
                "1. Announcing Rust 1.95.0 — https://blog.rust-lang.org/2026/11/27/Rust-1.95.0/\n   The Rust team is happy to announce a new version of Rust, 1.95.0.",
                "2. Rust Programming Language — https://www.rust-lang.org/\n   A language empowering",
            ],
        );
        assert!(output.untrusted, "{name}: results are text from the web");
        assert!(!output.text.contains("<strong>"), "{name}: {}", output.text);
        (provider.check_request)(&server.only_request());
    }
}

#[tokio::test]
async fn zero_results_is_an_honest_success() {
    for provider in providers() {
        let (output, _server) = search_once(&provider, Reply::json(200, provider.empty)).await;
        assert_ok(&output, &["No results were found for \"rust release\""]);
        assert!(!output.text.contains("1."), "{}", output.text);
    }
}

#[tokio::test]
async fn a_refused_key_names_its_variable() {
    for provider in providers() {
        let Some(key_var) = provider.key_var else {
            continue;
        };
        for status in [401, 403] {
            let body = r#"{"error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}}"#;
            let (output, _server) = search_once(&provider, Reply::json(status, body)).await;
            assert_failed(
                &output,
                &["refused the API key", key_var, &format!("HTTP {status}")],
            );
        }
    }
}

#[tokio::test]
async fn searxng_403_says_to_enable_the_json_format() {
    let provider = providers().pop().unwrap();
    assert_eq!(provider.provider, SearchProvider::Searxng);
    let (output, _server) =
        search_once(&provider, Reply::html(403, "<h1>403 Forbidden</h1>")).await;
    assert_failed(
        &output,
        &["HTTP 403", "`json`", "search.formats", "settings.yml"],
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_fail() {
    for provider in providers() {
        let reply = Reply::json(429, r#"{"error": "rate limit exceeded"}"#)
            .with_header("retry-after", "30");
        let (output, _server) = search_once(&provider, reply).await;
        assert_failed(
            &output,
            &["rate-limited", "HTTP 429", "wait 30 s", "try again later"],
        );

        let (output, _server) =
            search_once(&provider, Reply::html(502, "<h1>Bad gateway</h1>")).await;
        assert_failed(&output, &["server error (HTTP 502)"]);
    }
}

#[tokio::test]
async fn a_hanging_provider_fails_within_the_timeout() {
    for provider in providers() {
        let reply = Reply::json(200, provider.results).after(Duration::from_secs(10));
        let started = Instant::now();
        let (output, _server) = search_once(&provider, reply).await;
        assert_failed(&output, &["did not answer within 400 ms"]);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_malformed_body_fails() {
    for provider in providers() {
        for body in [
            r#"{"web": {"results": [{"title": "cut off"#,
            "<html>maintenance</html>",
            "[]",
            "{}",
        ] {
            let (output, _server) = search_once(&provider, Reply::json(200, body)).await;
            assert_failed(&output, &["malformed"]);
        }
    }
}

#[tokio::test]
async fn max_results_defaults_to_five_and_is_clamped_to_one_through_ten() {
    let items: Vec<_> = (1..=15)
        .map(|n| json!({"title": format!("Result {n}"), "url": format!("https://example.org/{n}"), "content": "c"}))
        .collect();
    let body = json!({"query": "q", "results": items}).to_string();
    let server = ReplayServer::always(Reply::json(200, &body)).await;
    let tool = search_tool(&SearchProvider::Searxng, &server, "/search");
    for (max_results, shown) in [
        (None, 5),
        (Some(0), 1),
        (Some(-3), 1),
        (Some(3), 3),
        (Some(99), 10),
    ] {
        let args = match max_results {
            Some(n) => json!({"query": "q", "max_results": n}),
            None => json!({"query": "q"}),
        };
        let output = run(&tool, args).await;
        assert_ok(&output, &[&format!("{shown}. Result {shown} — ")]);
        assert!(
            !output.text.contains(&format!("{}. Result", shown + 1)),
            "{max_results:?}: {}",
            output.text
        );
    }
    let output = run(&tool, json!({"query": "   "})).await;
    assert_failed(&output, &["`query` is empty"]);
    let output = run(&tool, json!({"query": 7})).await;
    assert_failed(&output, &["`query` must be a string"]);
}

/// Modelled on html.duckduckgo.com's result page: an ad, two results behind `uddg`
/// redirects, one direct link, with the markup and entities the real page uses.
const DUCKDUCKGO_RESULTS: &str = r##"<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
  <meta http-equiv="content-type" content="text/html; charset=UTF-8">
  <title>rust release at DuckDuckGo</title>
  <link rel="stylesheet" href="/dist/h.7b7e2fd5a1.css" type="text/css">
</head>
<body>
<div id="links" class="results">
  <div class="result results_links results_links_deep result--ad ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example&amp;ad_provider=bingv7aa&amp;u3=abc">Buy Rust Merch</a>
      </h2>
      <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Sponsored snippet</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fblog.rust%2Dlang.org%2F2026%2F11%2F27%2FRust%2D1.95.0%2F&amp;rut=4f6a1e2b">Announcing <b>Rust</b> 1.95.0 | <b>Rust</b> Blog</a>
      </h2>
      <div class="result__extras">
        <div class="result__extras__url">
          <span class="result__icon"><a rel="nofollow" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fblog.rust%2Dlang.org%2F&amp;rut=1"><img class="result__icon__img" width="16" height="16" alt="" src="//external-content.duckduckgo.com/ip3/blog.rust-lang.org.ico" name="i15" /></a></span>
          <a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fblog.rust%2Dlang.org%2F2026%2F11%2F27%2FRust%2D1.95.0%2F&amp;rut=4f6a1e2b">blog.rust-lang.org/2026/11/27/Rust-1.95.0/</a>
        </div>
      </div>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fblog.rust%2Dlang.org%2F2026%2F11%2F27%2FRust%2D1.95.0%2F&amp;rut=4f6a1e2b">The <b>Rust</b> team is happy to announce a new version of <b>Rust</b>, 1.95.0. <b>Rust</b> is a programming language empowering everyone to build reliable &amp; efficient software.</a>
      <div class="clear"></div>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgithub.com%2Frust%2Dlang%2Frust%2Freleases%3Fpage%3D1%26q%3Dx&amp;rut=9c0d">Releases &#183; rust-lang/rust &middot; GitHub</a>
      </h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgithub.com%2Frust%2Dlang%2Frust%2Freleases&amp;rut=9c0d">Empowering everyone to build reliable and efficient software. - Releases &#x00B7; rust-lang/rust</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="https://doc.rust-lang.org/releases.html">Rust Release Notes</a>
      </h2>
    </div>
  </div>
  <div class="nav-link">
    <form action="/html/" method="post">
      <input type="submit" class="btn btn--alt" value="Next" />
      <input type="hidden" name="q" value="rust release" />
      <input type="hidden" name="s" value="10" />
    </form>
  </div>
</div>
</body>
</html>"##;

/// The bot-check page DuckDuckGo serves instead of results (status 202).
const DUCKDUCKGO_BOT_CHECK: &str = r##"<!DOCTYPE html>
<html lang="en-US">
<head><meta charset="utf-8"><title>DuckDuckGo</title></head>
<body>
  <form id="challenge-form" action="//duckduckgo.com/anomaly.js?sv=html&amp;cc=botnet&amp;ti=1764489600&amp;gk=d4cd0dabcf4caa22ad92fab40844c786&amp;p=abc&amp;q=rust+release&amp;o=xyz&amp;r=use" method="POST">
    <div class="anomaly-modal__mask">
      <div class="anomaly-modal__modal" data-testid="anomaly-modal">
        <div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>
        <div class="anomaly-modal__description">Please complete the following challenge to confirm this search was made by a human.</div>
        <div class="anomaly-modal__instructions">Select all squares containing a duck:</div>
        <div class="anomaly-modal__images"><img src="../assets/anomaly/images/challenge/1.jpg" /></div>
        <button type="submit" class="btn anomaly-modal__submit">Submit</button>
      </div>
    </div>
  </form>
</body>
</html>"##;

const DUCKDUCKGO_NO_RESULTS: &str = r##"<!DOCTYPE html>
<html><head><title>zzqxjw at DuckDuckGo</title></head>
<body><div id="links" class="results">
  <div class="result results_links results_links_deep result--no-result">
    <div class="no-results">No  results.</div>
  </div>
</div></body></html>"##;

async fn duckduckgo_once(
    reply: Reply,
    args: serde_json::Value,
) -> (imurun_core::ToolOutput, ReplayServer) {
    let server = ReplayServer::always(reply).await;
    let tool = search_tool(&SearchProvider::DuckDuckGo, &server, "/html/");
    let output = run(&tool, args).await;
    (output, server)
}

#[tokio::test]
async fn duckduckgo_results_page_is_read_and_redirects_decoded() {
    let (output, server) = duckduckgo_once(
        Reply::html(200, DUCKDUCKGO_RESULTS),
        json!({"query": "rust release"}),
    )
    .await;
    assert_ok(
        &output,
        &[
            "DuckDuckGo",
            "1. Announcing Rust 1.95.0 | Rust Blog — https://blog.rust-lang.org/2026/11/27/Rust-1.95.0/\n   The Rust team is happy to announce a new version of Rust, 1.95.0. Rust is a programming language empowering everyone to build reliable & efficient software.",
            "2. Releases · rust-lang/rust · GitHub — https://github.com/rust-lang/rust/releases?page=1&q=x\n   Empowering everyone",
            "3. Rust Release Notes — https://doc.rust-lang.org/releases.html",
        ],
    );
    assert!(
        !output.text.contains("Merch"),
        "the ad is left out: {}",
        output.text
    );
    assert!(!output.text.contains("Sponsored"), "{}", output.text);
    assert!(!output.text.contains("4."), "{}", output.text);
    assert!(output.untrusted);
    let request = server.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.body, "q=rust+release");
    assert_eq!(
        request.headers["content-type"],
        "application/x-www-form-urlencoded"
    );
}

#[tokio::test]
async fn duckduckgo_bot_check_fails_naming_the_keyed_providers() {
    for status in [200, 202, 403] {
        let (output, _server) = duckduckgo_once(
            Reply::html(status, DUCKDUCKGO_BOT_CHECK),
            json!({"query": "rust release"}),
        )
        .await;
        assert_failed(
            &output,
            &[
                "bot check",
                "IMURUN_BRAVE_API_KEY",
                "IMURUN_TAVILY_API_KEY",
                "IMURUN_SERPER_API_KEY",
                "IMURUN_SEARXNG_URL",
            ],
        );
        assert!(!output.text.contains("No results"), "{}", output.text);
    }
}

#[tokio::test]
async fn duckduckgo_no_results_rate_limits_hangs_and_unknown_pages() {
    let (output, _server) = duckduckgo_once(
        Reply::html(200, DUCKDUCKGO_NO_RESULTS),
        json!({"query": "zzqxjw"}),
    )
    .await;
    assert_ok(&output, &["No results were found for \"zzqxjw\""]);

    let (output, _server) =
        duckduckgo_once(Reply::html(429, "Too Many Requests"), json!({"query": "q"})).await;
    assert_failed(&output, &["HTTP 429", "IMURUN_BRAVE_API_KEY"]);

    let (output, _server) = duckduckgo_once(Reply::html(503, "down"), json!({"query": "q"})).await;
    assert_failed(&output, &["server error (HTTP 503)"]);

    let started = Instant::now();
    let reply = Reply::html(200, DUCKDUCKGO_RESULTS).after(Duration::from_secs(10));
    let (output, _server) = duckduckgo_once(reply, json!({"query": "q"})).await;
    assert_failed(&output, &["did not answer within 400 ms"]);
    assert!(started.elapsed() < Duration::from_secs(3));

    // A page with neither results nor a notice (a redesign, a captive portal) is not "no results".
    let portal = "<html><body><h1>Sign in to the hotel Wi-Fi</h1></body></html>";
    let (output, _server) = duckduckgo_once(Reply::html(200, portal), json!({"query": "q"})).await;
    assert_failed(&output, &["neither results nor", "IMURUN_SEARXNG_URL"]);
}

fn config_from(pairs: &[(&str, &str)]) -> SearchConfig {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    SearchConfig::from_lookup(|name| map.get(name).cloned())
}

#[test]
fn provider_precedence_is_brave_tavily_serper_searxng_then_duckduckgo() {
    let all = [
        ("IMURUN_BRAVE_API_KEY", "b"),
        ("IMURUN_TAVILY_API_KEY", "t"),
        ("IMURUN_SERPER_API_KEY", "s"),
        ("IMURUN_SEARXNG_URL", "https://searx.example/"),
    ];
    /// Variables set, the provider chosen, its endpoint.
    type Case<'a> = (&'a [(&'a str, &'a str)], SearchProvider, &'a str);
    let cases: [Case; 7] = [
        (
            &all,
            SearchProvider::Brave {
                api_key: "b".into(),
            },
            "https://api.search.brave.com/res/v1/web/search",
        ),
        (
            &all[1..],
            SearchProvider::Tavily {
                api_key: "t".into(),
            },
            "https://api.tavily.com/search",
        ),
        (
            &all[2..],
            SearchProvider::Serper {
                api_key: "s".into(),
            },
            "https://google.serper.dev/search",
        ),
        (
            &all[3..],
            SearchProvider::Searxng,
            "https://searx.example/search",
        ),
        (
            &[("IMURUN_SEARXNG_URL", "http://10.0.0.5:8080/search/")],
            SearchProvider::Searxng,
            "http://10.0.0.5:8080/search",
        ),
        (
            &[],
            SearchProvider::DuckDuckGo,
            "https://html.duckduckgo.com/html/",
        ),
        // Blank values count as unset.
        (
            &[
                ("IMURUN_BRAVE_API_KEY", "  "),
                ("IMURUN_SERPER_API_KEY", " s "),
            ],
            SearchProvider::Serper {
                api_key: "s".into(),
            },
            "https://google.serper.dev/search",
        ),
    ];
    for (pairs, provider, endpoint) in cases {
        let config = config_from(pairs);
        assert_eq!(config.provider, provider, "{pairs:?}");
        assert_eq!(config.endpoint, endpoint, "{pairs:?}");
        assert_eq!(config.timeout, Duration::from_secs(10));
    }
}

#[test]
fn keys_stay_out_of_debug_output_and_the_tool_is_ready() {
    let config = config_from(&[("IMURUN_TAVILY_API_KEY", "tvly-secret-123")]);
    let tool = WebSearch::new(config);
    let debug = format!("{tool:?}");
    assert!(!debug.contains("tvly-secret-123"), "{debug}");
    assert!(debug.contains("redacted"), "{debug}");
    assert_eq!(tool.available(), Availability::Ready);
    assert_eq!(tool.category(), ToolCategory::Network);
    let keyless = WebSearch::new(config_from(&[]));
    assert_eq!(
        keyless.available(),
        Availability::Ready,
        "DuckDuckGo needs no key"
    );
}
