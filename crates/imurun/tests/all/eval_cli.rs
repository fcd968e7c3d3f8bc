//! `imurun eval bfcl` with the scripted model: a right model, a wrong one, and one that fails
//! (a dead model server must never score, least of all in `irrelevance`, where "no call" is
//! right); and `--native-tools` against a local server answering in OpenAI's tool-call
//! format.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::support::run_imurun;

/// Two cases of each of `simple_python` and `irrelevance`, in BFCL's own format.
fn bfcl_data(dir: &Path) {
    let function = |name: &str| {
        json!({"name": name, "description": "Area of a triangle.", "parameters": {"type": "dict",
            "properties": {"base": {"type": "integer", "description": "base"},
                           "height": {"type": "integer", "description": "height"}},
            "required": ["base", "height"]}})
    };
    let question = |id: &str, text: &str| {
        json!({"id": id, "question": [[{"role": "user", "content": text}]],
               "function": [function("triangle_area")]})
    };
    let lines = |values: &[Value]| {
        values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    };
    std::fs::create_dir_all(dir.join("possible_answer")).unwrap();
    std::fs::write(
        dir.join("BFCL_v4_simple_python.json"),
        lines(&[
            question(
                "simple_python_0",
                "Area of a triangle with base 10 and height 5?",
            ),
            question(
                "simple_python_1",
                "Area of a triangle with base 3 and height 4?",
            ),
        ]),
    )
    .unwrap();
    std::fs::write(
        dir.join("possible_answer/BFCL_v4_simple_python.json"),
        lines(&[
            json!({"id": "simple_python_0", "ground_truth": [{"triangle_area": {"base": [10], "height": [5]}}]}),
            json!({"id": "simple_python_1", "ground_truth": [{"triangle_area": {"base": [3], "height": [4]}}]}),
        ]),
    )
    .unwrap();
    std::fs::write(
        dir.join("BFCL_v4_irrelevance.json"),
        lines(&[
            question("irrelevance_0", "Who wrote Hamlet, in 1600 or 1601?"),
            question("irrelevance_1", "What is the capital of Peru?"),
        ]),
    )
    .unwrap();
}

fn call(base: u32, height: u32) -> Value {
    json!({"text": format!(
        "```tool\n{{\"name\": \"triangle_area\", \"args\": {{\"base\": {base}, \"height\": {height}}}}}\n```"
    )})
}

fn failure() -> Value {
    json!({"error": {"kind": "transport", "message": "connection refused"}})
}

/// Runs the two categories against a model replaying `replies` (one per case, in order).
fn eval(replies: &Value, extra: &[&str]) -> (Output, String) {
    let home = tempfile::tempdir().unwrap();
    eval_in(
        home.path(),
        replies,
        &["simple_python", "irrelevance"],
        extra,
    )
}

/// Runs `categories` in `home` (its BFCL data, script and predictions file kept between runs).
fn eval_in(home: &Path, replies: &Value, categories: &[&str], extra: &[&str]) -> (Output, String) {
    let data = home.join("bfcl");
    bfcl_data(&data);
    let script = home.join("script.json");
    std::fs::write(&script, json!({"replies": replies}).to_string()).unwrap();
    let model = format!("scripted:{}", script.display());
    let out = home.join("predictions.jsonl");
    // The questions name their tool, so the loop would start each reply as a call; these
    // tests are about scoring, and their scripted replies are whole replies.
    let mut args = vec![
        "eval",
        "bfcl",
        "--data",
        data.to_str().unwrap(),
        "--model",
        &model,
        "--call-prefill",
        "off",
        "--out",
        out.to_str().unwrap(),
    ];
    for category in categories {
        args.extend_from_slice(&["--category", category]);
    }
    args.extend_from_slice(extra);
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.as_os_str())];
    let output = run_imurun(&args, "", &envs);
    let predictions = std::fs::read_to_string(&out).unwrap_or_default();
    (output, predictions)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_right_model_scores_every_case() {
    let replies = json!([call(10, 5), call(3, 4), {"text": "Shakespeare."}, {"text": "Lima."}]);
    let (output, _) = eval(&replies, &[]);
    assert!(output.status.success(), "{}", stdout(&output));
    let text = stdout(&output);
    assert!(
        text.contains("simple_python         2/2     100.0%\n"),
        "{text}"
    );
    assert!(
        text.contains("irrelevance           2/2     100.0%\n"),
        "{text}"
    );
}

