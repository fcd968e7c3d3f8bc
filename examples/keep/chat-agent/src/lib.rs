//! An agent a person talks to in plain words: the example pack `helper`
//! (`examples/keep/packs/helper`).
//!
//! Nothing the person types is JSON: [`intent`] reads what each message asks for, and
//! [`agent`] answers it with the imports its manifest grants (`model`, `tools`, `events`):
//!
//! - a conversation: the model's reply to a short system prompt and the recent exchanges;
//! - a plan: the model's steps for the goal, proposed as a `plan` for the person to accept or
//!   reject;
//! - a tool for an address: the fetch tool (whose component this agent carries, built by
//!   `build.rs`) proposed with GET on that address's host and port, asking the person before
//!   each use;
//! - reading an address: a call of the person's `fetch` tool;
//! - a file the person uploads: its name and size, never a summary (a small model invents).
//!
//! Every failure of the host (the model unreachable, a proposal or a call refused) is answered
//! in words; nothing here panics on any message. This file only binds [`agent::Host`] to the
//! cell's imports.

mod agent;
mod base64;
mod history;
mod intent;
mod plan;
mod text;
mod tool;

use std::cell::RefCell;

use agent::{Agent, Said};

wit_bindgen::generate!({ path: "../../../crates/imurun-cell/wit", world: "agent" });

use imurun::cell::{events, model, tools, types};

/// The fetch tool's component (`examples/keep/fetch-tool`), built by `build.rs`.
static FETCH_TOOL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fetch_tool.wasm"));

thread_local! {
    /// The session's agent: a cell serves one session, one message at a time.
    static AGENT: RefCell<Agent> = RefCell::new(Agent::new(FETCH_TOOL));
}

/// The cell's imports.
struct Cell;

impl agent::Host for Cell {
    fn generate(&mut self, messages: &[Said]) -> Result<String, String> {
        let messages: Vec<types::Message> = messages
            .iter()
            .map(|said| types::Message {
                role: said.role.to_owned(),
                content: said.content.clone(),
            })
            .collect();
        model::generate(&messages)
    }

    fn emit(&mut self, kind: &str, payload_json: &str) -> Result<(), String> {
        events::emit(kind, payload_json)
    }

    fn call(&mut self, name: &str, args_json: &str) -> Result<String, String> {
        tools::call(name, args_json)
    }
}

struct Helper;

impl Guest for Helper {
    fn handle(message: String) -> Result<Vec<String>, String> {
        let reply = AGENT.with(|agent| agent.borrow_mut().handle(&mut Cell, &message));
        Ok(vec![reply])
    }
}

export!(Helper);
