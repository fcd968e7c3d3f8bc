//! The smallest agent: replies with what it was sent.

wit_bindgen::generate!({ path: "../../../crates/imurun-cell/wit", world: "agent" });

struct Echo;

impl Guest for Echo {
    fn handle(message: String) -> Result<Vec<String>, String> {
        Ok(vec![format!("echo: {message}")])
    }
}

export!(Echo);
