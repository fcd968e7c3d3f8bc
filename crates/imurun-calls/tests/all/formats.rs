//! One case per call format and per repair, each through the same `check`.

use imurun_calls::{ParseKind, RetryReason, parse_tool_calls};
use imurun_core::{ToolIndex, ToolSpec};
use serde_json::json;

use crate::common::{check, corpus_tools};

#[test]
fn every_format_is_read() {
    let weather = json!([{"name": "get_weather", "args": {"location": "Oslo"}}]);
    let cases = [
        (
            "```tool\n{\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n```",
            &weather,
        ),
        (
            "```tool {\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}```",
            &weather,
        ),
        (
            "```TOOL\n{\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n````",
            &weather,
        ),
        (
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}\n</tool_call>",
            &weather,
        ),
        (
            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Oslo\"}}",
            &weather,
        ),
        (
            "<|python_tag|>get_weather.call(location=\"Oslo\")<|eom_id|>",
            &weather,
        ),
        ("<|python_tag|>get_weather(location=\"Oslo\")", &weather),
        (
            "<function=get_weather>{\"location\": \"Oslo\"}</function>",
            &weather,
        ),
        (
            "<function=get_weather>\n<parameter=location>\nOslo\n</parameter>\n</function>",
            &weather,
        ),
        (
            "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}",
            &weather,
        ),
        (
            "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}]",
            &weather,
        ),
        (
            "[TOOL_CALLS]get_weather[ARGS]{\"location\": \"Oslo\"}",
            &weather,
        ),
        (
            "Checking.\n```json\n{\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n```",
            &weather,
        ),
        ("[get_weather(location=\"Oslo\")]", &weather),
        (
            "[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}]",
            &weather,
        ),
        (
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"location\\\": \\\"Oslo\\\"}\"}}",
            &weather,
        ),
        ("```tool\nget_weather(location=\"Oslo\")\n```", &weather),
        ("```tool\nget_weather(\"Oslo\")\n```", &weather),
    ];
    for (text, calls) in cases {
        check(text, "calls", calls.clone());
    }
}

#[test]
fn several_calls_come_back_in_order() {
    let two = json!([
        {"name": "get_time", "args": {"timezone": "UTC"}},
        {"name": "web_search", "args": {"query": "x"}}
    ]);
    let cases = [
        "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}</tool_call>\n<tool_call>{\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}</tool_call>",
        "```tool\n[{\"name\": \"get_time\", \"args\": {\"timezone\": \"UTC\"}}, {\"name\": \"web_search\", \"args\": {\"query\": \"x\"}}]\n```",
        "```tool\n{\"name\": \"get_time\", \"args\": {\"timezone\": \"UTC\"}}\n{\"name\": \"web_search\", \"args\": {\"query\": \"x\"}}\n```",
        "[get_time(timezone=\"UTC\"), web_search(query=\"x\")]",
        "<|python_tag|>get_time(timezone=\"UTC\"); web_search(query=\"x\")",
        "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}, {\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}]",
    ];
    for text in cases {
        check(text, "calls", two.clone());
    }
}

