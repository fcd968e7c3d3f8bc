//! The OpenAI-compatible back-end: `POST {base}/v1/chat/completions`, streamed as
//! server-sent events or not, against `llama-server`, vLLM, LM Studio or OpenAI.

use std::fmt;

use imurun_core::{BoxFuture, GenerateRequest, Message, Model, ModelError, Role};
use reqwest::Response;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

use super::discover::{ContextSource, discover_openai, with_key};
use super::errors::{ErrorContext, from_error_object};
use super::lines::{BodyReader, Read, next_sse_data};
use super::tools::{NativeCalls, ToolMode};
use super::transport::send_with_retries;
use super::{
    HTTP_DEFAULT_CONTEXT_LIMIT, HttpOptions, REPLY_BYTES_MAX, RESPONSE_BYTES_MAX, STREAM_BYTES_MAX,
    normalize_base_url,
};

/// How to reach an OpenAI-compatible server.
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The server's root, e.g. `http://127.0.0.1:8080` (`llama-server`),
    /// `http://127.0.0.1:8000` (vLLM), `http://127.0.0.1:1234` (LM Studio) or
    /// `https://api.openai.com`. A trailing `/v1` is dropped.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`. Never printed by `Debug`.
    pub api_key: Option<String>,
    /// The `model` of each request. `None` sends none (`llama-server` serves its one model),
    /// unless `connect` finds one in `/v1/models`.
    pub model: Option<String>,
    /// The context window to assume; when the server also says, the smaller wins.
    pub context_limit: Option<usize>,
    /// Stream the reply as server-sent events (the default) or take it in one body.
    pub stream: bool,
    /// Text (the default) or the server's native tool calling.
    pub tool_mode: ToolMode,
    pub http: HttpOptions,
}

impl OpenAiConfig {
    /// A streaming configuration for the server at `base_url`, with no key, no model and
    /// the default options.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: None,
            context_limit: None,
            stream: true,
            tool_mode: ToolMode::Text,
            http: HttpOptions::default(),
        }
    }

    #[must_use]
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    #[must_use]
    pub fn with_context_limit(mut self, context_limit: usize) -> Self {
        self.context_limit = Some(context_limit);
        self
    }

    #[must_use]
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    #[must_use]
    pub fn with_tool_mode(mut self, tool_mode: ToolMode) -> Self {
        self.tool_mode = tool_mode;
        self
    }

    #[must_use]
    pub fn with_http(mut self, http: HttpOptions) -> Self {
        self.http = http;
        self
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("context_limit", &self.context_limit)
            .field("stream", &self.stream)
            .field("tool_mode", &self.tool_mode)
            .field("http", &self.http)
            .finish()
    }
}

/// A `Model` served by an OpenAI-compatible server.
///
/// Each `generate` sends the messages (roles as strings; `Role::Tool` as `user`, since imurun
/// feeds tool results back as user messages and OpenAI's `tool` role needs a call id) with
/// `max_tokens` when the request has one, retries as `HttpOptions::retry` allows until a
/// response begins, then streams `choices[0].delta.content` through `on_token`. The stop
/// flag is checked before each piece and while the server is silent; a set flag drops the
/// connection (so the server stops generating) and returns what streamed. A stream that
/// ends without `data: [DONE]` and without a `finish_reason` was cut: the pieces already
/// went through `on_token`, and the call fails with `ModelError::Transport`. Token counts
/// are the seed's estimate. With `ToolMode::Native`, the tools go as `tools` and the calls
/// the model makes are appended to the reply as ```` ```tool ```` blocks.
#[derive(Clone)]
pub struct OpenAiModel {
    client: reqwest::Client,
    chat_url: String,
    base_url: String,
    api_key: Option<String>,
    model: Option<String>,
    name: String,
    context_limit: usize,
    context_source: ContextSource,
    stream: bool,
    tool_mode: ToolMode,
    options: HttpOptions,
}

