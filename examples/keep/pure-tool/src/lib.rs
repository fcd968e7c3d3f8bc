//! A tool with no authority at all: pure computation in its cell. `{"sleep_ms": n}` sleeps
//! first (for revocation races); `{"propose": {...}}` tries to emit a `tool.propose` (a tool's
//! cell proposes nothing); with the `memory` feature, `{"memory": true}` answers the memory
//! entries it may read; anything else comes back as `{"echo": <arguments>}`.

use serde_json::{Value, json};

wit_bindgen::generate!({ path: "../../../crates/imurun-cell/wit", world: "tool" });

use imurun::cell::events;

struct Pure;

impl Guest for Pure {
    fn call(args_json: String) -> Result<String, String> {
        let args: Value =
            serde_json::from_str(&args_json).map_err(|error| format!("bad arguments: {error}"))?;
        if let Some(ms) = args.get("sleep_ms").and_then(Value::as_u64) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        #[cfg(feature = "memory")]
        if args.get("memory").and_then(Value::as_bool) == Some(true) {
            return imurun::cell::memory::read().map(|entries| json!({ "memory": entries }).to_string());
        }
        if let Some(payload) = args.get("propose") {
            return match events::emit("tool.propose", &payload.to_string()) {
                Ok(()) => Ok("proposed".to_owned()),
                Err(error) => Err(format!("refused: {error}")),
            };
        }
        Ok(json!({ "echo": args }).to_string())
    }
}

export!(Pure);
