//! Prompt reuse with the real default model: whatever the context and the prompt cache hold
//! — another session's prompt, a saved one copied back, an evicted one, a stopped reply, a
//! full context — a generation writes what a fresh evaluation of the same prompt writes
//! (greedy decoding, or sampled with a seed), and the cache stays within its bounds. (A
//! failed decode is tested beside the worker, in `src/embedded/tests.rs`.)

use std::sync::OnceLock;

use imurun_core::{GenerateRequest, Message, Model};
use imurun_model::{
    Decoding, EmbeddedConfig, EmbeddedModel, FinishReason, Generation, PromptSource,
};

use crate::embedded::model_path;

/// Tokens generated per step: enough to differ, few enough to stay quick.
const STEP_TOKENS: usize = 16;

fn load(n_ctx: u32, reuse: bool, slots_max: usize, bytes_max: usize) -> EmbeddedModel {
    let config = EmbeddedConfig {
        n_ctx,
        reuse_prompt_prefix: reuse,
        prompt_cache_slots_max: slots_max,
        prompt_cache_bytes_max: bytes_max,
        threads: Some(imurun_testkit::MODEL_TEST_THREADS),
        ..EmbeddedConfig::default()
    };
    EmbeddedModel::load(model_path(), config).unwrap()
}

/// The model with reuse off, shared by the tests: every generation starts from an empty
/// context, so what other tests ran cannot change what it writes.
fn fresh(n_ctx: u32) -> &'static EmbeddedModel {
    static FRESH_1024: OnceLock<EmbeddedModel> = OnceLock::new();
    static FRESH_512: OnceLock<EmbeddedModel> = OnceLock::new();
    static FRESH_2048: OnceLock<EmbeddedModel> = OnceLock::new();
    let cell = match n_ctx {
        512 => &FRESH_512,
        2048 => &FRESH_2048,
        _ => &FRESH_1024,
    };
    cell.get_or_init(|| load(n_ctx, false, 0, 0))
}

fn request(messages: &[Message], max_tokens: usize) -> GenerateRequest {
    let mut request = GenerateRequest::new(messages.to_vec());
    request.max_tokens = Some(max_tokens);
    request
}

/// Generates `request` with the reusing model and with a fresh one: the texts, endings and
/// lengths must be the same. Returns the reusing model's generation.
async fn check(
    cached: &EmbeddedModel,
    fresh: &EmbeddedModel,
    request: &GenerateRequest,
) -> Generation {
    let mut streamed = String::new();
    let reused = cached
        .generate_detailed(request, &mut |piece| streamed.push_str(piece))
        .await
        .unwrap();
    let evaluated = fresh.generate_detailed(request, &mut |_| {}).await.unwrap();
    assert_eq!(
        reused.text, evaluated.text,
        "reusing {} tokens ({:?}) changed the reply",
        reused.reused_prompt_tokens, reused.prompt_source
    );
    assert_eq!(reused.finish, evaluated.finish);
    assert_eq!(reused.generated_tokens, evaluated.generated_tokens);
    assert_eq!(streamed, reused.text);
    assert_eq!(evaluated.prompt_source, PromptSource::Evaluated);
    reused
}

fn system() -> Message {
    Message::system(
        "You are a careful assistant for a small public library. Answer in one or two \
         sentences, plainly. The library opens at nine and closes at six on weekdays, at one \
         on Saturdays, and stays closed on Sundays. Books are lent for three weeks and may be \
         renewed twice; nothing is charged for late returns, but a member with five late \
         books may not borrow more until they are back. Members may borrow ten books and two \
         films at once. The reading room is quiet; the children's corner is not. Printing \
         costs ten cents a page, scanning is free. The meeting room holds twenty people and \
         is booked at the front desk. The librarians are Ana, Bo and Chen; Chen runs the \
         story hour on Wednesdays at four.",
    )
}

/// A session's first message: about 90 tokens of its own, so the cache keeps the
/// conversation when another one comes.
fn opening(purpose: &str, question: &str) -> Message {
    Message::user(format!(
        "I am organising {purpose}, and we will meet at the library every week for the \
         whole autumn, usually on Tuesday evenings, sometimes on Saturday mornings when the \
         weather is bad and nobody wants to walk to the park. There will be about twelve of \
         us, some of them children, and we will need the big table near the window, a \
         whiteboard, and a quiet place to read aloud. {question}"
    ))
}

/// One conversation: its messages so far.
struct Session(Vec<Message>);

