//! The bodies of the OpenAI-compatible facade (`GET /v1/models`, `POST /v1/chat/completions`),
//! spelt as OpenAI spells them so that the official SDKs and the tools built on them read them.
//!
//! Requests accept unknown fields, unlike the rest of the API: OpenAI clients send many fields
//! (`temperature`, `top_p`, `tools`, `seed`, `user`, ...) that an imurun turn has no use for, and
//! refusing them would lock those clients out. The fields read are named below; every other
//! field is ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<ModelCard>,
}

/// One model of [`ModelList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelCard {
    /// `imurun` (the agent), or the loaded model's own name.
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Seconds since the Unix epoch: when this server process first listed its models.
    pub created: u64,
    /// Always `imurun`.
    pub owned_by: String,
}

/// `POST /v1/chat/completions`: the fields the facade reads.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
pub struct ChatCompletionRequest {
    /// Echoed nowhere and never checked: whatever the client names, the agent answers.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation; the last one must be the user's.
    pub messages: Vec<ChatMessage>,
    /// Stream the answer as `chat.completion.chunk` server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// How many answers; only 1 is possible (a turn has one answer).
    #[serde(default)]
    pub n: Option<u64>,
}

/// `stream_options` of a [`ChatCompletionRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` and no choices before `[DONE]`.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One message of a [`ChatCompletionRequest`].
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant`, `tool` or `function`.
    pub role: String,
    /// A string, an array of parts, or `null` (an assistant message that only called tools).
    #[serde(default)]
    pub content: Option<MessageContent>,
}

/// The content of a [`ChatMessage`].
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One part of an array content; only `{"type": "text", "text": ...}` is understood.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// `POST /v1/chat/completions` 200 without `stream`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-` and the turn's id.
    pub id: String,
    /// Always `chat.completion`.
    pub object: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    /// Always `imurun`.
    pub model: String,
    pub choices: Vec<Choice>,
    pub usage: Usage,
}

/// The one choice of a [`ChatCompletion`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Choice {
    /// Always 0.
    pub index: u32,
    pub message: AssistantMessage,
    /// `stop`, or `length` when the turn reached its step limit.
    pub finish_reason: String,
}

/// The answer of a [`Choice`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: String,
    /// The turn's final answer.
    pub content: String,
}

/// Token counts: the model's own count of the client's messages and of the answer. The real
/// prompt also carries the persona, the house style, the tool prompt and any tool steps, which
/// are not counted, so `prompt_tokens` is a lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

/// One server-sent event of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatCompletionChunk {
    /// The same for every chunk of one answer.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: String,
    pub created: u64,
    pub model: String,
    /// One choice; none in the usage chunk.
    pub choices: Vec<ChunkChoice>,
    /// With `stream_options.include_usage`: `null` on every chunk but the last, which has
    /// the counts. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Usage>)]
    pub usage: Option<Value>,
}

/// The choice of a [`ChatCompletionChunk`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    /// `null` until the last content chunk.
    pub finish_reason: Option<String>,
}

/// What a chunk adds: the role in the first, a piece of the answer in the next ones.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}
