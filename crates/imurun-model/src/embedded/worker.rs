//! The worker thread that owns the llama.cpp context and runs generations one at a time,
//! in the order they were submitted. Callers wait on channels; the thread does the
//! blocking CPU work.
//!
//! The context holds one prompt's keys and values at a time (the *live* prompt); the
//! prompt cache (`prompt_cache.rs`) keeps copies of recent others, so a prompt evaluates
//! only what differs from the longest common start it finds.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use imurun_core::{ModelError, StopFlag};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{LlamaStateSeqFlags, SeqState};
use tokio::sync::mpsc;

use super::prompt_cache::{
    PromptCache, PromptCacheStats, SAVE_DROP_MIN_TOKENS, Source, common_prefix,
};
use super::sampling::Chooser;
use super::utf8::Utf8Stream;
use super::{Decoding, FinishReason, Generation, PromptSource, RepeatPenalty, ToolCallGrammar};

/// How many streamed pieces may wait for a slow reader before the worker pauses.
pub(super) const EVENTS_BUFFER_MAX: usize = 256;

/// The most prompt tokens evaluated in one llama.cpp batch.
const BATCH_TOKENS_MAX: u32 = 512;

/// llama.cpp's `LLAMA_FLASH_ATTN_TYPE_DISABLED`. Flash attention on the CPU takes a
/// different path by batch size (tiles for many query tokens, the key/value range split over
/// threads for one), so a prompt's last tokens would come out a few bits different when the
/// start is reused and the rest evaluated in a smaller batch; without it every token's
/// computation is the same whatever the batch, and reuse cannot change what greedy decoding
/// writes. At these context lengths it is no slower (`docs/models.md`, "Performance").
const FLASH_ATTENTION_DISABLED: i32 = 0;

/// The only llama.cpp sequence the context uses.
const SEQUENCE: i32 = 0;

#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    pub(super) n_ctx: NonZeroU32,
    pub(super) threads: u32,
    pub(super) queue_max: usize,
    pub(super) reuse_prompt_prefix: bool,
    pub(super) prompt_cache_slots_max: usize,
    pub(super) prompt_cache_bytes_max: usize,
}

/// One generation to run.
#[derive(Debug)]
pub(super) struct Job {
    pub(super) prompt: Vec<LlamaToken>,
    pub(super) max_tokens: usize,
    pub(super) decoding: Decoding,
    pub(super) repeat_penalty: RepeatPenalty,
    pub(super) tool_grammar: Option<Arc<ToolCallGrammar>>,
    /// The tail of `prompt` that starts the reply: the sampler sees it as generated, so a
    /// prefill that opens a call switches the call grammar on.
    pub(super) prefill: Vec<LlamaToken>,
    pub(super) stop: StopFlag,
    pub(super) events: mpsc::Sender<JobEvent>,
}

/// One likelihood question to answer: each continuation's tokens scored after `prompt`.
#[derive(Debug)]
pub(super) struct ScoreJob {
    pub(super) prompt: Vec<LlamaToken>,
    pub(super) continuations: Vec<Vec<LlamaToken>>,
    /// Tokens whose chance together is read after every token of each continuation.
    pub(super) probes: Vec<LlamaToken>,
    pub(super) stop: StopFlag,
    pub(super) reply: tokio::sync::oneshot::Sender<Result<Vec<TokenScores>, ModelError>>,
}

/// One continuation's scores: each token's log-probability, and the probe's after each.
#[derive(Debug, Default)]
pub(super) struct TokenScores {
    pub(super) logprobs: Vec<f32>,
    pub(super) probe: Vec<f32>,
}

/// What the worker runs, one at a time in arrival order.
#[derive(Debug)]
pub(super) enum Work {
    Generate(Job),
    Score(ScoreJob),
}

/// What the worker tells the caller: pieces of text, then the end (its `text` left empty:
/// the caller joins the pieces).
#[derive(Debug)]
pub(super) enum JobEvent {
    Piece(String),
    Done(Result<Generation, ModelError>),
}

