//! The embedded back-end: GGUF models run in-process by llama.cpp (the `llama-cpp-2`
//! crate). One model is loaded once and shared by every session; its requests are served
//! one at a time, in arrival order, by a dedicated worker thread (`worker.rs`), because
//! llama.cpp's work is blocking CPU work that must stay off Tokio's async workers.
//!
//! Prompts are rendered with the chat template the file carries (`crate::template`) and
//! counted exactly with the model's own tokenizer.

mod gguf;
mod grammar;
mod prompt_cache;
mod sampling;
#[cfg(test)]
mod tests;
mod utf8;
mod worker;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use imurun_core::{BoxFuture, GenerateRequest, Message, Model, ModelError, ScoreRequest, Scored};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;

pub use gguf::{
    GGUF_ITEMS_MAX, GGUF_STRING_BYTES_MAX, GgufError, GgufInfo, GgufValue, file_type_name,
};
pub use grammar::{
    GRAMMAR_CALLS_MAX, GRAMMAR_TOOLS_MAX, TOOL_CALL_MARKER, ToolCallGrammar, ToolGrammarError,
};
pub use prompt_cache::PromptCacheStats;

use crate::template::{ChatTemplate, TemplateError};
use worker::{Job, JobEvent, ScoreJob, Work, Worker};

/// The context window used unless configured otherwise, in tokens (capped at the file's
/// trained context length).
pub const DEFAULT_N_CTX: u32 = 4096;

/// The most tokens one generation makes when its request sets no `max_tokens`.
pub const DEFAULT_MAX_TOKENS: usize = 1024;

/// How many requests may wait for the model at once; more callers wait to enqueue, in
/// order (Tokio's bounded channel is fair).
pub const DEFAULT_QUEUE_MAX: usize = 64;

/// How many evaluated prompts the prompt cache keeps besides the one in the context: a few
/// interleaved sessions, the history summariser and a sub-agent.
pub const DEFAULT_PROMPT_CACHE_SLOTS_MAX: usize = 4;

/// The most bytes the prompt cache holds: four prompts of about 2,900 tokens with SmolLM2
/// (22.5 KiB of keys and values per token); fewer, longer or a larger model's, within it.
pub const DEFAULT_PROMPT_CACHE_BYTES_MAX: usize = 256 * 1024 * 1024;

/// How tokens are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decoding {
    /// Always the most likely token: deterministic, the default.
    Greedy,
    /// Sampled from the tokens in the top `top_p` of probability, after dividing the
    /// logits by `temperature`, with a seeded random generator (the same seed and prompt
    /// give the same reply).
    Sampled {
        temperature: f32,
        top_p: f32,
        seed: u32,
    },
}

/// How the embedded model is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedConfig {
    /// The context window in tokens; capped at the file's trained context length.
    pub n_ctx: u32,
    /// CPU threads for llama.cpp; `None` uses every core.
    pub threads: Option<u32>,
    pub decoding: Decoding,
    /// The most tokens a generation makes when its request sets no `max_tokens`.
    pub max_tokens_default: usize,
    /// How many requests may wait for the model at once.
    pub queue_max: usize,
    /// Keep the previous prompt's evaluated tokens and evaluate only what a new prompt
    /// adds to their common start: an agent's turns resend the whole conversation, so this
    /// saves most of the prompt work. Off only to measure prompt processing (it turns the
    /// prompt cache off too).
    pub reuse_prompt_prefix: bool,
    /// How many other evaluated prompts to keep (copies of their llama.cpp state), so that
    /// interleaved sessions do not evaluate their shared start again; 0 keeps only the one
    /// in the context.
    pub prompt_cache_slots_max: usize,
    /// The most bytes those copies may take together; the least recently used go first.
    pub prompt_cache_bytes_max: usize,
    /// Lowers the odds of tokens the reply used recently, greedy or sampled.
    pub repeat_penalty: RepeatPenalty,
}

/// llama.cpp's repetition penalty: the logits of tokens among the last `last_n` generated
/// are divided by `penalty` (multiplied when negative). Small models fall into loops — the
/// same line or fence until the token limit — and greedy decoding never leaves one on its
/// own. `penalty` 1.0 turns it off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatPenalty {
    pub penalty: f32,
    pub last_n: u16,
}

