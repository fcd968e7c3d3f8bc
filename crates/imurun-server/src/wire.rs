//! The API's request and response bodies, as named types: what `docs/api.md` and the OpenAPI
//! document describe. Field names are the wire names; a change here is a change of contract.
//!
//! Requests refuse unknown fields, so a misspelt field is a 400 that names it rather than a
//! setting silently left as it was.
//!
//! Every limit a handler or the store enforces on a request is also written on its field here
//! (`pattern`, `min_length`, `max_length`, `minimum`, `maximum`, `read_only`), so that the
//! OpenAPI document refuses what the server refuses. The attributes take literals only; the
//! `const` assertions below fail the build when a bound they copy changes.

use imurun_agent::{
    MAX_STEPS_CAP, SKILL_BODY_BYTES_MAX, SKILL_DESCRIPTION_CHARS_MAX, SKILL_ID_CHARS_MAX,
    SKILL_NAME_CHARS_MAX,
};
use imurun_core::SandboxStatus;
use imurun_store::{ID_CHARS_MAX, SESSION_TITLE_CHARS_MAX};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::state::{APPROVAL_TIMEOUT_S_MAX, PERSONA_CHARS_MAX, PROMPT_CHARS_MAX};

// The literals in the schema attributes below, held to the bounds the code enforces.
const _: () = assert!(ID_CHARS_MAX == 128, "update the id patterns: {{0,127}}");
const _: () = assert!(
    SKILL_ID_CHARS_MAX == 64,
    "update the skill id pattern: {{0,63}}"
);
const _: () = assert!(
    SESSION_TITLE_CHARS_MAX == 200,
    "update max_length of the titles"
);
const _: () = assert!(
    PROMPT_CHARS_MAX == 32_000,
    "update max_length of the prompts"
);
const _: () = assert!(PERSONA_CHARS_MAX == 4_000, "update max_length of `persona`");
const _: () = assert!(MAX_STEPS_CAP == 20, "update maximum of `maxSteps`");
const _: () = assert!(
    APPROVAL_TIMEOUT_S_MAX == 3_600,
    "update maximum of `approvalTimeout`"
);
const _: () = assert!(
    SKILL_NAME_CHARS_MAX == 200,
    "update max_length of a skill's name"
);
const _: () = assert!(
    SKILL_DESCRIPTION_CHARS_MAX == 1_000,
    "update max_length of a skill's description"
);
const _: () = assert!(
    SKILL_BODY_BYTES_MAX == 65_536,
    "update max_length of a skill's body"
);

/// A character that is not white space as Rust's `str::trim` counts it (Unicode
/// `White_Space`), spelt out rather than `\S`, which differs between regex dialects (ECMA-262
/// counts U+FEFF as space, Python counts U+001C..U+001F). A string matching it somewhere is "not
/// only white space". The attributes repeat it as a literal; `tests/all/openapi.rs` holds them
/// to it, and it to `str::trim`.
pub const NOT_WHITE_SPACE_PATTERN: &str = "[^\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]";

/// A text the database stores: no NUL character, which PostgreSQL's text cannot hold (the
/// server answers 400). The attributes repeat it as a literal; `tests/all/openapi.rs` holds them
/// to it.
pub const NO_NUL_PATTERN: &str = "^[^\\u0000]*$";

/// A stored text that is not only white space: [`NOT_WHITE_SPACE_PATTERN`] somewhere, and
/// [`NO_NUL_PATTERN`] throughout.
pub const STORED_NOT_WHITE_SPACE_PATTERN: &str = "^[^\\u0000]*[^\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\u0000][^\\u0000]*$";

/// An optional field whose type is a struct, read from a JSON object only (`null` or absent,
/// with `#[serde(default)]`, is `None`). Serde's derive also reads an array as the struct's
/// fields in order (`"toggles": [true, null]`), which the document does not allow; a body is
/// read the way the document describes it, or refused.
pub(crate) fn optional_object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Option::<Map<String, Value>>::deserialize(deserializer)?
        .map(|fields| serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom))
        .transpose()
}

