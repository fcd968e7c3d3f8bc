//! Parser throughput: plain answers with no marker, the sample corpus, a long answer with
//! one call at the end, and the stream guard's cost per token. The baseline in the same
//! run is `serde_json::from_str` on the already-valid JSON of the same calls: the floor any
//! parser pays just to read them.
//!
//! Run: `cargo bench -p imurun-calls --bench parse`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use imurun_calls::{StreamGuard, parse_tool_calls};
use imurun_core::{ToolIndex, ToolSpec};
use serde_json::Value;

fn tools() -> ToolIndex {
    let text = include_str!("../tests/all/fixtures/corpus-tools.json");
    let specs: Vec<ToolSpec> = serde_json::from_str(text).expect("the fixture is valid JSON");
    ToolIndex::offering(specs)
}

/// Deterministic prose with the punctuation real answers have, and no call marker.
fn plain_answer(bytes: usize) -> String {
    let words = [
        "the",
        "model",
        "answers",
        "with",
        "plain",
        "text,",
        "and",
        "sometimes",
        "a",
        "list:",
        "first",
        "second.",
        "Rust's",
        "borrow",
        "checker",
        "keeps",
        "data",
        "races",
        "away;",
        "results",
        "(see",
        "above)",
        "are",
        "1.5x",
        "faster",
        "-",
        "\"quoted\"",
        "words!",
    ];
    let mut text = String::with_capacity(bytes + 16);
    let mut seed = 0x9E37_79B9_u32;
    while text.len() < bytes {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        text.push_str(words[seed as usize % words.len()]);
        text.push(if seed.is_multiple_of(11) { '\n' } else { ' ' });
    }
    text
}

/// The sample corpus in the repository's `testdata/corpus`.
fn sample_corpus() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/corpus/toolcalls-sample.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn benches(c: &mut Criterion) {
    let index = tools();

    let plain = plain_answer(256 * 1024);
    let mut group = c.benchmark_group("plain answer, no marker");
    group.throughput(Throughput::Bytes(plain.len() as u64));
    group.bench_function("parse_tool_calls", |b| {
        b.iter(|| parse_tool_calls(black_box(&plain), &index))
    });
    group.finish();

    let corpus = sample_corpus();
    let texts: Vec<String> = corpus
        .iter()
        .filter_map(|case| case["text"].as_str().map(str::to_owned))
        .collect();
    let corpus_bytes: usize = texts.iter().map(String::len).sum();
    // The same calls as already-valid JSON, one document per call.
    let valid_calls: Vec<String> = corpus
        .iter()
        .filter_map(|case| case["expect"]["calls"].as_array())
        .flatten()
        .map(|call| call.to_string())
        .collect();
    let valid_bytes: usize = valid_calls.iter().map(String::len).sum();

    let mut group = c.benchmark_group("sample corpus");
    group.throughput(Throughput::Bytes(corpus_bytes as u64));
    group.bench_function("parse_tool_calls", |b| {
        b.iter(|| {
            for text in &texts {
                black_box(parse_tool_calls(black_box(text), &index));
            }
        })
    });
    group.throughput(Throughput::Bytes(valid_bytes as u64));
    group.bench_function("baseline serde_json on the valid calls", |b| {
        b.iter(|| {
            for text in &valid_calls {
                black_box(serde_json::from_str::<Value>(black_box(text)).expect("valid JSON"));
            }
        })
    });
    group.finish();

    let mut long = plain_answer(64 * 1024);
    long.push_str("\n```tool\n{\"name\": \"web_search\", \"args\": {\"query\": \"latest rust release\"}}\n```");
    let mut group = c.benchmark_group("64 KB answer, one call at the end");
    group.throughput(Throughput::Bytes(long.len() as u64));
    group.bench_function("parse_tool_calls", |b| {
        b.iter(|| parse_tool_calls(black_box(&long), &index))
    });
    group.finish();

    // Tokens of about four bytes, as a tokenizer emits them.
    let tokens: Vec<&str> = {
        let mut tokens = Vec::new();
        let mut start = 0;
        for (at, _) in long.char_indices() {
            if at - start >= 4 {
                tokens.push(&long[start..at]);
                start = at;
            }
        }
        tokens.push(&long[start..]);
        tokens
    };
    let parsed = parse_tool_calls(&long, &index);
    let mut group = c.benchmark_group("stream guard");
    group.throughput(Throughput::Elements(tokens.len() as u64));
    group.bench_function("per token", |b| {
        b.iter(|| {
            let mut guard = StreamGuard::new();
            let mut released = 0;
            for token in &tokens {
                released += guard.push(black_box(token)).len();
            }
            released += guard.finish(&parsed).len();
            black_box(released)
        })
    });
    group.finish();
}

criterion_group!(parse, benches);
criterion_main!(parse);
