//! A tool with no authority at all: pure computation in its cell. `{"sleep_ms": n}` sleeps
//! first (for revocation races and the wall-time limit); `{"spin": true}` loops for ever (the
//! CPU limit); `{"alloc_mb": n}` allocates and touches n MiB (the memory limit);
//! `{"propose": {...}}` tries to emit a `tool.propose` (a tool's cell proposes nothing); with
//! the `memory` feature, `{"memory": true}` answers the memory entries it may read; with the
//! `model` feature, `{"generate": [{"role", "content"}, ...]}` answers the model's reply;
//! anything else comes back as `{"echo": <arguments>}`.

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
        if args.get("spin").is_some() {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        if let Some(mb) = args.get("alloc_mb").and_then(Value::as_u64) {
            let mut held = Vec::new();
            for _ in 0..mb {
                let mut block = vec![0u8; 1 << 20];
                block[0] = 1;
                held.push(std::hint::black_box(block));
            }
            return Ok(format!("allocated {} MiB", held.len()));
        }
        #[cfg(feature = "memory")]
        if args.get("memory").and_then(Value::as_bool) == Some(true) {
            return imurun::cell::memory::read().map(|entries| json!({ "memory": entries }).to_string());
        }
        #[cfg(feature = "model")]
        if let Some(messages) = args.get("generate") {
            return generate(messages);
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

/// The model's reply to `messages`, through the cell's model socket.
#[cfg(feature = "model")]
fn generate(messages: &Value) -> Result<String, String> {
    use imurun::cell::{model, types};
    let messages: Vec<types::Message> = messages
        .as_array()
        .map(|list| {
            list.iter()
                .map(|message| types::Message {
                    role: message["role"].as_str().unwrap_or("user").to_owned(),
                    content: message["content"].as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    model::generate(&messages)
}

export!(Pure);