/// An array of structs, each read from a JSON object only (see [`optional_object`]).
pub(crate) fn objects<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Vec::<Map<String, Value>>::deserialize(deserializer)?
        .into_iter()
        .map(|fields| serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom))
        .collect()
}

/// An optional whole number as JSON Schema counts them, `3.0` as well as `3`: the document's
/// `integer` admits both, and serde alone refuses a number written with a fraction. A fraction
/// other than zero, a negative number and one past `T` are refused.
pub(crate) fn optional_whole_number<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            // 2^64 as an `f64`, exactly; below it every whole `f64` fits a `u64`.
            .filter(|value| {
                value.fract() == 0.0 && *value >= 0.0 && *value < 18_446_744_073_709_551_616.0
            })
            .map(|value| value as u64)
    });
    whole
        .and_then(|whole| T::try_from(whole).ok())
        .map(Some)
        .ok_or_else(|| D::Error::custom(format!("{number} is not a whole number in range")))
}

/// The path of a session's routes: `{id}` is a session id as the store accepts it, 1 to 128
/// ASCII letters, digits, `.`, `_`, `-`, not starting with `.`; anything else is a 400.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SessionPath {
    /// The session id.
    #[param(
        pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$",
        min_length = 1,
        max_length = 128
    )]
    pub id: String,
}

/// The path of one turn: a session id and a turn id, both as the store accepts ids.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TurnPath {
    /// The session id.
    #[param(
        pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$",
        min_length = 1,
        max_length = 128
    )]
    pub id: String,
    /// The turn id of `turn.start` or of the 202 answer to a prompt.
    #[param(
        pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$",
        min_length = 1,
        max_length = 128
    )]
    pub turn_id: String,
}

/// The path of a skill's routes: `{id}` is 1 to 64 ASCII letters, digits, `.`, `_`, `-`, not
/// starting with `.`; anything else is a 400.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SkillPath {
    /// The skill id.
    #[param(
        pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$",
        min_length = 1,
        max_length = 64
    )]
    pub id: String,
}

/// `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the server answers.
    pub status: String,
    /// The server's version.
    pub version: String,
    /// Whether the server is a Keep host (`imurun serve --keep`): then `GET /v1/whoami` says
    /// who the token is.
    pub keep: bool,
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

/// A permission mode: what runs without asking (see `docs/permissions.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Every call asks.
    Ask,
    /// Reads run; everything else asks.
    AllowReads,
    /// Reads and writes run; deletes, the shell and the network ask.
    AllowEdits,
    /// Everything the toggles allow runs without asking.
    AllowAll,
}

impl PermissionMode {
    /// Every mode, in the policy's order.
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Ask,
        PermissionMode::AllowReads,
        PermissionMode::AllowEdits,
        PermissionMode::AllowAll,
    ];

    /// The mode named `name` (as the policy names it), if there is one.
    pub fn from_name(name: &str) -> Option<PermissionMode> {
        PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
    }

    /// The mode's name, the same as the policy's.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::AllowReads => "allow-reads",
            PermissionMode::AllowEdits => "allow-edits",
            PermissionMode::AllowAll => "allow-all",
        }
    }
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
    pub mode: PermissionMode,
    pub toggles: PermissionToggles,
    /// The saved approval timeout in seconds: what the next start uses.
    pub approval_timeout: u64,
    /// The approval timeout this process waits, in seconds. It differs from
    /// `approvalTimeout` after a change until the server restarts.
    pub approval_timeout_in_force: u64,
    /// The workspace folder; read-only (changing it needs a restart with another setting).
    #[schema(read_only)]
    pub workspace_root: String,
    /// The OS sandbox around shell commands and stdio MCP servers; read-only (it is what the
    /// kernel offers): `{kind: "landlock", abi, filesystem, network, scoped}` or
    /// `{kind: "none", reason}`.
    #[schema(read_only)]
    pub sandbox: SandboxStatus,
}