#[test]
fn a_wrong_model_scores_nothing_and_is_no_error() {
    // The irrelevant calls use numbers the questions hold, so they are the model's own calls
    // (a first call with nothing of the question in it would be dropped by the loop).
    let replies = json!([call(1, 1), {"text": "It is 25."}, call(1600, 1601), call(6, 6)]);
    let (output, predictions) = eval(&replies, &[]);
    assert!(output.status.success(), "{}", stdout(&output));
    let text = stdout(&output);
    assert!(
        text.contains("simple_python         0/2       0.0%\n"),
        "{text}"
    );
    assert!(
        text.contains("irrelevance           0/2       0.0%\n"),
        "{text}"
    );
    assert!(!text.contains("error"), "{text}");
    // The run's settings, then one line per case.
    assert_eq!(predictions.lines().count(), 5);
    let header: Value = serde_json::from_str(predictions.lines().next().unwrap()).unwrap();
    assert!(header["run"]["calling"].is_string(), "{predictions}");
    // A case with no call keeps what the model wrote instead.
    let second: Value = serde_json::from_str(predictions.lines().nth(2).unwrap()).unwrap();
    assert_eq!(second["id"], "simple_python_1");
    assert_eq!(second["calls"], json!([]));
    assert_eq!(second["answer"], "It is 25.", "{predictions}");
}

#[test]
fn a_failing_model_is_counted_as_errors_never_as_right() {
    let replies = json!([failure(), call(3, 4), failure(), failure()]);
    let (output, predictions) = eval(&replies, &[]);
    let text = stdout(&output);
    // One right case of four; three failures, scored wrong even in `irrelevance`.
    assert!(
        text.contains("simple_python         1/2      50.0%  1 error\n"),
        "{text}"
    );
    assert!(
        text.contains("irrelevance           0/2       0.0%  2 errors\n"),
        "{text}"
    );
    assert!(
        text.contains("first error: the model could not be reached: connection refused"),
        "{text}"
    );
    // 3 of 4 is past the default 10%: the run fails, saying why.
    assert_eq!(output.status.code(), Some(1), "{text}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("failed on 3 of 4 cases (75.0%"), "{stderr}");
    let errors: Vec<Value> = predictions
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|prediction: &Value| prediction.get("error").is_some())
        .collect();
    assert_eq!(errors.len(), 3, "{predictions}");

    // A share the person allows: the same run passes.
    let (allowed, _) = eval(&replies, &["--max-error-share", "0.8"]);
    assert!(allowed.status.success(), "{}", stdout(&allowed));
    let (bad, _) = eval(&replies, &["--max-error-share", "2"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_stopped_run_goes_on_where_it_stopped_and_never_mixes_two_runs() {
    let home = tempfile::tempdir().unwrap();
    // The first run answers simple_python's first case, fails on its second, and is stopped
    // while writing: its last line is cut short.
    let (first, _) = eval_in(
        home.path(),
        &json!([call(10, 5), failure()]),
        &["simple_python"],
        &["--max-error-share", "1"],
    );
    assert!(first.status.success(), "{}", stdout(&first));
    let out = home.path().join("predictions.jsonl");
    let mut text = std::fs::read_to_string(&out).unwrap();
    text.push_str("{\"id\": \"irrelevance_0\", \"ca");
    std::fs::write(&out, &text).unwrap();

    // The second run asks only what is missing: the failed case and both irrelevance cases
    // (the cut line is dropped). The script holds just those three replies, in that order.
    let (second, predictions) = eval_in(
        home.path(),
        &json!([call(3, 4), {"text": "Shakespeare."}, {"text": "Lima."}]),
        &["simple_python", "irrelevance"],
        &[],
    );
    let text = stdout(&second);
    assert!(second.status.success(), "{text}");
    assert!(text.contains("1 cases answered before"), "{text}");
    assert!(
        text.contains("simple_python         2/2     100.0%\n"),
        "{text}"
    );
    assert!(
        text.contains("irrelevance           2/2     100.0%\n"),
        "{text}"
    );
    let ids: Vec<String> = predictions
        .lines()
        .skip(1)
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        ids,
        [
            "simple_python_0",
            "simple_python_1",
            "simple_python_1",
            "irrelevance_0",
            "irrelevance_1"
        ],
        "{predictions}"
    );

    // Other settings never continue the file; --fresh starts it over.
    let (other, _) = eval_in(
        home.path(),
        &json!([]),
        &["simple_python"],
        &["--no-grammar"],
    );
    assert_eq!(other.status.code(), Some(2), "{}", stdout(&other));
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        stderr.contains("holds a run of") && stderr.contains("--fresh"),
        "{stderr}"
    );
    let (fresh, predictions) = eval_in(
        home.path(),
        &json!([call(1, 1), call(3, 4)]),
        &["simple_python"],
        &["--no-grammar", "--fresh"],
    );
    assert!(fresh.status.success(), "{}", stdout(&fresh));
    assert!(stdout(&fresh).contains("simple_python         1/2      50.0%\n"));
    assert_eq!(predictions.lines().count(), 3, "{predictions}");
}

/// An OpenAI-compatible server with its own tool calling, as `--native-tools` asks it: a
/// question holding `10` is answered with a call of the offered tool with the question's
/// numbers, one about a triangle's base 3 likewise, anything else with text. Every chat
/// request's JSON body is kept.
struct NativeServer {
    url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl NativeServer {
    fn start() -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some(value) = header.to_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let (status, reply) = if path == "/v1/chat/completions" {
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    kept.lock().unwrap().push(request.clone());
                    let asked = request["messages"].to_string();
                    let tool = request["tools"][0]["function"]["name"].clone();
                    let call = |base: u32, height: u32| {
                        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                            "type": "function", "function": {"name": tool,
                            "arguments": json!({"base": base, "height": height}).to_string()}}]})
                    };
                    let message = if asked.contains("base 10") {
                        call(10, 5)
                    } else if asked.contains("base 3") {
                        call(3, 4)
                    } else {
                        json!({"role": "assistant", "content": "I cannot answer that with a tool."})
                    };
                    let finish = if message["tool_calls"].is_null() {
                        "stop"
                    } else {
                        "tool_calls"
                    };
                    (
                        "200 OK",
                        json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}]}),
                    )
                } else {
                    ("404 Not Found", json!({"error": {"message": "not found"}}))
                };
                let reply = reply.to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        Self { url, requests }
    }
}

