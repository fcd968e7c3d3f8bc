//! The API's request and response bodies, as named types: what `docs/api.md` and the OpenAPI
//! document describe. Field names are the wire names; a change here is a change of contract.
//!
//! Requests refuse unknown fields, so a misspelt field is a 400 that names it rather than a
//! setting silently left as it was.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the server answers.
    pub status: String,
    /// The server's version.
    pub version: String,
}

/// `GET /api/model`: the model slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelInfo {
    /// `none`, `loading`, `ready` or `failed`.
    pub status: String,
    /// The model's name once ready.
    pub name: Option<String>,
    /// The context window in tokens once ready.
    pub context_limit: Option<usize>,
    /// Why loading failed, for `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One tool of `GET /api/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
    /// `read`, `write`, `delete`, `shell`, `network`, `compute`, `agent` or `external`.
    pub category: String,
    /// Whether the tool can run right now.
    pub available: bool,
    /// Why not, when `available` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Whether the model's prompt lists it (a tool not offered still runs when named).
    pub offered: bool,
}

/// `GET /api/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolList {
    pub tools: Vec<ToolInfo>,
}

/// `POST /api/tools/run`: a person runs one tool by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRunRequest {
    /// The tool's name (aliases are accepted).
    pub name: String,
    /// The arguments; `{}` when absent.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// `true` after the person approved the card a first post returned (403 `ask`).
    #[serde(default)]
    pub approved: Option<bool>,
    /// The session the run belongs to, for its events and remembered grants.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// `POST /api/tools/run` 200: the tool ran. `ok` is false when the tool itself failed (the text
/// then starts with `FAILED:`); a refusal is a 403 instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolRunResult {
    pub ok: bool,
    pub text: String,
    pub call_id: String,
}

/// One approval of `GET /api/tools/approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalInfo {
    /// The id to post the decision to.
    pub id: String,
    pub call_id: String,
    pub tool: String,
    /// The arguments, long strings cut to 2000 characters.
    pub args: Map<String, Value>,
    pub session_id: Option<String>,
    /// Why the policy asks.
    pub reason: String,
    /// When the card times out and counts as denied, in milliseconds since the Unix epoch.
    pub deadline: i64,
    /// Whether "always for this session" may be offered (never for deletes).
    pub rememberable: bool,
    /// 0 for the main agent, 1 and 2 for sub-agents.
    pub depth: u8,
}

/// `GET /api/tools/approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalList {
    pub pending: Vec<ApprovalInfo>,
}

/// `POST /api/tools/approvals/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecision {
    pub approved: bool,
    /// Let the tool run without asking for the rest of the session (ignored for deletes).
    #[serde(default)]
    pub remember: bool,
}

/// `POST /api/tools/approvals/{id}` 200.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalDecided {
    pub id: String,
    pub approved: bool,
    pub remember: bool,
}

/// The four category toggles, as the settings name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionToggles {
    pub read_files: bool,
    pub write_files: bool,
    pub run_shell: bool,
    pub network: bool,
}

/// `GET /api/permissions`, the answer of `POST /api/permissions`, and the payload of the
/// `permissions` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    /// `ask`, `allow-reads`, `allow-edits` or `allow-all`.
    pub mode: String,
    pub toggles: PermissionToggles,
    /// The saved approval timeout in seconds: what the next start uses.
    pub approval_timeout: u64,
    /// The approval timeout this process waits, in seconds. It differs from
    /// `approvalTimeout` after a change until the server restarts.
    pub approval_timeout_in_force: u64,
    /// The workspace folder; read-only (changing it needs a restart with another setting).
    pub workspace_root: String,
}

/// `POST /api/permissions`: every field is optional; absent ones keep their value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionsUpdate {
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub toggles: Option<TogglesUpdate>,
    /// Seconds, 1..=3600.
    #[serde(default)]
    pub approval_timeout: Option<u64>,
    /// Refused when present: the workspace cannot change while the server runs.
    #[serde(default)]
    pub workspace_root: Option<Value>,
}

/// The toggles of a [`PermissionsUpdate`]; absent ones keep their value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TogglesUpdate {
    #[serde(default)]
    pub read_files: Option<bool>,
    #[serde(default)]
    pub write_files: Option<bool>,
    #[serde(default)]
    pub run_shell: Option<bool>,
    #[serde(default)]
    pub network: Option<bool>,
}

/// `GET /api/agent` and the answer of `POST /api/agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSettings {
    /// Steps per turn, 1..=20; 1 turns model tool calling off.
    pub max_steps: usize,
    pub persona: String,
    /// Over budget, summarise history with the model (true) or drop it (false).
    pub summarise_history: bool,
}

/// `POST /api/agent`: every field is optional; absent ones keep their value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSettingsUpdate {
    #[serde(default)]
    pub max_steps: Option<usize>,
    #[serde(default)]
    pub persona: Option<String>,
    #[serde(default)]
    pub summarise_history: Option<bool>,
}

/// The remembered approvals of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionGrants {
    pub session_id: String,
    /// Tool names that run without asking for the rest of the session.
    pub tools: Vec<String>,
}

/// `GET /api/grants`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GrantList {
    pub grants: Vec<SessionGrants>,
}

/// `DELETE /api/grants` and `DELETE /api/grants/{session_id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GrantsRevoked {
    /// How many sessions had grants that are now gone.
    pub sessions: usize,
}

/// `POST /api/sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCreate {
    /// At most 200 characters.
    #[serde(default)]
    pub title: Option<String>,
}

