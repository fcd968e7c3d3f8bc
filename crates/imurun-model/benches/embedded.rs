//! Benchmark of the embedded back-end with the default model, in one run:
//!
//! - load time;
//! - prompt processing (a ~600-token prompt, nothing reused) and generation (128 tokens of a
//!   story, greedy with the repetition penalty and the call grammar waiting, as `imurun ask`
//!   generates), in tokens per second, next to llama.cpp's own `llama-bench` when
//!   `LLAMA_BENCH` names one built from the same llama.cpp (`scripts/build-llama-bench.sh`);
//! - time to first token, with and without reuse: step 2 of a tool turn (the same system
//!   message, question and call again, plus the tool's result), and the second turn of a
//!   session after another session's turn ran in between; each with the prompt cache, with
//!   only the context's last prompt kept (the cache off), and with nothing reused.
//!
//! Medians of several runs, the configurations interleaved run by run (the machine is
//! shared, so they see the same noise). Run with
//! `cargo bench --workspace --bench embedded`.
//!
//! The model is found like the tests find it (`imurun_testkit::default_model_path`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use imurun_core::{GenerateRequest, Message, Model, ToolIndex, ToolSpec};
use imurun_model::{EmbeddedConfig, EmbeddedModel, FinishReason, ToolCallGrammar};

const PROMPT_TOKENS: usize = 600;
const GENERATED_TOKENS: usize = 128;
const RUNS: usize = 5;
/// What a step generates before the one whose first token is timed: enough for a call or
/// a short answer.
const STEP_TOKENS: usize = 48;

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: stay quick then.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("embedded bench: pass --bench (cargo bench) to run it");
        return;
    }
    let path = imurun_testkit::default_model_path();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = |reuse: bool, slots: usize| EmbeddedConfig {
        threads: Some(u32::try_from(threads).unwrap()),
        reuse_prompt_prefix: reuse,
        prompt_cache_slots_max: slots,
        ..EmbeddedConfig::default()
    };
    println!(
        "model {}, {threads} threads, median of {RUNS} runs",
        path.display()
    );

    let mut load = Vec::new();
    for _ in 0..RUNS {
        load.push(
            EmbeddedModel::load(&path, config(false, 0))
                .unwrap()
                .load_time(),
        );
    }
    println!(
        "load time: {:.1} ms",
        median_duration(&mut load).as_secs_f64() * 1e3
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let fresh = EmbeddedModel::load(&path, config(false, 0)).unwrap();
    let grammar = Arc::new(ToolCallGrammar::from_index(&tools()).unwrap());
    let fresh = fresh.with_tool_grammar(Some(Arc::clone(&grammar)));
    let (prompt_speed, generation_speed) = speeds(&runtime, &fresh);

    let cached = EmbeddedModel::load(&path, config(true, 4))
        .unwrap()
        .with_tool_grammar(Some(Arc::clone(&grammar)));
    let live_only = EmbeddedModel::load(&path, config(true, 0))
        .unwrap()
        .with_tool_grammar(Some(grammar));
    let setups = [
        ("prompt cache", &cached),
        ("last prompt only", &live_only),
        ("no reuse", &fresh),
    ];
    let mut tool_step = vec![Vec::new(); setups.len()];
    let mut second_turn = vec![Vec::new(); setups.len()];
    for run in 0..RUNS {
        for (index, (_, model)) in setups.iter().enumerate() {
            tool_step[index].push(runtime.block_on(tool_turn_step2(model, run)));
            second_turn[index].push(runtime.block_on(second_turn_after_another(model, run)));
        }
    }
    report_ttft("step 2 of a tool turn", &setups, &mut tool_step);
    report_ttft(
        "a session's second turn after another session's turn",
        &setups,
        &mut second_turn,
    );
    let stats = cached.prompt_cache_stats();
    println!(
        "prompt cache: {} slots, {:.1} MiB held (bounds {} slots, {} MiB); {} saves, {} restores, \
         {} evictions",
        stats.slots,
        mib(stats.bytes),
        stats.slots_max,
        stats.bytes_max / (1024 * 1024),
        stats.saves,
        stats.restores,
        stats.evictions
    );

    match std::env::var_os("LLAMA_BENCH") {
        Some(llama_bench) => reference(
            Path::new(&llama_bench),
            &path,
            threads,
            prompt_speed,
            generation_speed,
        ),
        None => println!("llama-bench: not run (set LLAMA_BENCH to its path to compare)"),
    }
}