impl RepeatPenalty {
    pub const OFF: Self = Self {
        penalty: 1.0,
        last_n: 0,
    };

    pub(crate) fn is_off(self) -> bool {
        self.last_n == 0 || (self.penalty - 1.0).abs() < f32::EPSILON
    }
}

impl Default for RepeatPenalty {
    fn default() -> Self {
        Self {
            penalty: 1.1,
            last_n: 64,
        }
    }
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            n_ctx: DEFAULT_N_CTX,
            threads: None,
            decoding: Decoding::Greedy,
            max_tokens_default: DEFAULT_MAX_TOKENS,
            queue_max: DEFAULT_QUEUE_MAX,
            reuse_prompt_prefix: true,
            prompt_cache_slots_max: DEFAULT_PROMPT_CACHE_SLOTS_MAX,
            prompt_cache_bytes_max: DEFAULT_PROMPT_CACHE_BYTES_MAX,
            repeat_penalty: RepeatPenalty::default(),
        }
    }
}

/// Why an embedded model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// The file's header could not be read.
    #[error(transparent)]
    Gguf(#[from] GgufError),
    /// llama.cpp could not load the weights or set up its context.
    #[error("llama.cpp could not load {path}: {message}")]
    Load { path: PathBuf, message: String },
    /// The file's chat template does not compile.
    #[error("{path}: {source}")]
    Template {
        path: PathBuf,
        #[source]
        source: TemplateError,
    },
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model produced an end-of-generation token (`<|im_end|>`, `<|eot_id|>`, ...).
    EndOfTurn,
    /// `max_tokens` were generated.
    MaxTokens,
    /// The request's stop flag was set.
    Stopped,
    /// The context window filled up.
    ContextFull,
}

/// Where a prompt's already evaluated start came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptSource {
    /// Nowhere: the whole prompt was evaluated.
    Evaluated,
    /// The prompt the context held (the previous generation's).
    Kept,
    /// A prompt the cache had saved, copied back into the context.
    Restored,
}

/// One finished generation, with the numbers benchmarks and logs want.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub text: String,
    pub finish: FinishReason,
    /// The prompt's length in tokens.
    pub prompt_tokens: usize,
    /// How many of those were already evaluated (a common start with the previous prompt
    /// or a cached one), and where they came from.
    pub reused_prompt_tokens: usize,
    pub prompt_source: PromptSource,
    pub generated_tokens: usize,
    /// Time spent evaluating the prompt, and generating after it.
    pub prompt_time: Duration,
    pub generation_time: Duration,
}

/// A GGUF model running in-process. Cloning is cheap and shares the loaded model and its
/// worker: give every session a clone (or an `Arc<dyn Model>`).
#[derive(Debug, Clone)]
pub struct EmbeddedModel {
    shared: Arc<Shared>,
    decoding: Decoding,
    tool_grammar: Option<Arc<ToolCallGrammar>>,
}

#[derive(Debug)]
struct Shared {
    name: String,
    info: GgufInfo,
    model: Arc<LlamaModel>,
    template: ChatTemplate,
    /// The BOS token when the file asks for one and the template does not print it.
    add_bos: bool,
    n_ctx: u32,
    max_tokens_default: usize,
    repeat_penalty: RepeatPenalty,
    worker: Worker,
    load_time: Duration,
}

impl EmbeddedModel {
    /// Loads the GGUF file at `path`. Blocking: it reads the whole file (use
    /// `tokio::task::spawn_blocking` from async code).
    pub fn load(path: impl AsRef<Path>, config: EmbeddedConfig) -> Result<Self, EmbeddedError> {
        Self::load_with_progress(path, config, |_| true)
    }

