//! A security tester's run on the egress broker (Keep mode, part 2): what an upstream inside a
//! credential's binding can hand back to the cell.

use std::time::Duration;

use imurun_cell::HttpRequest;
use imurun_cell::WallClock;
use imurun_cell::broker::{EgressDecision, EgressHost, EgressUse};
use imurun_cell::egress::Approval;
use imurun_core::BoxFuture;

/// A credential with capitals, as most API keys have.
const SECRET: &str = "AbCdEfGh12345678XyZq";

struct Vault;

impl EgressHost for Vault {
    fn approve<'a>(&'a self, _used: &'a EgressUse, _approval: Approval) -> BoxFuture<'a, bool> {
        Box::pin(async { true })
    }

    fn credential<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { Some(SECRET.to_owned()) })
    }

    fn decided(&self, _decision: &EgressDecision) {}
}

/// Echoes the credential's value as the name of a response header (HTTP lower-cases names).
fn echo_as_header_name(head: &str) -> String {
    let key = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("x-api-key")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    format!("HTTP/1.1 200 OK\r\n{key}: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
}

#[tokio::test]
async fn attack_a_credential_echoed_as_a_header_name_reaches_the_cell_lower_cased() {
    let (upstream, broker, grant) =
        crate::upstream::tls_api(echo_as_header_name, &["GET"], "/", "/").await;
    let port = upstream.port;
    let request = HttpRequest {
        method: "GET".into(),
        url: format!("https://api.test:{port}/private"),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let answer = broker
        .send(
            &grant,
            false,
            request,
            &Vault,
            &WallClock::starting(Duration::from_secs(10)),
        )
        .await
        .unwrap();
    let names: Vec<String> = answer.headers.iter().map(|h| h.name.clone()).collect();
    eprintln!("header names the cell got: {names:?}");
    assert!(
        !names.iter().any(|name| name.eq_ignore_ascii_case(SECRET)),
        "the credential reached the cell as a header name: {names:?}"
    );
}

/// Redirects with the credential split by a tab, which the URL parser takes out again.
fn split_by_tab(head: &str) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    let key = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("x-api-key")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    let split = if key.len() > 4 {
        format!("{}\t{}", &key[..4], &key[4..])
    } else {
        key
    };
    match path {
        "/private/out" => crate::upstream::redirect(&format!("/elsewhere/{split}")),
        "/private/follow" => crate::upstream::redirect(&format!("/private/log/{split}")),
        _ => crate::upstream::ok(path),
    }
}

#[tokio::test]
async fn attack_a_credential_split_by_a_tab_in_a_redirect_is_rejoined_and_leaks() {
    let (upstream, broker, grant) =
        crate::upstream::tls_api(split_by_tab, &["GET"], "/private", "/private").await;
    let port = upstream.port;
    let request = |path: &str| HttpRequest {
        method: "GET".into(),
        url: format!("https://api.test:{port}{path}"),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let clock = WallClock::starting(Duration::from_secs(10));
    // The target is refused, and the refusal the cell gets quotes the rejoined path.
    let out = broker
        .send(&grant, false, request("/private/out"), &Vault, &clock)
        .await;
    // The target is allowed: the redirect is followed with the credential in its URL.
    let follow = broker
        .send(&grant, false, request("/private/follow"), &Vault, &clock)
        .await;
    let lines: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.lines().next().unwrap_or_default().to_owned())
        .collect();
    eprintln!("out: {out:?}\nfollow: {follow:?}\nrequest lines: {lines:?}");
    let refused_text = match &out {
        Ok(answer) => String::from_utf8_lossy(&answer.body).into_owned(),
        Err(refusal) => refusal.reason.clone(),
    };
    assert!(
        !refused_text.contains(SECRET),
        "the cell got the credential in a refusal: {refused_text}"
    );
    assert!(
        !lines.iter().any(|line| line.contains(SECRET)),
        "a redirect carrying the credential was followed: {lines:?}"
    );
}