#[test]
fn every_repair_has_a_case() {
    let cases = [
        // smart quotes
        (
            "```tool\n{“name”: “make_dir”, “args”: {“path”: “dist”}}\n```",
            json!([{"name": "make_dir", "args": {"path": "dist"}}]),
        ),
        // single quotes
        (
            "<tool_call>{'name': 'shell', 'arguments': {'command': 'git log -1'}}</tool_call>",
            json!([{"name": "shell", "args": {"command": "git log -1"}}]),
        ),
        // True / False / None
        (
            "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"t\", \"tools\": None, \"max_steps\": 2}}\n```",
            json!([{"name": "run_agent", "args": {"task": "t", "max_steps": 2}}]),
        ),
        // unquoted keys
        (
            "```tool\n{name: \"get_time\", args: {timezone: \"UTC\"}}\n```",
            json!([{"name": "get_time", "args": {"timezone": "UTC"}}]),
        ),
        // trailing commas
        (
            "```tool\n{\"name\": \"get_time\", \"args\": {\"timezone\": \"UTC\",},}\n```",
            json!([{"name": "get_time", "args": {"timezone": "UTC"}}]),
        ),
        // missing closing brace
        (
            "```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"Makefile\"}\n```",
            json!([{"name": "file_read", "args": {"path": "Makefile"}}]),
        ),
        // missing closing bracket
        (
            "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"t\", \"tools\": [\"shell\", \"file_read\"}}\n```",
            json!([{"name": "run_agent", "args": {"task": "t", "tools": ["shell", "file_read"]}}]),
        ),
        // unterminated string
        (
            "```tool\n{\"name\": \"web_search\", \"args\": {\"query\": \"how to profile rust code",
            json!([{"name": "web_search", "args": {"query": "how to profile rust code"}}]),
        ),
        // unterminated string before the closing fence
        (
            "```tool\n{\"name\": \"web_search\", \"args\": {\"query\": \"rust}}\n```\nok",
            json!([{"name": "web_search", "args": {"query": "rust}}"}}]),
        ),
        // text after the object
        (
            "<tool_call>{\"name\": \"get_time\", \"arguments\": {}} Result: 12:00</tool_call>",
            json!([{"name": "get_time", "args": {}}]),
        ),
        // string args, JSON-decoded
        (
            "```tool\n{\"name\": \"file_read\", \"args\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}\n```",
            json!([{"name": "file_read", "args": {"path": "a.txt"}}]),
        ),
        // string args onto the only required parameter
        (
            "```tool\n{\"name\": \"web_search\", \"args\": \"rayon parallel iterators\"}\n```",
            json!([{"name": "web_search", "args": {"query": "rayon parallel iterators"}}]),
        ),
        // raw newlines and tabs inside a string
        (
            "```tool\n{\"name\": \"file_write\", \"args\": {\"path\": \"a.py\", \"content\": \"def f():\n\treturn 1\n\"}}\n```",
            json!([{"name": "file_write", "args": {"path": "a.py", "content": "def f():\n\treturn 1\n"}}]),
        ),
        // an apostrophe inside a valid string stays
        (
            "<tool_call>{\"name\": \"web_search\", \"arguments\": {\"query\": \"don't panic\"}}</tool_call>",
            json!([{"name": "web_search", "args": {"query": "don't panic"}}]),
        ),
        // an apostrophe inside a single-quoted string
        (
            "<tool_call>{'name': 'web_search', 'arguments': {'query': 'don't panic'}}</tool_call>",
            json!([{"name": "web_search", "args": {"query": "don't panic"}}]),
        ),
        // a closing tag inside an argument string does not end the call
        (
            "<tool_call>{\"name\": \"file_write\", \"arguments\": {\"path\": \"a.md\", \"content\": \"end with </tool_call>\"}}</tool_call>",
            json!([{"name": "file_write", "args": {"path": "a.md", "content": "end with </tool_call>"}}]),
        ),
        // a closing fence inside an argument string does not end the call
        (
            "```tool\n{\"name\": \"file_write\", \"args\": {\"path\": \"a.md\", \"content\": \"```sh\\nls\\n```\"}}\n```",
            json!([{"name": "file_write", "args": {"path": "a.md", "content": "```sh\nls\n```"}}]),
        ),
        // aliases
        (
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/parser.rs\"}}</tool_call>",
            json!([{"name": "file_read", "args": {"path": "src/parser.rs"}}]),
        ),
        (
            "```tool\n{\"name\": \"bash\", \"args\": {\"command\": \"ls\"}}\n```",
            json!([{"name": "shell", "args": {"command": "ls"}}]),
        ),
        (
            "```tool\n{\"name\": \"mkdir\", \"args\": {\"path\": \"a\"}}\n```",
            json!([{"name": "make_dir", "args": {"path": "a"}}]),
        ),
        (
            "```tool\n{\"name\": \"google\", \"args\": {\"query\": \"a\"}}\n```",
            json!([{"name": "web_search", "args": {"query": "a"}}]),
        ),
        // unknown argument keys dropped
        (
            "```tool\n{\"name\": \"shell\", \"args\": {\"command\": \"date\", \"verbose\": true}}\n```",
            json!([{"name": "shell", "args": {"command": "date"}}]),
        ),
        // coercion
        (
            "```tool\n{\"name\": \"web_search\", \"args\": {\"query\": \"q\", \"max_results\": \"3\"}}\n```",
            json!([{"name": "web_search", "args": {"query": "q", "max_results": 3}}]),
        ),
        (
            "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"t\", \"tools\": \"shell,file_read\"}}\n```",
            json!([{"name": "run_agent", "args": {"task": "t", "tools": ["shell", "file_read"]}}]),
        ),
        // a name beside flattened arguments
        (
            "```tool\n{\"name\": \"get_weather\", \"location\": \"Lima\"}\n```",
            json!([{"name": "get_weather", "args": {"location": "Lima"}}]),
        ),
    ];
    for (text, calls) in cases {
        check(text, "calls", calls);
    }
}