impl OpenAiModel {
    /// A back-end that asks the server nothing before its first request: its context window
    /// is the configured one, else `HTTP_DEFAULT_CONTEXT_LIMIT`. Fails only for a base URL
    /// that is not `http(s)://host...`.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let base_url = normalize_base_url(&config.base_url)?;
        let client = config.http.client()?;
        let (context_limit, context_source) = match config.context_limit {
            Some(limit) => (limit, ContextSource::Configured),
            None => (HTTP_DEFAULT_CONTEXT_LIMIT, ContextSource::Default),
        };
        let name = config.model.clone().unwrap_or_else(|| base_url.clone());
        Ok(Self {
            client,
            chat_url: format!("{base_url}/v1/chat/completions"),
            base_url,
            api_key: config.api_key,
            model: config.model,
            name,
            context_limit,
            context_source,
            stream: config.stream,
            tool_mode: config.tool_mode,
            options: config.http,
        })
    }

    /// A back-end that first asks the server which context it serves (`/props`, then
    /// `/v1/models`, then `/api/v0/models`, see `ContextSource`) and, when no model is
    /// configured, takes the first one `/v1/models` lists. Fails when the server cannot be
    /// reached or refuses the key.
    pub async fn connect(config: OpenAiConfig) -> Result<Self, ModelError> {
        let mut model = Self::new(config.clone())?;
        let found = discover_openai(
            &model.client,
            &model.base_url,
            model.api_key.as_deref(),
            model.model.as_deref(),
            &model.options,
        )
        .await?;
        if model.model.is_none()
            && let Some(first) = found.first_model
        {
            model.name.clone_from(&first);
            model.model = Some(first);
        }
        match (found.served, config.context_limit) {
            (Some((served, source)), Some(configured)) if served < configured => {
                model.context_limit = served;
                model.context_source = source;
            }
            (Some((served, source)), None) => {
                model.context_limit = served;
                model.context_source = source;
            }
            _ => {}
        }
        Ok(model)
    }

    /// The same back-end offering tools in another way: how `imurun eval bfcl
    /// --native-tools` gives each case its own functions over one connection.
    pub fn with_tool_mode(mut self, tool_mode: ToolMode) -> Self {
        self.tool_mode = tool_mode;
        self
    }

    /// Where `context_limit` came from.
    pub fn context_source(&self) -> ContextSource {
        self.context_source
    }

    /// The model sent with each request, if any.
    pub fn model_id(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The server's root, as normalised.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The JSON body of a chat request.
    fn request_body(&self, request: &GenerateRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut body = json!({ "messages": messages, "stream": self.stream });
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        if let Some(max_tokens) = request.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(tools) = self.tool_mode.wire_tools() {
            body["tools"] = tools;
        }
        body
    }

    async fn run(
        &self,
        request: &GenerateRequest,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<String, ModelError> {
        let body = self.request_body(request).to_string();
        let context = ErrorContext {
            url: &self.chat_url,
            model: self.model.as_deref(),
            api_key_set: self.api_key.is_some(),
            context_limit: self.context_limit,
            prompt_tokens: self.count_tokens(&request.messages),
        };
        let build = || {
            with_key(self.client.post(&self.chat_url), self.api_key.as_deref())
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone())
        };
        let sent = send_with_retries(build, &self.options.retry, &request.stop, &context).await?;
        let Read::Item(response) = sent else {
            return Ok(String::new());
        };
        if is_event_stream(&response) {
            stream_reply(response, request, on_token, &context).await
        } else {
            whole_reply(response, request, on_token, &context).await
        }
    }
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiModel")
            .field("chat_url", &self.chat_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("context_limit", &self.context_limit)
            .field("context_source", &self.context_source)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_limit(&self) -> usize {
        self.context_limit
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        Box::pin(self.run(request, on_token))
    }
}

/// One message as the chat API takes it.
pub(crate) fn wire_message(message: &Message) -> Value {
    let role = match message.role {
        Role::Tool => Role::User,
        role => role,
    };
    json!({ "role": role.as_str(), "content": message.content })
}

/// Whether the server answered with a stream; one that ignores `stream: true` (or a request
/// that did not ask) answers with one JSON body.
fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value: &HeaderValue| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// The reply as a stream of `data: {chunk}` events ending with `data: [DONE]`.
async fn stream_reply(
    response: Response,
    request: &GenerateRequest,
    on_token: &mut (dyn FnMut(&str) + Send),
    context: &ErrorContext<'_>,
) -> Result<String, ModelError> {
    let mut reader = BodyReader::new(response, context.url, STREAM_BYTES_MAX);
    let mut reply = Reply::default();
    let mut calls = NativeCalls::default();
    let mut finished = false;
    loop {
        if request.stop.is_stopped() {
            return Ok(reply.text);
        }
        let data = match next_sse_data(&mut reader, &request.stop).await? {
            Read::Item(data) => data,
            Read::End if finished => return Ok(reply.finish(&calls, on_token)),
            Read::End => return Err(cut(context.url, &reply.text)),
            Read::Stopped => return Ok(reply.text),
        };
        if data.trim() == "[DONE]" {
            return Ok(reply.finish(&calls, on_token));
        }
        let chunk = parse_json(data.as_bytes(), context.url)?;
        if chunk.get("error").is_some() {
            return Err(from_error_object(&chunk, context));
        }
        let choice = chunk.pointer("/choices/0");
        let piece = choice
            .and_then(|choice| choice.pointer("/delta/content"))
            .and_then(Value::as_str);
        if let Some(piece) = piece
            && !reply.push(piece, on_token)
        {
            return Ok(reply.text);
        }
        if let Some(tool_calls) = choice.and_then(|choice| choice.pointer("/delta/tool_calls")) {
            calls.add(tool_calls, context.url)?;
        }
        finished |= choice
            .and_then(|choice| choice.get("finish_reason"))
            .is_some_and(Value::is_string);
    }
}

/// The reply as one `chat.completion` body.
async fn whole_reply(
    response: Response,
    request: &GenerateRequest,
    on_token: &mut (dyn FnMut(&str) + Send),
    context: &ErrorContext<'_>,
) -> Result<String, ModelError> {
    let reader = BodyReader::new(response, context.url, RESPONSE_BYTES_MAX);
    let Read::Item(body) = reader.read_all(&request.stop).await? else {
        return Ok(String::new());
    };
    let completion = parse_json(&body, context.url)?;
    if completion.get("error").is_some() {
        return Err(from_error_object(&completion, context));
    }
    let Some(message) = completion.pointer("/choices/0/message") else {
        return Err(ModelError::Protocol {
            message: format!("the answer from {} has no choices[0].message", context.url),
        });
    };
    let mut reply = Reply::default();
    if let Some(content) = message.get("content").and_then(Value::as_str) {
        reply.push(content, on_token);
    }
    let mut calls = NativeCalls::default();
    if let Some(tool_calls) = message.get("tool_calls") {
        calls.add(tool_calls, context.url)?;
    }
    Ok(reply.finish(&calls, on_token))
}

/// A reply being received, bounded by `REPLY_BYTES_MAX`.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub(crate) text: String,
}

