//! Shared test helpers: the corpus, the tool set it assumes, and one `check` for parses.

use std::path::PathBuf;

use imurun_calls::{ParseKind, Parsed, parse_tool_calls};
use imurun_core::{ToolIndex, ToolSpec};
use serde::Deserialize;
use serde_json::Value;

/// The tool set the sample corpus assumes (its README lists it).
pub(crate) fn corpus_tools() -> ToolIndex {
    let text = include_str!("fixtures/corpus-tools.json");
    let specs: Vec<ToolSpec> = serde_json::from_str(text).unwrap();
    ToolIndex::offering(specs)
}

/// The repository's `testdata/` folder (the sample corpus and BFCL's data).
pub(crate) fn testdata_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

#[derive(Debug, Deserialize)]
pub(crate) struct Case {
    pub(crate) id: String,
    pub(crate) text: String,
    #[serde(default)]
    pub(crate) chunks: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) expect: Expect,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Expect {
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) calls: Option<Vec<Value>>,
    #[serde(default)]
    pub(crate) visible: Option<String>,
    #[serde(default)]
    pub(crate) thought: Option<String>,
}

pub(crate) fn corpus() -> Vec<Case> {
    let path = testdata_dir().join("corpus").join("toolcalls-sample.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The index a corpus case runs against: the corpus tools, narrowed to the case's list.
pub(crate) fn index_for(case: &Case) -> ToolIndex {
    let all = corpus_tools();
    match &case.tools {
        None => all,
        Some(names) => ToolIndex::offering(
            all.runnable()
                .filter(|tool| names.contains(&tool.spec.name))
                .map(|tool| tool.spec.clone()),
        ),
    }
}

pub(crate) fn kind_name(kind: ParseKind) -> &'static str {
    match kind {
        ParseKind::Calls => "calls",
        ParseKind::Answer => "answer",
        ParseKind::Retry => "retry",
    }
}

/// Compares a parse with an expectation; returns what differs.
pub(crate) fn mismatch(parsed: &Parsed, expect: &Expect) -> Option<String> {
    let mut problems = Vec::new();
    if kind_name(parsed.kind) != expect.kind {
        problems.push(format!(
            "kind {} != {}",
            kind_name(parsed.kind),
            expect.kind
        ));
    }
    if let Some(calls) = &expect.calls {
        let got = serde_json::to_value(&parsed.calls).unwrap();
        if got != Value::Array(calls.clone()) {
            problems.push(format!("calls {got} != {}", Value::Array(calls.clone())));
        }
    }
    if let Some(visible) = &expect.visible
        && parsed.visible.trim() != visible.trim()
    {
        problems.push(format!("visible {:?} != {:?}", parsed.visible, visible));
    }
    if let Some(thought) = &expect.thought
        && parsed.thought.trim() != thought.trim()
    {
        problems.push(format!("thought {:?} != {:?}", parsed.thought, thought));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Parses `text` against the corpus tools and checks kind and calls (`calls` as JSON).
pub(crate) fn check(text: &str, kind: &str, calls: Value) {
    let parsed = parse_tool_calls(text, &corpus_tools());
    let expect = Expect {
        kind: kind.into(),
        calls: Some(calls.as_array().cloned().unwrap_or_default()),
        visible: None,
        thought: None,
    };
    if let Some(problem) = mismatch(&parsed, &expect) {
        panic!("{text:?}: {problem}\nparsed: {parsed:?}");
    }
}