#[test]
fn native_tools_asks_the_server_s_own_tool_calling_with_each_case_s_functions() {
    let server = NativeServer::start();
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("bfcl");
    bfcl_data(&data);
    let out = home.path().join("native.jsonl");
    let model = format!("openai:{}", server.url);
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let output = run_imurun(
        &[
            "eval",
            "bfcl",
            "--data",
            data.to_str().unwrap(),
            "--model",
            &model,
            "--native-tools",
            "--category",
            "simple_python",
            "--category",
            "irrelevance",
            "--out",
            out.to_str().unwrap(),
        ],
        "",
        &envs,
    );
    let text = stdout(&output);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("(native tool calls)"), "{text}");
    assert!(
        text.contains("simple_python         2/2     100.0%\n"),
        "{text}"
    );
    assert!(
        text.contains("irrelevance           2/2     100.0%\n"),
        "{text}"
    );
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 4);
    for request in requests.iter() {
        // The case's function as the request's tool, and the question as it is: none of
        // imurun's prompt.
        assert_eq!(request["tools"][0]["function"]["name"], "triangle_area");
        let messages = request["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1, "{request}");
        assert_eq!(messages[0]["role"], "user");
    }
    let header = std::fs::read_to_string(&out).unwrap();
    assert!(header.lines().next().unwrap().contains("native tool calls"));

    // Only a server with its own tool calling can be asked that way.
    let script = home.path().join("script.json");
    std::fs::write(&script, json!({"replies": []}).to_string()).unwrap();
    let scripted = format!("scripted:{}", script.display());
    let refused = run_imurun(
        &[
            "eval",
            "bfcl",
            "--data",
            data.to_str().unwrap(),
            "--model",
            &scripted,
            "--native-tools",
        ],
        "",
        &envs,
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--native-tools needs an openai:URL model"),
        "{stderr}"
    );
}
