//! The worker thread that owns the llama.cpp context and runs generations one at a time,
//! in the order they were submitted. Callers wait on channels; the thread does the
//! blocking CPU work.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

use imurun_core::{ModelError, StopFlag};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;

use super::utf8::Utf8Stream;
use super::{Decoding, FinishReason, Generation, RepeatPenalty, TOOL_CALL_MARKER, ToolCallGrammar};

/// How many streamed pieces may wait for a slow reader before the worker pauses.
pub(super) const EVENTS_BUFFER_MAX: usize = 256;

/// The most prompt tokens evaluated in one llama.cpp batch.
const BATCH_TOKENS_MAX: u32 = 512;

#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    pub(super) n_ctx: NonZeroU32,
    pub(super) threads: u32,
    pub(super) queue_max: usize,
    pub(super) reuse_prompt_prefix: bool,
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
    jobs: mpsc::Sender<Job>,
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
        std::thread::Builder::new()
            .name("imurun-llama".into())
            .spawn(move || run(&model, backend, settings, receiver, &ready))
            .map_err(|error| format!("cannot start the model's thread: {error}"))?;
        match ready_receiver.recv() {
            Ok(Ok(())) => Ok(Self { jobs }),
            Ok(Err(message)) => Err(message),
            Err(_) => Err("the model's thread ended while starting".into()),
        }
    }

    /// Queues `job` behind the ones already waiting.
    pub(super) async fn submit(&self, job: Job) -> Result<(), ModelError> {
        self.jobs
            .send(job)
            .await
            .map_err(|_| ModelError::Transport {
                message: "the embedded model's worker stopped".into(),
            })
    }
}

