//! The OpenAI-compatible back-end against a local server replaying the streams and errors
//! of OpenAI, `llama-server`, vLLM and LM Studio.

use std::time::{Duration, Instant};

use imurun_core::{GenerateRequest, Message, ModelError, Role, ToolSpec};
use imurun_model::{
    ContextSource, HTTP_DEFAULT_CONTEXT_LIMIT, OpenAiConfig, OpenAiModel, ToolMode,
};
use serde_json::json;

use crate::http_server::{
    Body, Canned, ReplayServer, fast_options, fixture, generate, message, refused_url,
};

const CHAT: &str = "POST /v1/chat/completions";

fn config(server: &ReplayServer) -> OpenAiConfig {
    OpenAiConfig::new(&server.url)
        .with_model("gpt-4o-mini")
        .with_api_key("sk-test")
        .with_http(fast_options(3))
}

fn model(server: &ReplayServer) -> OpenAiModel {
    OpenAiModel::new(config(server)).unwrap()
}

fn ask(prompt: &str) -> GenerateRequest {
    GenerateRequest::new(vec![Message::system("Be brief."), Message::user(prompt)])
}

/// Serves `canned` at the chat path and runs one request.
async fn check(canned: Vec<Canned>) -> (Result<String, ModelError>, Vec<String>, ReplayServer) {
    let server = ReplayServer::start(vec![(CHAT, canned)]);
    let (result, pieces) = generate(&model(&server), &ask("Hi")).await;
    (result, pieces, server)
}

