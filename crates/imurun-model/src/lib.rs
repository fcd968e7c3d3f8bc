//! Back-ends for imurun-core's `Model` trait. The loop never sees these types: the binary
//! picks one and hands the loop a `Model`.
//!
//! `EmbeddedModel` runs a GGUF file in process with llama.cpp (the default: SmolLM2-135M).
//! `OpenAiModel` (`llama-server`, vLLM, LM Studio, OpenAI) and `OllamaModel` talk to a model
//! server over HTTP. `docs/models.md` describes them. The scripted model replays a script of
//! replies, so tests, demos and benchmarks run deterministically without a real model; its
//! JSON script format is in `docs/scripted-model.md`.
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

mod embedded;
mod error;
mod http;
mod pause;
mod scripted;
mod template;

pub use embedded::{
    DEFAULT_MAX_TOKENS, DEFAULT_N_CTX, DEFAULT_PROMPT_CACHE_BYTES_MAX,
    DEFAULT_PROMPT_CACHE_SLOTS_MAX, DEFAULT_QUEUE_MAX, Decoding, EmbeddedConfig, EmbeddedError,
    EmbeddedModel, FinishReason, GGUF_ITEMS_MAX, GGUF_STRING_BYTES_MAX, GRAMMAR_CALLS_MAX,
    GRAMMAR_TOOLS_MAX, Generation, GgufError, GgufInfo, GgufValue, PromptCacheStats, PromptSource,
    RepeatPenalty, TOOL_CALL_MARKER, ToolCallGrammar, ToolGrammarError, file_type_name,
};
pub use error::ScriptError;
pub use http::{
    ContextSource, ERROR_BODY_BYTES_MAX, HTTP_DEFAULT_CONTEXT_LIMIT, HttpOptions,
    NATIVE_TOOL_ARGUMENTS_BYTES_MAX, NATIVE_TOOL_CALLS_MAX, OLLAMA_DEFAULT_BASE_URL,
    OLLAMA_DEFAULT_NUM_CTX, OllamaConfig, OllamaModel, OpenAiConfig, OpenAiModel, REPLY_BYTES_MAX,
    RESPONSE_BYTES_MAX, RetryPolicy, STREAM_BYTES_MAX, STREAM_LINE_BYTES_MAX, ToolMode,
};
pub use scripted::{
    DEFAULT_CONTEXT_LIMIT, DEFAULT_NAME, DELAY_MS_MAX, REQUESTS_KEPT_MAX, Reply, SCRIPT_BYTES_MAX,
    SCRIPT_REPLIES_MAX, Script, ScriptedModel, split_pieces,
};
pub use template::{
    CHATML_TEMPLATE, ChatTemplate, TEMPLATE_BYTES_MAX, TEMPLATE_FUEL_MAX, TemplateError,
};
