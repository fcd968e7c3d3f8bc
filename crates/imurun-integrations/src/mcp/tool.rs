//! `McpTool`: one tool of an MCP server as an imurun [`Tool`] — a namespaced name, the
//! server's description and input schema as its spec, the configured category, its server's
//! health as its availability, and `tools/call` as its run, with the result turned into text
//! the model reads.

use std::collections::HashSet;
use std::sync::Arc;

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};

use super::connection::{CallError, Connection};
use imurun_tools::OutputCollector;

/// The longest tool name: the limit of the OpenAI-style APIs models are served through.
pub const MCP_TOOL_NAME_CHARS_MAX: usize = 64;

/// The longest description taken from a server: it goes into every prompt.
const DESCRIPTION_CHARS_MAX: usize = 1_000;

/// The largest input schema taken from a server, serialized. A bigger one would cost the
/// prompt more than any tool is worth, and the validator more than a call should.
pub(crate) const SCHEMA_BYTES_MAX: usize = 32 * 1024;

/// A tool of an MCP server.
pub struct McpTool {
    spec: ToolSpec,
    category: ToolCategory,
    server: String,
    /// The name the server knows the tool by.
    remote_name: String,
    connection: Arc<Connection>,
}

impl McpTool {
    pub(crate) fn new(
        spec: ToolSpec,
        category: ToolCategory,
        server: &str,
        remote_name: String,
        connection: Arc<Connection>,
    ) -> Self {
        Self {
            spec,
            category,
            server: server.to_owned(),
            remote_name,
            connection,
        }
    }

    /// The server this tool belongs to.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The name the server gives the tool.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn available(&self) -> Availability {
        match self.connection.health() {
            Ok(()) => Availability::Ready,
            Err(reason) => Availability::Unavailable(reason),
        }
    }

    fn run<'a>(
        &'a self,
        context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match self
                .connection
                .call(&self.remote_name, args, &context.stop)
                .await
            {
                Ok(result) => output(&self.server, &result),
                Err(error) => self.failure(error),
            }
        })
    }
}

impl McpTool {
    /// Every failure is untrusted: a server's message is its own words, and an unavailable
    /// server or a broken connection quotes the end of the server's stderr.
    fn failure(&self, error: CallError) -> ToolOutput {
        let name = &self.spec.name;
        let output = match error {
            CallError::Unavailable(reason) => ToolOutput::failed(format!(
                "`{name}` is unavailable: {reason}. Do not guess what it would have returned."
            )),
            CallError::TimedOut(after) => ToolOutput::failed(format!(
                "the MCP server `{}` did not answer `{name}` within {} s",
                self.server,
                after.as_secs()
            )),
            CallError::Stopped => {
                ToolOutput::failed(format!("`{name}` was stopped before it finished"))
            }
            CallError::Server(message) => ToolOutput::failed(format!(
                "the MCP server `{}` refused `{name}`: {}",
                self.server,
                capped(&message)
            )),
            CallError::Transport(reason) => ToolOutput::failed(reason),
        };
        output.untrusted()
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("category", &self.category)
            .field("server", &self.server)
            .field("remote_name", &self.remote_name)
            .finish_non_exhaustive()
    }
}

/// What the model reads: the result's content as text (a short note for what is not text),
/// capped like a shell's output; a result marked `isError` is a failure in the server's words.
/// Either way it is text from an outside program, so it is untrusted.
pub(crate) fn output(server: &str, result: &CallToolResult) -> ToolOutput {
    let text = capped(&content_text(result));
    let output = if result.is_error == Some(true) {
        ToolOutput::failed(format!(
            "the MCP server `{server}` reported an error: {text}"
        ))
    } else {
        ToolOutput::ok(text)
    };
    output.untrusted()
}

fn content_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    if parts.is_empty() {
        return "(the tool returned no content)".to_owned();
    }
    parts.join("\n")
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[an image ({}, {} bytes of base64) is not shown]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio ({}, {} bytes of base64) is not shown]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => format!(
                "[resource {uri} ({}) is binary and not shown]",
                mime_type.as_deref().unwrap_or("unknown type")
            ),
            _ => "[a resource of a kind imurun does not show]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        // Block kinds rmcp may add later are named, not shown.
        _ => "[content of a kind imurun does not show]".to_owned(),
    }
}

/// The text within [`imurun_tools::OUTPUT_CHARS_MAX`] characters, head and tail kept.
fn capped(text: &str) -> String {
    let mut collector = OutputCollector::new();
    collector.push_bytes(text.as_bytes());
    collector.finish()
}

