//! Tests beside the worker, with the real default model: a failed decode and prompt reuse
//! (the failure is real — llama.cpp refuses a batch — but placed by a test-only hook; the
//! other reuse tests are in `tests/all/prompt_reuse.rs`), and the worker's token chooser
//! against llama.cpp's own sampler chain on the same logits.

use std::path::PathBuf;

use imurun_core::{GenerateRequest, Message, Model, ModelError};

use super::{EmbeddedConfig, EmbeddedModel, Generation, PromptSource};

/// Where the default model is, as the integration tests find it.
fn model_path() -> PathBuf {
    imurun_testkit::default_model_path()
}

fn load(reuse: bool) -> EmbeddedModel {
    let config = EmbeddedConfig {
        n_ctx: 1024,
        reuse_prompt_prefix: reuse,
        threads: Some(imurun_testkit::MODEL_TEST_THREADS),
        ..EmbeddedConfig::default()
    };
    EmbeddedModel::load(model_path(), config).unwrap()
}

async fn generate(
    model: &EmbeddedModel,
    messages: &[Message],
    max_tokens: usize,
) -> Result<Generation, ModelError> {
    let mut request = GenerateRequest::new(messages.to_vec());
    request.max_tokens = Some(max_tokens);
    model.generate_detailed(&request, &mut |_| {}).await
}

/// Generates with both models; the texts and endings must be the same.
async fn same_as_fresh(
    cached: &EmbeddedModel,
    fresh: &EmbeddedModel,
    messages: &[Message],
) -> Generation {
    let reused = generate(cached, messages, 24).await.unwrap();
    let evaluated = generate(fresh, messages, 24).await.unwrap();
    assert_eq!(reused.text, evaluated.text, "{:?}", reused.prompt_source);
    assert_eq!(reused.finish, evaluated.finish);
    assert_eq!(evaluated.reused_prompt_tokens, 0);
    reused
}

fn system() -> Message {
    Message::system(
        "You are a careful assistant for a small library. Answer in one or two sentences. \
         The library opens at nine and closes at six, lends books for three weeks, and \
         charges nothing for late returns. Members may borrow ten books at once. The \
         reading room is quiet; the children's corner is not. Printing costs ten cents a \
         page. The librarians are Ana, Bo and Chen.",
    )
}