/// Prompt processing and generation speeds, nothing reused.
fn speeds(runtime: &tokio::runtime::Runtime, model: &EmbeddedModel) -> (f64, f64) {
    let prompt = long_prompt(model);
    let prompt_tokens = model.count_tokens(&prompt);
    let mut prompt_speeds = Vec::new();
    for _ in 0..RUNS {
        let mut request = GenerateRequest::new(prompt.clone());
        request.max_tokens = Some(1);
        let generation = runtime
            .block_on(model.generate_detailed(&request, &mut |_| {}))
            .unwrap();
        prompt_speeds.push(per_second(generation.prompt_tokens, generation.prompt_time));
    }
    let prompt_speed = median(&mut prompt_speeds);
    println!("prompt processing ({prompt_tokens} tokens): {prompt_speed:.1} tokens/s");

    let story = vec![Message::user(
        "Write a very long, detailed story about a lighthouse keeper and a storm. \
         Do not stop early.",
    )];
    let mut generation_speeds = Vec::new();
    let mut generated = Vec::new();
    for _ in 0..RUNS {
        let mut request = GenerateRequest::new(story.clone());
        request.max_tokens = Some(GENERATED_TOKENS);
        let generation = runtime
            .block_on(model.generate_detailed(&request, &mut |_| {}))
            .unwrap();
        if generation.finish != FinishReason::MaxTokens {
            println!("note: a run ended early ({:?})", generation.finish);
        }
        generated.push(generation.generated_tokens);
        generation_speeds.push(per_second(
            generation.generated_tokens,
            generation.generation_time,
        ));
    }
    let generation_speed = median(&mut generation_speeds);
    println!(
        "generation ({} tokens, greedy, repetition penalty, call grammar waiting): \
         {generation_speed:.1} tokens/s",
        generated.iter().max().copied().unwrap_or(0)
    );
    (prompt_speed, generation_speed)
}

/// Step 1 of a tool turn (the model's call), then step 2 (the call and the tool's result
/// added): the time to step 2's first token.
async fn tool_turn_step2(model: &EmbeddedModel, run: usize) -> Duration {
    let city = CITIES[run % CITIES.len()];
    let question = Message::user(format!("What's the weather in {city} right now?"));
    let mut messages = vec![Message::system(system_message()), question];
    let reply = generate(model, &messages, STEP_TOKENS).await.0;
    messages.push(Message::assistant(reply));
    messages.push(Message::user(format!(
        "[tool result: get_weather]\n{city}: 12 °C, overcast, wind 4 m/s from the west, \
         humidity 71%. Tomorrow: 14 °C, sunny spells."
    )));
    generate(model, &messages, 1).await.1
}

/// Session A's first turn (a search and its result, then the answer), session B's first
/// turn, then A's second turn: the time to its first token.
async fn second_turn_after_another(model: &EmbeddedModel, run: usize) -> Duration {
    let topic = TOPICS[run % TOPICS.len()];
    let mut a = vec![
        Message::system(system_message()),
        Message::user(format!("What is new about {topic}?")),
        Message::assistant(format!(
            "```tool\n{{\"name\": \"web_search\", \"args\": {{\"query\": \"{topic} news\"}}}}\n```"
        )),
        Message::user(format!(
            "[tool result: web_search]\n{}",
            search_results(topic)
        )),
    ];
    let answer = generate(model, &a, STEP_TOKENS).await.0;
    a.push(Message::assistant(answer));

    let other = TOPICS[(run + 1) % TOPICS.len()];
    let b = vec![
        Message::system(system_message()),
        Message::user(format!("Tell me in two sentences what {other} is.")),
    ];
    generate(model, &b, STEP_TOKENS).await;

    a.push(Message::user(
        "Which of those is the most important, and why?",
    ));
    generate(model, &a, 1).await.1
}