    /// Like `load`, calling `progress` with the fraction loaded (0.0 to 1.0) as the weights
    /// are read, for a progress bar; returning `false` from it cancels the load.
    pub fn load_with_progress(
        path: impl AsRef<Path>,
        config: EmbeddedConfig,
        progress: impl FnMut(f32) -> bool + 'static,
    ) -> Result<Self, EmbeddedError> {
        let started = Instant::now();
        let path = path.as_ref();
        let load_error = |message: String| EmbeddedError::Load {
            path: path.to_owned(),
            message,
        };
        let info = GgufInfo::read(path)?;
        let backend = backend().map_err(load_error)?;
        let params = LlamaModelParams::default().with_progress_callback(progress);
        let model = LlamaModel::load_from_file(backend, path, &params)
            .map_err(|error| load_error(error.to_string()))?;
        let model = Arc::new(model);

        let vocab = model.vocab();
        let bos_token = token_text(&model, vocab.bos());
        let eos_token = token_text(&model, vocab.eos());
        let template = match &info.chat_template {
            Some(source) => ChatTemplate::new(source, bos_token.as_str(), eos_token.as_str())
                .map_err(|source| EmbeddedError::Template {
                    path: path.to_owned(),
                    source,
                })?,
            None => ChatTemplate::chatml(),
        };
        let add_bos = vocab.should_add_bos()
            && !template.source().contains("bos_token")
            && !bos_token.is_empty();

        let trained = model.n_ctx_train().max(1);
        let n_ctx = config.n_ctx.clamp(1, trained);
        let threads = config
            .threads
            .map_or_else(available_threads, |threads| threads.max(1));
        let worker = Worker::start(
            Arc::clone(&model),
            backend,
            worker::Settings {
                n_ctx: NonZeroU32::new(n_ctx).unwrap_or(NonZeroU32::MIN),
                threads,
                queue_max: config.queue_max.max(1),
                reuse_prompt_prefix: config.reuse_prompt_prefix,
                prompt_cache_slots_max: config.prompt_cache_slots_max,
                prompt_cache_bytes_max: config.prompt_cache_bytes_max,
            },
        )
        .map_err(load_error)?;

        let name = path.file_stem().map_or_else(
            || "embedded".to_owned(),
            |stem| stem.to_string_lossy().into_owned(),
        );
        Ok(Self {
            shared: Arc::new(Shared {
                name,
                info,
                model,
                template,
                add_bos,
                n_ctx,
                max_tokens_default: config.max_tokens_default.max(1),
                repeat_penalty: config.repeat_penalty,
                worker,
                load_time: started.elapsed(),
            }),
            decoding: config.decoding,
            tool_grammar: None,
        })
    }

    /// The same loaded model with another decoding: a side generation (a summary at a
    /// higher temperature, say) shares the weights and the queue.
    pub fn with_decoding(&self, decoding: Decoding) -> Self {
        Self {
            decoding,
            ..self.clone()
        }
    }

    /// The same loaded model with grammar-constrained tool calls (`None`: free text): once
    /// a reply writes ```` ```tool ````, only a valid call to one of the grammar's tools can
    /// follow. Build the grammar once per tool set with `ToolCallGrammar::from_index`.
    pub fn with_tool_grammar(&self, grammar: Option<Arc<ToolCallGrammar>>) -> Self {
        Self {
            tool_grammar: grammar,
            ..self.clone()
        }
    }

    pub fn decoding(&self) -> Decoding {
        self.decoding
    }

    /// The file's header, as `imurun model info` prints it.
    pub fn info(&self) -> &GgufInfo {
        &self.shared.info
    }

    /// The context length the model was trained with (the configured `n_ctx` is at most
    /// this).
    pub fn trained_context_length(&self) -> usize {
        usize::try_from(self.shared.model.n_ctx_train()).unwrap_or(usize::MAX)
    }

    pub fn template(&self) -> &ChatTemplate {
        &self.shared.template
    }

    /// The prompt cache's figures: entries and bytes held, their bounds, and how often
    /// prompts were saved, restored and evicted (as of the last finished generation).
    pub fn prompt_cache_stats(&self) -> PromptCacheStats {
        self.shared.worker.prompt_cache_stats()
    }

    /// Tests only: the next decode that evaluates a position past `position` fails in
    /// llama.cpp (see `Worker::fail_decode_past`).
    #[cfg(test)]
    fn fail_decode_past(&self, position: usize) {
        self.shared.worker.fail_decode_past(position);
    }

    /// How long `load` took.
    pub fn load_time(&self) -> Duration {
        self.shared.load_time
    }

    /// The prompt for `messages`: the template rendered with the generation prompt.
    pub fn render(&self, messages: &[Message]) -> Result<String, TemplateError> {
        self.shared.template.render(messages, true)
    }

    /// The token ids of `text` as a prompt: special tokens in it (`<|im_start|>`) parsed
    /// as such, with the BOS token in front when the file asks for one.
    pub fn tokenize(&self, text: &str) -> Vec<i32> {
        self.prompt_tokens(text)
            .into_iter()
            .map(|token| token.0)
            .collect()
    }

