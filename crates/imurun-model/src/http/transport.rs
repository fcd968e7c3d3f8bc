//! Sending one request with bounded retries, and waiting in a way a Stop interrupts.

use imurun_core::{ModelError, StopFlag};
use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, Response};

use super::RetryPolicy;
use super::errors::{self, ErrorContext, chain};
use super::lines::{Read, error_body};
use crate::pause::pause;

/// A request that did not get a successful response: the error, and the HTTP status when
/// the server answered at all (`None` when it could not be reached).
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) status: Option<u16>,
    pub(crate) error: ModelError,
}

impl From<Failed> for ModelError {
    fn from(failed: Failed) -> Self {
        failed.error
    }
}

/// Sends the request `build` makes until the server answers with a success status, retrying
/// as `policy` allows: a refused or timed-out connection, one closed before any answer, 429,
/// 500, 502, 503 and 504 (a context-overflow body never, whatever its status). Returns the
/// successful response, whose body is not read yet, or `Stopped` when `stop` was set while
/// waiting.
pub(crate) async fn send_with_retries(
    build: impl Fn() -> RequestBuilder,
    policy: &RetryPolicy,
    stop: &StopFlag,
    context: &ErrorContext<'_>,
) -> Result<Read<Response>, Failed> {
    let mut attempt: u32 = 1;
    loop {
        let sent = tokio::select! {
            sent = build().send() => sent,
            () = stop.stopped() => return Ok(Read::Stopped),
        };
        let (failed, wait_ms) = match sent {
            Ok(response) if response.status().is_success() => return Ok(Read::Item(response)),
            Ok(response) => {
                let status = response.status().as_u16();
                let retry_after_ms = retry_after_ms(response.headers());
                let body = error_body(response).await;
                let error = errors::from_status(status, &body, retry_after_ms, context);
                let failed = Failed {
                    status: Some(status),
                    error,
                };
                let retryable = matches!(status, 429 | 500 | 502 | 503 | 504)
                    && !matches!(failed.error, ModelError::ContextOverflow { .. });
                if !retryable {
                    return Err(failed);
                }
                match retry_after_ms {
                    Some(wait_ms) if wait_ms > policy.retry_after_max_ms => return Err(failed),
                    Some(wait_ms) => (failed, wait_ms),
                    None => (failed, policy.backoff_ms(attempt)),
                }
            }
            Err(error) if error.is_connect() => {
                let failed = Failed {
                    status: None,
                    error: ModelError::Transport {
                        message: format!(
                            "cannot connect to {} (is the server running?): {}",
                            context.url,
                            chain(&error)
                        ),
                    },
                };
                (failed, policy.backoff_ms(attempt))
            }
            // The connection closed before any answer (a kept-alive connection the server
            // was closing, as llama-server's cpp-httplib does after 100 requests on one by
            // default): nothing was generated, so the request goes again.
            Err(error) if error.is_request() && !error.is_timeout() => {
                let failed = Failed {
                    status: None,
                    error: ModelError::Transport {
                        message: format!(
                            "the connection to {} closed before an answer: {}",
                            context.url,
                            chain(&error)
                        ),
                    },
                };
                (failed, policy.backoff_ms(attempt))
            }
            Err(error) => {
                return Err(Failed {
                    status: None,
                    error: ModelError::Transport {
                        message: format!(
                            "the request to {} failed: {}",
                            context.url,
                            chain(&error)
                        ),
                    },
                });
            }
        };
        if attempt >= policy.attempts_max {
            return Err(after_attempts(failed, attempt));
        }
        if !pause(wait_ms, stop).await {
            return Ok(Read::Stopped);
        }
        attempt += 1;
    }
}

/// The last failure, saying how many attempts were made when there were several.
fn after_attempts(mut failed: Failed, attempts: u32) -> Failed {
    if attempts > 1
        && let ModelError::Transport { message } = &mut failed.error
    {
        message.push_str(&format!(" ({attempts} attempts)"));
    }
    failed
}

/// The server's wait from `Retry-After` (seconds; an HTTP date is not honoured) or the
/// `retry-after-ms` some OpenAI-compatible servers send, in milliseconds.
fn retry_after_ms(headers: &HeaderMap) -> Option<u64> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        return Some(millis(ms));
    }
    header("retry-after")
        .and_then(|value| value.parse::<f64>().ok())
        .map(|seconds| millis(seconds * 1000.0))
}

fn millis(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        // Saturates on overflow; a wait of more than u64::MAX ms is not retried anyway.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ms = value.ceil() as u64;
        ms
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    type Headers = &'static [(&'static str, &'static str)];

    #[test]
    fn retry_after_headers_give_milliseconds() {
        let cases: [(Headers, Option<u64>); 6] = [
            (&[], None),
            (&[("retry-after", "2")], Some(2_000)),
            (&[("retry-after", "0.5")], Some(500)),
            (&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")], None),
            (
                &[("retry-after", "2"), ("retry-after-ms", "150")],
                Some(150),
            ),
            (&[("retry-after", "-3")], Some(0)),
        ];
        for (headers, expected) in cases {
            let mut map = HeaderMap::new();
            for (name, value) in headers {
                map.insert(*name, HeaderValue::from_static(value));
            }
            assert_eq!(retry_after_ms(&map), expected, "{headers:?}");
        }
    }
}
