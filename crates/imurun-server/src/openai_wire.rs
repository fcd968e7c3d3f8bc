//! The bodies of the OpenAI-compatible facade (`GET /v1/models`, `POST /v1/chat/completions`),
//! spelt as OpenAI spells them so that the official SDKs and the tools built on them read them.
//!
//! Requests accept unknown fields, unlike the rest of the API: OpenAI clients send many fields
//! (`temperature`, `top_p`, `tools`, `seed`, `user`, ...) that an imurun turn has no use for, and
//! refusing them would lock those clients out. The fields read are named below; every other
//! field is ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, Object, ObjectBuilder, OneOfBuilder, Ref, Schema, SchemaType, Type,
};
use utoipa::{PartialSchema, ToSchema};

use crate::openapi::{ErrorBody, json_string, sse_event_schema};
use crate::wire::{NOT_WHITE_SPACE_PATTERN, objects, optional_object, optional_whole_number};

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
    /// The conversation; the last message, the user's, is the prompt (a rule the schema cannot
    /// state: JSON Schema has no "last item").
    #[serde(deserialize_with = "objects")]
    #[schema(schema_with = messages_schema)]
    pub messages: Vec<ChatMessage>,
    /// Stream the answer as `chat.completion.chunk` server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default, deserialize_with = "optional_object")]
    pub stream_options: Option<StreamOptions>,
    /// How many answers; only 1 is possible (a turn has one answer).
    #[serde(default, deserialize_with = "optional_whole_number")]
    #[schema(minimum = 1, maximum = 1)]
    pub n: Option<u64>,
}

/// `stream_options` of a [`ChatCompletionRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` and no choices before `[DONE]`.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One message of a [`ChatCompletionRequest`]. Its schema is [`messages_schema`]'s: what a
/// message may hold depends on its role.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant`, `tool` or `function`.
    pub role: String,
    /// A string, an array of parts, or `null` (an assistant message that only called tools).
    #[serde(default)]
    pub content: Option<MessageContent>,
}

/// The content of a [`ChatMessage`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(#[serde(deserialize_with = "objects")] Vec<ContentPart>),
}

/// One part of an array content; only `{"type": "text", "text": ...}` is understood.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// The roles of messages other than the user's, as `Conversation::read` reads them.
const OTHER_ROLES: [&str; 5] = ["system", "developer", "assistant", "tool", "function"];

/// The schema of `messages`, written out because its rules depend on each message's role,
/// which the derive of one struct cannot say. `Conversation::read` (`routes/openai.rs`) enforces
/// the same rules; keep the two together:
///
/// - at least one `user` message has text that is not only white space; the last message must
///   be such a message, the prompt, which JSON Schema cannot say ("the last item"), so it is
///   said in words and answered with a 400;
/// - every message has a known role, and content that is a string, an array of `text` parts or
///   `null`;
/// - a `user` message's text is at most 32 000 characters (413 past that).
///
/// Two limits are sums, which JSON Schema cannot state, so they are said in words only: a
/// `user` message's parts joined by new lines are at most 32 000 characters, and so are the
/// `system` and `developer` messages together (413 past either).
pub fn messages_schema() -> Schema {
    // utoipa has no `contains`; `Extensions` are written into the schema object as they are.
    let contains = serde_json::to_value(Schema::Object(message_schema(MessageKind::Prompt)))
        .unwrap_or(Value::Null);
    Schema::Array(
        ArrayBuilder::new()
            .items(
                OneOfBuilder::new()
                    .item(message_schema(MessageKind::User))
                    .item(message_schema(MessageKind::Other)),
            )
            .min_items(Some(1))
            .description(Some(
                "The conversation. The last message is the user's, with text that is not only \
                 white space: the prompt (400 otherwise). Earlier `user` and `assistant` \
                 messages are the history (the last 6), `system` and `developer` messages \
                 anywhere add to the persona for this turn; `tool` and `function` messages are \
                 ignored. A `user` message's text \
                 (a string, or its parts joined by new lines) is at most 32 000 characters, and \
                 so are the `system` and `developer` messages together (413 past either).",
            ))
            .extensions(Some(Extensions::from_iter([("contains", contains)])))
            .build(),
    )
}

/// Which message [`message_schema`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageKind {
    /// A `user` message.
    User,
    /// A `user` message with text: a prompt.
    Prompt,
    /// Any other role.
    Other,
}

fn message_schema(kind: MessageKind) -> Object {
    let roles: &[&str] = match kind {
        MessageKind::User | MessageKind::Prompt => &["user"],
        MessageKind::Other => &OTHER_ROLES,
    };
    let text = || {
        let user = kind != MessageKind::Other;
        ObjectBuilder::new()
            .schema_type(Type::String)
            .max_length(user.then_some(32_000))
            .pattern((kind == MessageKind::Prompt).then_some(NOT_WHITE_SPACE_PATTERN))
    };
    let part = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "type",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["text"])),
        )
        .required("type")
        .property("text", ObjectBuilder::new().schema_type(Type::String))
        .required("text");
    let mut parts = ArrayBuilder::new().items(part);
    if kind == MessageKind::Prompt {
        let with_text = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("text", text())
            .required("text")
            .build();
        let contains = serde_json::to_value(Schema::Object(with_text)).unwrap_or(Value::Null);
        parts = parts.extensions(Some(Extensions::from_iter([("contains", contains)])));
    }
    let mut content = OneOfBuilder::new().item(text()).item(parts);
    if kind != MessageKind::Prompt {
        content = content.item(ObjectBuilder::new().schema_type(SchemaType::Type(Type::Null)));
    }
    let mut message = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "role",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(roles.iter().copied())),
        )
        .required("role")
        .property(
            "content",
            content.description(Some(
                "A string, an array of `text` parts (`{\"type\": \"text\", \"text\"}`; other \
                 parts, images say, are refused), or `null`.",
            )),
        );
    if kind == MessageKind::Prompt {
        message = message.required("content");
    }
    message.build()
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

/// One message of a streamed answer, as OpenAPI describes an event of a `text/event-stream`:
/// its `data:` line holds a [`ChatCompletionChunk`], an error (`{"error": {"code", "message",
/// "type"}}`, then `[DONE]`) or, last, `[DONE]`.
#[derive(Debug)]
pub struct ChatCompletionEvent;

impl utoipa::PartialSchema for ChatCompletionEvent {
    fn schema() -> RefOr<Schema> {
        let chunk_or_error = OneOfBuilder::new()
            .item(Ref::from_schema_name(ChatCompletionChunk::name()))
            .item(Ref::from_schema_name(ErrorBody::name()));
        let done = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["[DONE]"]));
        let data = AnyOfBuilder::new()
            .item(done)
            .item(json_string(Schema::OneOf(chunk_or_error.build()).into()));
        sse_event_schema(
            "One SSE message of a streamed answer: a `data:` line holding a \
             `chat.completion.chunk`, an error (`ErrorBody`, with `type`, followed by \
             `[DONE]`), or the closing `[DONE]`.",
            Schema::AnyOf(data.build()).into(),
            None,
        )
    }
}

impl ToSchema for ChatCompletionEvent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        for (name, schema) in [
            (ChatCompletionChunk::name(), ChatCompletionChunk::schema()),
            (ErrorBody::name(), ErrorBody::schema()),
        ] {
            schemas.push((name.into_owned(), schema));
        }
        ChatCompletionChunk::schemas(schemas);
        ErrorBody::schemas(schemas);
    }
}

/// The `data:` of one message of a streamed answer.
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