impl Session {
    fn new(purpose: &str, question: &str) -> Self {
        Self(vec![system(), opening(purpose, question)])
    }

    /// Generates the next reply, checked against a fresh evaluation, and adds it.
    async fn step(&mut self, cached: &EmbeddedModel, fresh: &EmbeddedModel) -> Generation {
        let generation = check(cached, fresh, &request(&self.0, STEP_TOKENS)).await;
        self.0.push(Message::assistant(generation.text.clone()));
        generation
    }

    fn ask(&mut self, question: &str) {
        self.0.push(Message::user(question));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_switches_and_evictions_write_what_a_fresh_evaluation_writes() {
    let cached = load(1024, true, 2, 64 * 1024 * 1024);
    let fresh = fresh(1024);
    let bounded = |cached: &EmbeddedModel| {
        let stats = cached.prompt_cache_stats();
        assert!(
            stats.slots <= 2 && stats.bytes <= stats.bytes_max,
            "{stats:?}"
        );
        stats
    };
    let mut a = Session::new("a reading group", "When does the library open?");
    let mut b = Session::new("a school project", "How many books may I borrow?");
    let mut c = Session::new("a chess club", "Can we book the meeting room?");
    let mut d = Session::new("a knitting circle", "Who runs the story hour?");

    assert_eq!(
        a.step(&cached, fresh).await.prompt_source,
        PromptSource::Evaluated
    );
    a.ask("And on Saturdays?");
    let next = a.step(&cached, fresh).await;
    assert_eq!(next.prompt_source, PromptSource::Kept);
    assert!(next.reused_prompt_tokens >= cached.count_tokens(&a.0[..2]));

    // B shares only the system message with A: A is saved, B reuses the system message.
    let b_first = b.step(&cached, fresh).await;
    assert_eq!(b_first.prompt_source, PromptSource::Kept);
    assert!(b_first.reused_prompt_tokens >= cached.count_tokens(&[system()]) - 4);
    assert!(b_first.reused_prompt_tokens < cached.count_tokens(&b.0[..2]));
    assert_eq!(bounded(&cached).saves, 1);

    // A comes back: its saved state is copied back, B's is saved.
    a.ask("Is it open on Sundays?");
    let back = a.step(&cached, fresh).await;
    assert_eq!(back.prompt_source, PromptSource::Restored);
    assert!(back.reused_prompt_tokens >= cached.count_tokens(&a.0[..4]));
    assert_eq!(bounded(&cached).restores, 1);

    // C and D push the cache past its two slots: B, then A, are evicted.
    c.step(&cached, fresh).await;
    d.step(&cached, fresh).await;
    assert_eq!(bounded(&cached).evictions, 1);
    b.ask("Can I renew them?");
    let evicted = b.step(&cached, fresh).await;
    assert!(
        evicted.reused_prompt_tokens < cached.count_tokens(&b.0[..2]),
        "B was evicted: only the shared system message can be reused"
    );
    assert_eq!(bounded(&cached).evictions, 2);

    // C is still cached.
    c.ask("How many people fit in it?");
    let kept = c.step(&cached, fresh).await;
    assert_eq!(kept.prompt_source, PromptSource::Restored);
    assert!(kept.reused_prompt_tokens >= cached.count_tokens(&c.0[..2]));
    bounded(&cached);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_shorter_than_the_cached_one_writes_what_a_fresh_evaluation_writes() {
    let cached = load(1024, true, 2, 64 * 1024 * 1024);
    let fresh = fresh(1024);
    let mut a = Session::new("a reading group", "When does the library open?");
    let first = a.0.clone();
    a.step(&cached, fresh).await;
    a.ask("And on Saturdays?");
    a.step(&cached, fresh).await;

    // The first prompt again: all of it is a start of what the context holds.
    let shorter = check(&cached, fresh, &request(&first, STEP_TOKENS)).await;
    assert_eq!(shorter.prompt_source, PromptSource::Kept);
    assert_eq!(
        shorter.reused_prompt_tokens,
        cached.count_tokens(&first) - 1
    );

    // Another conversation takes the context; A's first prompt then comes back from the
    // cache, whose entry is longer than it (the prompt and its reply).
    let mut b = Session::new("a school project", "How many books may I borrow?");
    b.step(&cached, fresh).await;
    let restored = check(&cached, fresh, &request(&first, STEP_TOKENS)).await;
    assert_eq!(restored.prompt_source, PromptSource::Restored);
    assert_eq!(
        restored.reused_prompt_tokens,
        cached.count_tokens(&first) - 1
    );
    assert_eq!(cached.prompt_cache_stats().restores, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_reply_leaves_a_context_that_reuse_continues_correctly() {
    let cached = load(1024, true, 2, 64 * 1024 * 1024);
    let fresh = fresh(1024);
    let mut session = Session::new(
        "a poetry evening",
        "Write us a long poem about the library.",
    );
    let stopped_request = request(&session.0, 200);
    let stop = stopped_request.stop.clone();
    let mut pieces = 0;
    let stopped = cached
        .generate_detailed(&stopped_request, &mut |_| {
            pieces += 1;
            if pieces == 3 {
                stop.stop();
            }
        })
        .await
        .unwrap();
    assert_eq!(stopped.finish, FinishReason::Stopped);

    // The same prompt again: its evaluated start is kept, the reply is the fresh one.
    let again = check(&cached, fresh, &request(&session.0, STEP_TOKENS)).await;
    assert_eq!(again.prompt_source, PromptSource::Kept);
    assert_eq!(
        again.reused_prompt_tokens,
        cached.count_tokens(&session.0) - 1
    );
    // The stopped reply, as the conversation records it, then a new question.
    session.0.push(Message::assistant(stopped.text));
    session.ask("Shorter, please.");
    assert_eq!(
        session.step(&cached, fresh).await.prompt_source,
        PromptSource::Kept
    );

    // A reply whose caller goes away after its first piece (its future dropped): the worker
    // stops at the next piece, and the next prompt reuses what it left.
    session.ask("Now a long one about the reading room.");
    let cancelled_request = request(&session.0, 200);
    let (first_piece, got_piece) = tokio::sync::oneshot::channel::<()>();
    let mut first_piece = Some(first_piece);
    let mut on_piece = |_: &str| {
        if let Some(sender) = first_piece.take() {
            let _ = sender.send(());
        }
    };
    let cancelled = cached.generate_detailed(&cancelled_request, &mut on_piece);
    tokio::select! {
        biased;
        _ = got_piece => {}
        finished = cancelled => panic!("the reply ended before it could be cancelled: {finished:?}"),
    }
    let after = check(&cached, fresh, &request(&session.0, STEP_TOKENS)).await;
    assert_eq!(after.prompt_source, PromptSource::Kept);
    assert_eq!(
        after.reused_prompt_tokens,
        cached.count_tokens(&session.0) - 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_context_ends_the_reply_and_reuse_after_it_is_correct() {
    let cached = load(512, true, 2, 64 * 1024 * 1024);
    let fresh = fresh(512);
    let mut notes = String::from("Here are my notes: ");
    let mut messages = Vec::new();
    // Grow the notes until the prompt leaves room for only a few tokens.
    loop {
        let candidate = vec![
            system(),
            Message::user(format!("{notes}Now list every weekday with its hours.")),
        ];
        if cached.count_tokens(&candidate) + 2 >= 512 - 6 {
            break;
        }
        messages = candidate;
        notes.push_str("the library opens at nine; ");
    }
    let mut full = request(&messages, 200);
    full.prefill = Some("1.".into());
    let generation = check(&cached, fresh, &full).await;
    assert_eq!(generation.finish, FinishReason::ContextFull);
    // The reply filled the context to its last cell.
    assert_eq!(generation.prompt_tokens + generation.generated_tokens, 512);

    // The same conversation asked differently reuses the full context's start.
    let mut shorter = messages.clone();
    shorter[1] = Message::user(format!("{notes}When does it close?"));
    let after = check(&cached, fresh, &request(&shorter, STEP_TOKENS)).await;
    assert_eq!(after.prompt_source, PromptSource::Kept);
    assert!(after.reused_prompt_tokens > cached.count_tokens(&[system()]));
    // And another conversation after it.
    let other = [system(), opening("a film club", "Can we borrow films?")];
    check(&cached, fresh, &request(&other, STEP_TOKENS)).await;
}

/// Notes of about `tokens` tokens, each sentence numbered so no two are the same.
fn notes(cached: &EmbeddedModel, tokens: usize) -> String {
    let mut notes = String::from("My notes from the library's open day: ");
    let mut sentence = 1;
    while cached.count_tokens(&[Message::user(notes.clone())]) < tokens {
        notes.push_str(&format!(
            "note {sentence}: the shelf by window {sentence} holds atlases and old maps; "
        ));
        sentence += 1;
    }
    notes
}

/// The engine evaluates a prompt in batches of at most 512 tokens. Reuse past the first
/// batch — a kept start that ends inside a later batch, a new part longer than a batch that
/// starts at an unaligned position, and a start shared up to the middle of the second batch —
/// writes what a fresh evaluation writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reuse_past_the_first_batch_writes_what_a_fresh_evaluation_writes() {
    const BATCH: usize = 512;
    let cached = load(2048, true, 2, 128 * 1024 * 1024);
    let fresh = fresh(2048);
    let first_notes = notes(&cached, 1100);
    let mut session = Session(vec![
        system(),
        Message::user(format!("{first_notes}Which shelf holds the atlases?")),
    ]);
    let opening_tokens = cached.count_tokens(&session.0);
    assert!(opening_tokens > 2 * BATCH, "{opening_tokens} tokens");
    assert_eq!(
        session.step(&cached, fresh).await.prompt_source,
        PromptSource::Evaluated
    );

    // A question longer than a batch: the kept start ends past two batches, and the new
    // part is evaluated in two batches from there.
    let second_notes = notes(&cached, 600);
    session.ask(&format!("{second_notes}And which one holds the maps?"));
    let next = session.step(&cached, fresh).await;
    assert_eq!(next.prompt_source, PromptSource::Kept);
    assert!(next.reused_prompt_tokens >= opening_tokens, "{next:?}");
    assert!(
        next.prompt_tokens - next.reused_prompt_tokens > BATCH,
        "{next:?}"
    );

    // A prompt that shares the start only up to the middle of the second batch.
    let cut = first_notes
        .char_indices()
        .filter(|(_, c)| *c == ';')
        .map(|(at, _)| at)
        .find(|&at| {
            let start = [system(), Message::user(first_notes[..at].to_owned())];
            cached.count_tokens(&start) > BATCH + BATCH / 2
        })
        .unwrap();
    let other = [
        system(),
        Message::user(format!(
            "{} Which shelf is the oldest?",
            &first_notes[..cut]
        )),
    ];
    let shared = check(&cached, fresh, &request(&other, STEP_TOKENS)).await;
    assert_eq!(shared.prompt_source, PromptSource::Kept);
    assert!(
        shared.reused_prompt_tokens > BATCH && shared.reused_prompt_tokens < 2 * BATCH,
        "{shared:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_sampling_with_reuse_writes_what_a_fresh_evaluation_writes() {
    let sampled = Decoding::Sampled {
        temperature: 0.8,
        top_p: 0.95,
        seed: 7,
    };
    let cached = load(1024, true, 2, 64 * 1024 * 1024).with_decoding(sampled);
    let fresh = fresh(1024).with_decoding(sampled);
    let mut a = Session::new("a reading group", "What should we read first?");
    let mut b = Session::new("a school project", "Where do we start?");
    a.step(&cached, &fresh).await;
    b.step(&cached, &fresh).await;
    a.ask("Something shorter?");
    assert_eq!(
        a.step(&cached, &fresh).await.prompt_source,
        PromptSource::Restored
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_cache_stays_within_its_bounds() {
    let bytes_max = 24 * 1024 * 1024;
    let cached = load(1024, true, 3, bytes_max);
    let purposes = [
        "a reading group",
        "a school project",
        "a chess club",
        "a knitting circle",
        "a film club",
        "a language exchange",
    ];
    let mut held_tokens = Vec::new();
    for purpose in purposes {
        let messages = [system(), opening(purpose, "What should I know?")];
        let mut sink = |_: &str| {};
        let generation = cached
            .generate_detailed(&request(&messages, 8), &mut sink)
            .await
            .unwrap();
        held_tokens.push(generation.prompt_tokens + generation.generated_tokens);
        let stats = cached.prompt_cache_stats();
        assert!(stats.slots <= 3, "{stats:?}");
        assert!(stats.bytes <= bytes_max, "{stats:?}");
    }
    let stats = cached.prompt_cache_stats();
    assert!(stats.evictions > 0, "{stats:?}");
    assert!(stats.slots > 0 && stats.bytes > 0, "{stats:?}");
    // What an entry costs: the keys and values of its tokens (SmolLM2-135M: 30 layers,
    // 3 key/value heads of 64, two bytes each for keys and values: 23,040 bytes a token).
    let per_token = stats.bytes / (stats.slots * held_tokens[0]);
    assert!(
        (20_000..26_000).contains(&per_token),
        "{per_token} bytes a token"
    );
}
