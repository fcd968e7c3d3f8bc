//! Back-ends for imurun-core's `Model` trait. The loop never sees these types: the binary
//! picks one and hands the loop a `Model`.
//!
//! For now there is one back-end, the scripted model: it replays a script of replies, so
//! tests, demos and benchmarks run deterministically without a real model. Its JSON script
//! format is documented in `docs/scripted-model.md`.
//!
//! ```
//! use imurun_core::{GenerateRequest, Message, Model, ModelError};
//! use imurun_model::{Reply, Script, ScriptedModel};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let script = Script::new([
//!     Reply::text("```tool\n{\"name\": \"get_time\", \"args\": {}}\n```"),
//!     Reply::text("It is 14:05.").when_last_user_contains("[tool result: get_time]"),
//!     Reply::text("half an answer").then_error(ModelError::Transport { message: "reset".into() }),
//! ])?
//! .with_context_limit(2048);
//! let model = script.model(); // one per session; `model.clone_fresh()` does the same
//!
//! let request = GenerateRequest::new(vec![Message::user("What time is it?")]);
//! let mut streamed = Vec::new();
//! let call = model.generate(&request, &mut |piece| streamed.push(piece.to_owned())).await?;
//! assert!(call.starts_with("```tool"));
//! assert_eq!(streamed.concat(), call);
//! assert_eq!(model.requests(), [request.messages.clone()]);
//!
//! let from_json = ScriptedModel::from_json(r#"{"replies": [{"text": "Hello!"}]}"#)?;
//! assert_eq!(from_json.name(), "scripted");
//! # Ok(())
//! # }
//! ```

mod error;
mod scripted;

pub use error::ScriptError;
pub use scripted::{
    DEFAULT_CONTEXT_LIMIT, DEFAULT_NAME, DELAY_MS_MAX, REQUESTS_KEPT_MAX, Reply, SCRIPT_BYTES_MAX,
    SCRIPT_REPLIES_MAX, STOP_POLL_MS, Script, ScriptedModel, split_pieces,
};