/// `POST /api/permissions`: every field is optional; absent ones keep their value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionsUpdate {
    #[serde(default)]
    pub mode: Option<PermissionMode>,
    #[serde(default, deserialize_with = "optional_object")]
    pub toggles: Option<TogglesUpdate>,
    /// Seconds, 1..=3600.
    #[serde(default, deserialize_with = "optional_whole_number")]
    #[schema(minimum = 1, maximum = 3600)]
    pub approval_timeout: Option<u64>,
    /// Read-only: refused when present, whatever its value (`null` too), since the workspace
    /// cannot change while the server runs.
    #[serde(default, deserialize_with = "present")]
    #[schema(read_only, value_type = Option<String>)]
    pub workspace_root: Option<Value>,
}

/// `Some` for a field that is present, whatever its value, `null` included (`Option`'s own
/// `Deserialize` reads `null` as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
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
    /// Steps per turn, 1..=20; 1 turns model tool calling off.
    #[serde(default, deserialize_with = "optional_whole_number")]
    #[schema(minimum = 1, maximum = 20)]
    pub max_steps: Option<usize>,
    /// At most 4000 characters.
    #[serde(default)]
    #[schema(max_length = 4000)]
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
    /// At most 200 characters (413 `too_large` past that), no NUL character (400).
    #[serde(default)]
    #[schema(max_length = 200, pattern = "^[^\\u0000]*$")]
    pub title: Option<String>,
}

/// `PATCH /api/sessions/{id}`: `null` clears the title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdate {
    /// At most 200 characters (413 `too_large` past that), no NUL character (400); `null` or
    /// absent clears the title.
    #[schema(max_length = 200, pattern = "^[^\\u0000]*$")]
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
    /// 1 to 32 000 characters (413 `too_large` past that), not only white space, no NUL
    /// character (400).
    #[schema(
        min_length = 1,
        max_length = 32000,
        pattern = "^[^\\u0000]*[^\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\u0000][^\\u0000]*$"
    )]
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
    /// `tool`, `answer`, `retry`, `nudge` or `correction` (an answer that did not hold what
    /// the tools returned, rejected: its text is that answer; see `grounding`).
    pub kind: String,
    pub text: String,
}

/// One `answer.grounding` of a turn view: an answer was rejected because it did not hold what
/// the turn's tools returned, and the loop asked again or answered from the result itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GroundingInfo {
    /// The step whose answer was rejected (its `correction` step).
    pub step: usize,
    /// `retry` (the model was asked again, once, with the result quoted), `fallback` (the
    /// answer is a plain sentence made from the result) or `extract` (the answer is an
    /// extract of the file the turn read, or a count made from it).
    #[schema(value_type = imurun_core::GroundingAction)]
    pub action: String,
    /// The tool whose result the answer had to carry; `null` for a persona correction.
    pub tool: Option<String>,
    /// What was wrong, as a sentence for a person.
    pub reason: String,
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
    /// The answers rejected for not holding what the tools returned, and what the loop did
    /// about each, in order (empty when none was).
    pub grounding: Vec<GroundingInfo>,
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
    /// 1 to 200 characters on one line (no CR or LF) with at least one ASCII letter or digit;
    /// the id is its slug (`My Skill` → `my-skill`). Leading and trailing white space is
    /// dropped from the stored name.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\r\\n]*[A-Za-z0-9][^\\r\\n]*$"
    )]
    pub name: String,
    /// At most 1000 characters; runs of white space (line breaks too) are stored as one
    /// space.
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub description: Option<String>,
    /// The instructions, not only white space, at most 64 KiB of UTF-8 (65 536 bytes: as many
    /// characters when they are ASCII, fewer otherwise; 413 `too_large` past that); the prompt
    /// takes the first 4000 characters.
    #[schema(
        min_length = 1,
        max_length = 65536,
        pattern = "[^\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]"
    )]
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
