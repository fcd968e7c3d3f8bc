//! The Ollama back-end against a local server replaying Ollama's NDJSON stream, `/api/show`
//! and errors.

use std::time::Duration;

use imurun_core::{GenerateRequest, Message, Model, ModelError, ToolSpec};
use imurun_model::{ContextSource, OLLAMA_DEFAULT_NUM_CTX, OllamaConfig, OllamaModel, ToolMode};
use serde_json::json;

use crate::http_server::{
    Canned, ReplayServer, fast_options, fixture, generate, message, refused_url,
};

const CHAT: &str = "POST /api/chat";
const SHOW: &str = "POST /api/show";
const REPLY: &str = "The sky is blue because of Rayleigh scattering.";

fn config(server: &ReplayServer) -> OllamaConfig {
    OllamaConfig::new("llama3.2")
        .with_base_url(&server.url)
        .with_http(fast_options(3))
}

fn ask(prompt: &str) -> GenerateRequest {
    GenerateRequest::new(vec![Message::system("Be brief."), Message::user(prompt)])
}

fn stream() -> Canned {
    Canned::ndjson(&fixture("ollama/chat_stream.ndjson"))
}

/// Serves `canned` at `/api/chat` (no `/api/show`) and runs one request.
async fn check(canned: Vec<Canned>) -> (Result<String, ModelError>, Vec<String>, ReplayServer) {
    let server = ReplayServer::start(vec![(CHAT, canned)]);
    let model = OllamaModel::new(config(&server)).unwrap();
    let (result, pieces) = generate(&model, &ask("Why is the sky blue?")).await;
    (result, pieces, server)
}

#[tokio::test]
async fn connect_sets_num_ctx_from_the_model_and_every_request_sends_it() {
    // (show fixture, configured num_ctx, expected num_ctx, expected source)
    let cases = [
        (
            "ollama/show.json",
            None,
            OLLAMA_DEFAULT_NUM_CTX,
            ContextSource::Default,
        ),
        (
            "ollama/show.json",
            Some(2048),
            2048,
            ContextSource::Configured,
        ),
        (
            "ollama/show.json",
            Some(65_536),
            8192,
            ContextSource::OllamaShow,
        ),
        (
            "ollama/show_qwen2.json",
            Some(65_536),
            32_768,
            ContextSource::OllamaShow,
        ),
        (
            "ollama/show_qwen2.json",
            None,
            OLLAMA_DEFAULT_NUM_CTX,
            ContextSource::Default,
        ),
    ];
    for (show, configured, num_ctx, source) in cases {
        let server = ReplayServer::start(vec![
            (SHOW, vec![Canned::json(200, fixture(show))]),
            (CHAT, vec![stream()]),
        ]);
        let mut config = config(&server);
        config.num_ctx = configured;
        let model = OllamaModel::connect(config).await.unwrap();
        assert_eq!(model.context_limit(), num_ctx, "{show} {configured:?}");
        assert_eq!(model.context_source(), source);
        assert_eq!(model.name(), "llama3.2");

        let mut request = ask("Why is the sky blue?");
        request.max_tokens = Some(128);
        let (result, pieces) = generate(&model, &request).await;
        assert_eq!(result.unwrap(), REPLY);
        assert_eq!(pieces.len(), 9, "one piece per line with content");

        assert_eq!(
            server.received_at("/api/show")[0].json(),
            json!({"model": "llama3.2"})
        );
        let chat = &server.received_at("/api/chat")[0];
        assert_eq!(
            chat.json(),
            json!({
                "model": "llama3.2",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Why is the sky blue?"},
                ],
                "stream": true,
                "options": {"num_ctx": num_ctx, "num_predict": 128},
            })
        );
    }
}

#[tokio::test]
async fn without_connect_the_default_num_ctx_is_sent() {
    let (result, _, server) = check(vec![stream()]).await;
    assert_eq!(result.unwrap(), REPLY);
    let body = server.received()[0].json();
    assert_eq!(body["options"], json!({"num_ctx": OLLAMA_DEFAULT_NUM_CTX}));
}

#[tokio::test]
async fn a_stream_split_anywhere_gives_the_same_reply() {
    for size in [1, 7, 100] {
        let (result, pieces, _) = check(vec![stream().in_pieces_of(size, 0)]).await;
        assert_eq!(result.unwrap(), REPLY, "pieces of {size}");
        assert_eq!(pieces.concat(), REPLY);
    }
}

#[tokio::test]
async fn an_unknown_model_is_named() {
    let server = ReplayServer::start(vec![(
        SHOW,
        vec![Canned::json(404, fixture("ollama/model_not_found.json"))],
    )]);
    let error = OllamaModel::connect(config(&server)).await.unwrap_err();
    assert!(
        message(&error).contains("has no model `llama3.2` (HTTP 404): model 'llama3.2' not found"),
        "{error}"
    );

    let (result, _, _) = check(vec![Canned::json(
        404,
        fixture("ollama/chat_model_not_found.json"),
    )])
    .await;
    let error = result.unwrap_err();
    assert!(
        message(&error).contains("has no model `llama3.2`"),
        "{error}"
    );
    assert!(message(&error).contains("try pulling it first"), "{error}");
}