/// `PATCH /api/sessions/{id}`: `null` clears the title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdate {
    pub title: Option<String>,
}

/// A session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionInfo {
    pub id: String,
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Milliseconds since the Unix epoch; moves with every message and turn.
    pub updated_at_ms: i64,
}

/// `GET /api/sessions`: newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}

/// One transcript message: a prompt (`user`) or a final answer (`assistant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TranscriptMessage {
    /// 1, 2, 3, ... within the session.
    pub seq: i64,
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    pub created_at_ms: i64,
}

/// `GET /api/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionDetail {
    pub session: SessionInfo,
    /// The first 1000 messages, oldest first.
    pub transcript: Vec<TranscriptMessage>,
    /// The turn running in the session, if any.
    pub running_turn_id: Option<String>,
}

/// `DELETE /api/sessions/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionDeleted {
    pub deleted: bool,
    /// Whether a running turn had to be stopped first.
    pub stopped_turn: bool,
}

/// `POST /api/sessions/{id}/prompts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptRequest {
    /// 1 to 32 000 characters, not only white space.
    pub prompt: String,
}

/// `POST /api/sessions/{id}/prompts` 202.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PromptAccepted {
    /// The turn that started, or the running turn the prompt was queued in.
    pub turn_id: String,
    /// True when the prompt waits in the running turn's queue.
    pub queued: bool,
}

/// `POST /api/sessions/{id}/stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Stopped {
    /// Whether a turn was running and has been told to stop.
    pub stopped: bool,
}

/// `POST /api/stop`, the kill switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KillSwitch {
    /// Running turns told to stop.
    pub stopped: usize,
    /// Pending approvals denied.
    pub approvals_denied: usize,
}

/// One step of a turn view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StepInfo {
    /// 1-based within the turn.
    pub step: usize,
    /// `tool`, `answer`, `retry` or `nudge`.
    pub kind: String,
    pub text: String,
}

/// One tool call of a turn view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolCallInfo {
    pub call_id: String,
    pub name: String,
    /// The arguments, long strings cut to 2000 characters.
    pub args: Map<String, Value>,
    /// Whether it succeeded; absent while it runs (or waits for approval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
}

/// A turn: `GET /api/sessions/{id}/turns/{turn_id}` and the items of the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnView {
    pub turn_id: String,
    pub session_id: String,
    pub prompt: String,
    /// `running`, `done`, `max-steps`, `stopped`, `error` or `interrupted`.
    pub status: String,
    pub started_at_ms: i64,
    pub ended_at_ms: Option<i64>,
    /// The final answer (to the last delivered prompt); empty while running or after an error.
    pub answer: String,
    /// What went wrong, for `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub steps: Vec<StepInfo>,
    pub tool_calls: Vec<ToolCallInfo>,
    /// The ids of the skills the prompt invoked (`/<id>` tokens), in prompt order.
    pub skills: Vec<String>,
    /// Prompts queued during the turn and handed to the model, in order.
    pub delivered_prompts: Vec<String>,
}

/// `GET /api/sessions/{id}/turns`: the last 1000, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnList {
    pub turns: Vec<TurnView>,
}

/// One skill of `GET /api/skills`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SkillInfo {
    /// The directory name; `/<id>` in a prompt invokes the skill.
    pub id: String,
    pub name: String,
    pub description: String,
    /// The body's length in characters (the prompt takes the first 4000).
    pub chars: usize,
}

/// `GET /api/skills`: the stored skills by id, at most 1000.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SkillList {
    pub skills: Vec<SkillInfo>,
}

/// `GET /api/skills/{id}` and `POST /api/skills` 201: a skill with its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SkillDetail {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The instructions, as stored (at most 64 KiB).
    pub body: String,
}

/// `POST /api/skills`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillCreate {
    /// 1 to 200 characters on one line; the id is its slug (`My Skill` → `my-skill`).
    pub name: String,
    /// At most 1000 characters; line breaks become spaces.
    #[serde(default)]
    pub description: Option<String>,
    /// The instructions, at most 64 KiB; the prompt takes the first 4000 characters.
    pub body: String,
}

/// `DELETE /api/skills/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SkillDeleted {
    pub deleted: bool,
}

/// `GET /api/integrations`: what reaches beyond the built-in tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IntegrationList {
    /// The configured MCP servers, in configuration order.
    pub mcp_servers: Vec<McpServerInfo>,
    /// The declared connector services, in declaration order.
    pub connectors: Vec<ConnectorInfo>,
}

/// One MCP server of `GET /api/integrations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct McpServerInfo {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command line or the URL (never an environment or header value).
    pub target: String,
    /// `connected`, `closed` (it was, and the connection ended), `failed` (it never
    /// connected) or `disabled`.
    pub state: String,
    /// Why it is not connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `name version`, as the server introduced itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<String>,
    pub tools: Vec<IntegrationTool>,
    /// Tools left out, and configuration that names tools the server does not have.
    pub notes: Vec<String>,
}

/// One connector service of `GET /api/integrations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConnectorInfo {
    /// `github`, `gmail`, `cloudflare`.
    pub id: String,
    pub name: String,
    /// Whether any of its tools can run (its credential is set).
    pub connected: bool,
    /// The variable that connects it.
    pub credential_var: String,
    pub tools: Vec<IntegrationTool>,
}

/// A tool of an MCP server or a connector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IntegrationTool {
    /// The name the model calls it by.
    pub name: String,
    /// `read`, `write`, `delete`, `shell`, `network`, `compute`, `agent` or `external`.
    pub category: String,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
}
