//! Fake tools and the small helpers that build calls and contexts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use imurun_core::{
    BoxFuture, CallSource, Facts, NullEvents, StopFlag, Tool, ToolCall, ToolCategory, ToolContext,
    ToolOutput, ToolSpec,
};
use serde_json::{Map, Value, json};

use crate::RecordingEvents;

/// What a fake tool does when run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// Returns `<name> ran`.
    Succeed,
    /// Returns this text.
    Answer(String),
    /// Returns this failure.
    Fail(String),
    /// Returns this text, marked untrusted.
    Untrusted(String),
    /// Returns this text with each `{name}` replaced by the string argument of that name
    /// (`{key} is 42`), so a result says which call it answers.
    Template(String),
    /// Returns this text with these facts, as the built-in tools that know what their
    /// results mean do.
    Grounded(String, Facts),
    /// Panics inside the future it returns.
    PanicWhileRunning,
    /// Panics before it returns a future at all.
    PanicBeforeRunning,
}

/// A tool that records its runs (arguments and, when watching, the event types published
/// before each run).
#[derive(Debug)]
pub struct FakeTool {
    spec: ToolSpec,
    category: ToolCategory,
    behaviour: Behaviour,
    /// The argument declared as a shell command, for the policy's deny-list.
    command_argument: Option<&'static str>,
    runs: AtomicUsize,
    args: Mutex<Vec<Map<String, Value>>>,
    events: Option<Arc<RecordingEvents>>,
    events_at_run: Mutex<Vec<Vec<String>>>,
}

impl FakeTool {
    /// A tool taking an optional `path` (declared as a path) and an optional integer `n`.
    pub fn new(name: &str, category: ToolCategory, behaviour: Behaviour) -> Self {
        let parameters = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "n": {"type": "integer"}
        }});
        Self::with_parameters(name, category, behaviour, parameters)
    }

    /// A tool with its own JSON-Schema `parameters`.
    pub fn with_parameters(
        name: &str,
        category: ToolCategory,
        behaviour: Behaviour,
        parameters: Value,
    ) -> Self {
        Self {
            spec: ToolSpec::new(name, format!("the fake tool {name}"), parameters),
            category,
            behaviour,
            command_argument: None,
            runs: AtomicUsize::new(0),
            args: Mutex::new(Vec::new()),
            events: None,
            events_at_run: Mutex::new(Vec::new()),
        }
    }

    /// A tool of `spec` (a built-in's, say), so calls are validated against its real schema.
    pub fn with_spec(spec: ToolSpec, category: ToolCategory, behaviour: Behaviour) -> Self {
        let mut tool =
            Self::with_parameters(&spec.name, category, behaviour, spec.parameters.clone());
        tool.spec = spec;
        tool
    }

    /// Declares `name` as the argument that is a shell command, so the executor hands its
    /// value to the policy's deny-list (as the real shell does).
    pub fn command_argument(mut self, name: &'static str) -> Self {
        self.command_argument = Some(name);
        self
    }

    /// Records, at each run, the types of the events `events` holds by then.
    pub fn watching(mut self, events: &Arc<RecordingEvents>) -> Self {
        self.events = Some(Arc::clone(events));
        self
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// The arguments of every run, in order.
    pub fn args_seen(&self) -> Vec<Map<String, Value>> {
        self.args.lock().expect("args lock").clone()
    }

    /// The event types published before each run (see [`FakeTool::watching`]).
    pub fn events_at_run(&self) -> Vec<Vec<String>> {
        self.events_at_run.lock().expect("events lock").clone()
    }
}

impl Tool for FakeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn path_arguments(&self) -> &[&str] {
        &["path"]
    }

    fn command_argument(&self) -> Option<&str> {
        self.command_argument
    }

    fn run<'a>(
        &'a self,
        _: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        assert!(
            self.behaviour != Behaviour::PanicBeforeRunning,
            "fake tool panics before running"
        );
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.args.lock().expect("args lock").push(args.clone());
        if let Some(events) = &self.events {
            self.events_at_run
                .lock()
                .expect("events lock")
                .push(events.types());
        }
        Box::pin(async move {
            match &self.behaviour {
                Behaviour::PanicWhileRunning => panic!("fake tool panics while running"),
                Behaviour::Answer(text) => ToolOutput::ok(text.clone()),
                Behaviour::Fail(text) => ToolOutput::failed(text.clone()),
                Behaviour::Untrusted(text) => ToolOutput::ok(text.clone()).untrusted(),
                Behaviour::Template(template) => ToolOutput::ok(fill(template, args)),
                Behaviour::Grounded(text, facts) => {
                    ToolOutput::ok(text.clone()).with_facts(facts.clone())
                }
                _ => ToolOutput::ok(format!("{} ran", self.spec.name)),
            }
        })
    }
}

/// `template` with each `{name}` replaced by the string argument `name` (`?` when absent).
fn fill(template: &str, args: &Map<String, Value>) -> String {
    let mut text = template.to_owned();
    for (name, value) in args {
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        text = text.replace(&format!("{{{name}}}"), &value);
    }
    text
}

/// A tool group whose cues are plain words: a question points at it when it contains one.
#[derive(Debug, Clone)]
pub struct FakeGroup {
    pub id: String,
    pub display_name: String,
    pub cues: Vec<String>,
}

impl FakeGroup {
    pub fn new(id: &str, display_name: &str, cues: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            id: id.to_owned(),
            display_name: display_name.to_owned(),
            cues: cues.iter().map(|cue| (*cue).to_owned()).collect(),
        })
    }
}

impl imurun_core::ToolGroup for FakeGroup {
    fn id(&self) -> &str {
        &self.id
    }

    fn display_name(&self) -> &str {
        &self.display_name
    }

    fn points_at(&self, text: &str) -> bool {
        let text = text.to_lowercase();
        self.cues.iter().any(|cue| text.contains(cue.as_str()))
    }
}

/// `name(args)` as a call; `args` must be a JSON object (anything else is no arguments).
pub fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, object(args))
}

/// `value` as an argument object; anything but an object is an empty one.
pub fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// A context for running a tool directly, as a person would, outside any workspace (the
/// system's temporary folder is its root) and with no one watching its events.
pub fn context(stop: StopFlag) -> ToolContext {
    ToolContext {
        workspace_root: std::env::temp_dir(),
        source: CallSource::User,
        depth: 0,
        stop,
        session_id: None,
        allowed_tools: None,
        events: Arc::new(NullEvents),
        network: true,
    }
}