    /// Whether the token with this id ends a generation for this model (its vocabulary's
    /// end-of-generation set: `<|im_end|>` and `<|endoftext|>` for SmolLM2).
    pub fn is_end_of_generation(&self, token: i32) -> bool {
        self.shared.model.vocab().is_eog(LlamaToken(token))
    }

    fn prompt_tokens(&self, text: &str) -> Vec<LlamaToken> {
        self.shared
            .model
            .vocab()
            .tokenize(text.as_bytes(), self.shared.add_bos, true)
    }

    /// The call grammar for `request`: narrowed to its call shape when it asks for one and
    /// the shape names a tool of the grammar, else the model's own.
    fn grammar_for(&self, request: &GenerateRequest) -> Option<Arc<ToolCallGrammar>> {
        let grammar = self.tool_grammar.as_ref()?;
        let Some(shape) = &request.calls else {
            return Some(Arc::clone(grammar));
        };
        // A shape naming none of the grammar's tools cannot narrow it: every call stays
        // constrained to a valid one of the runnable tools.
        Some(
            grammar
                .shaped(shape)
                .map_or_else(|_| Arc::clone(grammar), Arc::new),
        )
    }

    /// Runs one generation, streaming text through `on_token`, and reports how it ended.
    pub async fn generate_detailed(
        &self,
        request: &GenerateRequest,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Generation, ModelError> {
        let prompt = self
            .render(&request.messages)
            .map_err(|error| ModelError::Protocol {
                message: error.to_string(),
            })?;
        let mut tokens = self.prompt_tokens(&prompt);
        // The prefill is plain text after the template's assistant header: tokenised on its
        // own (no special tokens), so the header's tokens stay those the template made.
        let prefill = request.prefill.as_deref().unwrap_or_default();
        let prefill_tokens = self
            .shared
            .model
            .vocab()
            .tokenize(prefill.as_bytes(), false, false);
        tokens.extend_from_slice(&prefill_tokens);
        let limit = self.context_limit();
        if tokens.len() >= limit {
            return Err(ModelError::ContextOverflow {
                tokens: tokens.len(),
                limit,
            });
        }
        let (events, mut receiver) = tokio::sync::mpsc::channel(worker::EVENTS_BUFFER_MAX);
        let job = Job {
            prompt: tokens,
            max_tokens: request.max_tokens.unwrap_or(self.shared.max_tokens_default),
            decoding: self.decoding,
            repeat_penalty: self.shared.repeat_penalty,
            tool_grammar: self.grammar_for(request),
            prefill: prefill_tokens,
            stop: request.stop.clone(),
            events,
        };
        self.shared.worker.submit(Work::Generate(job)).await?;
        let mut text = prefill.to_owned();
        if !text.is_empty() {
            on_token(&text);
        }
        while let Some(event) = receiver.recv().await {
            match event {
                JobEvent::Piece(piece) => {
                    on_token(&piece);
                    text.push_str(&piece);
                }
                JobEvent::Done(result) => {
                    let mut generation = result?;
                    generation.text = text;
                    return Ok(generation);
                }
            }
        }
        Err(ModelError::Transport {
            message: "the embedded model's worker stopped".into(),
        })
    }

    /// Each continuation's token log-probabilities after the rendered messages and the
    /// prefill. The prefill and each continuation are tokenised together, as a generation
    /// would have made them; the tokens every candidate shares are the prompt (evaluated once,
    /// its start reused from the cache), and the rest of each is scored.
    pub async fn score_detailed(&self, request: &ScoreRequest) -> Result<Vec<Scored>, ModelError> {
        let prompt = self
            .render(&request.messages)
            .map_err(|error| ModelError::Protocol {
                message: error.to_string(),
            })?;
        let mut base = self.prompt_tokens(&prompt);
        let vocab = self.shared.model.vocab();
        let whole: Vec<Vec<LlamaToken>> = request
            .continuations
            .iter()
            .map(|continuation| {
                let text = format!("{}{continuation}", request.prefill);
                vocab.tokenize(text.as_bytes(), false, false)
            })
            .collect();
        let prefill_tokens = vocab.tokenize(request.prefill.as_bytes(), false, false);
        // What every candidate starts with (never past the prefill's own tokens).
        let shared = whole.iter().fold(prefill_tokens.len(), |shared, tokens| {
            shared.min(
                tokens
                    .iter()
                    .zip(&prefill_tokens)
                    .take_while(|(a, b)| a == b)
                    .count(),
            )
        });
        base.extend_from_slice(&prefill_tokens[..shared]);
        // The prefill's bytes the shared tokens hold: a scored token's end is counted from
        // the continuation's start.
        let mut piece = Vec::new();
        let shared_bytes: usize = prefill_tokens[..shared]
            .iter()
            .map(|token| {
                piece.clear();
                vocab.token_to_piece_into(*token, &mut piece, false, None);
                piece.len()
            })
            .sum();
        let continuations: Vec<Vec<LlamaToken>> = whole
            .into_iter()
            .map(|tokens| tokens[shared.min(tokens.len())..].to_vec())
            .collect();
        let ends: Vec<Vec<usize>> = continuations
            .iter()
            .map(|tokens| {
                let mut at = shared_bytes;
                tokens
                    .iter()
                    .map(|token| {
                        piece.clear();
                        vocab.token_to_piece_into(*token, &mut piece, false, None);
                        at += piece.len();
                        at.saturating_sub(request.prefill.len())
                    })
                    .collect()
            })
            .collect();
        let mut probes: Vec<LlamaToken> = request
            .probes
            .iter()
            .filter_map(|probe| {
                vocab
                    .tokenize(probe.as_bytes(), false, false)
                    .first()
                    .copied()
            })
            .collect();
        probes.sort_unstable_by_key(|token| token.0);
        probes.dedup();
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = ScoreJob {
            prompt: base,
            continuations,
            probes,
            stop: request.stop.clone(),
            reply,
        };
        self.shared.worker.submit(Work::Score(job)).await?;
        let scores = answer.await.map_err(|_| ModelError::Transport {
            message: "the embedded model's worker stopped".into(),
        })??;
        Ok(scores
            .into_iter()
            .zip(ends)
            .map(|(scores, token_ends)| Scored {
                token_logprobs: scores.logprobs,
                token_ends,
                probe_logprobs: scores.probe,
            })
            .collect())
    }
}

impl Model for EmbeddedModel {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn context_limit(&self) -> usize {
        usize::try_from(self.shared.n_ctx).unwrap_or(usize::MAX)
    }