/// A question with enough words of its own (about 90 tokens) that the cache keeps the
/// conversation when another one comes.
fn question(topic: &str, purpose: &str) -> String {
    format!(
        "I am organising {purpose} and we will meet at the library every week for the whole \
         autumn, usually on Tuesday evenings, sometimes on Saturday mornings when the \
         weather is bad and nobody wants to walk to the park. There will be about twelve of \
         us, some of them children, and we will need the big table near the window, a \
         whiteboard, and a quiet place to read aloud. What should I know about how long the \
         library is {topic}?"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failed_decode_reuse_gives_what_a_fresh_evaluation_gives() {
    let (fresh, cached) = (load(false), load(true));
    let mut a = vec![system(), Message::user(question("open", "a reading group"))];
    let b = vec![
        system(),
        Message::user(question("lend", "a school project")),
    ];
    let first = same_as_fresh(&cached, &fresh, &a).await;
    a.push(Message::assistant(first.text));
    a.push(Message::user("And when does it close?"));
    same_as_fresh(&cached, &fresh, &b).await;

    // A's second prompt restores A's state, then the rest of its prompt fails to evaluate.
    let a_tokens = cached.count_tokens(&a[..2]);
    cached.fail_decode_past(a_tokens + 4);
    let failed = generate(&cached, &a, 24).await;
    assert!(
        matches!(&failed, Err(ModelError::Protocol { message }) if message.contains("could not evaluate")),
        "{failed:?}"
    );
    assert_eq!(cached.prompt_cache_stats().restores, 1);
    // The context was emptied; B's saved state is intact and restores.
    let again = same_as_fresh(&cached, &fresh, &a).await;
    assert_eq!(again.prompt_source, PromptSource::Restored);
    assert!(again.reused_prompt_tokens > 0);

    // A failure while generating: the reply stops there, and the next prompt is right.
    let live = cached.count_tokens(&a);
    cached.fail_decode_past(live + 3);
    let failed = generate(&cached, &a, 24).await;
    assert!(
        matches!(failed, Err(ModelError::Protocol { .. })),
        "{failed:?}"
    );
    let after = same_as_fresh(&cached, &fresh, &a).await;
    assert_ne!(
        after.prompt_source,
        PromptSource::Kept,
        "the failed context was not kept"
    );
    same_as_fresh(&cached, &fresh, &b).await;
}

/// llama.cpp's own samplers, in the order of the chain the worker used before
/// `sampling.rs` (grammar → penalties → choice), with imurun's one change: no penalty
/// inside a call the grammar holds.
struct Reference {
    grammar: Option<llama_cpp_2::sampling::LlamaSampler>,
    penalties: Option<llama_cpp_2::sampling::LlamaSampler>,
    choose: llama_cpp_2::sampling::LlamaSampler,
}

impl Reference {
    fn new(
        model: &llama_cpp_2::model::LlamaModel,
        decoding: super::Decoding,
        repeat_penalty: super::RepeatPenalty,
        grammar: Option<&super::ToolCallGrammar>,
    ) -> Self {
        use llama_cpp_2::sampling::LlamaSampler;
        let choose = match decoding {
            super::Decoding::Greedy => LlamaSampler::greedy(),
            super::Decoding::Sampled {
                temperature,
                top_p,
                seed,
            } => LlamaSampler::chain_simple([
                LlamaSampler::top_p(top_p, 1),
                LlamaSampler::temp(temperature),
                LlamaSampler::dist(seed),
            ]),
        };
        let penalties = (!repeat_penalty.is_off()).then(|| {
            LlamaSampler::penalties(
                model.n_vocab(),
                i32::from(repeat_penalty.last_n),
                repeat_penalty.penalty,
                0.0,
                0.0,
            )
        });
        let grammar = grammar.map(|grammar| {
            LlamaSampler::grammar_lazy(
                model,
                grammar.gbnf(),
                super::ToolCallGrammar::root_rule(),
                [super::TOOL_CALL_MARKER],
                &[],
            )
            .unwrap()
        });
        Self {
            grammar,
            penalties,
            choose,
        }
    }

    fn accept(&mut self, token: llama_cpp_2::token::LlamaToken) {
        for sampler in [
            self.grammar.as_mut(),
            self.penalties.as_mut(),
            Some(&mut self.choose),
        ]
        .into_iter()
        .flatten()
        {
            sampler.accept(token);
        }
    }

    /// The next token; `in_call` between a call's marker and its closing fence.
    fn sample(&mut self, logits: &[f32], in_call: bool) -> llama_cpp_2::token::LlamaToken {
        use llama_cpp_2::token::LlamaToken;
        use llama_cpp_2::token::data::LlamaTokenData;
        use llama_cpp_2::token::data_array::LlamaTokenDataArray;
        let mut data = LlamaTokenDataArray::from_iter(
            logits.iter().enumerate().map(|(index, &logit)| {
                LlamaTokenData::new(LlamaToken(i32::try_from(index).unwrap()), logit, 0.0)
            }),
            false,
        );
        if let Some(grammar) = &mut self.grammar {
            data.apply_sampler(grammar);
        }
        if let Some(penalties) = self.penalties.as_mut().filter(|_| !in_call) {
            data.apply_sampler(penalties);
        }
        data.apply_sampler(&mut self.choose);
        let token = data.selected_token().unwrap();
        self.accept(token);
        token
    }
}

/// Greedy and sampled decoding, with and without the penalty and the call grammar (waiting,
/// triggered by the model, and on from a prefill): on the same logits, token by token, the
/// worker's chooser picks what llama.cpp's samplers pick (no penalty inside a call). Cases
/// run past a call's closing fence, where the penalty is on again.
#[test]
fn the_chooser_picks_what_llama_cpps_sampler_chain_picks() {
    use std::num::NonZeroU32;

    use imurun_core::{ToolIndex, ToolSpec};
    use llama_cpp_2::context::params::LlamaContextParams;
    use llama_cpp_2::llama_batch::LlamaBatch;

    use super::sampling::Chooser;
    use super::{Decoding, RepeatPenalty, ToolCallGrammar};

    let embedded = load(false);
    let model = &embedded.shared.model;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(1024))
        .with_n_batch(512)
        .with_n_ubatch(512);
    let mut context = model
        .new_context(super::backend().unwrap(), params)
        .unwrap();
    let index = ToolIndex::offering([
        ToolSpec {
            name: "get_weather".into(),
            description: "The current weather in a city.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }),
        },
        ToolSpec {
            name: "web_search".into(),
            description: "Search the web.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            }),
        },
    ]);
    let grammar = ToolCallGrammar::from_index(&index).unwrap();
    let tools = Message::system(
        "To call a tool, reply with only a fenced block:\n```tool\n{\"name\": \"TOOL\", \
         \"args\": {...}}\n```\nTools: get_weather(city), web_search(query).",
    );
    let story = vec![Message::user(
        "Write a long story about a lighthouse keeper and a storm.",
    )];
    let weather = vec![
        tools.clone(),
        Message::user("What is the weather in Rome?"),
        Message::assistant(
            "```tool\n{\"name\": \"get_weather\", \"args\": {\"city\": \"Rome\"}}\n```",
        ),
        Message::user("And what is the weather in Paris?"),
    ];
    let search = vec![tools, Message::user("Find the latest news about comets.")];
    let sampled = Decoding::Sampled {
        temperature: 0.9,
        top_p: 0.95,
        seed: 11,
    };
    let penalty = RepeatPenalty::default();
    // The messages, a prefill, the decoding, the penalty, and whether the grammar is on.
    type Case<'a> = (
        &'a [Message],
        Option<&'a str>,
        Decoding,
        RepeatPenalty,
        bool,
    );
    let cases: [Case<'_>; 7] = [
        (&story, None, Decoding::Greedy, penalty, false),
        (&story, None, Decoding::Greedy, RepeatPenalty::OFF, false),
        (&story, None, sampled, penalty, true),
        (&weather, None, Decoding::Greedy, penalty, true),
        (&search, Some("```tool\n"), Decoding::Greedy, penalty, true),
        (
            &search,
            Some("Let me look.\n```tool\n{\"name\""),
            Decoding::Greedy,
            penalty,
            true,
        ),
        (&weather, Some("```tool\n"), sampled, penalty, true),
    ];
    let vocab = model.vocab();
    let mut calls_constrained = 0;
    let mut steps_after_a_call = 0;
    for (number, (messages, prefill, decoding, penalty, with_grammar)) in
        cases.into_iter().enumerate()
    {
        let grammar = with_grammar.then_some(&grammar);
        let prefill_tokens = vocab.tokenize(prefill.unwrap_or("").as_bytes(), false, false);
        let mut tokens = embedded.prompt_tokens(&embedded.render(messages).unwrap());
        tokens.extend_from_slice(&prefill_tokens);
        context.clear_kv_cache();
        let mut batch = LlamaBatch::new(512, 1);
        for (start, chunk) in (0..).step_by(512).zip(tokens.chunks(512)) {
            batch.clear();
            for (offset, token) in chunk.iter().enumerate() {
                let position = i32::try_from(start + offset).unwrap();
                batch
                    .add(*token, position, &[0], offset == chunk.len() - 1)
                    .unwrap();
            }
            context.decode(&mut batch).unwrap();
        }
        let mut reference = Reference::new(model, decoding, penalty, grammar);
        for &token in &prefill_tokens {
            reference.accept(token);
        }
        let mut chooser = Chooser::new(model, decoding, penalty, grammar);
        let mut piece = Vec::new();
        for &token in &prefill_tokens {
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, true, None);
            chooser.accept(token, &piece).unwrap();
        }
        let mut text = String::from(prefill.unwrap_or(""));
        let mut logits_index = batch.n_tokens() - 1;
        for (step, position) in (0..64).zip(tokens.len()..) {
            let logits = context.get_logits_ith(logits_index);
            // Inside a call: after its marker, before its closing fence.
            let in_call = with_grammar
                && text
                    .rfind(super::TOOL_CALL_MARKER)
                    .is_some_and(|at| !text[at..].contains("\n```"));
            if with_grammar && !in_call && text.contains(super::TOOL_CALL_MARKER) {
                steps_after_a_call += 1;
            }
            let expected = reference.sample(logits, in_call);
            let chosen = chooser.choose(logits);
            assert_eq!(
                chosen, expected,
                "case {number}, step {step}, after {text:?}"
            );
            if vocab.is_eog(chosen) {
                break;
            }
            piece.clear();
            vocab.token_to_piece_into(chosen, &mut piece, true, None);
            chooser.accept(chosen, &piece).unwrap();
            text.push_str(&String::from_utf8_lossy(&piece));
            batch.clear();
            batch
                .add(chosen, i32::try_from(position).unwrap(), &[0], true)
                .unwrap();
            context.decode(&mut batch).unwrap();
            logits_index = 0;
        }
        if with_grammar && text.contains("```tool\n{") {
            calls_constrained += 1;
        }
    }
    assert!(
        calls_constrained >= 3,
        "the grammar was active in {calls_constrained} cases: the test checked too little"
    );
    assert!(
        steps_after_a_call >= 1,
        "no token was chosen after a closed call: the penalty's return went unchecked"
    );
}

