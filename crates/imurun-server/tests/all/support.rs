//! Helpers shared by the test modules: publishing by type, draining a subscription, and an
//! axum server on 127.0.0.1:0 with a small raw SSE client over TCP (no TLS stack to build).

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::get;
use imurun_server::{EventHub, StreamQuery, Subscription, last_event_id, sse_response};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Publishes `{"type": event_type}` for `session` and returns its id.
pub(crate) fn publish(hub: &EventHub, session: Option<&str>, event_type: &str) -> u64 {
    hub.publish_value(session, json!({"type": event_type, "session_id": session}))
        .expect("an object with a type is an event")
}

/// Every record ready now, as JSON values.
pub(crate) fn drain(subscription: &mut Subscription) -> Vec<Value> {
    std::iter::from_fn(|| subscription.try_recv())
        .map(|record| record.value())
        .collect()
}

/// The `id` field of each value (`None` for the hub's notices).
pub(crate) fn ids(values: &[Value]) -> Vec<Option<u64>> {
    values.iter().map(|value| value["id"].as_u64()).collect()
}

/// The `type` field of each value.
pub(crate) fn types(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|value| value["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Replaces every `"ts":<digits>` with `"ts":"<ts>"`, so wire text can be compared.
pub(crate) fn without_timestamps(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"ts\":") {
        let (before, after) = rest.split_at(at + "\"ts\":".len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        assert!(digits > 0, "ts is a number of milliseconds: {text}");
        out.push_str("\"<ts>\"");
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[derive(Clone)]
struct ServerState {
    hub: EventHub,
    heartbeat_interval: Duration,
}

/// Serves `GET /events` from `hub` on a free local port, the way the real route will.
pub(crate) async fn serve(hub: &EventHub, heartbeat_interval: Duration) -> SocketAddr {
    let state = ServerState {
        hub: hub.clone(),
        heartbeat_interval,
    };
    let app = Router::new()
        .route("/events", get(events))
        .with_state(state);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn events(
    State(state): State<ServerState>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> impl IntoResponse {
    sse_response(
        &state.hub,
        query.session_filter(),
        last_event_id(&headers),
        state.heartbeat_interval,
    )
}

/// The tests' SSE client is the test kit's.
pub(crate) use imurun_testkit::SseClient;
