//! The parser stays linear on pathological input: work is counted in the innermost byte
//! loops (never timed) and doubling the input may at most double it, with 10% slack.

use imurun_calls::parse_tool_calls_counting;

use crate::common::corpus_tools;

/// Bytes of input at the smaller size; the larger is twice this.
const SIZE: usize = 512 * 1024;

/// A ratio above this means the work grew faster than the input.
const RATIO_MAX: f64 = 2.2;

/// Work per input byte above this means a constant factor went wrong even if linear.
const WORK_PER_BYTE_MAX: u64 = 80;

fn repeat_to(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes.div_ceil(unit.len()))
}

fn work(text: &str) -> u64 {
    let (_, work) = parse_tool_calls_counting(text, &corpus_tools());
    work.bytes()
}

fn check_family(name: &str, make: impl Fn(usize) -> String) {
    let small = make(SIZE);
    let large = make(2 * SIZE);
    let (work_small, work_large) = (work(&small), work(&large));
    let ratio = work_large as f64 / work_small.max(1) as f64;
    assert!(
        ratio <= RATIO_MAX,
        "{name}: work {work_small} -> {work_large} (x{ratio:.2}) when the input doubled"
    );
    let per_byte = work_large / large.len() as u64;
    assert!(
        per_byte <= WORK_PER_BYTE_MAX,
        "{name}: {per_byte} work per byte"
    );
}

#[test]
fn the_pathological_families_stay_linear() {
    // The four families the parser must survive, then the shapes that would defeat a
    // naive reader: a string that never closes under many markers, code spans that never
    // close, objects that never close.
    let families: &[(&str, &str)] = &[
        ("braces", "{"),
        ("quotes", "\""),
        ("tool_call tags", "<tool_call>"),
        ("nested brackets", "["),
        ("brace quote", "{\""),
        ("tags with an open string", "<tool_call>{\"a\": 'x"),
        (
            "tags with a closed call",
            "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
        ),
        ("tool fences", "```tool\n"),
        (
            "json fences",
            "```json\n{\"name\": \"x\", \"args\": {}}\n```\n",
        ),
        ("backtick runs", "` `` "),
        ("list then object", "[{'a"),
        ("name keys", "{\"name\": {\"name\": "),
        ("python tags", "<|python_tag|>f("),
        ("function tags", "<function=get_time>"),
        ("mistral tags", "[TOOL_CALLS]"),
        ("think tags", "<think>"),
        ("closing think tags", "</think>"),
        ("smart quotes", "{“"),
        ("escapes", "{\"a\": \"\\u12"),
        ("comments", "{/*"),
    ];
    for (name, unit) in families {
        check_family(name, |bytes| repeat_to(unit, bytes));
    }
}

#[test]
fn long_inputs_with_one_call_stay_linear() {
    let call = "```tool\n{\"name\": \"get_time\", \"args\": {}}\n```";
    check_family("prose then a call", |bytes| {
        repeat_to("plain words here. ", bytes) + call
    });
    check_family("a call with a long argument", |bytes| {
        format!(
            "<tool_call>{{\"name\": \"file_write\", \"arguments\": {{\"path\": \"a\", \"content\": \"{}\"}}}}</tool_call>",
            repeat_to("x", bytes)
        )
    });
}