/// A string value in a call never starts with a placeholder (`...`, `…`): the grammar
/// refuses its first token, while any other string (`.env`, `.`, an empty one) goes through.
#[test]
fn a_called_string_never_starts_with_a_placeholder() {
    use imurun_core::{ToolIndex, ToolSpec};
    use llama_cpp_2::sampling::LlamaSampler;

    use super::ToolCallGrammar;

    let embedded = load(false);
    let model = &embedded.shared.model;
    let index = ToolIndex::offering([ToolSpec {
        name: "lawyer.find_nearby".into(),
        description: "Lawyers near a city.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}},
            "required": ["city"],
        }),
    }]);
    let grammar = ToolCallGrammar::from_index(&index).unwrap();
    // Whether the grammar takes every token of `written`, one after the other.
    let takes = |written: &str| -> bool {
        let mut sampler =
            LlamaSampler::grammar(model, grammar.gbnf(), ToolCallGrammar::root_rule()).unwrap();
        for token in model.vocab().tokenize(written.as_bytes(), false, false) {
            if !super::sampling::grammar_takes(&mut sampler, token) {
                return false;
            }
            sampler.accept(token);
        }
        true
    };
    let call = |city: &str| {
        format!(
            "```tool\n{{\"name\": \"lawyer.find_nearby\", \"args\": {{\"city\": \"{city}\"}}}}\n```"
        )
    };
    for city in ["Chicago", ".env", ".", "", "St. Louis..."] {
        assert!(takes(&call(city)), "{city:?} was refused");
    }
    for city in ["...", "..", "…", "… Chicago"] {
        assert!(!takes(&call(city)), "{city:?} was taken");
    }
    let listed = "```tool\n{\"name\": \"lawyer.find_nearby\", \"args\": {\"city\": \"Chicago\", \"fields\": [\"...\"]}}\n```";
    assert!(!takes(listed), "a placeholder in a list was taken");
}

