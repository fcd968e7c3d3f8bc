//! Asking a server how large a context it serves, before the first request: the probes of
//! `OpenAiModel::connect` and `OllamaModel::connect`, and where the answer came from.

use std::time::Duration;

use imurun_core::{ModelError, StopFlag};
use reqwest::{Client, RequestBuilder};
use serde_json::Value;

use super::errors::ErrorContext;
use super::lines::{BodyReader, Read};
use super::transport::send_with_retries;
use super::{HttpOptions, RESPONSE_BYTES_MAX};

/// Where a back-end's context window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextSource {
    /// `llama-server`'s `GET /props`: `default_generation_settings.n_ctx`, the context of
    /// one slot as the server was started.
    LlamaServerProps,
    /// vLLM's `GET /v1/models`: the model's `max_model_len`.
    VllmModels,
    /// LM Studio's `GET /api/v0/models`: the model's `max_context_length` (the most the
    /// model can take; LM Studio may have loaded it with less, so configure a smaller value
    /// if you did).
    LmStudioModels,
    /// Ollama's `POST /api/show`: `model_info["<architecture>.context_length"]`.
    OllamaShow,
    /// The configured value: no server said, or the server's was larger.
    Configured,
    /// The back-end's default: no server said and nothing was configured.
    Default,
}

/// What the probes of an OpenAI-compatible server found.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDiscovery {
    /// The context the server serves and which probe said so.
    pub(crate) served: Option<(usize, ContextSource)>,
    /// The first model `/v1/models` lists, for a back-end configured without a model.
    pub(crate) first_model: Option<String>,
}

/// Asks an OpenAI-compatible server at `base` how large a context it serves: `/props`
/// (`llama-server`), then `/v1/models` (vLLM), then `/api/v0/models` (LM Studio); the first
/// that answers with a number wins. A server that cannot be reached, or refuses the key, is
/// an error; a probe the server does not know (404, another shape) is skipped.
pub(crate) async fn discover_openai(
    client: &Client,
    base: &str,
    api_key: Option<&str>,
    model: Option<&str>,
    options: &HttpOptions,
) -> Result<OpenAiDiscovery, ModelError> {
    let mut found = OpenAiDiscovery::default();
    let get = |url: &str| with_key(client.get(url), api_key);

    let props = probe(&format!("{base}/props"), &get, model, api_key, options).await?;
    let n_ctx = props
        .as_ref()
        .and_then(|props| count(props.pointer("/default_generation_settings/n_ctx")));
    if let Some(n_ctx) = n_ctx {
        found.served = Some((n_ctx, ContextSource::LlamaServerProps));
    }

    let models = probe(&format!("{base}/v1/models"), &get, model, api_key, options).await?;
    let listed = models.as_ref().map(|models| model_entries(models, model));
    if let Some((first, entry)) = listed {
        found.first_model = first;
        let max_model_len = entry.and_then(|entry| count(entry.get("max_model_len")));
        if found.served.is_none()
            && let Some(max_model_len) = max_model_len
        {
            found.served = Some((max_model_len, ContextSource::VllmModels));
        }
    }
    if found.served.is_some() {
        return Ok(found);
    }

    let lm_studio = probe(
        &format!("{base}/api/v0/models"),
        &get,
        model,
        api_key,
        options,
    )
    .await?;
    let model = model.or(found.first_model.as_deref());
    let entry = lm_studio
        .as_ref()
        .and_then(|models| model_entries(models, model).1);
    if let Some(max_context_length) = entry.and_then(|entry| count(entry.get("max_context_length")))
    {
        found.served = Some((max_context_length, ContextSource::LmStudioModels));
    }
    Ok(found)
}

