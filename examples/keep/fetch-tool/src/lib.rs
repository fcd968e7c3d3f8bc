//! A tool that fetches a URL through the host's egress broker: `{"url": "...", "method":
//! "GET"}` in, `{"status": 200, "body": "..."}` out.

use serde_json::{Value, json};

wit_bindgen::generate!({ path: "../../../crates/imurun-cell/wit", world: "tool" });

use imurun::cell::http;
use imurun::cell::types::Request;

struct Fetch;

impl Guest for Fetch {
    fn call(args_json: String) -> Result<String, String> {
        let args: Value =
            serde_json::from_str(&args_json).map_err(|error| format!("bad arguments: {error}"))?;
        let url = args["url"].as_str().ok_or("`url` is required")?.to_owned();
        let method = args["method"].as_str().unwrap_or("GET").to_owned();
        let response = http::send(&Request {
            method,
            url,
            headers: Vec::new(),
            body: Vec::new(),
        })?;
        Ok(json!({
            "status": response.status,
            "body": String::from_utf8_lossy(&response.body),
        })
        .to_string())
    }
}

export!(Fetch);
