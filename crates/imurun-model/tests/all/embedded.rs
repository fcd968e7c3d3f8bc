//! The embedded back-end with the real default model (SmolLM2-135M-Instruct Q4_1), greedy.
//! The model is found through `IMURUN_MODEL`, else where `scripts/fetch-model.sh` puts it;
//! without it these tests fail (run `scripts/fetch-model.sh`), they never skip.

use std::path::PathBuf;
use std::sync::OnceLock;

use imurun_core::{GenerateRequest, Message, Model, ModelError};
use imurun_model::{Decoding, EmbeddedConfig, EmbeddedModel, FinishReason, Generation, GgufInfo};

/// Where the default model is: see the module comment.
pub(crate) fn model_path() -> PathBuf {
    imurun_testkit::default_model_path()
}

/// The model with a small context, loaded once for the whole test binary: the tests share
/// it as sessions share it in the server.
fn model() -> &'static EmbeddedModel {
    static MODEL: OnceLock<EmbeddedModel> = OnceLock::new();
    MODEL.get_or_init(|| {
        let config = EmbeddedConfig {
            n_ctx: 1024,
            threads: Some(imurun_testkit::MODEL_TEST_THREADS),
            ..EmbeddedConfig::default()
        };
        EmbeddedModel::load(model_path(), config).unwrap()
    })
}

fn request(messages: Vec<Message>, max_tokens: usize) -> GenerateRequest {
    let mut request = GenerateRequest::new(messages);
    request.max_tokens = Some(max_tokens);
    request
}

