//! The Ollama back-end: `POST {base}/api/chat`, streamed as one JSON object per line, with
//! `options.num_ctx` always set.

use std::fmt;

use imurun_core::{BoxFuture, GenerateRequest, Model, ModelError};
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

use super::discover::{ContextSource, discover_ollama, with_key};
use super::errors::{ErrorContext, from_error_object};
use super::lines::{BodyReader, Read};
use super::openai::{Reply, cut, parse_json, wire_message};
use super::tools::{NativeCalls, ToolMode};
use super::transport::send_with_retries;
use super::{HttpOptions, STREAM_BYTES_MAX, normalize_base_url};

/// Where Ollama listens unless told otherwise.
pub const OLLAMA_DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// The `num_ctx` sent when none is configured (lowered to the model's own context length
/// when that is smaller). Ollama's own default is smaller still and silently drops the
/// start of a longer prompt; a larger value costs memory on the server for every loaded
/// model, so raising it is the person's choice.
pub const OLLAMA_DEFAULT_NUM_CTX: usize = 8192;

/// How to reach Ollama.
#[derive(Clone, PartialEq)]
pub struct OllamaConfig {
    /// The server's root, `OLLAMA_DEFAULT_BASE_URL` by default.
    pub base_url: String,
    /// The model, as `ollama list` names it (`llama3.2`, `qwen2.5:7b`).
    pub model: String,
    /// Sent as `Authorization: Bearer <key>`, for an Ollama behind an authenticating proxy.
    /// Never printed by `Debug`.
    pub api_key: Option<String>,
    /// The `num_ctx` to ask for; `OLLAMA_DEFAULT_NUM_CTX` when `None`. `connect` lowers it
    /// to the model's context length when that is smaller.
    pub num_ctx: Option<usize>,
    /// Text (the default) or Ollama's native tool calling.
    pub tool_mode: ToolMode,
    pub http: HttpOptions,
}

impl OllamaConfig {
    /// `model` on the Ollama at `OLLAMA_DEFAULT_BASE_URL`, with the default options.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: OLLAMA_DEFAULT_BASE_URL.to_owned(),
            model: model.into(),
            api_key: None,
            num_ctx: None,
            tool_mode: ToolMode::Text,
            http: HttpOptions::default(),
        }
    }

    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    #[must_use]
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    #[must_use]
    pub fn with_num_ctx(mut self, num_ctx: usize) -> Self {
        self.num_ctx = Some(num_ctx);
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

impl fmt::Debug for OllamaConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OllamaConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("num_ctx", &self.num_ctx)
            .field("tool_mode", &self.tool_mode)
            .field("http", &self.http)
            .finish()
    }
}

/// A `Model` served by Ollama.
///
/// Every request carries `options.num_ctx` (the back-end's context limit), because Ollama's
/// default is small and it truncates a longer prompt without a word; for the same reason a
/// request whose estimated tokens exceed `num_ctx` fails with `ContextOverflow` before it is
/// sent. `max_tokens` goes as `options.num_predict`. Retries, the stop flag, the reply bound
/// and a cut stream (no line with `"done": true`) behave as in `OpenAiModel`.
pub struct OllamaModel {
    client: reqwest::Client,
    chat_url: String,
    base_url: String,
    api_key: Option<String>,
    model: String,
    num_ctx: usize,
    context_source: ContextSource,
    tool_mode: ToolMode,
    options: HttpOptions,
}

impl OllamaModel {
    /// A back-end that asks Ollama nothing before its first request: `num_ctx` is the
    /// configured one, else `OLLAMA_DEFAULT_NUM_CTX`.
    pub fn new(config: OllamaConfig) -> Result<Self, ModelError> {
        let base_url = normalize_base_url(&config.base_url)?;
        let client = config.http.client()?;
        let (num_ctx, context_source) = match config.num_ctx {
            Some(num_ctx) => (num_ctx, ContextSource::Configured),
            None => (OLLAMA_DEFAULT_NUM_CTX, ContextSource::Default),
        };
        Ok(Self {
            client,
            chat_url: format!("{base_url}/api/chat"),
            base_url,
            api_key: config.api_key,
            model: config.model,
            num_ctx,
            context_source,
            tool_mode: config.tool_mode,
            options: config.http,
        })
    }

    /// A back-end that first reads the model's context length from `POST /api/show` and
    /// uses the smaller of it and the configured (or default) `num_ctx`. Fails when Ollama
    /// cannot be reached or does not have the model.
    pub async fn connect(config: OllamaConfig) -> Result<Self, ModelError> {
        let mut model = Self::new(config)?;
        let trained = discover_ollama(
            &model.client,
            &model.base_url,
            model.api_key.as_deref(),
            &model.model,
            &model.options,
        )
        .await?;
        if let Some(trained) = trained
            && trained < model.num_ctx
        {
            model.num_ctx = trained;
            model.context_source = ContextSource::OllamaShow;
        }
        Ok(model)
    }

    /// Where `context_limit` (the `num_ctx` sent) came from.
    pub fn context_source(&self) -> ContextSource {
        self.context_source
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn request_body(&self, request: &GenerateRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut options = json!({ "num_ctx": self.num_ctx });
        if let Some(max_tokens) = request.max_tokens {
            options["num_predict"] = json!(max_tokens);
        }
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "options": options,
        });
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
        let prompt_tokens = self.count_tokens(&request.messages);
        if prompt_tokens > self.num_ctx {
            return Err(ModelError::ContextOverflow {
                tokens: prompt_tokens,
                limit: self.num_ctx,
            });
        }
        let body = self.request_body(request).to_string();
        let context = ErrorContext {
            url: &self.chat_url,
            model: Some(&self.model),
            api_key_set: self.api_key.is_some(),
            context_limit: self.num_ctx,
            prompt_tokens,
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
        let mut reader = BodyReader::new(response, &self.chat_url, STREAM_BYTES_MAX);
        let mut reply = Reply::default();
        let mut calls = NativeCalls::default();
        loop {
            if request.stop.is_stopped() {
                return Ok(reply.text);
            }
            let line = match reader.next_line(&request.stop).await? {
                Read::Item(line) => line,
                Read::End => return Err(cut(&self.chat_url, &reply.text)),
                Read::Stopped => return Ok(reply.text),
            };
            if line.trim().is_empty() {
                continue;
            }
            let chunk = parse_json(line.as_bytes(), &self.chat_url)?;
            if chunk.get("error").is_some() {
                return Err(from_error_object(&chunk, &context));
            }
            let piece = chunk.pointer("/message/content").and_then(Value::as_str);
            if let Some(piece) = piece
                && !reply.push(piece, on_token)
            {
                return Ok(reply.text);
            }
            if let Some(tool_calls) = chunk.pointer("/message/tool_calls") {
                calls.add(tool_calls, &self.chat_url)?;
            }
            if chunk.get("done").and_then(Value::as_bool) == Some(true) {
                return Ok(reply.finish(&calls, on_token));
            }
        }
    }
}

impl fmt::Debug for OllamaModel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OllamaModel")
            .field("chat_url", &self.chat_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("num_ctx", &self.num_ctx)
            .field("context_source", &self.context_source)
            .finish_non_exhaustive()
    }
}

impl Model for OllamaModel {
    fn name(&self) -> &str {
        &self.model
    }

    fn context_limit(&self) -> usize {
        self.num_ctx
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        Box::pin(self.run(request, on_token))
    }
}
