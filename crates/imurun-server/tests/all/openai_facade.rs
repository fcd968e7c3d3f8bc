//! The OpenAI-compatible facade (`/v1/models`, `/v1/chat/completions`): whole and streamed
//! answers, tool turns, bad bodies, the model slot, sessions, and the real `openai` Python
//! package against a live server.

// The helpers below are test code too: a value that is not there fails the test that asked.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use imurun_core::{BoxFuture, GenerateRequest, Message, Model, ModelError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::api_support::{Dirs, Reply, TestModel, TestServer, WAIT_MAX, tool_reply, write_file};

/// A model that streams each reply word by word (so a streamed answer comes in several
/// chunks) and keeps every request it was given. After its replies, it answers `fallback`.
struct WordModel {
    replies: Mutex<VecDeque<String>>,
    fallback: String,
    requests: Mutex<Vec<Vec<Message>>>,
}

impl WordModel {
    fn new(replies: &[&str], fallback: &str) -> Arc<WordModel> {
        Arc::new(WordModel {
            replies: Mutex::new(replies.iter().map(|reply| (*reply).to_owned()).collect()),
            fallback: fallback.to_owned(),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// The system message of each generation so far.
    fn system_messages(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|messages| messages[0].content.clone())
            .collect()
    }

    /// The messages after the system message of the first generation.
    fn first_conversation(&self) -> Vec<(String, String)> {
        self.requests.lock().unwrap()[0][1..]
            .iter()
            .map(|message| {
                let role = serde_json::to_value(message.role).unwrap();
                (role.as_str().unwrap().to_owned(), message.content.clone())
            })
            .collect()
    }
}

impl Model for WordModel {
    fn name(&self) -> &str {
        "word-model"
    }

    fn context_limit(&self) -> usize {
        8192
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(request.messages.clone());
            let reply = self
                .replies
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| self.fallback.clone());
            for word in reply.split_inclusive(' ') {
                on_token(word);
                // Lets the stream's reader run between tokens, as a real model would.
                tokio::task::yield_now().await;
            }
            Ok(reply)
        })
    }
}

/// One HTTP/1.1 exchange with extra request headers: the status, the response head (lower
/// case) and the body (de-chunked).
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        stream.write_all(body.as_bytes()).await.expect("write");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.expect("read");
        String::from_utf8(response).expect("UTF-8")
    };
    let text = tokio::time::timeout(WAIT_MAX, exchange)
        .await
        .expect("an answer in time");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let head = head.to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, head, body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

/// Posts a chat completion and returns the status and the JSON body.
async fn complete(server: &TestServer, body: Value) -> (u16, Value) {
    let (status, _, body) = send(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &body.to_string(),
    )
    .await;
    (status, serde_json::from_str(&body).expect("a JSON body"))
}

/// Posts a streamed chat completion and returns the `data:` payloads in order.
async fn complete_streamed(server: &TestServer, body: Value) -> Vec<String> {
    let (status, head, body) = send(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &body.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

fn user(text: &str) -> Value {
    json!({"model": "imurun", "messages": [{"role": "user", "content": text}]})
}

/// The contents of a stream's chunks joined, and its finish reasons.
fn reassemble(data: &[String]) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut reasons = Vec::new();
    for payload in data.iter().filter(|payload| *payload != "[DONE]") {
        let chunk: Value = serde_json::from_str(payload).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        for choice in chunk["choices"].as_array().unwrap() {
            text.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
            if let Some(reason) = choice["finish_reason"].as_str() {
                reasons.push(reason.to_owned());
            }
        }
    }
    (text, reasons)
}

#[tokio::test]
async fn models_lists_the_agent_then_the_loaded_model() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, Some(WordModel::new(&[], "hi"))).await;
    let (status, models) = server.get("/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(models["object"], "list");
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["imurun", "word-model"]);
    assert_eq!(models["data"][0]["object"], "model");
    assert_eq!(models["data"][0]["owned_by"], "imurun");
    assert!(models["data"][0]["created"].as_u64().unwrap() > 1_700_000_000);
    server.stop().await;
}