/// The handle to the worker thread; dropping the last one ends the thread.
#[derive(Debug)]
pub(super) struct Worker {
    jobs: mpsc::Sender<Work>,
    /// The prompt cache's figures after the last job.
    stats: Arc<Mutex<PromptCacheStats>>,
    /// Tests only: make the next decode that reaches past this position fail.
    #[cfg(test)]
    fail_decode_past: Arc<std::sync::atomic::AtomicUsize>,
}

impl Worker {
    /// Starts the thread and waits until its context exists.
    pub(super) fn start(
        model: Arc<LlamaModel>,
        backend: &'static LlamaBackend,
        settings: Settings,
    ) -> Result<Self, String> {
        let (jobs, receiver) = mpsc::channel(settings.queue_max);
        let (ready, ready_receiver) = std::sync::mpsc::sync_channel(1);
        let stats = Arc::new(Mutex::new(PromptCacheStats::default()));
        let thread_stats = Arc::clone(&stats);
        #[cfg(test)]
        let fail_decode_past = Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX));
        #[cfg(test)]
        let thread_fault = Arc::clone(&fail_decode_past);
        std::thread::Builder::new()
            .name("imurun-llama".into())
            .spawn(move || {
                let shared = Shared {
                    stats: &thread_stats,
                    #[cfg(test)]
                    fail_decode_past: &thread_fault,
                };
                run(&model, backend, settings, receiver, &ready, &shared);
            })
            .map_err(|error| format!("cannot start the model's thread: {error}"))?;
        match ready_receiver.recv() {
            Ok(Ok(())) => Ok(Self {
                jobs,
                stats,
                #[cfg(test)]
                fail_decode_past,
            }),
            Ok(Err(message)) => Err(message),
            Err(_) => Err("the model's thread ended while starting".into()),
        }
    }

    /// Queues `job` behind the ones already waiting.
    pub(super) async fn submit(&self, job: Work) -> Result<(), ModelError> {
        self.jobs
            .send(job)
            .await
            .map_err(|_| ModelError::Transport {
                message: "the embedded model's worker stopped".into(),
            })
    }

    /// Tests only: the next decode that would evaluate a position past `position` is sent
    /// to llama.cpp with a token outside the vocabulary, which it refuses: a real failed
    /// decode, at a chosen place.
    #[cfg(test)]
    pub(super) fn fail_decode_past(&self, position: usize) {
        self.fail_decode_past
            .store(position, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn prompt_cache_stats(&self) -> PromptCacheStats {
        // A poisoned lock only means a panic elsewhere: the figures are still figures.
        *self
            .stats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What the thread shares with the handle.
struct Shared<'a> {
    stats: &'a Mutex<PromptCacheStats>,
    #[cfg(test)]
    fail_decode_past: &'a std::sync::atomic::AtomicUsize,
}

fn run(
    model: &LlamaModel,
    backend: &LlamaBackend,
    settings: Settings,
    mut jobs: mpsc::Receiver<Work>,
    ready: &std::sync::mpsc::SyncSender<Result<(), String>>,
    shared: &Shared<'_>,
) {
    let threads = i32::try_from(settings.threads).unwrap_or(i32::MAX);
    let batch_tokens = settings.n_ctx.get().min(BATCH_TOKENS_MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(Some(settings.n_ctx))
        .with_n_batch(batch_tokens)
        .with_n_ubatch(batch_tokens)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_flash_attention_policy(FLASH_ATTENTION_DISABLED);
    let context = match model.new_context(backend, params) {
        Ok(context) => context,
        Err(error) => {
            let _ = ready.send(Err(format!("cannot create a context: {error}")));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let (slots_max, bytes_max) = if settings.reuse_prompt_prefix {
        (
            settings.prompt_cache_slots_max,
            settings.prompt_cache_bytes_max,
        )
    } else {
        (0, 0)
    };
    let mut session = Session {
        model,
        context,
        live: Vec::new(),
        batch: LlamaBatch::new(usize::try_from(batch_tokens).unwrap_or(512), 1),
        batch_tokens: usize::try_from(batch_tokens).unwrap_or(512),
        reuse_prompt_prefix: settings.reuse_prompt_prefix,
        cache: PromptCache::new(slots_max, bytes_max),
        #[cfg(test)]
        fail_decode_past: shared.fail_decode_past,
    };
    publish(shared.stats, &session.cache);
    while let Some(work) = jobs.blocking_recv() {
        match work {
            Work::Generate(job) => {
                let events = job.events.clone();
                let result = session.generate(&job);
                publish(shared.stats, &session.cache);
                // A caller that went away has nothing left to hear.
                let _ = events.blocking_send(JobEvent::Done(result));
            }
            Work::Score(job) => {
                let result = session.score(&job);
                publish(shared.stats, &session.cache);
                let _ = job.reply.send(result);
            }
        }
    }
}

fn publish(stats: &Mutex<PromptCacheStats>, cache: &PromptCache<LlamaToken, SeqState>) {
    *stats
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = cache.stats();
}

/// The context, what its KV cache holds, and the saved prompts.
struct Session<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    /// The tokens whose keys and values are in the context, in position order: position
    /// `i` holds `live[i]`, in cell `i` (the cells are filled from the start and cut from
    /// the end, so every prompt's keys and values are laid out as a fresh evaluation lays
    /// them out, and the sums over them add in the same order).
    live: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    batch_tokens: usize,
    reuse_prompt_prefix: bool,
    cache: PromptCache<LlamaToken, SeqState>,
    #[cfg(test)]
    fail_decode_past: &'m std::sync::atomic::AtomicUsize,
}

/// How the prompt was made ready.
struct Prepared {
    source: PromptSource,
    reused: usize,
    /// The stop flag was set while the prompt was evaluated.
    stopped: bool,
}

impl Session<'_> {
    fn generate(&mut self, job: &Job) -> Result<Generation, ModelError> {
        let mut generation = Generation {
            text: String::new(),
            finish: FinishReason::Stopped,
            prompt_tokens: job.prompt.len(),
            reused_prompt_tokens: 0,
            prompt_source: PromptSource::Evaluated,
            generated_tokens: 0,
            prompt_time: Duration::ZERO,
            generation_time: Duration::ZERO,
        };
        if job.prompt.is_empty() {
            return Err(protocol("an empty prompt: nothing to continue from".into()));
        }
        if job.stop.is_stopped() {
            return Ok(generation);
        }
        let started = Instant::now();
        let prepared = self.prepare_prompt(&job.prompt, &job.stop)?;
        generation.prompt_time = started.elapsed();
        generation.reused_prompt_tokens = prepared.reused;
        generation.prompt_source = prepared.source;
        if prepared.stopped {
            return Ok(generation);
        }

        let started = Instant::now();
        let mut chooser = Chooser::new(
            self.model,
            job.decoding,
            job.repeat_penalty,
            job.tool_grammar.as_deref(),
        );
        let vocab = self.model.vocab();
        let mut grammar_piece = Vec::new();
        for &token in &job.prefill {
            grammar_piece.clear();
            vocab.token_to_piece_into(token, &mut grammar_piece, true, None);
            chooser.accept(token, &grammar_piece)?;
        }
        let mut utf8 = Utf8Stream::default();
        let n_ctx = usize::try_from(self.context.n_ctx()).unwrap_or(usize::MAX);
        let mut piece_bytes = Vec::new();
        // The logits to choose from: the last token of the batch just decoded.
        let mut logits_index = self.batch.n_tokens() - 1;
        generation.finish = loop {
            if job.stop.is_stopped() {
                break FinishReason::Stopped;
            }
            if generation.generated_tokens >= job.max_tokens {
                break FinishReason::MaxTokens;
            }
            let token = chooser.choose(self.context.get_logits_ith(logits_index));
            if vocab.is_eog(token) {
                break FinishReason::EndOfTurn;
            }
            piece_bytes.clear();
            vocab.token_to_piece_into(token, &mut piece_bytes, false, None);
            grammar_piece.clear();
            vocab.token_to_piece_into(token, &mut grammar_piece, true, None);
            chooser.accept(token, &grammar_piece)?;
            let piece = utf8.push(&piece_bytes);
            generation.generated_tokens += 1;
            if !piece.is_empty() && job.events.blocking_send(JobEvent::Piece(piece)).is_err() {
                // The caller dropped its future: nobody will read the rest.
                break FinishReason::Stopped;
            }
            if self.live.len() + 1 >= n_ctx {
                break FinishReason::ContextFull;
            }
            self.decode(&[token])?;
            logits_index = 0;
        };
        let tail = utf8.finish();
        if !tail.is_empty() {
            let _ = job.events.blocking_send(JobEvent::Piece(tail));
        }
        generation.generation_time = started.elapsed();
        // The reply's tokens were evaluated one at a time; their keys and values come out a
        // few bits different from the same tokens evaluated in a prompt's batch, which is
        // enough to change a later greedy reply (measured with the default model). Only
        // the prompt is kept: the next step evaluates the reply again with its own prompt.
        self.truncate(job.prompt.len());
        Ok(generation)
    }

    /// The log-probability of each token of each continuation after `job.prompt`. The prompt
    /// is made ready as for a generation (its start reused); each continuation is evaluated
    /// after it, read, and cut off again, so the context ends holding the prompt alone.
    fn score(&mut self, job: &ScoreJob) -> Result<Vec<TokenScores>, ModelError> {
        if job.prompt.is_empty() {
            return Err(protocol("an empty prompt: nothing to score after".into()));
        }
        let n_ctx = usize::try_from(self.context.n_ctx()).unwrap_or(usize::MAX);
        let longest = job.continuations.iter().map(Vec::len).max().unwrap_or(0);
        if job.prompt.len() + longest >= n_ctx {
            return Err(ModelError::ContextOverflow {
                tokens: job.prompt.len() + longest,
                limit: n_ctx,
            });
        }
        let prepared = self.prepare_prompt(&job.prompt, &job.stop)?;
        if prepared.stopped {
            return Err(protocol("stopped while the prompt was read".into()));
        }
        // Each continuation's first token, read off the prompt's last logits before any other
        // evaluation replaces them.
        let firsts: Vec<f32> = {
            let after_prompt = Logprobs::of(self.context.get_logits_ith(self.batch.n_tokens() - 1));
            job.continuations
                .iter()
                .map(|tokens| {
                    tokens
                        .first()
                        .map_or(0.0, |first| after_prompt.of_token(*first))
                })
                .collect()
        };
        let mut scores = Vec::with_capacity(job.continuations.len());
        for (continuation, first) in job.continuations.iter().zip(firsts) {
            if job.stop.is_stopped() {
                return Err(protocol("stopped while continuations were scored".into()));
            }
            if continuation.is_empty() {
                scores.push(TokenScores::default());
                continue;
            }
            let mut scored = TokenScores {
                logprobs: Vec::with_capacity(continuation.len()),
                probe: Vec::new(),
            };
            scored.logprobs.push(first);
            // Each token but the last is evaluated (the last too with a probe); its logits
            // give the next token's chance, and the probe's.
            let evaluated = if !job.probes.is_empty() {
                &continuation[..]
            } else {
                &continuation[..continuation.len() - 1]
            };
            let mut next = continuation[1..].iter();
            for chunk in evaluated.chunks(self.batch_tokens) {
                self.decode_every(chunk)?;
                for index in 0..chunk.len() {
                    let at = i32::try_from(index).unwrap_or(i32::MAX);
                    let logprobs = Logprobs::of(self.context.get_logits_ith(at));
                    if !job.probes.is_empty() {
                        scored.probe.push(log_sum_exp(
                            job.probes.iter().map(|probe| logprobs.of_token(*probe)),
                        ));
                    }
                    if let Some(&token) = next.next() {
                        scored.logprobs.push(logprobs.of_token(token));
                    }
                }
            }
            self.truncate(job.prompt.len());
            scores.push(scored);
        }
        Ok(scores)
    }

    /// Makes the context hold `prompt`: from the live prompt or a saved one, whichever
    /// shares the longer start with it, evaluating the rest. At least the last token is
    /// always evaluated, for its logits. The stop flag is checked between batches: a stop
    /// during a long prompt leaves what was evaluated in place, for the next prompt.
    fn prepare_prompt(
        &mut self,
        prompt: &[LlamaToken],
        stop: &StopFlag,
    ) -> Result<Prepared, ModelError> {
        let mut source = PromptSource::Evaluated;
        if self.reuse_prompt_prefix {
            let plan = self.cache.plan(&self.live, prompt);
            // Taken out before the live prompt is saved: saving may evict or replace
            // entries, which moves the others.
            let restoring = match plan.source {
                Source::Restore { index, .. } => Some(self.cache.take(index)),
                Source::Live { .. } => None,
            };
            if plan.save_live {
                self.save_live();
            }
            if let Some((tokens, state)) = restoring {
                let restored = self.restore(&tokens, &state);
                if restored {
                    source = PromptSource::Restored;
                }
                // The entry's end would be lost when this prompt keeps only its start (the
                // system message of another conversation): it stays in the cache.
                let kept = common_prefix(&tokens, prompt);
                if tokens.len() - kept.min(tokens.len()) >= SAVE_DROP_MIN_TOKENS {
                    self.cache.insert(tokens, state);
                }
            }
        } else {
            self.live.clear();
            self.context.clear_kv_cache();
        }
        let reused =
            self.truncate(common_prefix(&self.live, prompt).min(prompt.len().saturating_sub(1)));
        if reused > 0 && source == PromptSource::Evaluated {
            source = PromptSource::Kept;
        }
        for chunk in prompt[reused..].chunks(self.batch_tokens) {
            if stop.is_stopped() {
                return Ok(Prepared {
                    source,
                    reused,
                    stopped: true,
                });
            }
            self.decode(chunk)?;
        }
        Ok(Prepared {
            source,
            reused,
            stopped: false,
        })
    }

    /// Copies the live prompt's state into the cache.
    fn save_live(&mut self) {
        // A state that cannot be read is simply not kept: the prompt is evaluated again
        // when it comes back.
        if let Ok(state) = self
            .context
            .state_seq_get(SEQUENCE, LlamaStateSeqFlags::empty())
        {
            self.cache.insert(self.live.clone(), state);
        }
    }

    /// Replaces the context's contents with a saved prompt's; false (and an empty context)
    /// when llama.cpp refuses the state.
    fn restore(&mut self, tokens: &[LlamaToken], state: &SeqState) -> bool {
        self.context.clear_kv_cache();
        if self.context.state_seq_set(state, SEQUENCE).is_ok()
            && self.holds_from_start(tokens.len())
        {
            self.live = tokens.to_vec();
            true
        } else {
            self.context.clear_kv_cache();
            self.live.clear();
            false
        }
    }

    /// Keeps the first `keep` live tokens and removes the rest from the context; returns
    /// how many were kept (none when the context cannot keep a part).
    fn truncate(&mut self, keep: usize) -> usize {
        let keep = keep.min(self.live.len());
        let kept = u32::try_from(keep).unwrap_or(u32::MAX);
        let removed = self.context.clear_kv_cache_seq(Some(0), Some(kept), None);
        // Removing the end fails for recurrent models; a model with a sliding window keeps
        // only its window's recent keys, so a cut start is missing its early positions.
        // Either way, evaluate from scratch.
        if matches!(removed, Ok(true)) && self.holds_from_start(keep) {
            self.live.truncate(keep);
            keep
        } else {
            self.context.clear_kv_cache();
            self.live.clear();
            0
        }
    }

    /// Whether the context holds positions 0 to `len` − 1 of the sequence.
    fn holds_from_start(&self, len: usize) -> bool {
        if len == 0 {
            return true;
        }
        let last = i32::try_from(len - 1).unwrap_or(i32::MAX);
        self.context.kv_cache_seq_pos_min(SEQUENCE) == 0
            && self.context.kv_cache_seq_pos_max(SEQUENCE) == last
    }

    /// Decodes `tokens` after those already evaluated, asking for the last one's logits.
    fn decode(&mut self, tokens: &[LlamaToken]) -> Result<(), ModelError> {
        self.decode_with(tokens, false)
    }

    /// Decodes `tokens` after those already evaluated, asking for every one's logits.
    fn decode_every(&mut self, tokens: &[LlamaToken]) -> Result<(), ModelError> {
        self.decode_with(tokens, true)
    }

    fn decode_with(&mut self, tokens: &[LlamaToken], every: bool) -> Result<(), ModelError> {
        self.batch.clear();
        let last = tokens.len().saturating_sub(1);
        for (index, token) in tokens.iter().enumerate() {
            let position = i32::try_from(self.live.len() + index)
                .map_err(|_| protocol("a position past i32::MAX".into()))?;
            self.batch
                .add(*token, position, &[SEQUENCE], every || index == last)
                .map_err(|error| protocol(error.to_string()))?;
        }
        #[cfg(test)]
        self.inject_fault(tokens.len());
        self.context.decode(&mut self.batch).map_err(|error| {
            // A failed decode leaves the live cache in an unknown state: forget it (the
            // saved prompts are copies, untouched).
            self.live.clear();
            self.context.clear_kv_cache();
            protocol(format!("llama.cpp could not evaluate the tokens: {error}"))
        })?;
        self.live.extend_from_slice(tokens);
        Ok(())
    }
}

#[cfg(test)]
impl Session<'_> {
    /// When armed and this batch reaches past the armed position, swaps its first token for
    /// one outside the vocabulary: llama.cpp then refuses the batch.
    fn inject_fault(&mut self, batch_len: usize) {
        use std::sync::atomic::Ordering;
        let past = self.fail_decode_past.load(Ordering::SeqCst);
        if self.live.len() + batch_len <= past {
            return;
        }
        self.fail_decode_past.store(usize::MAX, Ordering::SeqCst);
        let invalid = LlamaToken(self.model.n_vocab());
        self.batch.clear();
        let position = i32::try_from(self.live.len()).unwrap_or(i32::MAX);
        let _ = self.batch.add(invalid, position, &[SEQUENCE], true);
    }
}

/// One position's logits, read as log-probabilities on demand: a token's is its logit less
/// the log of the sum over the vocabulary (computed once, stably).
struct Logprobs<'a> {
    logits: &'a [f32],
    log_total: f32,
}

impl<'a> Logprobs<'a> {
    fn of(logits: &'a [f32]) -> Self {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = logits.iter().map(|logit| (logit - max).exp()).sum();
        Self {
            logits,
            log_total: max + sum.ln(),
        }
    }

    /// `token`'s log-probability; −∞ for a token outside the vocabulary.
    fn of_token(&self, token: LlamaToken) -> f32 {
        usize::try_from(token.0)
            .ok()
            .and_then(|index| self.logits.get(index))
            .map_or(f32::NEG_INFINITY, |logit| logit - self.log_total)
    }
}

/// ln(Σ eˣ) over `values`, computed stably; −∞ for none.
fn log_sum_exp(values: impl Iterator<Item = f32> + Clone) -> f32 {
    let max = values.clone().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return max;
    }
    let sum: f32 = values.map(|value| (value - max).exp()).sum();
    max + sum.ln()
}

fn protocol(message: String) -> ModelError {
    ModelError::Protocol { message }
}
