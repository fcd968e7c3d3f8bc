//! The door against local servers: refusals before any connection, pinned resolution,
//! redirects checked hop by hop, the timeout and the body bound.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::get;
use imurun_net::http::Url;
use imurun_net::{AddressRule, Door, DoorConfig, NetError, read_body};

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

fn door(rule: AddressRule) -> Door {
    Door::new(DoorConfig {
        rule,
        timeout: Duration::from_secs(5),
        redirects_max: 3,
    })
    .unwrap()
}

fn loopback_only() -> AddressRule {
    AddressRule {
        allowed_addresses: vec!["127.0.0.1".parse::<IpAddr>().unwrap()],
        ..AddressRule::default()
    }
}

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

#[tokio::test]
async fn a_public_only_door_refuses_a_loopback_server_before_connecting() {
    let addr = serve(Router::new().route("/", get(|| async { "secret" }))).await;
    let door = door(AddressRule::public_only());
    let refused = door.get(url(&format!("http://{addr}/"))).unwrap_err();
    assert!(
        matches!(refused, NetError::Refused { class, .. } if class.as_str() == "loopback"),
        "{refused:?}"
    );
    // A name that resolves to loopback is refused by the door's own resolver.
    let request = door
        .get(url(&format!("http://localhost:{}/", addr.port())))
        .unwrap();
    let error = door.send(request, "localhost").await.unwrap_err();
    assert!(matches!(error, NetError::Refused { .. }), "{error:?}");
    assert!(error.to_string().contains("loopback"), "{error}");
}

#[tokio::test]
async fn an_allowed_address_is_read_within_the_body_bound() {
    let addr = serve(Router::new().route("/", get(|| async { "x".repeat(10_000) }))).await;
    let door = door(loopback_only());
    let target = format!("http://{addr}/");
    let response = door
        .send(door.get(url(&target)).unwrap(), &target)
        .await
        .unwrap();
    let body = read_body(&door, response, 100, &target).await.unwrap();
    assert_eq!(body.bytes.len(), 100);
    assert!(body.cut);
}

#[tokio::test]
async fn a_trusted_endpoint_is_reached_by_name() {
    let addr = serve(Router::new().route("/", get(|| async { "ok" }))).await;
    let endpoint = format!("http://localhost:{}/", addr.port());
    let door = door(AddressRule::public_and_endpoints([endpoint.as_str()]));
    let response = door
        .send(door.get(url(&endpoint)).unwrap(), "localhost")
        .await;
    // localhost may resolve to ::1 first, where nothing listens; a refusal is the failure
    // that must not happen.
    if let Err(error) = response {
        assert!(!matches!(error, NetError::Refused { .. }), "{error:?}");
    }
}

#[tokio::test]
async fn every_redirect_is_checked_again() {
    let inner = serve(Router::new().route("/", get(|| async { "inside" }))).await;
    let to_other_loopback = format!("http://127.0.0.2:{}/", inner.port());
    let to_localhost = format!("http://localhost:{}/", inner.port());
    let to_file = "file:///etc/passwd".to_owned();
    let addr = serve(
        Router::new()
            .route("/ip", get(move || redirect(to_other_loopback.clone())))
            .route("/name", get(move || redirect(to_localhost.clone())))
            .route("/file", get(move || redirect(to_file.clone())))
            .route("/loop", get(|| redirect("/loop".to_owned()))),
    )
    .await;
    // The first hop is allowed as a host a person configured (an endpoint), not by its
    // address, so no hop after it inherits the allowance: `localhost` resolves to a loopback
    // address that is allowed only by name, and on a machine whose `/etc/hosts` has no `::1`
    // an allowance of 127.0.0.1 itself would let the `name` hop through.
    let door = door(AddressRule::public_and_endpoints([format!(
        "http://{addr}/"
    )
    .as_str()]));
    for (path, expected) in [
        ("ip", "127.0.0.2"),
        ("name", "loopback"),
        // Regression: the HTTP client hands back a redirect to a `file:` URL unfollowed,
        // without asking the door, and it came back as a plain 302 answer.
        ("file", "`file` URLs"),
        ("loop", "redirected more than 3 times"),
    ] {
        let target = format!("http://{addr}/{path}");
        let error = door
            .send(door.get(url(&target)).unwrap(), &target)
            .await
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{path}: {error}");
    }
}

async fn redirect(to: String) -> (StatusCode, HeaderMap) {
    let mut headers = HeaderMap::new();
    headers.insert(header::LOCATION, to.parse().unwrap());
    (StatusCode::FOUND, headers)
}

#[tokio::test]
async fn a_server_that_hangs_costs_the_timeout() {
    let addr = serve(Router::new().route(
        "/",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "late"
        }),
    ))
    .await;
    let door = Door::new(DoorConfig {
        rule: loopback_only(),
        timeout: Duration::from_millis(200),
        redirects_max: 0,
    })
    .unwrap();
    let target = format!("http://{addr}/");
    let error = door
        .send(door.get(url(&target)).unwrap(), &target)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{target} did not answer within 200 ms; try again later")
    );
}
