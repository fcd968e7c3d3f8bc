//! The OpenAI-compatible back-end against llama.cpp's own `llama-server`, built from the
//! llama.cpp the embedded back-end runs (`scripts/build-llama-server.sh`) and serving the
//! default model: the replayed fixtures of `openai.rs` are the servers' documented shapes,
//! these are one real server's. Each test asserts what imurun guarantees whatever the model
//! writes: how replies, streams, cut streams, context sizes and native calls are read.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread;

use imurun_core::{GenerateRequest, Message, Model, ModelError, ToolSpec};
use imurun_model::{ContextSource, OpenAiConfig, OpenAiModel, ToolMode};
use imurun_testkit::{LlamaServer, default_model_path, llama_server_binary};
use serde_json::{Value, json};

use crate::http_server::{fast_options, generate};

/// A server with a 1024-token context for its one slot, greedy, with chat templates run by
/// its Jinja engine (what native tool calls need).
fn start(args: &[&str]) -> LlamaServer {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let mut all = vec![
        "--ctx-size",
        "1024",
        "--parallel",
        "1",
        "--temp",
        "0",
        "--threads",
        "1",
        "--jinja",
    ];
    all.extend_from_slice(args);
    LlamaServer::start(&llama_server_binary(manifest), &default_model_path(), &all)
}

fn config(url: &str) -> OpenAiConfig {
    OpenAiConfig::new(url).with_http(fast_options(1))
}

fn ask(prompt: &str, max_tokens: usize) -> GenerateRequest {
    let mut request = GenerateRequest::new(vec![
        Message::system("You are a helpful assistant. Be brief."),
        Message::user(prompt),
    ]);
    request.max_tokens = Some(max_tokens);
    request
}

#[tokio::test]
async fn connect_reads_the_slot_s_context_and_the_model_s_name_from_the_real_server() {
    let server = start(&["--alias", "smollm2"]);
    let model = OpenAiModel::connect(config(&server.url)).await.unwrap();
    assert_eq!(model.context_limit(), 1024, "{}", server.log());
    assert_eq!(model.context_source(), ContextSource::LlamaServerProps);
    assert_eq!(model.model_id(), Some("smollm2"));
}

#[tokio::test]
async fn replies_stream_in_pieces_and_come_whole_without_streaming() {
    let server = start(&[]);
    let request = ask("Name three colours.", 24);
    for stream in [true, false] {
        let model = OpenAiModel::new(config(&server.url).with_stream(stream)).unwrap();
        let (result, pieces) = generate(&model, &request).await;
        let reply = result.unwrap_or_else(|error| panic!("{error}\n{}", server.log()));
        assert!(!reply.trim().is_empty(), "stream {stream}: an empty reply");
        assert_eq!(pieces.concat(), reply, "stream {stream}");
        if stream {
            assert!(pieces.len() > 1, "a stream comes in pieces: {pieces:?}");
        }
    }
}

#[tokio::test]
async fn a_real_stream_cut_mid_way_keeps_what_streamed_and_fails() {
    let server = start(&[]);
    let proxy = CuttingProxy::start(&server.url, 4);
    let model = OpenAiModel::new(config(&proxy.url).with_stream(true)).unwrap();
    let (result, pieces) = generate(&model, &ask("Tell me a short story about a cat.", 64)).await;
    let Err(ModelError::Transport { message }) = result else {
        panic!("a cut stream is a transport error: {result:?}");
    };
    assert!(message.contains(&proxy.url), "{message}");
    assert!(
        !pieces.concat().is_empty(),
        "the tokens before the cut went through on_token"
    );
    assert_eq!(
        proxy.connections(),
        1,
        "never retried after tokens streamed"
    );
}

