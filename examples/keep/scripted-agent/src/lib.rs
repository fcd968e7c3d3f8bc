//! An agent whose every reply and event comes from the session's messages, so a test, a demo
//! or an audit can make a cell do any one thing through the public API.
//!
//! A message is a JSON object with one step, or `{"steps": [...]}`; anything else is echoed.
//! Each step gives one reply:
//!
//! - `{"reply": "text"}`: says `text`;
//! - `{"emit": {"type": "plan", ...}}`: emits the event (`type` is the kind, the rest the
//!   payload) and says `emitted` or the host's refusal; a payload field whose value is the
//!   text `$buffer` gets the buffer's text instead, and the buffer is emptied;
//! - `{"buffer": "text"}`: appends text to a buffer kept across the session's messages (a
//!   tool's bundle is bigger than one message) and says its length;
//! - `{"fetch": {"method": "GET", "url": "...", "headers": {...}, "body": "..."}}` (feature
//!   `http`): says `{"status", "headers", "body"}` or `{"error"}`;
//! - `{"generate": [{"role", "content"}, ...]}` (feature `model`): the model's reply;
//! - `{"memory": true}` (feature `memory`): the entries, as a JSON list;
//! - `{"tool": {"name": "...", "args": {...}}}` (feature `tools`): the tool's result;
//! - `{"spin": true}`: loops for ever; `{"alloc_mb": n}`: allocates and touches n MiB;
//!   `{"sleep_ms": n}`: sleeps; `{"trap": true}`: panics;
//! - `{"canary_write": "text"}` / `{"canary_read": true}`: writes text into a buffer in linear
//!   memory / says what that buffer holds, in hex (a new tenant must see only zeros).

use serde_json::{Value, json};

wit_bindgen::generate!({ path: "../../../crates/imurun-cell/wit", world: "agent" });

#[allow(unused_imports)]
use imurun::cell::{events, http, memory, model, tools, types};

/// A buffer in the module's data, for the slot-reuse test.
static mut CANARY: [u8; 64] = [0; 64];

thread_local! {
    /// Text gathered over several messages, for an emit bigger than one message.
    static BUFFER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

struct Scripted;

impl Guest for Scripted {
    fn handle(message: String) -> Result<Vec<String>, String> {
        let Ok(value) = serde_json::from_str::<Value>(&message) else {
            return Ok(vec![format!("scripted: {message}")]);
        };
        let steps = match value.get("steps") {
            Some(Value::Array(steps)) => steps.clone(),
            _ => vec![value],
        };
        Ok(steps.iter().map(step).collect())
    }
}

fn step(step: &Value) -> String {
    if let Some(text) = step.get("reply") {
        return text.as_str().unwrap_or_default().to_owned();
    }
    if let Some(text) = step.get("buffer").and_then(Value::as_str) {
        let length = BUFFER.with(|buffer| {
            let mut buffer = buffer.borrow_mut();
            buffer.push_str(text);
            buffer.len()
        });
        return format!("buffered {length}");
    }
    if let Some(event) = step.get("emit") {
        let mut payload = event.clone();
        let kind = payload
            .as_object_mut()
            .and_then(|object| object.remove("type"))
            .and_then(|kind| kind.as_str().map(str::to_owned))
            .unwrap_or_default();
        if let Some(object) = payload.as_object_mut() {
            for value in object.values_mut() {
                if value.as_str() == Some("$buffer") {
                    *value = Value::String(BUFFER.with(|buffer| buffer.take()));
                }
            }
        }
        return match events::emit(&kind, &payload.to_string()) {
            Ok(()) => "emitted".to_owned(),
            Err(error) => format!("refused: {error}"),
        };
    }
    if let Some(request) = step.get("fetch") {
        return fetch(request);
    }
    if let Some(messages) = step.get("generate") {
        return generate(messages);
    }
    if step.get("memory").is_some() {
        return read_memory();
    }
    if let Some(call) = step.get("tool") {
        return call_tool(call);
    }
    if step.get("spin").is_some() {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
    if let Some(mb) = step.get("alloc_mb").and_then(Value::as_u64) {
        let mut held = Vec::new();
        for _ in 0..mb {
            let mut block = vec![0u8; 1 << 20];
            block[0] = 1;
            held.push(std::hint::black_box(block));
        }
        return format!("allocated {} MiB", held.len());
    }
    if let Some(ms) = step.get("sleep_ms").and_then(Value::as_u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        return format!("slept {ms} ms");
    }
    if step.get("trap").is_some() {
        panic!("the script asked for a trap");
    }
    if let Some(text) = step.get("canary_write").and_then(Value::as_str) {
        let bytes = text.as_bytes();
        let n = bytes.len().min(64);
        // SAFETY: a single-threaded guest; nothing else holds the buffer.
        unsafe {
            let canary = &mut *std::ptr::addr_of_mut!(CANARY);
            canary[..n].copy_from_slice(&bytes[..n]);
        }
        return format!("wrote {n} bytes");
    }
    if step.get("canary_read").is_some() {
        // SAFETY: as above.
        let canary = unsafe { *std::ptr::addr_of!(CANARY) };
        return canary.iter().map(|byte| format!("{byte:02x}")).collect();
    }
    format!("unknown step: {step}")
}

#[cfg(feature = "http")]
fn fetch(request: &Value) -> String {
    let headers = request["headers"]
        .as_object()
        .map(|headers| {
            headers
                .iter()
                .map(|(name, value)| types::Header {
                    name: name.clone(),
                    value: value.as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    let outgoing = types::Request {
        method: request["method"].as_str().unwrap_or("GET").to_owned(),
        url: request["url"].as_str().unwrap_or_default().to_owned(),
        headers,
        body: request["body"].as_str().unwrap_or_default().as_bytes().to_vec(),
    };
    match http::send(&outgoing) {
        Ok(response) => json!({
            "status": response.status,
            "headers": response
                .headers
                .iter()
                .map(|header| (header.name.clone(), Value::String(header.value.clone())))
                .collect::<serde_json::Map<String, Value>>(),
            "body": String::from_utf8_lossy(&response.body),
        })
        .to_string(),
        Err(error) => json!({ "error": error }).to_string(),
    }
}

#[cfg(not(feature = "http"))]
fn fetch(_request: &Value) -> String {
    json!({ "error": "this agent was built without http" }).to_string()
}

#[cfg(feature = "model")]
fn generate(messages: &Value) -> String {
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
    match model::generate(&messages) {
        Ok(reply) => reply,
        Err(error) => format!("refused: {error}"),
    }
}

#[cfg(not(feature = "model"))]
fn generate(_messages: &Value) -> String {
    "refused: this agent was built without the model".to_owned()
}

#[cfg(feature = "memory")]
fn read_memory() -> String {
    match memory::read() {
        Ok(entries) => json!(entries).to_string(),
        Err(error) => format!("refused: {error}"),
    }
}

#[cfg(not(feature = "memory"))]
fn read_memory() -> String {
    "refused: this agent was built without memory".to_owned()
}

#[cfg(feature = "tools")]
fn call_tool(call: &Value) -> String {
    let name = call["name"].as_str().unwrap_or_default();
    match tools::call(name, &call["args"].to_string()) {
        Ok(result) => result,
        Err(error) => format!("refused: {error}"),
    }
}

#[cfg(not(feature = "tools"))]
fn call_tool(_call: &Value) -> String {
    "refused: this agent was built without tools".to_owned()
}

export!(Scripted);