    /// Exact: the model's tokenizer over the rendered template. A conversation the
    /// template refuses falls back to the seed's estimate (its generation will fail).
    fn count_tokens(&self, messages: &[Message]) -> usize {
        match self.render(messages) {
            Ok(prompt) => self.prompt_tokens(&prompt).len(),
            Err(_) => imurun_core::estimate_tokens(messages),
        }
    }

    /// The text's own tokens: no BOS, special tokens read as plain text (a reply is text).
    fn count_text_tokens(&self, text: &str) -> usize {
        self.shared
            .model
            .vocab()
            .tokenize(text.as_bytes(), false, false)
            .len()
    }

    fn counts_exactly(&self) -> bool {
        true
    }

    /// The prefill goes after the template's assistant header; a call grammar sees it, so
    /// a prefill that opens a call continues as a valid one.
    fn supports_prefill(&self) -> bool {
        true
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        Box::pin(async move {
            self.generate_detailed(request, on_token)
                .await
                .map(|generation| generation.text)
        })
    }

    fn supports_scoring(&self) -> bool {
        true
    }

    fn score<'a>(
        &'a self,
        request: &'a ScoreRequest,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ModelError>> {
        Box::pin(self.score_detailed(request))
    }
}

/// llama.cpp's process-wide back-end: initialised once, never freed (it may be initialised
/// only once per process).
fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp logs every tensor it loads to stderr; send it to `tracing` instead,
            // where the binary's subscriber decides what to show.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn available_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |threads| {
        u32::try_from(threads.get()).unwrap_or(u32::MAX)
    })
}

/// A special token's text (`<|im_end|>`), or empty when the model has no such token.
fn token_text(model: &LlamaModel, token: LlamaToken) -> String {
    if token.0 < 0 {
        return String::new();
    }
    String::from_utf8_lossy(&model.vocab().token_to_piece(token, true, None)).into_owned()
}
