//! The model seam: the loop sees `Model`, never a concrete back-end. Back-ends live in
//! `imurun-model` and are wired in by the binary.

use serde::Serialize;

use crate::{BoxFuture, Message, StopFlag};

/// Characters per token in the estimate used when a back-end cannot count.
pub const ESTIMATE_CHARS_PER_TOKEN: f64 = 3.5;

/// Tokens added per message in the estimate, for the chat template's role markers.
pub const ESTIMATE_TOKENS_PER_MESSAGE: usize = 6;

/// The seed's estimate: characters / 3.5, plus 6 per message, rounded up.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|message| estimate_text_tokens(&message.content) + ESTIMATE_TOKENS_PER_MESSAGE)
        .sum()
}

/// The estimate for one piece of text, without the per-message overhead.
pub fn estimate_text_tokens(text: &str) -> usize {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let tokens = (text.chars().count() as f64 / ESTIMATE_CHARS_PER_TOKEN).ceil() as usize;
    tokens
}

/// One generation: the messages, and the limits on the reply.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub messages: Vec<Message>,
    /// The most tokens to generate; `None` lets the back-end decide.
    pub max_tokens: Option<usize>,
    /// Checked between tokens: a set flag ends the generation early with what was made.
    pub stop: StopFlag,
    /// The start of the reply, written for the model: it continues from there. The reply
    /// streamed and returned begins with it. Only sent to back-ends whose
    /// [`Model::supports_prefill`] is true.
    pub prefill: Option<String>,
    /// What a call written in this reply may look like, when the loop knows more than the
    /// tool set. A back-end with a call grammar narrows it to this shape; the others ignore
    /// it (the parser reads whatever they write).
    pub calls: Option<CallShape>,
}

/// The shape the loop asks of the calls in one reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallShape {
    /// The tools a call may name (a subset of the runnable ones; empty: any of them).
    pub tools: Vec<String>,
    /// The fewest calls the reply holds once it starts one (0 and 1 mean one).
    pub calls_min: usize,
}

impl GenerateRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            max_tokens: None,
            stop: StopFlag::new(),
            prefill: None,
            calls: None,
        }
    }
}

/// A question of likelihood: how likely the model finds each continuation of a reply that
/// starts with `prefill`, after `messages`. Nothing is generated.
#[derive(Debug, Clone)]
pub struct ScoreRequest {
    pub messages: Vec<Message>,
    /// The reply's start, common to every continuation (may be empty).
    pub prefill: String,
    /// The texts to score, each on its own after the prefill.
    pub continuations: Vec<String>,
    /// Texts whose first tokens' chance together is read after every token of each
    /// continuation (closing quotes: where could the value end?). Empty: not read.
    pub probes: Vec<String>,
    /// Checked between continuations: a set flag ends the request with an error.
    pub stop: StopFlag,
}

impl ScoreRequest {
    pub fn new(
        messages: Vec<Message>,
        prefill: impl Into<String>,
        continuations: Vec<String>,
    ) -> Self {
        Self {
            messages,
            prefill: prefill.into(),
            continuations,
            probes: Vec::new(),
            stop: StopFlag::new(),
        }
    }
}

/// One continuation's likelihood: the natural-log probability of each of its tokens, in
/// order. Where the continuation's first tokens join the prefill's last ones into other
/// tokens, those joined tokens are counted here too (the same for every continuation that
/// shares them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scored {
    pub token_logprobs: Vec<f32>,
    /// Where each token ends, in bytes of the continuation (0 for a token wholly in the
    /// prefill).
    pub token_ends: Vec<usize>,
    /// With probes: after each token, the log-probability that one of the probes' first
    /// tokens comes next.
    pub probe_logprobs: Vec<f32>,
}

impl Scored {
    /// The whole continuation's log-probability.
    pub fn total(&self) -> f64 {
        self.token_logprobs.iter().map(|lp| f64::from(*lp)).sum()
    }

    /// The log-probability per token (length-normalised); 0 for an empty continuation.
    pub fn mean(&self) -> f64 {
        if self.token_logprobs.is_empty() {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let count = self.token_logprobs.len() as f64;
        self.total() / count
    }
}

/// Why a generation failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelError {
    /// The back-end could not be reached or the connection broke.
    #[error("the model could not be reached: {message}")]
    Transport { message: String },
    /// The back-end refused for now; try again after `retry_after_ms` if it said.
    #[error("the model is rate limited")]
    RateLimited { retry_after_ms: Option<u64> },
    /// The messages do not fit the model's context window.
    #[error("the prompt ({tokens} tokens) does not fit the context window ({limit} tokens)")]
    ContextOverflow { tokens: usize, limit: usize },
    /// The back-end answered with something it should not have.
    #[error("the model answered in an unexpected way: {message}")]
    Protocol { message: String },
}

