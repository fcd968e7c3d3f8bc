//! Fuzzes the tool-call parser and the stream guard: any bytes, read as text and split into
//! tokens at points the input chooses, must never panic, and the guard must release a
//! prefix of the text that agrees with the parse.

#![no_main]

use imurun_calls::{ParseKind, StreamGuard, parse_tool_calls};
use imurun_core::{ToolIndex, ToolSpec};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fn index() -> ToolIndex {
    let spec = |name: &str, properties: serde_json::Value, required: &[&str]| {
        ToolSpec::new(name, "", json!({"type": "object", "properties": properties, "required": required}))
    };
    ToolIndex::offering([
        spec("web_search", json!({"query": {"type": "string"}, "max_results": {"type": "integer"}}), &["query"]),
        spec("file_write", json!({"path": {"type": "string"}, "content": {"type": "string"}}), &["path", "content"]),
        spec("get_time", json!({"timezone": {"type": "string"}}), &[]),
        spec("run_agent", json!({"task": {"type": "string"}, "tools": {"type": "array", "items": {"type": "string"}}}), &["task"]),
    ])
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks a token length, so the fuzzer explores splits as well as text.
    let (step, rest) = match data.split_first() {
        Some((&step, rest)) => (usize::from(step % 16) + 1, rest),
        None => (1, data),
    };
    let text = String::from_utf8_lossy(rest);
    let index = index();
    let parsed = parse_tool_calls(&text, &index);

    let mut guard = StreamGuard::new();
    let mut released = String::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        released.push_str(&guard.push(&text[start..end]));
        assert!(text.starts_with(&released), "the guard released text that is not a prefix");
        start = end;
    }
    released.push_str(&guard.finish(&parsed));
    match (parsed.kind, parsed.marker_offset) {
        (ParseKind::Answer, _) | (_, None) => assert_eq!(released, text),
        // A call: the guard released at most a prefix. It can stop later than the parser's
        // marker only for call shapes it does not hold for (a bare object whose first key is
        // not `name`), so only the prefix property is universal.
        (_, Some(_)) => assert!(text.starts_with(&released)),
    }
});
