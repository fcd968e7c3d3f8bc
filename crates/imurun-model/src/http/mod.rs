//! The HTTP back-ends: a client of an OpenAI-compatible server (`llama-server`, vLLM, LM
//! Studio, OpenAI) and a client of Ollama. What they share lives here and beside it: the
//! connection options and their bounds (`HttpOptions`, `RetryPolicy`), sending with bounded
//! retries (`transport.rs`), reading bounded bodies and lines (`lines.rs`), turning a
//! server's error body into a `ModelError` (`errors.rs`), asking a server its context window
//! (`discover.rs`) and native tool calling (`tools.rs`). `docs/models.md` ("HTTP back-ends")
//! is the reference.
//!
//! Neither server counts tokens cheaply, so both back-ends use the seed's estimate
//! (`Model::count_tokens`'s default, characters / 3.5 plus 6 per message).

mod discover;
mod errors;
mod lines;
mod ollama;
mod openai;
mod tools;
mod transport;

use std::time::Duration;

use imurun_core::ModelError;

pub use discover::ContextSource;
pub use ollama::{OLLAMA_DEFAULT_BASE_URL, OLLAMA_DEFAULT_NUM_CTX, OllamaConfig, OllamaModel};
pub use openai::{OpenAiConfig, OpenAiModel};
pub use tools::{NATIVE_TOOL_ARGUMENTS_BYTES_MAX, NATIVE_TOOL_CALLS_MAX, ToolMode};

/// The context window an OpenAI-compatible back-end assumes when the server does not say
/// and nothing was configured: small enough to fit any model such a server runs.
pub const HTTP_DEFAULT_CONTEXT_LIMIT: usize = 4096;

/// The most bytes read of a response that is not streamed (a non-streamed reply, `/props`,
/// `/v1/models`, `/api/show`). Larger bodies fail with `ModelError::Protocol`.
pub const RESPONSE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// The most bytes of an error body kept for the message; the rest is not read.
pub const ERROR_BODY_BYTES_MAX: usize = 64 * 1024;

/// The longest line of a stream (one SSE field or one NDJSON object) in bytes. A streamed
/// chunk carries one token, so a longer line is a broken server, not a long reply.
pub const STREAM_LINE_BYTES_MAX: usize = 1024 * 1024;

/// The most bytes read from one streamed response, framing included. Each token arrives
/// wrapped in a JSON chunk of a few hundred bytes, so this allows far more than
/// `REPLY_BYTES_MAX` of text; past it the call fails with `ModelError::Protocol`.
pub const STREAM_BYTES_MAX: usize = 64 * 1024 * 1024;

/// The longest reply kept, in bytes of text. A reply that reaches it ends there and is
/// returned as it stands, like one that reached `max_tokens`: a runaway model without a
/// token limit (Ollama's default) cannot grow memory without bound.
pub const REPLY_BYTES_MAX: usize = 1024 * 1024;

/// How a request is retried when the server cannot take it yet: connection refused or
/// timed out while connecting, HTTP 429, 500, 502, 503 and 504. Nothing is retried once a
/// successful response has begun, so a reply is never streamed twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The most attempts in all, the first one included; 1 turns retries off.
    pub attempts_max: u32,
    /// The wait before the second attempt; each later wait doubles, up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    pub backoff_max_ms: u64,
    /// The longest `Retry-After` honoured. A 429 asking for a longer wait is not retried: it
    /// fails at once with `ModelError::RateLimited` carrying the server's wait.
    pub retry_after_max_ms: u64,
}

impl Default for RetryPolicy {
    /// Four attempts, waiting 0.5 s, 1 s and 2 s between them, and at most 30 s for a
    /// `Retry-After`: long enough for `llama-server` to finish loading a model (it answers
    /// 503 until then), short enough that a dead server is reported within seconds.
    fn default() -> Self {
        Self {
            attempts_max: 4,
            backoff_initial_ms: 500,
            backoff_max_ms: 8_000,
            retry_after_max_ms: 30_000,
        }
    }
}

impl RetryPolicy {
    /// No retries: every failure is reported at once.
    pub fn none() -> Self {
        Self {
            attempts_max: 1,
            ..Self::default()
        }
    }

    /// The wait before attempt `attempt + 1`, where `attempt` counts from 1.
    fn backoff_ms(&self, attempt: u32) -> u64 {
        let doublings = attempt.saturating_sub(1).min(32);
        self.backoff_initial_ms
            .saturating_mul(1_u64 << doublings)
            .min(self.backoff_max_ms)
    }
}

/// How long an idle connection is kept for the next request: less than the 5 s after which
/// llama-server (cpp-httplib) and uvicorn-based servers (vLLM) close one, so a request is not
/// sent on a connection the server is closing at that moment (a connection closed before
/// any answer is also retried: `transport::send_with_retries`).
const POOL_IDLE: Duration = Duration::from_secs(4);

/// Connection options shared by both back-ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    pub retry: RetryPolicy,
    /// How long connecting may take.
    pub connect_timeout_ms: u64,
    /// The longest silence while waiting for a response or between two pieces of a stream.
    /// Generous by default: a server may load a model or read a long prompt on a CPU
    /// before its first byte.
    pub read_timeout_ms: u64,
    /// How long each context-length probe at `connect` may take in all.
    pub probe_timeout_ms: u64,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            connect_timeout_ms: 10_000,
            read_timeout_ms: 300_000,
            probe_timeout_ms: 10_000,
        }
    }
}

impl HttpOptions {
    fn client(&self) -> Result<reqwest::Client, ModelError> {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(self.connect_timeout_ms))
            .read_timeout(Duration::from_millis(self.read_timeout_ms))
            .pool_idle_timeout(POOL_IDLE)
            .build()
            .map_err(|error| ModelError::Transport {
                message: format!("cannot set up the HTTP client: {}", errors::chain(&error)),
            })
    }
}

/// A server's base URL without a trailing slash, checked to be `http` or `https`. A base
/// that ends in `/v1` (as OpenAI clients are often configured) loses it, because the
/// back-ends add `/v1/...` themselves and also need the server's root (`/props`,
/// `/api/...`).
fn normalize_base_url(base_url: &str) -> Result<String, ModelError> {
    let parsed = reqwest::Url::parse(base_url.trim()).map_err(|error| ModelError::Transport {
        message: format!("`{base_url}` is not a server URL: {error}"),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(ModelError::Transport {
            message: format!("`{base_url}` is not an http:// or https:// server URL"),
        });
    }
    let mut base = parsed.as_str().trim_end_matches('/').to_owned();
    if let Some(root) = base.strip_suffix("/v1") {
        base = root.to_owned();
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_lose_trailing_slashes_and_v1() {
        let cases = [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
            ("https://api.openai.com/v1/", "https://api.openai.com"),
            ("http://host/proxy/v1", "http://host/proxy"),
            (" http://localhost:11434 ", "http://localhost:11434"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_base_url(input).unwrap(), expected, "{input}");
        }
        for bad in ["", "localhost:8080", "ftp://host", "file:///tmp/x"] {
            assert!(normalize_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        let policy = RetryPolicy {
            attempts_max: 10,
            backoff_initial_ms: 100,
            backoff_max_ms: 1_000,
            retry_after_max_ms: 0,
        };
        let waits: Vec<u64> = (1..=6).map(|attempt| policy.backoff_ms(attempt)).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1_000, 1_000]);
        assert_eq!(policy.backoff_ms(u32::MAX), 1_000);
    }
}