#[tokio::test]
async fn streams_the_reply_of_each_server_and_sends_what_the_api_expects() {
    let cases = [
        (
            "openai/chat_stream.sse",
            "Hello! How can I help you today?",
            9,
        ),
        (
            "llama-server/chat_stream.sse",
            "It is 14:05 — café time.",
            9,
        ),
        ("vllm/chat_stream.sse", "Paris is the capital of France.", 7),
    ];
    for (name, expected, piece_count) in cases {
        let server = ReplayServer::start(vec![(CHAT, vec![Canned::sse(&fixture(name))])]);
        let mut request = GenerateRequest::new(vec![
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::assistant("```tool\n{\"name\": \"get_time\", \"args\": {}}\n```"),
            Message::new(Role::Tool, "[tool result: get_time]\n14:05"),
        ]);
        request.max_tokens = Some(64);
        let (result, pieces) = generate(&model(&server), &request).await;
        assert_eq!(result.unwrap(), expected, "{name}");
        assert_eq!(pieces.concat(), expected, "{name}");
        assert_eq!(
            pieces.len(),
            piece_count,
            "{name}: one piece per non-empty delta"
        );

        let received = server.received();
        assert_eq!(received.len(), 1);
        assert_eq!(
            (received[0].method.as_str(), received[0].path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(received[0].headers["authorization"], "Bearer sk-test");
        assert_eq!(received[0].headers["content-type"], "application/json");
        assert_eq!(
            received[0].json(),
            json!({
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "```tool\n{\"name\": \"get_time\", \"args\": {}}\n```"},
                    {"role": "user", "content": "[tool result: get_time]\n14:05"},
                ],
                "stream": true,
                "model": "gpt-4o-mini",
                "max_tokens": 64,
            }),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_stream_split_anywhere_gives_the_same_reply() {
    // Pieces of 5 bytes cut SSE lines, JSON and the UTF-8 of "—" and "é" in the middle.
    for size in [1, 5, 64] {
        let canned = Canned::sse(&fixture("llama-server/chat_stream.sse")).in_pieces_of(size, 0);
        let (result, pieces, _) = check(vec![canned]).await;
        assert_eq!(
            result.unwrap(),
            "It is 14:05 — café time.",
            "pieces of {size}"
        );
        assert_eq!(pieces.concat(), "It is 14:05 — café time.");
    }
}

#[tokio::test]
async fn without_streaming_the_reply_comes_in_one_piece() {
    let server = ReplayServer::start(vec![(
        CHAT,
        vec![Canned::json(200, fixture("openai/chat.json"))],
    )]);
    let model = OpenAiModel::new(config(&server).with_stream(false)).unwrap();
    let (result, pieces) = generate(&model, &ask("Hi")).await;
    let expected = "\n\nHello there, how may I assist you today?";
    assert_eq!(result.unwrap(), expected);
    assert_eq!(pieces, [expected]);
    assert_eq!(server.received()[0].json()["stream"], false);
    assert!(server.received()[0].json().get("max_tokens").is_none());
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_one_body() {
    let (result, _, _) = check(vec![Canned::json(200, fixture("openai/chat.json"))]).await;
    assert_eq!(
        result.unwrap(),
        "\n\nHello there, how may I assist you today?"
    );
}

#[tokio::test]
async fn error_answers_give_clear_errors() {
    // (status, body, what the error must say or be)
    let cases: [(u16, String, &str); 7] = [
        (401, fixture("openai/error_401.json"), "refused the API key (HTTP 401): Incorrect API key provided"),
        (404, fixture("openai/error_404_model.json"), "has no model `gpt-4o-mini` (HTTP 404)"),
        (404, fixture("vllm/error_404_model.json"), "has no model `gpt-4o-mini` (HTTP 404)"),
        (404, "<html>Not Found</html>".into(), "answered HTTP 404 for http://127.0.0.1"),
        (400, r#"{"error": {"message": "'messages' must contain at least one message", "type": "invalid_request_error"}}"#.into(), "refused the request (HTTP 400): 'messages' must"),
        (500, fixture("openai/error_500.json"), "failed with HTTP 500: The server had an error"),
        (503, fixture("llama-server/loading_503.json"), "failed with HTTP 503: Loading model"),
    ];
    for (status, body, expected) in cases {
        let (result, pieces, _) = check(vec![Canned::json(status, body)]).await;
        let error = result.unwrap_err();
        assert!(message(&error).contains(expected), "{status}: {error}");
        assert!(pieces.is_empty());
    }
}

#[tokio::test]
async fn a_missing_key_is_named_as_missing() {
    let server = ReplayServer::start(vec![(
        CHAT,
        vec![Canned::json(401, fixture("openai/error_401.json"))],
    )]);
    let model =
        OpenAiModel::new(OpenAiConfig::new(&server.url).with_http(fast_options(1))).unwrap();
    let error = generate(&model, &ask("Hi")).await.0.unwrap_err();
    assert!(
        message(&error).contains("wants an API key (HTTP 401) and none was given"),
        "{error}"
    );
    assert!(!server.received()[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn context_overflow_bodies_of_each_server_are_context_overflow() {
    let cases = [
        ("openai/context_length_exceeded.json", 130_523, 128_000),
        ("llama-server/exceed_context_size.json", 4476, 4096),
        ("vllm/context_length.json", 33_000, 32_768),
    ];
    for (name, tokens, limit) in cases {
        let (result, _, server) = check(vec![Canned::json(400, fixture(name))]).await;
        assert_eq!(
            result,
            Err(ModelError::ContextOverflow { tokens, limit }),
            "{name}"
        );
        assert_eq!(server.received().len(), 1, "{name}: never retried");
    }
}

#[tokio::test]
async fn failures_the_server_may_get_over_are_retried() {
    let success = || Canned::sse(&fixture("openai/chat_stream.sse"));
    let cases = [
        Canned::json(429, fixture("openai/error_429.json")),
        Canned::json(500, fixture("openai/error_500.json")),
        Canned::json(502, "Bad Gateway"),
        Canned::json(503, fixture("llama-server/loading_503.json")),
        // The connection closed with no answer at all.
        Canned {
            body: Body::Hangup,
            ..Canned::json(200, "")
        },
    ];
    for failure in cases {
        let status = failure.status;
        let (result, _, server) = check(vec![failure.clone(), failure, success()]).await;
        assert_eq!(
            result.unwrap(),
            "Hello! How can I help you today?",
            "{status}"
        );
        let bodies: Vec<_> = server.received().iter().map(|r| r.body.clone()).collect();
        assert_eq!(bodies.len(), 3, "{status}: two failures, then the reply");
        assert!(
            bodies.iter().all(|body| *body == bodies[0]),
            "the same request each time"
        );
    }
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let limited = Canned::json(429, fixture("openai/error_429.json")).header("retry-after", "1");
    let started = Instant::now();
    let (result, _, server) = check(vec![
        limited,
        Canned::sse(&fixture("openai/chat_stream.sse")),
    ])
    .await;
    assert!(result.is_ok());
    assert_eq!(server.received().len(), 2);
    // The backoff alone would wait 10 ms; a lower bound cannot flake.
    assert!(started.elapsed() >= Duration::from_millis(1_000));
}

#[tokio::test]
async fn rate_limits_that_last_are_rate_limited() {
    let limited = |after: &str| {
        Canned::json(429, fixture("openai/error_429.json")).header("retry-after", after)
    };
    // Every attempt limited: after the third, the error carries the server's wait.
    let (result, _, server) = check(vec![limited("0")]).await;
    assert_eq!(
        result,
        Err(ModelError::RateLimited {
            retry_after_ms: Some(0)
        })
    );
    assert_eq!(server.received().len(), 3);
    // A wait longer than `retry_after_max_ms` is not waited for.
    let (result, _, server) = check(vec![limited("20")]).await;
    assert_eq!(
        result,
        Err(ModelError::RateLimited {
            retry_after_ms: Some(20_000)
        })
    );
    assert_eq!(server.received().len(), 1);
    // Without Retry-After, the backoff decides and the error has no wait.
    let (result, _, _) = check(vec![Canned::json(429, "{}")]).await;
    assert_eq!(
        result,
        Err(ModelError::RateLimited {
            retry_after_ms: None
        })
    );
}

#[tokio::test]
async fn a_refused_connection_names_the_url_after_its_retries() {
    let url = refused_url();
    let model = OpenAiModel::new(OpenAiConfig::new(&url).with_http(fast_options(2))).unwrap();
    let Err(ModelError::Transport { message }) = generate(&model, &ask("Hi")).await.0 else {
        panic!("a refused connection is a transport error");
    };
    assert!(
        message.contains(&format!("cannot connect to {url}/v1/chat/completions")),
        "{message}"
    );
    assert!(message.contains("(2 attempts)"), "{message}");
}

#[tokio::test]
async fn a_stream_cut_mid_way_keeps_what_streamed_and_fails() {
    let sse = fixture("openai/chat_stream.sse");
    // The connection drops inside the chunked body, or closes cleanly, before `[DONE]`.
    let chunked = Canned::sse(&sse).cut_after(4);
    let events = crate::http_server::sse_events(&sse);
    let until_close = Canned {
        body: Body::UntilClose(events[..4].concat()),
        ..Canned::sse("")
    };
    for canned in [chunked, until_close] {
        let (result, pieces, server) = check(vec![canned]).await;
        assert_eq!(
            pieces.concat(),
            "Hello! How",
            "what streamed went through on_token"
        );
        let Err(ModelError::Transport { message }) = result else {
            panic!("a cut stream is a transport error: {result:?}");
        };
        assert!(message.contains(&server.url), "{message}");
        assert_eq!(
            server.received().len(),
            1,
            "never retried after tokens streamed"
        );
    }
}

#[tokio::test]
async fn a_stream_with_a_finish_reason_but_no_done_is_complete() {
    let sse = fixture("vllm/chat_stream.sse").replace("data: [DONE]\n\n", "");
    let (result, _, _) = check(vec![Canned::sse(&sse)]).await;
    assert_eq!(result.unwrap(), "Paris is the capital of France.");
}

#[tokio::test]
async fn malformed_streams_are_protocol_errors() {
    let sse = fixture("openai/chat_stream.sse");
    let broken = sse.replacen("{\"content\":\" How\"}", "{\"content\":\" How\"", 1);
    let error_event = sse.replacen(
        "data: {\"id\":\"chatcmpl-123\"",
        "data: {\"error\": {\"message\": \"the model crashed\", \"type\": \"server_error\"}}\n\ndata: {\"id\":\"chatcmpl-123\"",
        1,
    );
    let overflow_event = format!(
        "data: {}\n\n",
        fixture("llama-server/exceed_context_size.json").replace('\n', "")
    );
    let long_line = format!(
        "data: {}\n\n",
        "x".repeat(imurun_model::STREAM_LINE_BYTES_MAX + 1)
    );
    let cases: [(String, &str); 3] = [
        (broken, "sent malformed JSON"),
        (
            error_event,
            "reported an error instead of a reply: the model crashed",
        ),
        (long_line, "has a line longer than"),
    ];
    for (body, expected) in cases {
        let (result, _, _) = check(vec![Canned::sse(&body)]).await;
        let Err(ModelError::Protocol { message }) = result else {
            panic!("{expected}: {result:?}");
        };
        assert!(message.contains(expected), "{message}");
    }
    let (result, _, _) = check(vec![Canned::sse(&overflow_event)]).await;
    assert_eq!(
        result,
        Err(ModelError::ContextOverflow {
            tokens: 4476,
            limit: 4096
        })
    );
    let (result, _, _) = check(vec![Canned::json(200, "{\"choices\": [")]).await;
    assert!(
        matches!(result, Err(ModelError::Protocol { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn stop_mid_stream_drops_the_connection_and_keeps_what_streamed() {
    let canned = Canned::sse(&fixture("openai/chat_stream.sse")).paced(40);
    let server = ReplayServer::start(vec![(CHAT, vec![canned])]);
    let model = model(&server);
    let request = ask("Hi");
    let stop = request.stop.clone();
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| {
        pieces.push(piece.to_owned());
        if pieces.len() == 2 {
            stop.stop();
        }
    };
    let result = imurun_core::Model::generate(&model, &request, &mut on_token).await;
    assert_eq!(result.unwrap(), "Hello!");
    assert_eq!(pieces, ["Hello", "!"]);
    // The server notices when it next writes; give it the time of a few pieces.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        server.received()[0].client_left,
        "the client hung up mid-stream"
    );
}

#[tokio::test]
async fn stop_while_the_server_is_silent_returns_at_once() {
    let slow = Canned::sse(&fixture("openai/chat_stream.sse")).delayed(10_000);
    let server = ReplayServer::start(vec![(CHAT, vec![slow])]);
    let model = model(&server);
    let request = ask("Hi");
    let stop = request.stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.stop();
    });
    let started = Instant::now();
    let (result, pieces) = generate(&model, &request).await;
    assert_eq!(result.unwrap(), "");
    assert!(pieces.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "did not wait for the server"
    );
}

#[tokio::test]
async fn connect_reads_the_served_context_from_the_server_that_says() {
    let models_of = |name: &str| ("GET /v1/models", vec![Canned::json(200, fixture(name))]);
    // (routes, configured context, expected limit, expected source, expected model)
    let cases = [
        (
            vec![
                (
                    "GET /props",
                    vec![Canned::json(200, fixture("llama-server/props.json"))],
                ),
                models_of("llama-server/models.json"),
            ],
            None,
            4096,
            ContextSource::LlamaServerProps,
            "SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
        (
            vec![models_of("vllm/models.json")],
            None,
            32_768,
            ContextSource::VllmModels,
            "Qwen/Qwen2.5-7B-Instruct",
        ),
        (
            vec![models_of("vllm/models.json")],
            Some(8192),
            8192,
            ContextSource::Configured,
            "Qwen/Qwen2.5-7B-Instruct",
        ),
        (
            vec![
                models_of("lm-studio/v1_models.json"),
                (
                    "GET /api/v0/models",
                    vec![Canned::json(200, fixture("lm-studio/models.json"))],
                ),
            ],
            None,
            32_768,
            ContextSource::LmStudioModels,
            "qwen2-vl-7b-instruct",
        ),
        (
            vec![models_of("openai/models.json")],
            None,
            HTTP_DEFAULT_CONTEXT_LIMIT,
            ContextSource::Default,
            "gpt-4o-mini",
        ),
        (
            vec![models_of("openai/models.json")],
            Some(100_000),
            100_000,
            ContextSource::Configured,
            "gpt-4o-mini",
        ),
    ];
    for (routes, configured, limit, source, model_id) in cases {
        let server = ReplayServer::start(routes);
        let mut config =
            OpenAiConfig::new(format!("{}/v1/", server.url)).with_http(fast_options(1));
        config.context_limit = configured;
        let model = OpenAiModel::connect(config).await.unwrap();
        assert_eq!(
            imurun_core::Model::context_limit(&model),
            limit,
            "{source:?}"
        );
        assert_eq!(model.context_source(), source);
        assert_eq!(model.model_id(), Some(model_id));
        assert_eq!(imurun_core::Model::name(&model), model_id);
    }
}

#[tokio::test]
async fn connect_finds_the_configured_model_in_the_list() {
    let server = ReplayServer::start(vec![(
        "GET /api/v0/models",
        vec![Canned::json(200, fixture("lm-studio/models.json"))],
    )]);
    let config = OpenAiConfig::new(&server.url)
        .with_model("meta-llama-3.1-8b-instruct")
        .with_http(fast_options(1));
    let model = OpenAiModel::connect(config).await.unwrap();
    assert_eq!(imurun_core::Model::context_limit(&model), 131_072);
    let paths: Vec<_> = server.received().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/props", "/v1/models", "/api/v0/models"]);
}

#[tokio::test]
async fn connect_fails_when_the_server_is_down_or_refuses_the_key() {
    let down = OpenAiConfig::new(refused_url()).with_http(fast_options(1));
    assert!(matches!(
        OpenAiModel::connect(down).await,
        Err(ModelError::Transport { .. })
    ));

    let server = ReplayServer::start(vec![(
        "GET /v1/models",
        vec![Canned::json(401, fixture("openai/error_401.json"))],
    )]);
    let refused = config(&server);
    let error = OpenAiModel::connect(refused).await.unwrap_err();
    assert!(message(&error).contains("refused the API key"), "{error}");
}

#[test]
fn debug_output_never_shows_the_key() {
    let config = OpenAiConfig::new("http://127.0.0.1:8080").with_api_key("sk-secret");
    assert!(!format!("{config:?}").contains("sk-secret"));
    let model = OpenAiModel::new(config).unwrap();
    assert!(!format!("{model:?}").contains("sk-secret"));
    assert!(OpenAiModel::new(OpenAiConfig::new("localhost:8080")).is_err());
}

#[tokio::test]
async fn native_tool_calls_come_back_as_tool_blocks_and_tools_are_sent() {
    let spec = ToolSpec::new(
        "get_weather",
        "The weather in a place.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    );
    let expected =
        "```tool\n{\"name\": \"get_weather\", \"args\": {\"location\":\"Paris, France\"}}\n```";
    for stream in [true, false] {
        let canned = if stream {
            Canned::sse(&fixture("openai/chat_stream_tool_calls.sse"))
        } else {
            let message = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"}}]});
            Canned::json(200, json!({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}).to_string())
        };
        let server = ReplayServer::start(vec![(CHAT, vec![canned])]);
        let config = config(&server)
            .with_stream(stream)
            .with_tool_mode(ToolMode::Native(vec![spec.clone()]));
        let model = OpenAiModel::new(config).unwrap();
        let (result, pieces) = generate(&model, &ask("Weather in Paris?")).await;
        assert_eq!(result.unwrap(), expected, "stream {stream}");
        assert_eq!(pieces.concat(), expected);
        let tools = &server.received()[0].json()["tools"];
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(tools[0]["function"]["name"], "get_weather");
        assert_eq!(tools[0]["function"]["parameters"], spec.parameters);
    }
    // Text mode, the default, sends no tools.
    let (_, _, server) = check(vec![Canned::sse(&fixture("openai/chat_stream.sse"))]).await;
    assert!(server.received()[0].json().get("tools").is_none());
}

#[tokio::test]
async fn comments_other_fields_and_crlf_line_ends_are_read_as_sse() {
    let sse = fixture("openai/chat_stream.sse");
    let decorated = format!(
        ": keep-alive\n\nevent: message\nid: 1\n{}",
        sse.replace('\n', "\r\n")
    );
    let (result, _, _) = check(vec![Canned::sse(&decorated)]).await;
    assert_eq!(result.unwrap(), "Hello! How can I help you today?");
}

#[tokio::test]
async fn a_reply_ends_at_its_bound_and_a_body_over_its_bound_fails() {
    // Two pieces of 600 000 bytes: the second is cut where the reply reaches its bound.
    let chunk = |text: &str| {
        format!(
            "data: {{\"choices\": [{{\"index\": 0, \"delta\": {{\"content\": \"{text}\"}}}}]}}\n\n"
        )
    };
    let piece = "a".repeat(600_000);
    let sse = format!("{}{}data: [DONE]\n\n", chunk(&piece), chunk(&piece));
    let (result, pieces, _) = check(vec![Canned::sse(&sse)]).await;
    assert_eq!(result.unwrap().len(), imurun_model::REPLY_BYTES_MAX);
    assert_eq!(pieces.concat().len(), imurun_model::REPLY_BYTES_MAX);

    let huge = Canned::json(200, " ".repeat(imurun_model::RESPONSE_BYTES_MAX + 1));
    let server = ReplayServer::start(vec![(CHAT, vec![huge])]);
    let model = OpenAiModel::new(config(&server).with_stream(false)).unwrap();
    let Err(ModelError::Protocol { message }) = generate(&model, &ask("Hi")).await.0 else {
        panic!("a body over its bound is a protocol error");
    };
    assert!(message.contains("is longer than"), "{message}");
}
