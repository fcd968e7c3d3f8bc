//! Benchmark of the embedded back-end with the default model: load time, prompt processing
//! (a ~600-token prompt) and generation (128 tokens) in tokens per second, medians of
//! several runs. Run with `cargo bench -p imurun-model --bench embedded`.
//!
//! The model is found like the tests find it (`IMURUN_MODEL`, `../shared/models/`,
//! `~/.imurun/models/`). When `LLAMA_BENCH` names a `llama-bench` binary (llama.cpp's own
//! benchmark, built from the same llama.cpp), it runs in the same process run with the same
//! sizes and threads, and the ratios show what the wrapper costs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use imurun_core::{GenerateRequest, Message, Model};
use imurun_model::{EmbeddedConfig, EmbeddedModel, FinishReason};

const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const PROMPT_TOKENS: usize = 600;
const GENERATED_TOKENS: usize = 128;
const RUNS: usize = 5;

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: stay quick then.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("embedded bench: pass --bench (cargo bench) to run it");
        return;
    }
    let path = model_path();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = || EmbeddedConfig {
        n_ctx: 2048,
        threads: Some(u32::try_from(threads).unwrap()),
        reuse_prompt_prefix: false,
        ..EmbeddedConfig::default()
    };
    println!(
        "model {}, {threads} threads, median of {RUNS} runs",
        path.display()
    );

    let mut load = Vec::new();
    for _ in 0..RUNS {
        load.push(EmbeddedModel::load(&path, config()).unwrap().load_time());
    }
    let model = EmbeddedModel::load(&path, config()).unwrap();
    println!(
        "load time: {:.1} ms",
        median_duration(&mut load).as_secs_f64() * 1e3
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let prompt = long_prompt(&model);
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
        "generation ({} tokens): {generation_speed:.1} tokens/s",
        generated.iter().max().copied().unwrap_or(0)
    );

    match std::env::var_os("LLAMA_BENCH") {
        Some(llama_bench) => {
            reference(
                Path::new(&llama_bench),
                &path,
                threads,
                prompt_speed,
                generation_speed,
            );
        }
        None => println!("llama-bench: not run (set LLAMA_BENCH to its path to compare)"),
    }
}

/// Runs llama.cpp's `llama-bench` with the same sizes and prints its figures and ratios.
fn reference(llama_bench: &Path, model: &Path, threads: usize, ours_pp: f64, ours_tg: f64) {
    let output = std::process::Command::new(llama_bench)
        .args(["-m", &model.to_string_lossy()])
        .args([
            "-p",
            &PROMPT_TOKENS.to_string(),
            "-n",
            &GENERATED_TOKENS.to_string(),
        ])
        .args([
            "-t",
            &threads.to_string(),
            "-r",
            &RUNS.to_string(),
            "-o",
            "jsonl",
        ])
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
            "llama-bench {what}: {speed:.1} tokens/s (mean of {RUNS}); imurun / llama-bench = {:.2}",
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

fn model_path() -> PathBuf {
    if let Some(path) = std::env::var_os("IMURUN_MODEL") {
        return PathBuf::from(path);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for ancestor in manifest.ancestors() {
        let candidate = ancestor.join("shared").join("models").join(MODEL_FILE);
        if candidate.is_file() {
            return candidate;
        }
    }
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let candidate = home.join(".imurun").join("models").join(MODEL_FILE);
    assert!(
        candidate.is_file(),
        "{MODEL_FILE} not found: run scripts/fetch-model.sh"
    );
    candidate
}

fn per_second(tokens: usize, time: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let tokens = tokens as f64;
    tokens / time.as_secs_f64().max(1e-9)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn median_duration(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}