#[tokio::test]
async fn a_refused_connection_names_the_url() {
    let url = refused_url();
    let config = OllamaConfig::new("llama3.2")
        .with_base_url(&url)
        .with_http(fast_options(1));
    let error = OllamaModel::connect(config.clone()).await.unwrap_err();
    assert!(
        message(&error).contains(&format!("cannot connect to {url}/api/show")),
        "{error}"
    );
    let model = OllamaModel::new(config).unwrap();
    let Err(ModelError::Transport { message }) = generate(&model, &ask("Hi")).await.0 else {
        panic!("a refused connection is a transport error");
    };
    assert!(
        message.contains(&format!("cannot connect to {url}/api/chat")),
        "{message}"
    );
}

#[tokio::test]
async fn a_prompt_longer_than_num_ctx_is_refused_before_it_is_sent() {
    let server = ReplayServer::start(vec![(CHAT, vec![stream()])]);
    let model = OllamaModel::new(config(&server).with_num_ctx(50)).unwrap();
    // 350 characters: 100 tokens + 6 for the message, by the estimate.
    let request = GenerateRequest::new(vec![Message::user("x".repeat(350))]);
    let (result, pieces) = generate(&model, &request).await;
    assert_eq!(
        result,
        Err(ModelError::ContextOverflow {
            tokens: 106,
            limit: 50
        })
    );
    assert!(pieces.is_empty());
    assert!(
        server.received().is_empty(),
        "Ollama would have truncated it silently"
    );
}

#[tokio::test]
async fn a_stream_cut_mid_way_keeps_what_streamed_and_fails() {
    let (result, pieces, server) = check(vec![stream().cut_after(3)]).await;
    assert_eq!(pieces.concat(), "The sky is");
    assert!(
        matches!(result, Err(ModelError::Transport { .. })),
        "{result:?}"
    );
    assert_eq!(
        server.received().len(),
        1,
        "never retried after tokens streamed"
    );
}

#[tokio::test]
async fn errors_in_the_stream_and_broken_lines_fail() {
    let lines = fixture("ollama/chat_stream.ndjson");
    let mut with_error: Vec<&str> = lines.lines().take(2).collect();
    with_error
        .push(r#"{"error":"an error was encountered while running the model: unexpected EOF"}"#);
    let broken = lines.replacen("\"done\":false}", "\"done\":false", 2);
    let cases = [
        (
            with_error.join("\n") + "\n",
            "reported an error instead of a reply: an error was encountered",
        ),
        (broken, "sent malformed JSON"),
    ];
    for (body, expected) in cases {
        let (result, _, _) = check(vec![Canned::ndjson(&body)]).await;
        let Err(ModelError::Protocol { message }) = result else {
            panic!("{expected}: {result:?}");
        };
        assert!(message.contains(expected), "{message}");
    }
}

#[tokio::test]
async fn a_busy_server_is_retried() {
    let busy = Canned::json(
        503,
        r#"{"error":"server busy, please try again.  maximum pending requests exceeded"}"#,
    );
    let (result, _, server) = check(vec![busy, stream()]).await;
    assert_eq!(result.unwrap(), REPLY);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn stop_mid_stream_keeps_what_streamed() {
    let server = ReplayServer::start(vec![(CHAT, vec![stream().paced(40)])]);
    let model = OllamaModel::new(config(&server)).unwrap();
    let request = ask("Why is the sky blue?");
    let stop = request.stop.clone();
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| {
        pieces.push(piece.to_owned());
        if pieces.len() == 3 {
            stop.stop();
        }
    };
    let result = model.generate(&request, &mut on_token).await;
    assert_eq!(result.unwrap(), "The sky is");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        server.received()[0].client_left,
        "the client hung up mid-stream"
    );
}

#[tokio::test]
async fn native_tool_calls_come_back_as_tool_blocks_and_tools_are_sent() {
    let spec = ToolSpec::new(
        "get_weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    );
    let canned = Canned::ndjson(&fixture("ollama/chat_stream_tool_calls.ndjson"));
    let server = ReplayServer::start(vec![(CHAT, vec![canned])]);
    let model =
        OllamaModel::new(config(&server).with_tool_mode(ToolMode::Native(vec![spec]))).unwrap();
    let (result, pieces) = generate(&model, &ask("Weather in Toronto?")).await;
    let expected = "```tool\n{\"name\": \"get_weather\", \"args\": {\"city\":\"Toronto\"}}\n```";
    assert_eq!(result.unwrap(), expected);
    assert_eq!(pieces.concat(), expected);
    let body = server.received()[0].json();
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tools"][0]["type"], "function");
}