/// A chat model. Implementations stream: `on_token` receives each piece of text as it is
/// generated, and the returned future resolves to the whole reply.
pub trait Model: Send + Sync {
    /// A short name for logs and the page (`SmolLM2-135M-Instruct.Q4_1`, `scripted`).
    fn name(&self) -> &str;

    /// The context window in tokens.
    fn context_limit(&self) -> usize;

    /// How many tokens `messages` take. Back-ends that can count exactly override this; the
    /// default is the seed's estimate.
    fn count_tokens(&self, messages: &[Message]) -> usize {
        estimate_tokens(messages)
    }

    /// How many tokens `text` takes on its own (a generated reply, a prefill): no message
    /// framing. The default is the seed's estimate.
    fn count_text_tokens(&self, text: &str) -> usize {
        estimate_text_tokens(text)
    }

    /// Whether [`Model::count_tokens`] and [`Model::count_text_tokens`] count with the model's
    /// own tokenizer; false when they are the estimate.
    fn counts_exactly(&self) -> bool {
        false
    }

    /// Whether the back-end honours [`GenerateRequest::prefill`]: the model continues a
    /// reply the caller started. Back-ends that cannot (most chat-completion servers) say no,
    /// and callers then leave the reply to the model.
    fn supports_prefill(&self) -> bool {
        false
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>>;

    /// Whether [`Model::score`] answers: the back-end reads its model's token probabilities.
    /// Callers that decide by likelihood ask first and keep their other path otherwise.
    fn supports_scoring(&self) -> bool {
        false
    }

    /// The likelihood of each of `request`'s continuations, in order. Back-ends that cannot
    /// score refuse with a protocol error.
    fn score<'a>(
        &'a self,
        request: &'a ScoreRequest,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ModelError>> {
        let _ = request;
        Box::pin(async {
            Err(ModelError::Protocol {
                message: format!("the {} back-end cannot score continuations", self.name()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_characters_over_three_and_a_half_plus_six_per_message() {
        assert_eq!(estimate_tokens(&[]), 0);
        assert_eq!(estimate_tokens(&[Message::user("")]), 6);
        // 7 characters -> 2 tokens, + 6.
        assert_eq!(estimate_tokens(&[Message::user("abcdefg")]), 8);
        // 8 characters -> 2.29 -> 3 tokens, + 6; counted in characters, not bytes.
        assert_eq!(estimate_tokens(&[Message::user("éééééééé")]), 9);
        assert_eq!(
            estimate_tokens(&[Message::system("abcdefg"), Message::user("abcdefg")]),
            16
        );
    }
}

/// Tokens a turn's generations took: every request it sent and every reply it got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TokenUsage {
    /// The tokens of the messages sent (and of a prefill the model continued from).
    pub prompt_tokens: usize,
    /// The tokens the model generated.
    pub completion_tokens: usize,
    /// Counted with the model's own tokenizer; false when estimated (see
    /// [`Model::counts_exactly`]).
    pub exact: bool,
}

impl TokenUsage {
    /// What one generation took: `request`'s messages and prefill, and `reply` (which begins
    /// with the prefill), counted by `model`.
    pub fn of(model: &dyn Model, request: &GenerateRequest, reply: &str) -> Self {
        let prefill = request.prefill.as_deref().unwrap_or_default();
        let generated = reply.strip_prefix(prefill).unwrap_or(reply);
        let prefill_tokens = if prefill.is_empty() {
            0
        } else {
            model.count_text_tokens(prefill)
        };
        Self {
            prompt_tokens: model.count_tokens(&request.messages) + prefill_tokens,
            completion_tokens: model.count_text_tokens(generated),
            exact: model.counts_exactly(),
        }
    }

    /// Both generations' tokens together; exact only when both were.
    pub fn plus(self, other: Self) -> Self {
        Self {
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            completion_tokens: self.completion_tokens + other.completion_tokens,
            exact: self.exact && other.exact,
        }
    }
}