/// Runs one generation; returns it and the pieces streamed.
async fn generate(
    model: &EmbeddedModel,
    request: &GenerateRequest,
) -> (Result<Generation, ModelError>, Vec<String>) {
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| pieces.push(piece.to_owned());
    let result = model.generate_detailed(request, &mut on_token).await;
    (result, pieces)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_model_answers_a_chat_prompt_and_streams_it() {
    let model = model();
    let request = request(
        vec![Message::user(
            "What is the capital of France? Answer in one sentence.",
        )],
        48,
    );
    let (result, pieces) = generate(model, &request).await;
    let generation = result.unwrap();
    assert!(!generation.text.trim().is_empty(), "an empty answer");
    assert!(
        matches!(
            generation.finish,
            FinishReason::EndOfTurn | FinishReason::MaxTokens
        ),
        "{:?}",
        generation.finish
    );
    assert!(generation.generated_tokens <= 48);
    assert_eq!(
        pieces.concat(),
        generation.text,
        "the pieces join to the reply"
    );
    assert!(
        !generation.text.contains("<|im_end|>"),
        "the end token is not text"
    );

    // Greedy decoding is deterministic, and the trait's `generate` gives the same text.
    let mut streamed = String::new();
    let again = model
        .generate(&request, &mut |piece| streamed.push_str(piece))
        .await
        .unwrap();
    assert_eq!(again, generation.text);
    assert_eq!(streamed, again);
}

#[test]
fn count_tokens_is_the_tokenizers_count_of_the_rendered_prompt() {
    let model = model();
    let messages = vec![
        Message::system("You are terse."),
        Message::user("Count these tokens, please: ünïcödé 😀."),
    ];
    let prompt = model.render(&messages).unwrap();
    assert!(prompt.starts_with("<|im_start|>system\nYou are terse.<|im_end|>\n"));
    assert!(prompt.ends_with("<|im_start|>assistant\n"));
    let tokens = model.tokenize(&prompt);
    assert_eq!(model.count_tokens(&messages), tokens.len());
    // Special tokens are parsed as such (one token each), and SmolLM2 adds no BOS.
    assert_eq!(tokens[0], 1, "<|im_start|> is token 1");
    assert_eq!(model.tokenize("<|im_end|>").len(), 1);
    // Without a system message SmolLM2's template adds its default one: counted too.
    let bare = [Message::user("Hi")];
    assert!(model.render(&bare).unwrap().contains("named SmolLM"));
    assert_eq!(
        model.count_tokens(&bare),
        model.tokenize(&model.render(&bare).unwrap()).len()
    );
}

#[test]
fn smollm2_ends_a_turn_on_im_end_and_endoftext() {
    let model = model();
    assert!(model.is_end_of_generation(2), "<|im_end|>");
    assert!(model.is_end_of_generation(0), "<|endoftext|>");
    assert!(!model.is_end_of_generation(1), "<|im_start|>");
}

#[test]
fn context_limit_is_the_configured_n_ctx_and_the_trained_length_is_reported() {
    let model = model();
    assert_eq!(model.context_limit(), 1024);
    assert_eq!(model.trained_context_length(), 8192);
    assert_eq!(model.name(), "SmolLM2-135M-Instruct.Q4_1");
    let info = model.info();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.file_type, "Q4_1");
    assert_eq!(info.trained_context_length, Some(8192));
    assert_eq!(info.parameter_count_label(), "135M");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_n_ctx_is_a_context_overflow() {
    let model = model();
    let long = "word ".repeat(1500);
    let (result, pieces) = generate(model, &request(vec![Message::user(long)], 8)).await;
    match result {
        Err(ModelError::ContextOverflow { tokens, limit }) => {
            assert_eq!(limit, 1024);
            assert!(tokens > 1024, "{tokens}");
        }
        other => panic!("expected a context overflow, got {other:?}"),
    }
    assert!(pieces.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_flag_ends_a_generation_early() {
    let model = model();
    let request = request(
        vec![Message::user("Write a long story about a dragon.")],
        200,
    );
    let stop = request.stop.clone();
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| {
        pieces.push(piece.to_owned());
        if pieces.len() == 3 {
            stop.stop();
        }
    };
    let generation = model
        .generate_detailed(&request, &mut on_token)
        .await
        .unwrap();
    assert_eq!(generation.finish, FinishReason::Stopped);
    assert!(
        generation.generated_tokens < 200,
        "{}",
        generation.generated_tokens
    );
    assert_eq!(pieces.concat(), generation.text);

    // A request stopped before it starts generates nothing.
    let stopped = request.clone();
    stopped.stop.stop();
    let (result, pieces) = generate(model, &stopped).await;
    assert_eq!(result.unwrap().generated_tokens, 0);
    assert!(pieces.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_share_the_model_and_each_get_their_own_answer() {
    let model = model();
    let questions = ["What colour is the sky?", "Name a fruit.", "What is 1+1?"];
    let mut expected = Vec::new();
    for question in questions {
        let (result, _) = generate(model, &request(vec![Message::user(question)], 16)).await;
        expected.push(result.unwrap().text);
    }
    // The same questions at once, through clones: queued and each answered. (Not compared
    // with the answers above: how much of a prompt is reused from the cache changes how
    // llama.cpp batches it, which may change the last bits of the logits.)
    let tasks: Vec<_> = questions
        .iter()
        .map(|question| {
            let model = model.clone();
            let request = request(vec![Message::user(*question)], 16);
            tokio::spawn(async move {
                let mut sink = |_: &str| {};
                model.generate(&request, &mut sink).await.unwrap()
            })
        })
        .collect();
    for (task, alone) in tasks.into_iter().zip(expected) {
        let answer = task.await.unwrap();
        assert!(!answer.is_empty() && !alone.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_decoding_with_a_seed_is_repeatable() {
    let model = model().with_decoding(Decoding::Sampled {
        temperature: 0.8,
        top_p: 0.95,
        seed: 42,
    });
    let request = request(vec![Message::user("Tell me a fun fact.")], 24);
    let (first, _) = generate(&model, &request).await;
    let (second, _) = generate(&model, &request).await;
    let (first, second) = (first.unwrap(), second.unwrap());
    assert!(!first.text.is_empty());
    assert_eq!(first.text, second.text);
}

#[test]
fn model_info_reads_the_header_without_loading_weights() {
    let info = GgufInfo::read(model_path()).unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.file_type, "Q4_1");
    assert_eq!(info.add_bos_token, Some(false));
    assert!(
        (134_000_000..136_000_000).contains(&info.parameter_count),
        "{}",
        info.parameter_count
    );
    assert!(info.chat_template.unwrap().contains("<|im_start|>"));
}

/// With constrained decoding on, a started call always parses and names a runnable tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_tool_grammar_a_started_call_is_a_valid_call_to_a_runnable_tool() {
    use imurun_core::{ToolIndex, ToolSpec};
    use imurun_model::{TOOL_CALL_MARKER, ToolCallGrammar};

    let weather = serde_json::json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    });
    let index = ToolIndex::offering([
        ToolSpec {
            name: "get_weather".into(),
            description: "The current weather in a city.".into(),
            parameters: weather,
        },
        ToolSpec {
            name: "get_time".into(),
            description: "The current time.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        },
    ]);
    let grammar = std::sync::Arc::new(ToolCallGrammar::from_index(&index).unwrap());
    let model = model().with_tool_grammar(Some(grammar));
    let system = "You can call tools. To call one, reply with only a fenced block:\n\
                  ```tool\n{\"name\": \"TOOL\", \"args\": {...}}\n```\n\
                  Tools: get_weather(city), get_time().";
    let questions = [
        "What is the weather in Paris?",
        "What time is it?",
        "Is it raining in Tokyo?",
    ];
    let mut calls_started = 0;
    for question in questions {
        let messages = vec![
            Message::system(system),
            Message::user("What is the weather in Rome?"),
            Message::assistant(
                "```tool\n{\"name\": \"get_weather\", \"args\": {\"city\": \"Rome\"}}\n```",
            ),
            Message::user(question),
        ];
        let (result, _) = generate(&model, &request(messages, 64)).await;
        let text = result.unwrap().text;
        let Some(start) = text.find(TOOL_CALL_MARKER) else {
            continue;
        };
        calls_started += 1;
        let call = &text[start + TOOL_CALL_MARKER.len()..];
        let body = call
            .strip_prefix('\n')
            .and_then(|rest| rest.strip_suffix("\n```"))
            .unwrap_or_else(|| panic!("not a closed fence: {text:?}"));
        let call: serde_json::Value =
            serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {text:?}"));
        let name = call["name"].as_str().unwrap();
        assert!(index.contains(name), "{name} is not runnable: {text:?}");
        assert!(call["args"].is_object(), "{text:?}");
        if name == "get_weather" {
            assert!(call["args"]["city"].is_string(), "{text:?}");
        }
    }
    assert!(
        calls_started > 0,
        "the model started no call: the test checked nothing"
    );
}