/// `<server>__<tool>`, with every character outside `[A-Za-z0-9_]` as `_`, at most
/// [`MCP_TOOL_NAME_CHARS_MAX`] characters, and unlike every name in `taken` (a numbered
/// suffix tells apart tools whose names become the same).
pub(crate) fn tool_name(prefix: &str, remote: &str, taken: &HashSet<String>) -> String {
    let sanitized: String = format!("{prefix}__{remote}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Only ASCII is left, so byte lengths are character counts.
    let base = &sanitized[..sanitized.len().min(MCP_TOOL_NAME_CHARS_MAX)];
    if !taken.contains(base) {
        return base.to_owned();
    }
    // `taken.len() + 1` numbers cannot all be taken, so the loop always returns.
    for number in 2..=taken.len() + 2 {
        let suffix = format!("_{number}");
        let stem = &base[..base.len().min(MCP_TOOL_NAME_CHARS_MAX - suffix.len())];
        let candidate = format!("{stem}{suffix}");
        if !taken.contains(&candidate) {
            return candidate;
        }
    }
    base.to_owned()
}

/// The spec of a server's tool: the name given, the description cut to
/// [`DESCRIPTION_CHARS_MAX`] (the title when there is none), and the input schema, which
/// must be an object schema within [`SCHEMA_BYTES_MAX`].
pub(crate) fn spec(name: String, remote: &rmcp::model::Tool) -> Result<ToolSpec, String> {
    let description = remote
        .description
        .as_deref()
        .or(remote.title.as_deref())
        .unwrap_or_default();
    let description: String = description.chars().take(DESCRIPTION_CHARS_MAX).collect();
    let mut schema = remote.input_schema.as_ref().clone();
    let size = serde_json::to_vec(&schema)
        .map(|bytes| bytes.len())
        .unwrap_or(usize::MAX);
    if size > SCHEMA_BYTES_MAX {
        return Err(format!(
            "its input schema has {size} bytes, more than {SCHEMA_BYTES_MAX}"
        ));
    }
    match schema.get("type") {
        None => {
            schema.insert("type".to_owned(), Value::String("object".to_owned()));
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => return Err(format!("its input schema has type {other}, not \"object\"")),
    }
    Ok(ToolSpec::new(name, description, Value::Object(schema)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names_are_namespaced_sanitized_capped_and_distinct() {
        let none = HashSet::new();
        assert_eq!(
            tool_name("everything", "get-env", &none),
            "everything__get_env"
        );
        assert_eq!(tool_name("my_srv", "a.b/c d", &none), "my_srv__a_b_c_d");
        let long = tool_name("s", &"x".repeat(100), &none);
        assert_eq!(long.len(), MCP_TOOL_NAME_CHARS_MAX);
        let taken: HashSet<String> = [long.clone()].into();
        let second = tool_name("s", &"x".repeat(100), &taken);
        assert_eq!(second.len(), MCP_TOOL_NAME_CHARS_MAX);
        assert!(second.ends_with("_2"), "{second}");
        let taken: HashSet<String> = ["s__a_b".to_owned()].into();
        assert_eq!(tool_name("s", "a-b", &taken), "s__a_b_2");
        assert_eq!(tool_name("s", "é", &none), "s___");
    }

    #[test]
    fn results_become_text_with_notes_for_the_rest() {
        let result: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ]
        }))
        .unwrap();
        let output = output("srv", &result);
        assert!(output.ok && output.untrusted);
        assert_eq!(
            output.text,
            "hello\n[an image (image/png, 4 bytes of base64) is not shown]\n\
             [resource file:///a]\ninside\n[resource link: file:///b (b)]"
        );
        let failed: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "no such file"}], "isError": true
        }))
        .unwrap();
        let output = super::output("srv", &failed);
        assert!(!output.ok && output.untrusted);
        assert_eq!(
            output.text,
            "FAILED: the MCP server `srv` reported an error: no such file"
        );
        let big: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "y".repeat(100_000)}]
        }))
        .unwrap();
        assert!(super::output("srv", &big).text.chars().count() < 21_000);
    }

    #[test]
    fn schemas_must_be_objects_within_the_bound() {
        let tool = |schema: Value| -> rmcp::model::Tool {
            serde_json::from_value(serde_json::json!({"name": "t", "inputSchema": schema})).unwrap()
        };
        let spec = spec("s__t".into(), &tool(serde_json::json!({"properties": {}}))).unwrap();
        assert_eq!(spec.parameters["type"], "object");
        let huge = serde_json::json!({"type": "object", "description": "d".repeat(40_000)});
        assert!(spec_err(&tool(huge)).contains("more than 32768"));
    }

    fn spec_err(tool: &rmcp::model::Tool) -> String {
        spec("s__t".into(), tool).unwrap_err()
    }
}
