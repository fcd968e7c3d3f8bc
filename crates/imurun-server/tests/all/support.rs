//! Helpers shared by the test modules: publishing by type, draining a subscription, an axum
//! server on 127.0.0.1:0 with a small raw SSE client over TCP (no TLS stack to build), and a
//! Keep host with its people, their devices, decisions and sessions' messages.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::get;
use base64::Engine;
use imurun_cell::broker::{Broker, BrokerConfig};
use imurun_core::BoxFuture;
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::{POLICY_TYPE, Signed};
use imurun_keep::init::{POLICY_KEY_FILE, SIGNER_KEY_FILE};
use imurun_keep::key_files::read_key;
use imurun_keep::keys::{KeyPair, sha256_hex};
use imurun_keep::random::OsRandom;
use imurun_server::{
    EventHub, ServerOptions, StreamQuery, Subscription, last_event_id, sse_response,
};
use imurun_store::Store;
use imurun_testkit::Guest;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::api_support::{Dirs, TestModel, TestServer};

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

/// A Keep host: its server, the operator's token and keys, and a token each for alice and bob.
pub(crate) struct Keep {
    pub(crate) dirs: Dirs,
    pub(crate) server: TestServer,
    pub(crate) operator: String,
    pub(crate) alice: String,
    pub(crate) bob: String,
    pub(crate) policy: KeyPair,
    signer: KeyPair,
}

/// How a test's Keep host runs its sessions' cells.
#[derive(Debug, Default)]
pub(crate) struct CellsSetup {
    /// Loopback ports opened to cells (`[keep] egress_loopback_ports`).
    pub(crate) loopback_ports: Vec<u16>,
    /// Opens the API's own port to cells too, as an operator might by mistake: `imurun serve`
    /// refuses to start so configured, and the broker holds the port apart all the same.
    pub(crate) open_api_port: bool,
    /// Certificates the broker trusts beside the usual ones: a TLS upstream's.
    pub(crate) extra_roots: Vec<Vec<u8>>,
    /// Names the broker resolves, each to one address, instead of asking the system.
    pub(crate) names: Vec<(&'static str, IpAddr)>,
}

impl Keep {
    pub(crate) async fn start() -> Keep {
        Keep::start_serving(None, None).await
    }

    /// A Keep host whose sessions run in cells, reaching the loopback ports given.
    pub(crate) async fn start_with_cells(loopback_ports: Vec<u16>) -> Keep {
        let setup = CellsSetup {
            loopback_ports,
            ..CellsSetup::default()
        };
        Keep::start_serving(Some(setup), None).await
    }

    /// A Keep host whose assistant answers with `model`.
    pub(crate) async fn start_with_model(model: Arc<TestModel>) -> Keep {
        Keep::start_serving(None, Some(model)).await
    }

    /// A Keep host whose sessions run in cells as `setup` says, with `model` (if any) behind
    /// the assistant and the cells' model socket alike.
    pub(crate) async fn start_serving(
        setup: Option<CellsSetup>,
        model: Option<Arc<TestModel>>,
    ) -> Keep {
        let dirs = Dirs::new();
        std::fs::create_dir_all(dirs.db.parent().expect("parent")).expect("data dir");
        let store = Store::open(&dirs.db).await.expect("store");
        let keep_dir = dirs.db.parent().expect("parent").join("keep");
        let report = imurun_keep::init::initialise(
            &keep_dir,
            store.clone(),
            std::sync::Arc::new(imurun_core::SystemClock),
        )
        .await
        .expect("keep init");
        let service = imurun_keep::init::open(
            &keep_dir,
            store,
            std::sync::Arc::new(imurun_core::SystemClock),
        )
        .await
        .expect("open keep");
        // Bound first, as `imurun serve` does: the cells learn their own API's port.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let api_port = listener.local_addr().expect("addr").port();
        let keep_events = imurun_server::KeepHubs::default();
        let model = model.map(|model| model as Arc<dyn imurun_core::Model>);
        let service = match setup {
            None => service,
            Some(setup) => {
                let events = Arc::new(keep_events.clone());
                service.with_cells(cells(&setup, api_port, events, model.clone()))
            }
        };
        let options = ServerOptions {
            keep: Some(service),
            keep_events,
            ..ServerOptions::default()
        };
        let server = TestServer::start_on(listener, &dirs, model, options).await;
        let mut keep = Keep {
            policy: read_key(&keep_dir.join(POLICY_KEY_FILE)).expect("policy key"),
            signer: read_key(&keep_dir.join(SIGNER_KEY_FILE)).expect("signer key"),
            dirs,
            server,
            operator: report.operator_token.token,
            alice: String::new(),
            bob: String::new(),
        };
        keep.alice = keep.token_for("alice").await;
        keep.bob = keep.token_for("bob").await;
        keep
    }