/// Asks Ollama at `base` for `model`'s context length (`POST /api/show`). A model Ollama does
/// not have is an error naming it, as is a server that cannot be reached.
pub(crate) async fn discover_ollama(
    client: &Client,
    base: &str,
    api_key: Option<&str>,
    model: &str,
    options: &HttpOptions,
) -> Result<Option<usize>, ModelError> {
    let url = format!("{base}/api/show");
    let body = serde_json::json!({ "model": model }).to_string();
    let post = |url: &str| {
        with_key(client.post(url), api_key)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone())
    };
    let context = error_context(&url, Some(model), api_key);
    let stop = StopFlag::new();
    let sent = send_with_retries(
        || post(&url).timeout(Duration::from_millis(options.probe_timeout_ms)),
        &options.retry,
        &stop,
        &context,
    )
    .await?;
    let Read::Item(response) = sent else {
        return Ok(None);
    };
    let Some(show) = read_json(response, &url, &stop).await else {
        return Ok(None);
    };
    let info = show.get("model_info");
    let architecture = info
        .and_then(|info| info.get("general.architecture"))
        .and_then(Value::as_str);
    let named =
        architecture.and_then(|architecture| info?.get(format!("{architecture}.context_length")));
    let any = || {
        info?
            .as_object()?
            .iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .map(|(_, value)| value)
    };
    Ok(count(named.or_else(any)))
}

/// Adds `Authorization: Bearer <key>` when there is a key.
pub(crate) fn with_key(request: RequestBuilder, api_key: Option<&str>) -> RequestBuilder {
    match api_key {
        Some(key) => request.bearer_auth(key),
        None => request,
    }
}

/// An `ErrorContext` for a probe, whose numbers no error uses.
fn error_context<'a>(
    url: &'a str,
    model: Option<&'a str>,
    api_key: Option<&str>,
) -> ErrorContext<'a> {
    ErrorContext {
        url,
        model,
        api_key_set: api_key.is_some(),
        context_limit: 0,
        prompt_tokens: 0,
    }
}

/// One GET probe: its JSON body, `None` when the server does not serve the path (any HTTP
/// error but 401 and 403) or the body is not JSON, and an error when the server cannot be
/// reached or refuses the key.
async fn probe(
    url: &str,
    get: &impl Fn(&str) -> RequestBuilder,
    model: Option<&str>,
    api_key: Option<&str>,
    options: &HttpOptions,
) -> Result<Option<Value>, ModelError> {
    let context = error_context(url, model, api_key);
    let stop = StopFlag::new();
    let timeout = Duration::from_millis(options.probe_timeout_ms);
    let sent = send_with_retries(
        || get(url).timeout(timeout),
        &options.retry,
        &stop,
        &context,
    )
    .await;
    match sent {
        Ok(Read::Item(response)) => Ok(read_json(response, url, &stop).await),
        Ok(_) => Ok(None),
        Err(failed) if matches!(failed.status, None | Some(401 | 403)) => Err(failed.error),
        Err(_) => Ok(None),
    }
}

/// A successful body as JSON, `None` if it is too long, breaks off or is not JSON: a probe
/// that fails this way is skipped like one the server does not serve.
async fn read_json(response: reqwest::Response, url: &str, stop: &StopFlag) -> Option<Value> {
    match BodyReader::new(response, url, RESPONSE_BYTES_MAX)
        .read_all(stop)
        .await
    {
        Ok(Read::Item(body)) => serde_json::from_slice(&body).ok(),
        _ => None,
    }
}

/// From a `{"data": [{"id", ...}]}` list: the first model's id, and the entry for `model`
/// (the first entry when no model is named).
fn model_entries<'a>(list: &'a Value, model: Option<&str>) -> (Option<String>, Option<&'a Value>) {
    let entries = list.get("data").and_then(Value::as_array);
    let Some(entries) = entries else {
        return (None, None);
    };
    let id = |entry: &Value| entry.get("id").and_then(Value::as_str).map(str::to_owned);
    let first = entries.first().and_then(id);
    let entry = match model {
        Some(model) => entries
            .iter()
            .find(|entry| id(entry).as_deref() == Some(model)),
        None => entries.first(),
    };
    (first, entry)
}

/// A positive count from a JSON number.
fn count(value: Option<&Value>) -> Option<usize> {
    value
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .and_then(|n| usize::try_from(n).ok())
}