#[test]
fn every_argument_key_is_accepted() {
    for key in [
        "args",
        "arguments",
        "parameters",
        "params",
        "input",
        "action_input",
    ] {
        let text = format!(
            "<tool_call>{{\"name\": \"get_weather\", \"{key}\": {{\"location\": \"Rome\"}}}}</tool_call>"
        );
        check(
            &text,
            "calls",
            json!([{"name": "get_weather", "args": {"location": "Rome"}}]),
        );
    }
    check(
        "{\"action\": \"web_search\", \"action_input\": \"rust\"}",
        "calls",
        json!([{"name": "web_search", "args": {"query": "rust"}}]),
    );
}

#[test]
fn values_are_coerced_to_the_schema_at_any_depth() {
    let spec = ToolSpec::new(
        "configure",
        "",
        json!({"type": "object", "properties": {
            "verbose": {"type": "boolean"},
            "retries": {"type": "integer"},
            "ratio": {"type": "number"},
            "options": {"type": "object", "properties": {
                "depth": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}}
            }}
        }}),
    );
    let index = ToolIndex::offering([spec]);
    let text = "```tool\n{\"name\": \"configure\", \"args\": {\"verbose\": \"true\", \"retries\": \"5\", \"ratio\": \"0.5\", \"options\": {\"depth\": \"2\", \"tags\": \"a,b\"}}}\n```";
    let parsed = parse_tool_calls(text, &index);
    assert_eq!(parsed.kind, ParseKind::Calls);
    assert_eq!(
        serde_json::to_value(&parsed.calls[0].args).unwrap(),
        json!({"verbose": true, "retries": 5, "ratio": 0.5, "options": {"depth": 2, "tags": ["a", "b"]}})
    );
}

#[test]
fn what_is_not_a_call_is_an_answer() {
    let cases = [
        "Sure, here is the record:\n```json\n{\"name\": \"Widget\", \"price\": 9.99}\n```",
        "To check disk usage run:\n```sh\ndf -h\n```",
        "Here: {\"name\": \"Widget\"}",
        "JSON objects look like {\"a\": 1} and lists like [1, 2].",
        "Use the `<tool_call>` tag, or `{\"name\": \"get_time\"}`.",
        "Write ``` ```tool ``` to start a call.",
        "An example of the format:\n````markdown\n```tool\n{\"name\": \"get_time\", \"args\": {}}\n```\n````\nThat is all.",
        "```json\n{\"name\": \"get_weather\"}\n```",
        "[a link](https://example.com) and {braces}",
        "",
        "   ",
    ];
    for text in cases {
        check(text, "answer", json!([]));
    }
}

