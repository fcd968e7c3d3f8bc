//! Turning what a server said went wrong into a `ModelError`: an HTTP error status with its
//! body, or an error object inside a stream. The body shapes are those of OpenAI
//! (`{"error": {"message", "type", "code"}}`), `llama-server` (the same, with `n_prompt_tokens`
//! and `n_ctx`), vLLM (`{"object": "error", "message", ...}` or OpenAI's shape) and Ollama
//! (`{"error": "text"}`).

use imurun_core::ModelError;
use serde_json::Value;

/// The longest server message quoted in an error.
const QUOTED_CHARS_MAX: usize = 500;

/// What an error message may say about the request that failed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorContext<'a> {
    /// The URL that was requested.
    pub(crate) url: &'a str,
    /// The model asked for, if one was named.
    pub(crate) model: Option<&'a str>,
    pub(crate) api_key_set: bool,
    /// The back-end's context window, reported when the server does not say its own.
    pub(crate) context_limit: usize,
    /// The request's estimated prompt tokens, reported when the server does not count.
    pub(crate) prompt_tokens: usize,
}

/// The error for a response with a non-success `status`. `retry_after_ms` is the server's
/// `Retry-After`, if it sent one.
pub(crate) fn from_status(
    status: u16,
    body: &str,
    retry_after_ms: Option<u64>,
    context: &ErrorContext<'_>,
) -> ModelError {
    let parsed = ErrorBody::parse(body);
    if let Some(overflow) = parsed.context_overflow(context) {
        return overflow;
    }
    let url = context.url;
    let said = parsed.quoted();
    match status {
        401 | 403 if context.api_key_set => ModelError::Protocol {
            message: format!("the server at {url} refused the API key (HTTP {status}){said}"),
        },
        401 | 403 => ModelError::Protocol {
            message: format!(
                "the server at {url} wants an API key (HTTP {status}) and none was given{said}"
            ),
        },
        404 => match context.model.filter(|_| parsed.is_about_a_model()) {
            Some(model) => ModelError::Protocol {
                message: format!("the server at {url} has no model `{model}` (HTTP 404){said}"),
            },
            None => ModelError::Protocol {
                message: format!(
                    "the server answered HTTP 404 for {url}: is the base URL right?{said}"
                ),
            },
        },
        429 => ModelError::RateLimited { retry_after_ms },
        500..=599 => ModelError::Transport {
            message: format!("the server at {url} failed with HTTP {status}{said}"),
        },
        _ => ModelError::Protocol {
            message: format!("the server at {url} refused the request (HTTP {status}){said}"),
        },
    }
}

/// The error for an error object a server put inside a stream or a successful body, in
/// place of the reply.
pub(crate) fn from_error_object(object: &Value, context: &ErrorContext<'_>) -> ModelError {
    let parsed = ErrorBody::from_value(object);
    if let Some(overflow) = parsed.context_overflow(context) {
        return overflow;
    }
    ModelError::Protocol {
        message: format!(
            "the server at {} reported an error instead of a reply{}",
            context.url,
            parsed.quoted()
        ),
    }
}

/// An error and its sources, joined with `: `, each said once (reqwest and hyper repeat
/// their sources' text in their own).
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(current) = next {
        let text = current.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        next = current.source();
    }
    parts.join(": ")
}

/// The parts of an error body that matter, whatever the server's shape.
#[derive(Debug, Default)]
struct ErrorBody {
    message: String,
    code: Option<String>,
    kind: Option<String>,
    /// `llama-server`'s count of the prompt's tokens, sent with a context-size error.
    prompt_tokens: Option<usize>,
    /// `llama-server`'s context size, sent with a context-size error.
    context_size: Option<usize>,
}