#[tokio::test]
async fn a_prompt_over_the_served_context_is_a_context_overflow_with_the_server_s_numbers() {
    let server = start(&[]);
    // Asked without `connect`, so the back-end believes in a larger window and sends it.
    let model = OpenAiModel::new(config(&server.url)).unwrap();
    let long = "The quick brown fox jumps over the lazy dog. ".repeat(200);
    let (result, _) = generate(&model, &ask(&long, 16)).await;
    let Err(ModelError::ContextOverflow { tokens, limit }) = result else {
        panic!("{result:?}\n{}", server.log());
    };
    assert_eq!(limit, 1024);
    assert!(tokens > 1024, "{tokens} tokens");
}

#[tokio::test]
async fn native_calls_of_the_real_server_come_back_as_tool_blocks_of_offered_tools() {
    let server = start(&[]);
    let spec = ToolSpec::new(
        "get_weather",
        "The current weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    );
    let request = ask("What is the weather in Paris right now?", 96);
    for stream in [true, false] {
        let model = OpenAiModel::new(
            config(&server.url)
                .with_stream(stream)
                .with_tool_mode(ToolMode::Native(vec![spec.clone()])),
        )
        .unwrap();
        let (result, pieces) = generate(&model, &request).await;
        let reply = result.unwrap_or_else(|error| panic!("{error}\n{}", server.log()));
        assert!(!reply.trim().is_empty(), "stream {stream}: an empty reply");
        // The model may call or answer; whatever it does, a call is a well-formed block of
        // the offered tool, and the server's own JSON never leaks into the text.
        let blocks: Vec<&str> = reply.split("```tool\n").skip(1).collect();
        for block in &blocks {
            let json_text = block.split("\n```").next().unwrap_or("");
            let call: Value = serde_json::from_str(json_text)
                .unwrap_or_else(|error| panic!("{error}: {json_text}"));
            assert_eq!(call["name"], "get_weather", "{reply}");
            assert!(call["args"].is_object(), "{reply}");
        }
        if blocks.is_empty() {
            assert!(!reply.contains("\"tool_call\""), "{reply}");
            assert_eq!(pieces.concat(), reply, "stream {stream}");
        }
    }
}

/// A proxy that passes one request to `upstream` and closes the connection after the
/// response's first `events` server-sent events, as a server that dies mid-reply does.
struct CuttingProxy {
    url: String,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl CuttingProxy {
    fn start(upstream: &str, events: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let upstream = upstream.clone();
                thread::spawn(move || relay_and_cut(client, &upstream, events));
            }
        });
        Self { url, accepted }
    }

    fn connections(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn relay_and_cut(mut client: TcpStream, upstream: &str, events: usize) {
    let Ok(mut server) = TcpStream::connect(upstream) else {
        return;
    };
    // The request: headers, then `Content-Length` bytes of body.
    let mut request = Vec::new();
    let mut byte = [0_u8; 1];
    while !request.ends_with(b"\r\n\r\n") {
        if client.read_exact(&mut byte).is_err() {
            return;
        }
        request.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&request).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0_u8; length];
    if client.read_exact(&mut body).is_err() {
        return;
    }
    // One request per connection: the cut must not be mended by keep-alive.
    let head =
        String::from_utf8_lossy(&request).replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n");
    if server.write_all(head.as_bytes()).is_err() || server.write_all(&body).is_err() {
        return;
    }
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 512];
    while let Ok(read) = server.read(&mut buffer) {
        if read == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..read]);
        // Each event ends in "\n\n" (the headers end in "\r\n\r\n", and chunk sizes in
        // "\r\n"): up to the end of the `events`-th event, inside its chunk.
        let complete = seen.windows(2).filter(|window| window == b"\n\n").count();
        if complete >= events {
            let mut ends = 0;
            let end = seen
                .windows(2)
                .position(|window| {
                    ends += usize::from(window == b"\n\n");
                    ends == events
                })
                .map_or(seen.len(), |at| at + 2);
            let _ = client.write_all(&seen[..end]);
            break;
        }
    }
    let _ = client.flush();
    let _ = client.shutdown(Shutdown::Both);
}