impl Reply {
    /// Streams `piece` and keeps it; false once the reply reached `REPLY_BYTES_MAX` (the
    /// part of `piece` that fits is kept), so the caller ends it there.
    pub(crate) fn push(&mut self, piece: &str, on_token: &mut (dyn FnMut(&str) + Send)) -> bool {
        let room = REPLY_BYTES_MAX - self.text.len();
        let mut end = piece.len().min(room);
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        let kept = &piece[..end];
        if !kept.is_empty() {
            on_token(kept);
            self.text.push_str(kept);
        }
        end == piece.len() && self.text.len() < REPLY_BYTES_MAX
    }

    /// The reply with the model's native tool calls appended as ```` ```tool ```` blocks
    /// (streamed too), once it is complete.
    pub(crate) fn finish(
        mut self,
        calls: &NativeCalls,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> String {
        let rendered = calls.render(&self.text);
        if !rendered.is_empty() {
            self.push(&rendered, on_token);
        }
        self.text
    }
}

/// `bytes` as JSON, or `Protocol` quoting its start.
pub(crate) fn parse_json(bytes: &[u8], url: &str) -> Result<Value, ModelError> {
    serde_json::from_slice(bytes).map_err(|error| {
        let text = String::from_utf8_lossy(bytes);
        let start: String = text.chars().take(200).collect();
        ModelError::Protocol {
            message: format!("{url} sent malformed JSON ({error}): {start}"),
        }
    })
}

/// The error for a stream that ended before its end marker.
pub(crate) fn cut(url: &str, reply: &str) -> ModelError {
    ModelError::Transport {
        message: format!(
            "the stream from {url} ended before the reply did, after {} characters",
            reply.chars().count()
        ),
    }
}