#[test]
fn unreadable_or_unknown_calls_ask_for_a_retry() {
    let index = corpus_tools();
    let unknown = parse_tool_calls(
        "Let me.\n```tool\n{\"name\": \"translate_text\", \"args\": {\"text\": \"hola\"}}\n```",
        &index,
    );
    assert_eq!(unknown.kind, ParseKind::Retry);
    assert_eq!(unknown.visible, "Let me.");
    let message = unknown.retry.as_deref().unwrap();
    assert!(message.contains("translate_text"), "{message}");
    for name in ["web_search", "file_read", "shell", "run_agent"] {
        assert!(
            message.contains(name),
            "the retry lists the valid names: {message}"
        );
    }

    for text in [
        "```tool\nsorry, I can't do that\n```",
        "<tool_call></tool_call>",
        "<tool_call>",
        "<function=>{}</function>",
        "```tool\n{\"args\": {\"query\": \"x\"}}\n```",
        "```tool\n{\"name\": \"file_write\", \"args\": \"just text\"}\n```",
    ] {
        let parsed = parse_tool_calls(text, &index);
        assert_eq!(parsed.kind, ParseKind::Retry, "{text:?}: {parsed:?}");
        assert!(
            matches!(parsed.retry_reason, Some(RetryReason::Unusable { .. })),
            "{text:?}"
        );
    }
}

#[test]
fn a_runnable_tool_that_is_not_offered_is_still_a_call() {
    let mut index = ToolIndex::new();
    index.insert(
        ToolSpec::new("file_read", "", json!({"type": "object"})),
        true,
    );
    index.insert(
        ToolSpec::new(
            "gmail_send",
            "",
            json!({"type": "object", "properties": {"to": {"type": "string"}}}),
        ),
        false,
    );
    let parsed = parse_tool_calls(
        "```tool\n{\"name\": \"send_email\", \"args\": {\"to\": \"a@b.c\"}}\n```",
        &index,
    );
    assert_eq!(parsed.kind, ParseKind::Calls);
    assert_eq!(parsed.calls[0].name, "gmail_send");
    // The retry message lists only what the prompt offered.
    let retry = parse_tool_calls("```tool\n{\"name\": \"nope\"}\n```", &index);
    let message = retry.retry.unwrap();
    assert!(
        message.contains("file_read") && !message.contains("gmail_send"),
        "{message}"
    );
}

#[test]
fn calls_inside_a_thought_never_run() {
    let index = corpus_tools();
    let with_answer = parse_tool_calls(
        "<think>\nMaybe <tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>?\n</think>\nHi!",
        &index,
    );
    assert_eq!(with_answer.kind, ParseKind::Answer);
    assert_eq!(with_answer.visible, "Hi!");

    // The only call is in the thought and there is no answer: a retry that names the call
    // and asks for it outside the thinking. The call itself is not returned to run.
    let only_call = parse_tool_calls(
        "<think>\nI will call <tool_call>{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}</tool_call>\n</think>",
        &index,
    );
    assert_eq!(only_call.kind, ParseKind::Retry);
    assert!(only_call.calls.is_empty());
    match &only_call.retry_reason {
        Some(RetryReason::CallInThought { call }) => assert_eq!(call.name, "get_time"),
        other => panic!("expected CallInThought, got {other:?}"),
    }
    assert!(
        only_call
            .retry
            .unwrap()
            .contains("```tool\n{\"name\": \"get_time\"")
    );

    let orphan = parse_tool_calls(
        "plan\n</think>\n```tool\n{\"name\": \"get_time\", \"args\": {}}\n```",
        &index,
    );
    assert_eq!(orphan.kind, ParseKind::Calls);
    assert_eq!(orphan.thought, "plan");
}

#[test]
fn the_marker_offset_points_into_the_raw_text() {
    let index = corpus_tools();
    let raw = "<think>x</think>Checking.\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
    let parsed = parse_tool_calls(raw, &index);
    let offset = parsed.marker_offset.unwrap();
    assert!(raw[offset..].starts_with("<tool_call>"), "{offset}");
}
