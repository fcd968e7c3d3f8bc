//! A tool that asks its host to sign and to mint tokens, through interfaces no imurun host
//! offers: it must never start. Keep's tests propose it to show that an approved tool still
//! cannot reach a signing key or a token.

wit_bindgen::generate!({ path: "wit", world: "tool" });

use imurun::cell::{keys, tokens};

struct Key;

impl Guest for Key {
    fn call(_args_json: String) -> Result<String, String> {
        let signature = keys::sign(b"deploy")?;
        let token = tokens::mint("alice")?;
        Ok(format!("{signature} {token}"))
    }
}

export!(Key);