fn run(
    model: &LlamaModel,
    backend: &LlamaBackend,
    settings: Settings,
    mut jobs: mpsc::Receiver<Job>,
    ready: &std::sync::mpsc::SyncSender<Result<(), String>>,
) {
    let threads = i32::try_from(settings.threads).unwrap_or(i32::MAX);
    let batch_tokens = settings.n_ctx.get().min(BATCH_TOKENS_MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(Some(settings.n_ctx))
        .with_n_batch(batch_tokens)
        .with_n_ubatch(batch_tokens)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let context = match model.new_context(backend, params) {
        Ok(context) => context,
        Err(error) => {
            let _ = ready.send(Err(format!("cannot create a context: {error}")));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let mut session = Session {
        model,
        context,
        evaluated: Vec::new(),
        batch: LlamaBatch::new(usize::try_from(batch_tokens).unwrap_or(512), 1),
        batch_tokens: usize::try_from(batch_tokens).unwrap_or(512),
        reuse_prompt_prefix: settings.reuse_prompt_prefix,
    };
    while let Some(job) = jobs.blocking_recv() {
        let events = job.events.clone();
        let result = session.generate(&job);
        // A caller that went away has nothing left to hear.
        let _ = events.blocking_send(JobEvent::Done(result));
    }
}

/// The context and what its KV cache holds.
struct Session<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    /// The tokens whose keys and values are in the context, in position order.
    evaluated: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    batch_tokens: usize,
    reuse_prompt_prefix: bool,
}

impl Session<'_> {
    fn generate(&mut self, job: &Job) -> Result<Generation, ModelError> {
        let mut generation = Generation {
            text: String::new(),
            finish: FinishReason::Stopped,
            prompt_tokens: job.prompt.len(),
            reused_prompt_tokens: 0,
            generated_tokens: 0,
            prompt_time: std::time::Duration::ZERO,
            generation_time: std::time::Duration::ZERO,
        };
        if job.stop.is_stopped() {
            return Ok(generation);
        }
        let started = Instant::now();
        generation.reused_prompt_tokens = self.evaluate_prompt(&job.prompt)?;
        generation.prompt_time = started.elapsed();

        let started = Instant::now();
        let mut sampler = sampler(
            self.model,
            job.decoding,
            job.repeat_penalty,
            job.tool_grammar.as_deref(),
        )?;
        sampler.accept_many(&job.prefill);
        let mut utf8 = Utf8Stream::default();
        let vocab = self.model.vocab();
        let n_ctx = usize::try_from(self.context.n_ctx()).unwrap_or(usize::MAX);
        let mut piece_bytes = Vec::new();
        // The logits to sample from: the last token of the batch just decoded.
        let mut logits_index = self.batch.n_tokens() - 1;
        generation.finish = loop {
            if job.stop.is_stopped() {
                break FinishReason::Stopped;
            }
            if generation.generated_tokens >= job.max_tokens {
                break FinishReason::MaxTokens;
            }
            let token = sampler.sample(&self.context, logits_index);
            if vocab.is_eog(token) {
                break FinishReason::EndOfTurn;
            }
            piece_bytes.clear();
            vocab.token_to_piece_into(token, &mut piece_bytes, false, None);
            let piece = utf8.push(&piece_bytes);
            generation.generated_tokens += 1;
            if !piece.is_empty() && job.events.blocking_send(JobEvent::Piece(piece)).is_err() {
                // The caller dropped its future: nobody will read the rest.
                break FinishReason::Stopped;
            }
            if self.evaluated.len() + 1 >= n_ctx {
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
        Ok(generation)
    }

    /// Evaluates `prompt`, reusing the common start with what the cache holds; returns how
    /// many tokens were reused. At least the last token is always evaluated, for its logits.
    fn evaluate_prompt(&mut self, prompt: &[LlamaToken]) -> Result<usize, ModelError> {
        let mut reused = if self.reuse_prompt_prefix {
            self.evaluated
                .iter()
                .zip(prompt)
                .take_while(|(cached, new)| cached == new)
                .count()
        } else {
            0
        };
        reused = reused.min(prompt.len().saturating_sub(1));
        let kept = u32::try_from(reused).unwrap_or(u32::MAX);
        // Removing the end of a sequence can fail for recurrent models; start over then.
        let removed = self.context.clear_kv_cache_seq(Some(0), Some(kept), None);
        if !matches!(removed, Ok(true)) {
            self.context.clear_kv_cache();
            reused = 0;
        }
        self.evaluated.truncate(reused);
        for chunk in prompt[reused..].chunks(self.batch_tokens) {
            self.decode(chunk)?;
        }
        Ok(reused)
    }

    /// Decodes `tokens` after those already evaluated, asking for the last one's logits.
    fn decode(&mut self, tokens: &[LlamaToken]) -> Result<(), ModelError> {
        self.batch.clear();
        let last = tokens.len().saturating_sub(1);
        for (index, token) in tokens.iter().enumerate() {
            let position = i32::try_from(self.evaluated.len() + index)
                .map_err(|_| protocol("a position past i32::MAX".into()))?;
            self.batch
                .add(*token, position, &[0], index == last)
                .map_err(|error| protocol(error.to_string()))?;
        }
        self.context.decode(&mut self.batch).map_err(|error| {
            // A failed decode leaves the cache in an unknown state: forget it.
            self.evaluated.clear();
            self.context.clear_kv_cache();
            protocol(format!("llama.cpp could not evaluate the tokens: {error}"))
        })?;
        self.evaluated.extend_from_slice(tokens);
        Ok(())
    }
}

fn sampler(
    model: &LlamaModel,
    decoding: Decoding,
    repeat_penalty: RepeatPenalty,
    tool_grammar: Option<&ToolCallGrammar>,
) -> Result<LlamaSampler, ModelError> {
    let choose = match decoding {
        Decoding::Greedy => LlamaSampler::greedy(),
        Decoding::Sampled {
            temperature,
            top_p,
            seed,
        } => LlamaSampler::chain_simple([
            LlamaSampler::top_p(top_p, 1),
            LlamaSampler::temp(temperature),
            LlamaSampler::dist(seed),
        ]),
    };
    // The penalty goes before the choice, so greedy decoding feels it too.
    let choose = if repeat_penalty.is_off() {
        choose
    } else {
        LlamaSampler::chain_simple([
            LlamaSampler::penalties(
                model.n_vocab(),
                i32::from(repeat_penalty.last_n),
                repeat_penalty.penalty,
                0.0,
                0.0,
            ),
            choose,
        ])
    };
    let Some(grammar) = tool_grammar else {
        return Ok(choose);
    };
    // The grammar goes first: it removes the tokens that cannot continue a valid call
    // before the choice is made.
    let grammar = LlamaSampler::grammar_lazy(
        model,
        grammar.gbnf(),
        ToolCallGrammar::root_rule(),
        [TOOL_CALL_MARKER],
        &[],
    )
    .map_err(|error| protocol(format!("llama.cpp refused the tool-call grammar: {error}")))?;
    Ok(LlamaSampler::chain_simple([grammar, choose]))
}

fn protocol(message: String) -> ModelError {
    ModelError::Protocol { message }
}