    pub(crate) async fn token_for(&self, user: &str) -> String {
        let (status, body) = self
            .call(
                &self.operator,
                "POST",
                "/v1/tokens",
                Some(json!({"user": user})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body["token"].as_str().expect("token").to_owned()
    }

    pub(crate) async fn call(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let (status, value, _) = self
            .server
            .request_as(Some(token), method, path, body.map(|body| body.to_string()))
            .await;
        (status, value)
    }

    pub(crate) async fn raw(&self, token: &str, method: &str, path: &str) -> (u16, String) {
        let (status, _, text) = self
            .server
            .request_as(Some(token), method, path, None)
            .await;
        (status, text)
    }

    pub(crate) fn deploy_body(&self, name: &str, version: i64) -> Value {
        let mut bundle = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        bundle.extend_from_slice(format!("{name}@{version}").as_bytes());
        let manifest = json!({
            "name": name, "version": version, "description": "A helper.",
            "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000},
            "approval_timeout_s": 30
        });
        self.deploy_bundle(bundle, manifest)
    }

    /// Deploys `bundle` with `manifest` over HTTP, as the operator.
    pub(crate) async fn deploy(&self, bundle: Vec<u8>, manifest: Value) {
        let body = self.deploy_bundle(bundle, manifest);
        let (status, answer) = self
            .call(&self.operator, "POST", "/v1/agents", Some(body))
            .await;
        assert_eq!(status, 201, "{answer}");
    }

    fn deploy_bundle(&self, bundle: Vec<u8>, manifest: Value) -> Value {
        let (name, version) = (manifest["name"].clone(), manifest["version"].clone());
        let policy = json!({
            "type": POLICY_TYPE, "agent": name, "version": version,
            "expires_at": imurun_core::now_unix_s() + 3_600,
            "bundle_sha256": sha256_hex(&bundle), "manifest": manifest,
        });
        json!({
            "bundle": base64::engine::general_purpose::STANDARD.encode(&bundle),
            "bundle_signature": imurun_keep::trust::sign_bundle(&bundle, &self.signer),
            "policy": Signed::sign(&policy, &self.policy).expect("sign"),
        })
    }
}

/// The cells of a Keep host whose API listens on `api_port`, as `setup` says.
fn cells(
    setup: &CellsSetup,
    api_port: u16,
    events: Arc<dyn imurun_keep::cells::KeepEvents>,
    model: Option<Arc<dyn imurun_core::Model>>,
) -> imurun_keep::cells::Cells {
    let config = BrokerConfig {
        extra_roots: setup.extra_roots.clone(),
        ..BrokerConfig::default()
    };
    let own = imurun_cell::own_addresses();
    let broker = if setup.names.is_empty() {
        Broker::new(config, &own)
    } else {
        Broker::with_lookup(config, &own, Arc::new(NamedLookup(setup.names.clone())))
    }
    .expect("broker");
    let mut loopback_ports = setup.loopback_ports.clone();
    if setup.open_api_port {
        loopback_ports.push(api_port);
    }
    let config = imurun_keep::cells::CellsConfig {
        loopback_ports,
        api_port: Some(api_port),
        ..imurun_keep::cells::CellsConfig::default()
    };
    let model: imurun_keep::cells::ModelSource = Arc::new(move || model.clone());
    imurun_keep::cells::Cells::new(&config, broker, events, model).expect("cells")
}

/// A resolver that knows only the names it was given, each with one address.
struct NamedLookup(Vec<(&'static str, IpAddr)>);

impl imurun_cell::Lookup for NamedLookup {
    fn lookup<'a>(&'a self, host: &'a str) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
        let found = self.0.iter().find(|(name, _)| *name == host);
        let answer = found.map(|(_, address)| vec![*address]);
        Box::pin(async move { answer.ok_or_else(|| std::io::Error::other("no such name")) })
    }
}

/// The new key's proof that it is held, for `user`.
pub(crate) fn possession(key: &KeyPair, user: &str) -> String {
    key.sign(&imurun_keep::service::possession_message(
        user,
        &key.public(),
    ))
}

/// Sends `message` (as JSON text) to the session; its first reply.
pub(crate) async fn say(keep: &Keep, token: &str, session: &str, message: Value) -> Value {
    let (status, said) = keep
        .call(
            token,
            "POST",
            &format!("/v1/sessions/{session}/messages"),
            Some(json!({"text": message.to_string()})),
        )
        .await;
    assert_eq!(status, 200, "{said}");
    said["replies"][0].clone()
}

/// Enrols a new device for `user` (holding `token`) with a code from the operator.
pub(crate) async fn enrol(keep: &Keep, token: &str, user: &str) -> KeyPair {
    let (_, code) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/enrol-codes",
            Some(json!({"user": user})),
        )
        .await;
    let device = KeyPair::generate(&OsRandom).expect("key");
    let body = json!({"public_key": device.public().to_hex(), "label": "phone",
                      "possession": possession(&device, user), "enrol_code": code["code"]});
    let (status, enrolled) = keep.call(token, "POST", "/v1/devices", Some(body)).await;
    assert_eq!(status, 201, "{enrolled}");
    device
}

/// `user`'s decision of `kind` on the review `review` (as the API shows it), by `device`.
pub(crate) fn decide(device: &KeyPair, user: &str, review: &Value, kind: DecisionKind) -> Value {
    let hashes = serde_json::from_value(review["hashes"].clone()).expect("hashes");
    let expected = Expected {
        kind,
        subject: review["id"].as_str().expect("id"),
        hashes: &hashes,
        ceiling_version: review["ceiling_version"].as_i64().expect("ceiling"),
        policy_version: review["policy_version"].as_i64().expect("policy"),
        user,
    };
    let made = Decision::new(
        &OsRandom,
        &expected,
        device,
        imurun_core::now_unix_s(),
        600,
        false,
    )
    .expect("made");
    let signed = Signed::sign(&serde_json::to_value(&made).expect("json"), device).expect("sign");
    json!({"decision": signed})
}

/// Puts `guest`'s bytes, in base64, in the buffer of the session (its scripted agent's), over
/// as many messages as it takes.
pub(crate) async fn send_bundle(keep: &Keep, token: &str, session: &str, guest: Guest) {
    let bundle = base64::engine::general_purpose::STANDARD.encode(guest.bytes());
    for chunk in bundle.as_bytes().chunks(40_000) {
        let text = std::str::from_utf8(chunk).expect("ascii");
        say(keep, token, session, json!({"buffer": text})).await;
    }
}