/// Scores `continuations` after `messages` and `prefill`.
async fn score(
    model: &EmbeddedModel,
    messages: &[Message],
    prefill: &str,
    continuations: &[&str],
) -> Vec<imurun_core::Scored> {
    let request = imurun_core::ScoreRequest::new(
        messages.to_vec(),
        prefill,
        continuations
            .iter()
            .map(|text| (*text).to_owned())
            .collect(),
    );
    model.score_detailed(&request).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_greedy_reply_is_the_likeliest_and_scoring_leaves_generation_as_it_was() {
    let (fresh, cached) = (load(false), load(true));
    let messages = vec![
        system(),
        Message::user("When does the library open?".to_owned()),
    ];
    let before = generate(&cached, &messages, 12).await.unwrap();
    assert!(!before.text.is_empty());
    // The greedy reply against the same reply with its first word changed: each greedy
    // token was the most likely, so the greedy text is the likelier one.
    let greedy = before.text.clone();
    let (first_word, rest) = greedy.split_at(greedy.find(' ').unwrap_or(greedy.len()));
    let changed = format!("Zebra{rest}");
    assert_ne!(first_word, "Zebra");
    let scored = score(&cached, &messages, "", &[&greedy, &changed]).await;
    assert!(
        scored[0].total() > scored[1].total(),
        "{greedy:?} {} vs {changed:?} {}",
        scored[0].total(),
        scored[1].total()
    );
    assert!(scored[0].token_logprobs.iter().all(|lp| *lp <= 0.0));
    assert_eq!(scored[0].token_ends.last().copied(), Some(greedy.len()));
    // Scored from a reused prompt or evaluated afresh: the same figures.
    let again = score(&fresh, &messages, "", &[&greedy, &changed]).await;
    assert_eq!(scored, again);
    // The context is left holding the prompt: the next generation is what it was.
    let after = generate(&cached, &messages, 12).await.unwrap();
    assert_eq!(after.text, before.text);
    assert!(after.reused_prompt_tokens > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefill_is_shared_and_a_probe_is_read_after_every_token() {
    let model = load(true);
    let messages = vec![Message::user("Say the word hello in quotes.".to_owned())];
    let mut request = imurun_core::ScoreRequest::new(
        messages.clone(),
        "\"",
        vec!["hello\"".to_owned(), "hello there\"".to_owned()],
    );
    request.probes = vec!["\"".to_owned()];
    let scored = model.score_detailed(&request).await.unwrap();
    for one in &scored {
        assert_eq!(one.probe_logprobs.len(), one.token_logprobs.len());
        assert!(one.probe_logprobs.iter().all(|lp| *lp <= 0.0));
    }
    // The quote's chance read as a probe after "hello" is the chance the first scored
    // continuation gives to the quote token that ends it.
    let hello = &scored[0];
    let at = hello
        .token_ends
        .iter()
        .position(|end| *end == "hello".len());
    let at = at.expect("a token ends after hello");
    assert_eq!(hello.probe_logprobs[at], hello.token_logprobs[at + 1]);
}

#[tokio::test]
async fn a_prefill_the_call_grammar_refuses_is_an_error_and_the_model_goes_on() {
    use std::sync::Arc;

    use imurun_core::{ToolIndex, ToolSpec};

    use super::ToolCallGrammar;

    let index = ToolIndex::offering([ToolSpec {
        name: "history.president".into(),
        description: "Who was president.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"event": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["event", "year"],
        }),
    }]);
    let grammar = Arc::new(ToolCallGrammar::from_index(&index).unwrap());
    let model = load(false).with_tool_grammar(Some(grammar));
    let messages = [
        system(),
        Message::user("Who was president during the Civil War?"),
    ];
    let opening = "```tool\n{\"name\": \"history.president\", \"args\": {";
    // The grammar writes the required arguments in the schema's order: `year` cannot come
    // first. llama.cpp would abort the process on it; the model says so instead.
    let mut request = GenerateRequest::new(messages.to_vec());
    request.prefill = Some(format!("{opening}\"year\": "));
    request.max_tokens = Some(16);
    let refused = model.generate_detailed(&request, &mut |_| {}).await;
    match refused {
        Err(ModelError::Protocol { message }) => {
            assert!(message.contains("not a valid tool call"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The same model goes on: a start in the grammar's order continues as a call.
    request.prefill = Some(format!("{opening}\"event\": "));
    let written = model
        .generate_detailed(&request, &mut |_| {})
        .await
        .unwrap();
    assert!(written.text.starts_with(opening), "{}", written.text);
}
