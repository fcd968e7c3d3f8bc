//! The API token: with one, every route but the health check needs it.

use imurun_server::ServerOptions;

use crate::api_support::{Dirs, TestServer};

#[tokio::test]
async fn with_a_token_every_route_but_health_needs_it() {
    let dirs = Dirs::new();
    let options = ServerOptions {
        api_token: Some("s3cret-token".to_owned()),
        ..ServerOptions::default()
    };
    let server = TestServer::start_with(&dirs, None, options).await;
    let right = "Authorization: Bearer s3cret-token\r\n";
    let wrong = "Authorization: Bearer s3cret-tokeN\r\n";
    let cases = [
        ("GET", "/api/health", "", 200),
        ("GET", "/api/sessions", "", 401),
        ("GET", "/api/sessions", wrong, 401),
        ("GET", "/api/sessions", right, 200),
        ("GET", "/api/tools", "", 401),
        ("GET", "/api/permissions", right, 200),
        ("GET", "/v1/models", "", 401),
        ("GET", "/v1/models", right, 200),
        ("GET", "/api/openapi.json", "", 401),
        // A browser's EventSource cannot set headers: the events route takes the query.
        ("GET", "/api/events?access_token=s3cret-token", "", 200),
        ("GET", "/api/events?access_token=nope", "", 401),
        // The page's static files load without it: the page asks for the token itself.
        ("GET", "/", "", 200),
        ("GET", "/assets/app.js", "", 200),
        ("GET", "/assets/no-such-file.js", "", 404),
        // Only the events route reads the query.
        ("GET", "/api/sessions?access_token=s3cret-token", "", 401),
    ];
    for (method, path, headers, expected) in cases {
        let status = server.status_with_headers(method, path, headers).await;
        assert_eq!(status, expected, "{method} {path} {headers:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn without_a_token_nothing_is_asked() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    assert_eq!(
        server.status_with_headers("GET", "/api/sessions", "").await,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn a_query_token_is_percent_decoded() {
    let dirs = Dirs::new();
    let options = ServerOptions {
        api_token: Some("s3cret+/=token".to_owned()),
        ..ServerOptions::default()
    };
    let server = TestServer::start_with(&dirs, None, options).await;
    let cases = [
        // As a browser's `encodeURIComponent` writes it.
        ("/api/events?access_token=s3cret%2B%2F%3Dtoken", 200),
        ("/api/events?access_token=s3cret%2b%2f%3dtoken", 200),
        ("/api/events?access_token=s3cret%2B%2F%3Dtokem", 401),
    ];
    for (path, expected) in cases {
        assert_eq!(
            server.status_with_headers("GET", path, "").await,
            expected,
            "{path}"
        );
    }
    let header = "Authorization: Bearer s3cret+/=token\r\n";
    assert_eq!(
        server
            .status_with_headers("GET", "/api/sessions", header)
            .await,
        200
    );
    server.stop().await;
}