/// Generates; returns the text and the time to the first streamed piece.
async fn generate(
    model: &EmbeddedModel,
    messages: &[Message],
    max_tokens: usize,
) -> (String, Duration) {
    let mut request = GenerateRequest::new(messages.to_vec());
    request.max_tokens = Some(max_tokens);
    let started = Instant::now();
    let mut first = None;
    let text = model
        .generate(&request, &mut |_| {
            first.get_or_insert_with(|| started.elapsed());
        })
        .await
        .unwrap();
    (text, first.unwrap_or_else(|| started.elapsed()))
}

fn report_ttft(what: &str, setups: &[(&str, &EmbeddedModel)], times: &mut [Vec<Duration>]) {
    println!("time to first token, {what}:");
    let medians: Vec<Duration> = times.iter_mut().map(|t| median_duration(t)).collect();
    let baseline = medians[medians.len() - 1];
    for ((name, _), median) in setups.iter().zip(&medians) {
        println!(
            "  {name:>16}: {:7.1} ms  (no reuse / this = {:.1}×)",
            median.as_secs_f64() * 1e3,
            baseline.as_secs_f64() / median.as_secs_f64().max(1e-9)
        );
    }
}

/// Runs llama.cpp's `llama-bench` with the same sizes and threads, flash attention off as
/// the back-end runs, and prints its figures and the ratios.
fn reference(llama_bench: &Path, model: &Path, threads: usize, ours_pp: f64, ours_tg: f64) {
    let output = std::process::Command::new(llama_bench)
        .args(["-m", &model.to_string_lossy()])
        .args([
            "-p",
            &PROMPT_TOKENS.to_string(),
            "-n",
            &GENERATED_TOKENS.to_string(),
        ])
        .args(["-t", &threads.to_string(), "-fa", "0"])
        .args(["-r", &RUNS.to_string(), "-o", "jsonl"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines() {
        let Ok(result) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let n_prompt = result["n_prompt"].as_u64().unwrap_or(0);
        let speed = result["avg_ts"].as_f64().unwrap_or(0.0);
        let (what, ours) = if n_prompt > 0 {
            ("prompt processing", ours_pp)
        } else {
            ("generation", ours_tg)
        };
        println!(
            "llama-bench {what}: {speed:.1} tokens/s (mean of {RUNS}; build {}); \
             imurun / llama-bench = {:.2}",
            result["build_commit"].as_str().unwrap_or("?"),
            ours / speed
        );
    }
    if !output.status.success() {
        println!(
            "llama-bench failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// A user message whose rendered prompt is about `PROMPT_TOKENS` tokens.
fn long_prompt(model: &EmbeddedModel) -> Vec<Message> {
    let sentence = "The quick brown fox jumps over the lazy dog near the quiet river bank. ";
    let mut text = String::new();
    loop {
        let messages = vec![Message::user(format!("{text}Summarise the text above."))];
        if model.count_tokens(&messages) >= PROMPT_TOKENS {
            return messages;
        }
        text.push_str(sentence);
    }
}

const CITIES: &[&str] = &[
    "Oslo", "Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Perth",
];
const TOPICS: &[&str] = &[
    "solar panels",
    "electric buses",
    "heat pumps",
    "river restoration",
    "urban gardens",
    "night trains",
    "tidal power",
];

/// A system message shaped like the agent's: persona, rules, the tool prompt with its
/// tools and two worked examples (about 900 tokens).
fn system_message() -> String {
    let mut text = String::from(
        "You are imurun, a helpful assistant running on this person's own computer.\n\n\
         Answer in the language of the question. Be direct and brief: lead with the answer, \
         then only the detail that helps. Use Markdown only when it makes the answer easier \
         to read. If you do not know, say so. Live data (the time, weather, prices, news, \
         scores, anything current) may only be stated from a tool result or the Context \
         block. If you have neither, say that live data can't be checked right now, and give \
         no current values from memory.\n\nToday is Monday, 30 November 2026.\n\n## Tools\n\
         You can call a tool. To call one, reply with only a ```tool block that holds one \
         JSON object, then stop:\n```tool\n{\"name\": \"tool_name\", \"args\": {\"parameter\": \
         \"value\"}}\n```\nThe result comes back in a message headed [tool result: \
         tool_name]. Then answer, or call another tool.\n\nWhen to use a tool:\n\
         1. Anything about the present: the time, the weather, prices, news, scores, what is \
         latest. Your memory is out of date.\n2. Anything in the person's files or on this \
         computer.\n3. Anything you would otherwise have to guess.\nOtherwise answer \
         directly, without a tool.\n\nTools:\n",
    );
    for tool in tools().runnable() {
        text.push_str(&format!(
            "- {}: {}\n",
            tool.spec.name, tool.spec.description
        ));
    }
    text.push_str(
        "\nExample 1:\nUser: What's the weather in Oslo right now?\nYou:\n```tool\n\
         {\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n```\n\
         User: [tool result: get_weather]\nOslo: 4 °C, light rain, wind 5 m/s\n\
         You: It is 4 °C with light rain in Oslo right now.\n\n\
         Example 2:\nUser: What is the latest Python release?\nYou:\n```tool\n\
         {\"name\": \"web_search\", \"args\": {\"query\": \"latest Python release\"}}\n```\n\
         User: [tool result: web_search]\npython.org: Python 3.14.0 was released on \
         7 October 2025.\nYou: The latest release is Python 3.14.0, from 7 October 2025.\n",
    );
    text
}

/// The built-in tools' names, descriptions and parameters, as the grammar and the tool
/// prompt see them.
fn tools() -> ToolIndex {
    let string = |name: &str| serde_json::json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]});
    let specs = [
        (
            "web_search",
            "Search the web. Use it for anything about the present or anything you are unsure of.",
            string("query"),
        ),
        (
            "file_read",
            "Read a text file in the workspace.",
            string("path"),
        ),
        (
            "file_write",
            "Write a text file in the workspace, replacing it if it exists.",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
        ),
        (
            "list_dir",
            "List a folder in the workspace.",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ),
        (
            "shell",
            "Run a shell command (sh -c) in the workspace root; stdout and stderr come back together, at most 20000 characters.",
            string("command"),
        ),
        (
            "get_time",
            "The current date and time, in a time zone.",
            serde_json::json!({"type": "object", "properties": {"timezone": {"type": "string"}}}),
        ),
        (
            "get_weather",
            "The current weather and forecast for a place.",
            string("location"),
        ),
        (
            "calculate",
            "Work out arithmetic exactly: + - * / % ^, parentheses, sqrt, round, min, max, pi.",
            string("expression"),
        ),
        (
            "fetch_url",
            "Read a web page (http or https) as text.",
            string("url"),
        ),
    ];
    ToolIndex::offering(
        specs
            .into_iter()
            .map(|(name, description, parameters)| ToolSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            }),
    )
}

/// A page of search results about `topic` (about 400 tokens).
fn search_results(topic: &str) -> String {
    (1..=6)
        .map(|n| {
            format!(
                "{n}. example{n}.org — {topic}: a report from this week. Researchers and city \
                 officials describe how {topic} changed costs, jobs and daily life in three \
                 regions, with figures for 2025 and plans for the next five years. Critics \
                 point to open questions about funding and maintenance.\n"
            )
        })
        .collect()
}

fn per_second(tokens: usize, time: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let tokens = tokens as f64;
    tokens / time.as_secs_f64().max(1e-9)
}

#[allow(clippy::cast_precision_loss)]
fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn median_duration(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}