#[tokio::test]
async fn a_whole_answer_is_a_chat_completion_in_a_fresh_session() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::text("Paris is the capital of France.")]);
    let server = TestServer::start(&dirs, Some(model.clone())).await;
    let (status, head, body) = send(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &user("What is the capital of France, if you please, dear agent?").to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let completion: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["model"], "imurun");
    assert!(
        completion["id"]
            .as_str()
            .unwrap()
            .starts_with("chatcmpl-turn-")
    );
    assert_eq!(
        completion["choices"],
        json!([{"index": 0, "message": {"role": "assistant", "content": "Paris is the capital of France."}, "finish_reason": "stop"}])
    );
    // `usage` counts what the turn really sent the model (its system message, persona and
    // tools included) and what it generated, with the model's counter: this test model has
    // none of its own, so the estimate.
    let sent: usize = model
        .requests()
        .iter()
        .map(|messages| imurun_core::estimate_tokens(messages))
        .sum();
    let generated = imurun_core::estimate_text_tokens("Paris is the capital of France.");
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        completion["usage"],
        json!({"prompt_tokens": sent, "completion_tokens": generated, "total_tokens": sent + generated})
    );
    // The session is a real one: listed, titled, with the turn and the transcript.
    let session = head
        .lines()
        .find_map(|line| line.strip_prefix("x-imurun-session: "))
        .expect("the session header")
        .to_owned();
    let (_, detail) = server.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(
        detail["session"]["title"],
        "openai: What is the capital of France, if you pl"
    );
    let transcript: Vec<&str> = detail["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        transcript,
        [
            "What is the capital of France, if you please, dear agent?",
            "Paris is the capital of France."
        ]
    );
    let (_, turns) = server.get(&format!("/api/sessions/{session}/turns")).await;
    let turn_id = completion["id"]
        .as_str()
        .unwrap()
        .trim_start_matches("chatcmpl-");
    assert_eq!(turns["turns"][0]["turn_id"], turn_id);
    assert_eq!(turns["turns"][0]["status"], "done");
    server.stop().await;
}

#[tokio::test]
async fn streamed_chunks_reassemble_the_answer_and_end_with_done() {
    let dirs = Dirs::new();
    let answer = "The sky looks blue because air scatters blue light most.";
    let server = TestServer::start(&dirs, Some(WordModel::new(&[answer], "?"))).await;
    let mut body = user("Why is the sky blue?");
    body["stream"] = json!(true);
    let data = complete_streamed(&server, body).await;
    assert_eq!(data.last().unwrap(), "[DONE]");
    let first: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert!(first.get("usage").is_none(), "{first}");
    let (text, reasons) = reassemble(&data);
    assert_eq!(text, answer);
    assert_eq!(reasons, ["stop"]);
    // Role chunk, at least two content chunks, finish chunk, [DONE].
    assert!(data.len() >= 5, "{data:?}");
    // Every chunk carries the same id.
    let ids: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|payload| serde_json::from_str::<Value>(payload).unwrap()["id"].clone())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    server.stop().await;
}

#[tokio::test]
async fn include_usage_sends_a_usage_chunk_without_choices_before_done() {
    let dirs = Dirs::new();
    let model = WordModel::new(&[], "Fine, thanks.");
    let server = TestServer::start(&dirs, Some(model.clone())).await;
    let mut body = user("How are you?");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let data = complete_streamed(&server, body).await;
    let usage_chunk: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    let sent: usize = model
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|messages| imurun_core::estimate_tokens(messages))
        .sum();
    let generated = imurun_core::estimate_text_tokens("Fine, thanks.");
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": sent, "completion_tokens": generated, "total_tokens": sent + generated})
    );
    let finish: Value = serde_json::from_str(&data[data.len() - 3]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert_eq!(finish["usage"], Value::Null);
    assert_eq!(reassemble(&data).0, "Fine, thanks.");
    server.stop().await;
}

#[tokio::test]
async fn a_tool_turn_answers_with_the_final_answer_only() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    let read = tool_reply("file_read", json!({"path": "notes.txt"}));
    let model = TestModel::new(vec![
        Reply::text(&read),
        Reply::text("Your notes say: buy milk."),
        Reply::text(&read),
        Reply::text("Your notes say: buy milk."),
    ]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let (status, completion) = complete(&server, user("What do my notes say?")).await;
    assert_eq!(status, 200, "{completion}");
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "Your notes say: buy milk."
    );
    let mut body = user("What do my notes say?");
    body["stream"] = json!(true);
    let data = complete_streamed(&server, body).await;
    assert_eq!(reassemble(&data).0, "Your notes say: buy milk.");
    server.stop().await;
}

