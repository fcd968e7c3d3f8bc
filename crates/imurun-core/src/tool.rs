//! Tools as the rest of imurun sees them: a spec the model reads, a call the parser produces,
//! a category the policy decides on, and the `Tool` trait every implementation meets.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{EventSink, Facts, StopFlag};

/// A boxed future, so that `Tool` stays object-safe without naming an async runtime.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a model is told about a tool: its name, what it does, and a JSON-Schema `parameters`
/// object describing its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A JSON Schema of type `object`. A missing schema means "takes no arguments".
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// The names listed in the schema's `required` array, in order.
    pub fn required(&self) -> Vec<&str> {
        self.parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The schema's `properties` object, when it has one.
    pub fn properties(&self) -> Option<&Map<String, Value>> {
        self.parameters.get("properties").and_then(Value::as_object)
    }
}

/// One call of a tool by name with an object of arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    pub args: Map<String, Value>,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, args: Map<String, Value>) -> Self {
        Self {
            name: name.into(),
            args,
        }
    }
}

/// What kind of authority a tool exercises. Policy decides on the category, never on the
/// tool's name, so a new tool cannot slip past a toggle by being called something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCategory {
    /// Reads files inside the workspace.
    Read,
    /// Creates or changes files inside the workspace.
    Write,
    /// Removes files or folders inside the workspace (covered by the `writeFiles` toggle,
    /// but never remembered).
    Delete,
    /// Runs a process.
    Shell,
    /// Reaches the network.
    Network,
    /// Pure computation with no authority (the clock, arithmetic).
    Compute,
    /// Starts a sub-agent, whose own calls are checked one by one.
    Agent,
    /// Acts outside imurun where imurun cannot check the effect: a connector tool that sends
    /// or changes something on the person's behalf (an email, an issue, a DNS record), or an
    /// MCP server's tool whose category the configuration does not declare.
    External,
}

impl ToolCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCategory::Read => "read",
            ToolCategory::Write => "write",
            ToolCategory::Delete => "delete",
            ToolCategory::Shell => "shell",
            ToolCategory::Network => "network",
            ToolCategory::Compute => "compute",
            ToolCategory::Agent => "agent",
            ToolCategory::External => "external",
        }
    }
}

/// Who asked for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallSource {
    /// The main agent's model.
    Model,
    /// A sub-agent at this depth (1 or 2).
    Agent(u8),
    /// A person, through the API or the CLI.
    User,
    /// The loop's pre-fetch, for what a prompt plainly asks about the present.
    Prefetch,
}

impl fmt::Display for CallSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallSource::Model => f.write_str("model"),
            CallSource::Agent(depth) => write!(f, "agent:{depth}"),
            CallSource::User => f.write_str("user"),
            CallSource::Prefetch => f.write_str("prefetch"),
        }
    }
}

impl Serialize for CallSource {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// On the wire `CallSource` is its `Display` text (see the `Serialize` impl above), so its
/// schema is a string, not the enum's shape.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for CallSource {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "Who asked for the call: `model` (the main agent), `agent:1` or `agent:2` (a \
                 sub-agent at that depth), `user` (a person, by hand) or `prefetch` (the loop's \
                 pre-fetch).",
            ))
            .pattern(Some("^(model|user|prefetch|agent:[0-9]{1,3})$"))
            .examples(["model", "agent:1", "user", "prefetch"])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for CallSource {}

/// A policy decision before approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// Whether a tool can run right now, reported honestly (a search tool without a reachable
/// provider says so instead of pretending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub enum Availability {
    Ready,
    Unavailable(String),
}

/// What a running tool may know about the call it serves.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root, already resolved to an absolute, real path.
    pub workspace_root: PathBuf,
    pub source: CallSource,
    /// 0 for the main agent, 1 and 2 for sub-agents.
    pub depth: u8,
    pub stop: StopFlag,
    /// The session the call belongs to (a sub-agent tool publishes its events there).
    pub session_id: Option<String>,
    /// The tools the caller may use (canonical names); `None` means every tool. A sub-agent
    /// tool narrows its child's tools to these.
    pub allowed_tools: Option<Arc<[String]>>,
    /// Where the call's events go (the turn that caused it): a tool that publishes events of
    /// its own (a sub-agent's `agent.start`) and calls it makes in turn use this sink.
    pub events: Arc<dyn EventSink>,
    /// Whether the `network` toggle is on for this call. A tool that starts processes confines
    /// them to match (where the OS sandbox can): with it off, they cannot open TCP connections.
    pub network: bool,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("workspace_root", &self.workspace_root)
            .field("source", &self.source)
            .field("depth", &self.depth)
            .field("stop", &self.stop)
            .field("session_id", &self.session_id)
            .field("allowed_tools", &self.allowed_tools)
            .field("network", &self.network)
            .finish_non_exhaustive()
    }
}

/// A tool's result as the model will read it. Failures are data, not errors: their text
/// starts with `FAILED:` so the loop and the model can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolOutput {
    pub ok: bool,
    pub text: String,
    /// The text came from outside the person's control (a web page, a search result, an
    /// egress response) and taints the session that reads it.
    pub untrusted: bool,
    /// What an answer built on this result must carry (`None`: answers are not checked).
    /// The loop's own business: not part of what a tool run reports.
    #[serde(skip)]
    pub facts: Option<Facts>,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            ok: true,
            text: text.into(),
            untrusted: false,
            facts: None,
        }
    }

    /// A failure result. The reason should say what went wrong in words a model can act on.
    pub fn failed(reason: impl fmt::Display) -> Self {
        Self {
            ok: false,
            text: format!("FAILED: {reason}"),
            untrusted: false,
            facts: None,
        }
    }

    pub fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }

    pub fn with_facts(mut self, facts: Facts) -> Self {
        self.facts = Some(facts);
        self
    }
}

/// A tool: built in, from an MCP server, a connector, or a Keep cell.
///
/// `run` never panics on bad input and never returns a Rust error: every failure is a
/// `ToolOutput::failed` the model can read. The executor still catches panics at its
/// boundary, because a bug must not take a turn down with it.
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;

    fn category(&self) -> ToolCategory;

    fn available(&self) -> Availability {
        Availability::Ready
    }

    /// The names of the arguments that are paths inside the workspace. The executor hands
    /// their values to the policy, which confines and checks them before the tool runs; a
    /// tool that takes paths and does not list them here skips that check.
    fn path_arguments(&self) -> &[&str] {
        &[]
    }

    /// The name of the argument that is a shell command, if any. The executor hands its
    /// value to the policy's destructive-command deny-list before the tool runs.
    fn command_argument(&self) -> Option<&str> {
        None
    }

    fn run<'a>(
        &'a self,
        context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput>;
}
