//! A host that records what cells ask of it.

use std::sync::{Arc, Mutex};

use imurun_cell::{
    Cell, CellConfig, CellEngine, CellError, CellHost, ChatMessage, HttpRequest, HttpResponse,
    Imports, Limits, WallClock, World,
};
use imurun_core::BoxFuture;
use imurun_testkit::Guest;

/// Records every import call; answers `http.send` with a fixed response.
#[derive(Default)]
pub(crate) struct RecordingHost {
    pub(crate) calls: Mutex<Vec<String>>,
}

impl RecordingHost {
    pub(crate) fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

impl CellHost for RecordingHost {
    fn generate(&self, messages: Vec<ChatMessage>) -> BoxFuture<'_, Result<String, String>> {
        self.record(format!("generate {}", messages.len()));
        Box::pin(async move { Ok(format!("model saw {} messages", messages.len())) })
    }

    fn send<'a>(
        &'a self,
        request: HttpRequest,
        _clock: &'a WallClock,
    ) -> BoxFuture<'a, Result<HttpResponse, String>> {
        self.record(format!("send {} {}", request.method, request.url));
        Box::pin(async move {
            Err(format!(
                "refused: {} is not in any egress rule",
                request.url
            ))
        })
    }

    fn read_memory(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        self.record("read_memory".to_owned());
        Box::pin(async { Ok(vec!["likes tea".to_owned()]) })
    }

    fn call_tool(&self, name: String, args_json: String) -> BoxFuture<'_, Result<String, String>> {
        self.record(format!("call_tool {name} {args_json}"));
        Box::pin(async { Ok("tool result".to_owned()) })
    }

    fn emit(&self, kind: String, payload_json: String) -> BoxFuture<'_, Result<(), String>> {
        self.record(format!("emit {kind} {payload_json}"));
        Box::pin(async move {
            if kind == "card.propose" {
                Err("card.propose needs `card: true`".to_owned())
            } else {
                Ok(())
            }
        })
    }
}

pub(crate) fn engine(slots: u32) -> CellEngine {
    CellEngine::new(CellConfig {
        slots,
        ..CellConfig::default()
    })
    .expect("the engine starts")
}

pub(crate) fn limits() -> Limits {
    Limits::from_resources(64, 2_000, 10_000)
}

pub(crate) fn hash(bytes: &[u8]) -> String {
    imurun_cell::sha256_hex(bytes)
}

pub(crate) async fn start(
    engine: &CellEngine,
    guest: Guest,
    world: World,
    imports: Imports,
    limits: Limits,
    host: Arc<RecordingHost>,
) -> Result<Cell, CellError> {
    let bytes = guest.bytes();
    engine
        .start(&hash(&bytes), &bytes, world, imports, limits, host)
        .await
}

pub(crate) fn http_only() -> Imports {
    Imports {
        http: true,
        ..Imports::default()
    }
}