#[tokio::test]
async fn a_call_that_needs_approval_is_denied_at_once_even_while_streaming() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    // The declined call ends the turn: the model is not asked again.
    let model = TestModel::new(vec![Reply::text(&tool_reply(
        "file_read",
        json!({"path": "notes.txt"}),
    ))]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let (status, _) = server
        .post("/api/permissions", json!({"mode": "ask"}))
        .await;
    assert_eq!(status, 200);
    // The facade's own stream is no one who could approve: the call is denied, not held for
    // the 60 s approval timeout.
    let mut body = user("What do my notes say?");
    body["stream"] = json!(true);
    let data = complete_streamed(&server, body).await;
    assert_eq!(
        reassemble(&data).0,
        "Nothing was done: `file_read` was declined, so it did not run."
    );
    let (_, pending) = server.get("/api/tools/approvals").await;
    assert_eq!(pending["pending"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_goes_away_stops_its_turn() {
    let dirs = Dirs::new();
    let gate = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![Reply::gated("Too late.", &gate)]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let mut body = user("Take your time.");
    body["stream"] = json!(true);
    let body = body.to_string();
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // Reads until the role chunk has come: the turn is running.
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("\"role\":\"assistant\"") {
        let mut buffer = [0_u8; 1024];
        let read = tokio::time::timeout(WAIT_MAX, stream.read(&mut buffer))
            .await
            .expect("the first chunk in time")
            .unwrap();
        assert!(read > 0, "the stream ended early");
        seen.extend_from_slice(&buffer[..read]);
    }
    assert_eq!(server.state.running_turns(), 1);
    drop(stream);
    // The next heartbeat finds the connection gone and the stream is dropped.
    let deadline = tokio::time::Instant::now() + WAIT_MAX;
    while server.state.running_turns() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the turn never stopped"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (_, sessions) = server.get("/api/sessions").await;
    let session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    let (_, turns) = server.get(&format!("/api/sessions/{session}/turns")).await;
    assert_eq!(turns["turns"][0]["status"], "stopped");
    server.stop().await;
}

#[tokio::test]
async fn system_messages_are_added_after_the_persona_and_history_is_kept() {
    let dirs = Dirs::new();
    let model = WordModel::new(&[], "Noted.");
    let server = TestServer::start(&dirs, Some(Arc::clone(&model) as Arc<dyn Model>)).await;
    let body = json!({
        "model": "gpt-4o",
        "temperature": 0.3,
        "max_tokens": 10,
        "user": "someone",
        "messages": [
            {"role": "system", "content": "Always answer in French."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Bonjour"},
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "text", "text": "How"}, {"type": "text", "text": "are you?"}]},
        ],
    });
    let (status, completion) = complete(&server, body).await;
    assert_eq!(status, 200, "{completion}");
    assert_eq!(completion["model"], "imurun");
    let system = &model.system_messages()[0];
    let persona_at = system.find("You are").expect("the persona comes first");
    let added_at = system
        .find("Instructions from the application")
        .expect("the client's instructions");
    assert!(persona_at < added_at, "{system}");
    assert!(
        system.contains("Always answer in French.\n\nBe brief."),
        "{system}"
    );
    assert_eq!(
        model.first_conversation(),
        [
            ("user".to_owned(), "Hi".to_owned()),
            ("assistant".to_owned(), "Bonjour".to_owned()),
            ("user".to_owned(), "How\nare you?".to_owned()),
        ]
    );
    server.stop().await;
}

/// Every `user` message is bounded like a prompt, history ones too; a conversation must end
/// with the user's message.
#[tokio::test]
async fn every_user_message_is_bounded_and_the_last_is_the_prompt() {
    let dirs = Dirs::new();
    let model = WordModel::new(&[], "Again.");
    let server = TestServer::start(&dirs, Some(Arc::clone(&model) as Arc<dyn Model>)).await;
    let long = "x".repeat(32_001);
    let (status, error) = complete(
        &server,
        json!({"messages": [{"role": "user", "content": long}, {"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], "too_large");
    let (status, error) = complete(
        &server,
        json!({"messages": [
            {"role": "user", "content": "Tell me more"},
            {"role": "assistant", "content": "An answer to continue"},
        ]}),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the last message has role `assistant`"),
        "{error}"
    );
    assert!(model.requests.lock().unwrap().is_empty(), "no turn ran");
    server.stop().await;
}

#[tokio::test]
async fn a_named_session_uses_its_own_transcript_and_refuses_unknown_ids() {
    let dirs = Dirs::new();
    let model = WordModel::new(&["First.", "Second."], "?");
    let server = TestServer::start(&dirs, Some(Arc::clone(&model) as Arc<dyn Model>)).await;
    let session = server.new_session().await;
    for prompt in ["one", "two"] {
        let body = json!({"messages": [
            {"role": "user", "content": "ignored history"},
            {"role": "assistant", "content": "ignored"},
            {"role": "user", "content": prompt},
        ]});
        let (status, head, body) = send(
            server.addr,
            "POST",
            "/v1/chat/completions",
            &[("X-Imurun-Session", &session)],
            &body.to_string(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert!(head.contains(&format!("x-imurun-session: {session}")));
    }
    let (_, detail) = server.get(&format!("/api/sessions/{session}")).await;
    let transcript: Vec<&str> = detail["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(transcript, ["one", "First.", "two", "Second."]);
    let second_request = model.requests.lock().unwrap()[1].clone();
    let contents: Vec<&str> = second_request[1..]
        .iter()
        .map(|message| message.content.as_str())
        .collect();
    assert_eq!(contents, ["one", "First.", "two"]);
    let (status, _, body) = send(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &[("X-Imurun-Session", "no-such-session")],
        &user("hi").to_string(),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn bad_bodies_are_clear_400s_with_openai_s_type() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, Some(WordModel::new(&[], "hi"))).await;
    let cases = [
        (json!({"model": "imurun"}), "missing field `messages`"),
        (json!({"messages": []}), "`messages` is empty"),
        (
            json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}),
            "the last message has role `assistant`",
        ),
        (
            json!({"messages": [{"role": "user", "content": "   "}]}),
            "the prompt is empty",
        ),
        // Valid JSON of the wrong type, at the top and inside: serde alone would read an
        // array as a struct's fields in order.
        (json!([null, null]), "it must be a JSON object"),
        (json!({"messages": [["user", "hi"]]}), "expected a map"),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "stream_options": [true]}),
            "expected a map",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
            "type `image_url`",
        ),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "n": 2}),
            "`n` is 2",
        ),
        (
            json!({"messages": [{"role": "wizard", "content": "x"}, {"role": "user", "content": "hi"}]}),
            "role `wizard`",
        ),
    ];
    for (body, says) in cases {
        let (status, error) = complete(&server, body.clone()).await;
        assert_eq!(status, 400, "{body} → {error}");
        assert_eq!(error["error"]["code"], "bad_request", "{error}");
        assert_eq!(error["error"]["type"], "bad_request", "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    // Not JSON at all, an unknown /v1 path, a wrong method: the same shape, with `type`.
    let (status, _, body) = send(server.addr, "POST", "/v1/chat/completions", &[], "{").await;
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["type"],
        "bad_request"
    );
    let (status, nothing) = server.get("/v1/nothing").await;
    assert_eq!(
        (status, &nothing["error"]["type"]),
        (404, &json!("not_found"))
    );
    let (status, wrong) = server.get("/v1/chat/completions").await;
    assert_eq!(
        (status, &wrong["error"]["type"]),
        (405, &json!("method_not_allowed"))
    );
    // The rest of the API keeps its shape exactly.
    let (_, other) = server.get("/api/nothing").await;
    assert!(other["error"].get("type").is_none(), "{other}");
    assert_eq!(server.state.running_turns(), 0);
    server.stop().await;
}

#[tokio::test]
async fn without_a_model_a_completion_is_503_and_no_session_is_made() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let (status, error) = complete(&server, user("hi")).await;
    assert_eq!(status, 503, "{error}");
    assert_eq!(error["error"]["code"], "model_not_loaded");
    assert_eq!(error["error"]["type"], "model_not_loaded");
    assert_eq!(error["status"], "none");
    let (_, sessions) = server.get("/api/sessions").await;
    assert_eq!(sessions["sessions"], json!([]));
    let (status, models) = server.get("/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(models["data"].as_array().unwrap().len(), 1);
    server.stop().await;
}

/// The interpreter with the `openai` package: `$IMURUN_PYTHON`, else the venv `scripts/setup`
/// makes.
fn python() -> PathBuf {
    match std::env::var_os("IMURUN_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => {
            let home = std::env::var_os("HOME").expect("HOME is set");
            PathBuf::from(home).join(".cache/imurun-venv/bin/python")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_openai_python_client_lists_models_and_gets_answers() {
    let python = python();
    let dirs = Dirs::new();
    let answer = "Hello from imurun, word by word.";
    let server = TestServer::start(&dirs, Some(WordModel::new(&[], answer))).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/openai/check_facade.py");
    let base_url = format!("http://{}/v1", server.addr);
    let run = tokio::task::spawn_blocking(move || {
        Command::new(&python)
            .arg(&script)
            .arg(&base_url)
            .arg(answer)
            .output()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot run {}: {error}; run scripts/setup (it makes the venv with the \
                     `openai` package), or point IMURUN_PYTHON at a Python that has it",
                    python.display()
                )
            })
    });
    let output = tokio::time::timeout(WAIT_MAX * 3, run)
        .await
        .expect("the Python check ends in time")
        .expect("the Python check's task");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the openai client check failed ({}); if the package is missing, run scripts/setup\n\
         stdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    let summary: Value = serde_json::from_str(stdout.trim()).expect("a JSON summary");
    assert_eq!(summary["answer"], answer);
    assert_eq!(summary["streamed"], answer);
    assert!(summary["chunks"].as_u64().unwrap() > 1, "{summary}");
    server.stop().await;
}