impl ErrorBody {
    fn parse(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => Self::from_value(&value),
            Err(_) => Self {
                message: body.trim().to_owned(),
                ..Self::default()
            },
        }
    }

    fn from_value(value: &Value) -> Self {
        let outer = match value.get("error") {
            // Ollama: `{"error": "model \"x\" not found"}`.
            Some(Value::String(message)) => {
                return Self {
                    message: message.clone(),
                    ..Self::default()
                };
            }
            // OpenAI, llama-server, newer vLLM: `{"error": {"message", "type", "code"}}`.
            Some(inner @ Value::Object(_)) => inner,
            // Older vLLM: `{"object": "error", "message", "type", "code"}`; FastAPI: `detail`.
            _ => value,
        };
        let text = |key: &str| match outer.get(key) {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        };
        let count = |key: &str| {
            outer
                .get(key)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
        };
        Self {
            message: text("message")
                .or_else(|| text("detail"))
                .unwrap_or_else(|| value.to_string()),
            code: text("code"),
            kind: text("type"),
            prompt_tokens: count("n_prompt_tokens"),
            context_size: count("n_ctx"),
        }
    }

    /// `ContextOverflow` when the body says the prompt does not fit, with the server's
    /// numbers when it gives them and the back-end's own otherwise.
    fn context_overflow(&self, context: &ErrorContext<'_>) -> Option<ModelError> {
        let lower = self.message.to_lowercase();
        let named = self.code.as_deref() == Some("context_length_exceeded")
            || self.kind.as_deref() == Some("exceed_context_size_error");
        let worded = lower.contains("maximum context length")
            || lower.contains("exceeds the available context size")
            || (lower.contains("exceed")
                && ["context length", "context size", "context window"]
                    .iter()
                    .any(|phrase| lower.contains(phrase)));
        if !named && !worded {
            return None;
        }
        // OpenAI: "maximum context length is 8192 tokens. However, your messages resulted in
        // 9000 tokens"; vLLM: "... However, you requested 9000 tokens (8000 in the messages,
        // 1000 in the completion)"; llama-server: "request (4476 tokens) exceeds the available
        // context size (4096 tokens)".
        let tokens = self
            .prompt_tokens
            .or_else(|| number_after(&lower, "resulted in "))
            .or_else(|| number_after(&lower, "you requested "))
            .or_else(|| number_after(&lower, "request ("))
            .unwrap_or(context.prompt_tokens);
        let limit = self
            .context_size
            .or_else(|| number_after(&lower, "maximum context length is "))
            .or_else(|| number_after(&lower, "context size ("))
            .unwrap_or(context.context_limit);
        Some(ModelError::ContextOverflow { tokens, limit })
    }

    /// Whether a 404 is about the model rather than the path.
    fn is_about_a_model(&self) -> bool {
        self.code.as_deref() == Some("model_not_found")
            || self.message.to_lowercase().contains("model")
    }

    /// `: <message>` for the end of an error, shortened; empty when the server said nothing.
    fn quoted(&self) -> String {
        let message = self.message.trim();
        if message.is_empty() {
            return String::new();
        }
        let mut quoted: String = message.chars().take(QUOTED_CHARS_MAX).collect();
        if quoted.len() < message.len() {
            quoted.push('…');
        }
        format!(": {quoted}")
    }
}

/// The number written right after the first `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<usize> {
    let start = text.find(marker)? + marker.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTEXT: ErrorContext<'static> = ErrorContext {
        url: "http://127.0.0.1:8080/v1/chat/completions",
        model: Some("m"),
        api_key_set: true,
        context_limit: 100,
        prompt_tokens: 7,
    };

    fn check(status: u16, body: &str, expected: &ModelError) {
        assert_eq!(
            &from_status(status, body, Some(5), &CONTEXT),
            expected,
            "{body}"
        );
    }

    #[test]
    fn context_overflow_bodies_give_the_servers_numbers() {
        let cases = [
            (
                r#"{"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#,
                9000,
                8192,
            ),
            (
                r#"{"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}"#,
                4476,
                4096,
            ),
            (
                r#"{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}"#,
                7,
                100,
            ),
            (
                r#"{"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "param": null, "code": 400}"#,
                2100,
                2048,
            ),
        ];
        for (body, tokens, limit) in cases {
            check(400, body, &ModelError::ContextOverflow { tokens, limit });
        }
    }

    #[test]
    fn statuses_give_their_errors() {
        let unknown_model = r#"{"error": {"message": "The model `m` does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}"#;
        let error = from_status(404, unknown_model, None, &CONTEXT);
        assert!(error.to_string().contains("has no model `m`"), "{error}");
        let wrong_path = from_status(404, "Not Found", None, &CONTEXT);
        assert!(wrong_path.to_string().contains("is the base URL right?"));
        let refused = from_status(
            401,
            r#"{"error": {"message": "Incorrect API key provided"}}"#,
            None,
            &CONTEXT,
        );
        assert!(
            refused
                .to_string()
                .contains("refused the API key (HTTP 401): Incorrect API key provided")
        );
        check(
            429,
            "{}",
            &ModelError::RateLimited {
                retry_after_ms: Some(5),
            },
        );
        assert!(matches!(
            from_status(503, "", None, &CONTEXT),
            ModelError::Transport { .. }
        ));
        let ollama = from_status(404, r#"{"error": "model 'm' not found"}"#, None, &CONTEXT);
        assert!(
            ollama
                .to_string()
                .ends_with("has no model `m` (HTTP 404): model 'm' not found")
        );
    }

    #[test]
    fn long_messages_are_shortened() {
        let body = "x".repeat(2 * QUOTED_CHARS_MAX);
        let error = from_status(400, &body, None, &CONTEXT).to_string();
        assert!(error.ends_with('…') && error.len() < body.len(), "{error}");
    }
}
