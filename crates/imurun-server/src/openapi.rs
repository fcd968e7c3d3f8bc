//! The OpenAPI document served at `GET /api/openapi.json`: generated from the handlers'
//! `#[utoipa::path]` annotations and the wire types' `ToSchema` derives, plus the shapes that
//! exist on the wire but not as Rust types: the error bodies and the live events.
//!
//! Each handler's annotation is also where the router reads its method and path (see
//! `routes::table`), and `tests/all/openapi.rs` checks that the operations listed in
//! [`ApiDoc`] are exactly the routes served, so a route cannot be added without appearing here.
//! The event schemas mirror `imurun_core::Event` and the server's own events; the same test
//! file compares them with real events, field by field.

#![allow(dead_code)] // The event and error shapes are described, never built: see `StreamEvent`.

use axum::Json;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::OpenApi as Document;
use utoipa::{OpenApi, ToSchema};

use crate::wire::{PermissionToggles, SessionInfo};

/// The OpenAPI document of this server's API.
pub fn api_document() -> Document {
    ApiDoc::openapi()
}

/// `GET /api/openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    summary = "This API as an OpenAPI 3.1 document",
    responses((status = 200, description = "The OpenAPI document.", body = Object)),
)]
pub(crate) async fn openapi_json() -> Json<Document> {
    Json(api_document())
}

/// The operations and shapes of the API. Every handler the router serves is listed in
/// `paths`; `tests/all/openapi.rs` fails when one is missing.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "imurun API",
        description = "The HTTP API of imurun, a local-first agent runtime. Every error is \
            `{\"error\": {\"code\", \"message\"}}` (see `ErrorBody`); an unknown path is 404 \
            `not_found` and a known path with another method is 405 `method_not_allowed`, in \
            the same shape. Live events arrive over SSE at `GET /api/events`; each message's \
            `data:` is one `StreamEvent`. The prose reference is `docs/api.md`.",
    ),
    paths(
        crate::routes::meta::health,
        crate::routes::meta::model,
        openapi_json,
        crate::routes::tools::list,
        crate::routes::tools::run,
        crate::routes::tools::approvals,
        crate::routes::tools::decide,
        crate::routes::settings::permissions,
        crate::routes::settings::set_permissions,
        crate::routes::integrations::list,
        crate::routes::settings::agent,
        crate::routes::settings::set_agent,
        crate::routes::settings::grants,
        crate::routes::settings::revoke_all_grants,
        crate::routes::settings::revoke_grants,
        crate::routes::sessions::create,
        crate::routes::sessions::list,
        crate::routes::sessions::detail,
        crate::routes::sessions::rename,
        crate::routes::sessions::remove,
        crate::routes::sessions::prompt,
        crate::routes::sessions::stop,
        crate::routes::sessions::turns,
        crate::routes::sessions::turn,
        crate::routes::sessions::kill_switch,
        crate::routes::skills::list,
        crate::routes::skills::create,
        crate::routes::skills::detail,
        crate::routes::skills::remove,
        crate::routes::events::stream,
        crate::routes::openai::models,
        crate::routes::openai::chat_completions,
    ),
    components(schemas(ErrorBody, ToolRefusedBody, ModelNotLoadedBody, StreamEvent)),
    tags(
        (name = "meta", description = "Health, the model slot and this document."),
        (name = "tools", description = "Tools, running one by hand, and approvals."),
        (name = "settings", description = "Permissions, agent settings and remembered grants."),
        (name = "sessions", description = "Sessions, prompts, turns, Stop and the kill switch."),
        (name = "skills", description = "Skills: instruction packs a prompt invokes with `/<id>`."),
        (name = "events", description = "The live event stream (SSE)."),
        (name = "openai", description = "The OpenAI-compatible facade: an imurun agent as a model for OpenAI clients. Errors here also carry `type`, equal to `code`."),
    ),
)]
pub struct ApiDoc;

/// Every error: `{"error": {"code", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "not_found", "message": "no session has this id"}}))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The `error` object of every error body.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable machine code: `bad_request`, `not_found`, `method_not_allowed`, `conflict`,
    /// `too_large`, `unsupported_media_type`, `approval_required`, `denied`, `queue_full`,
    /// `model_not_loaded`, `store_full`, `turn_failed` (the OpenAI facade) or `internal`.
    pub code: String,
    /// A sentence for a person; do not parse it.
    pub message: String,
}

/// `POST /api/tools/run` 403: the policy asks (`approval_required`, `decision: ask`) or
/// refuses (`denied`, `decision: deny`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "approval_required", "message": "`shell` needs a person's approval; post again with \"approved\": true"}, "decision": "ask", "reason": "running shell commands needs approval in ask mode"}))]
pub struct ToolRefusedBody {
    pub error: ErrorDetail,
    /// `ask`: post again with `"approved": true` once the person agreed; `deny`: it may not
    /// run at all.
    pub decision: String,
    /// The policy's reason, for a person.
    pub reason: String,
}

/// `POST /api/sessions/{id}/prompts` 503: no model is ready yet.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "model_not_loaded", "message": "the model is still loading; try again in a moment"}, "status": "loading"}))]
pub struct ModelNotLoadedBody {
    pub error: ErrorDetail,
    /// The model slot: `none`, `loading` or `failed`.
    pub status: String,
}

/// One SSE message's `data:`: a JSON object whose `type` says which event it is.
///
/// Events carry `id` (the same number as the SSE `id:` line, increasing by one per event) and
/// `ts` (milliseconds since the Unix epoch). The hub's `stream.*` notices carry `ts` but no
/// `id`. Events of the agent loop also carry the `turn_id` of their turn; tool events do not
/// (match them to a turn by `session_id` and `call_id`). New types may appear: ignore the
/// ones you do not know.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum StreamEvent {
    /// A turn started for a prompt (published by the server before the loop runs).
    #[serde(rename = "turn.start")]
    TurnStart {
        id: u64,
        ts: u64,
        session_id: String,
        turn_id: String,
        prompt: String,
    },
    /// One step of a turn ended. For a tool step, `text` is the thought in
    /// `<think>…</think>`, the text before the call, then ``Using `name` {args}`` per call.
    #[serde(rename = "step")]
    Step {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// 1-based, counted across the whole turn.
        step: usize,
        kind: StepKind,
        text: String,
    },
    /// A piece of the answer as it streams; call syntax never reaches it while tools are
    /// offered.
    #[serde(rename = "token")]
    Token {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// The step the token belongs to, as in the `step` event that follows.
        step: usize,
        text: String,
    },
    /// A tool call is about to be decided and run.
    #[serde(rename = "tool.call")]
    ToolCall {
        id: u64,
        ts: u64,
        call_id: String,
        session_id: Option<String>,
        name: String,
        /// The arguments, long strings cut to 2000 characters.
        args: Map<String, Value>,
        /// `model`, `agent:1`, `agent:2` (a sub-agent) or `user` (`POST /api/tools/run`).
        source: String,
        /// 0 for the main agent, 1 and 2 for sub-agents.
        depth: u8,
    },
    /// A tool call ended (it ran, failed, or was refused).
    #[serde(rename = "tool.result")]
    ToolResult {
        id: u64,
        ts: u64,
        call_id: String,
        session_id: Option<String>,
        name: String,
        ok: bool,
        /// What the model reads; a failure starts with `FAILED:`.
        text: String,
        depth: u8,
    },
    /// The policy asks: show a card and post the decision to
    /// `POST /api/tools/approvals/{approval_id}` before `deadline_ms`.
    #[serde(rename = "tool.approval_needed")]
    ToolApprovalNeeded {
        id: u64,
        ts: u64,
        approval_id: String,
        call_id: String,
        session_id: Option<String>,
        name: String,
        /// The arguments, long strings cut to 2000 characters.
        args: Map<String, Value>,
        /// When the card times out and counts as denied (milliseconds since the Unix epoch),
        /// for a countdown.
        deadline_ms: i64,
        /// Whether "always for this session" may be offered (never for deletes).
        rememberable: bool,
        depth: u8,
    },
    /// A person approved a call.
    #[serde(rename = "tool.approved")]
    ToolApproved {
        id: u64,
        ts: u64,
        approval_id: String,
        call_id: String,
        session_id: Option<String>,
        name: String,
        /// The tool now runs without asking for the rest of the session.
        remember: bool,
    },
    /// A call that needed approval (or that the policy refused) did not run.
    #[serde(rename = "tool.denied")]
    ToolDenied {
        id: u64,
        ts: u64,
        /// Absent (`null`) when the policy refused before any card was shown.
        approval_id: Option<String>,
        call_id: String,
        session_id: Option<String>,
        name: String,
        reason: DenyReason,
        /// A sentence for a person.
        message: String,
    },
    /// History is over the context budget and is being compacted.
    #[serde(rename = "compaction.start")]
    CompactionStart {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// The history messages about to be compacted.
        messages: usize,
        /// Tokens of the whole request before compaction.
        tokens: usize,
        /// The budget it must fit, in tokens.
        budget: usize,
    },
    /// History was compacted.
    #[serde(rename = "compaction.done")]
    CompactionDone {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        mode: CompactionMode,
        /// The history messages removed from the request.
        messages: usize,
        /// Tokens of the whole request after compaction.
        tokens: usize,
    },
    /// A prompt queued while the turn ran was handed to the model at an answer boundary.
    #[serde(rename = "prompt.delivered")]
    PromptDelivered {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        text: String,
    },
    /// The prompt invoked skills (`/<id>` tokens); published as the turn starts, only when
    /// there are some.
    #[serde(rename = "skill.used")]
    SkillUsed {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// The skills' ids, in prompt order (at most 3).
        skills: Vec<String>,
    },
    /// A sub-agent (`run_agent`) started; its calls follow with `depth` set. Like tool
    /// events, it carries no `turn_id`.
    #[serde(rename = "agent.start")]
    AgentStart {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        /// 1 for the main agent's helper, 2 for the helper's.
        depth: u8,
        /// The task it was given (cut to 2000 characters).
        task: String,
        /// The tools it may use, after the intersection with its parent's.
        tools: Vec<String>,
    },
    /// A sub-agent ended; its final answer is the `run_agent` call's `tool.result`.
    #[serde(rename = "agent.end")]
    AgentEnd {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        depth: u8,
        status: TurnStatus,
        steps: usize,
    },
    /// The pre-fetch started lookups for what the prompt asks about the present (before the
    /// model's first step; its calls also publish `tool.call` and `tool.result`).
    #[serde(rename = "tools.start")]
    ToolsStart {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// `get_time`, `get_weather`, `web_search`, in Context order.
        tools: Vec<String>,
    },
    /// The pre-fetch's web search started.
    #[serde(rename = "web_search.start")]
    WebSearchStart {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// The query (cut to 2000 characters).
        query: String,
    },
    /// The pre-fetch's web search ended; `ok: false` when it failed, was refused or ran out
    /// of time.
    #[serde(rename = "web_search.done")]
    WebSearchDone {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        query: String,
        ok: bool,
    },
    /// The pre-fetch ended; its results are in the turn's Context block.
    #[serde(rename = "tools.done")]
    ToolsDone {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        /// One per tool of `tools.start`, in the same order.
        results: Vec<PrefetchResult>,
        elapsed_ms: u64,
    },
    /// The turn ended.
    #[serde(rename = "turn.end")]
    TurnEnd {
        id: u64,
        ts: u64,
        session_id: Option<String>,
        turn_id: String,
        status: TurnStatus,
        /// Calls the model made in the turn, cached ones included.
        tool_calls: usize,
        /// The skills invoked for the turn, by id.
        skills: Vec<String>,
        steps: usize,
        /// Only when the turn's task failed unexpectedly inside the server (`status: error`).
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A session was created (a global event: every stream gets it).
    #[serde(rename = "session.created")]
    SessionCreated {
        id: u64,
        ts: u64,
        session_id: String,
        session: SessionInfo,
    },
    /// A session was renamed (global).
    #[serde(rename = "session.updated")]
    SessionUpdated {
        id: u64,
        ts: u64,
        session_id: String,
        session: SessionInfo,
    },
    /// A session was deleted (global).
    #[serde(rename = "session.deleted")]
    SessionDeleted {
        id: u64,
        ts: u64,
        session_id: String,
    },
    /// The permissions changed through `POST /api/permissions` (global); the same fields as
    /// `GET /api/permissions`.
    #[serde(rename = "permissions")]
    Permissions {
        id: u64,
        ts: u64,
        mode: String,
        toggles: PermissionToggles,
        #[serde(rename = "approvalTimeout")]
        approval_timeout: u64,
        #[serde(rename = "approvalTimeoutInForce")]
        approval_timeout_in_force: u64,
        #[serde(rename = "workspaceRoot")]
        workspace_root: String,
    },
    /// Remembered approvals were forgotten (global): these sessions ask again.
    #[serde(rename = "grants.revoked")]
    GrantsRevoked {
        id: u64,
        ts: u64,
        session_ids: Vec<String>,
    },
    /// The kill switch was pressed (global).
    #[serde(rename = "stop.all")]
    StopAll {
        id: u64,
        ts: u64,
        /// Running turns told to stop.
        stopped: usize,
        /// Pending approvals denied.
        approvals_denied: usize,
    },
    /// Hub notice, no `id`: events `missed_from..=missed_to` fell out of the replay buffer
    /// before the client came back; what follows starts after them.
    #[serde(rename = "stream.gap")]
    StreamGap {
        ts: u64,
        missed_from: u64,
        missed_to: u64,
    },
    /// Hub notice, no `id`: the server never issued `last_event_id` (it restarted); what
    /// follows is everything still buffered, from `replay_from`.
    #[serde(rename = "stream.reset")]
    StreamReset {
        ts: u64,
        last_event_id: u64,
        replay_from: u64,
    },
    /// Hub notice, no `id`, the last message of the response: the client fell
    /// `queue_events_max` events behind at event `missed_from`. Reconnect with
    /// `Last-Event-ID` to replay what is still buffered.
    #[serde(rename = "stream.lagged")]
    StreamLagged {
        ts: u64,
        missed_from: u64,
        queue_events_max: usize,
    },
}

/// One pre-fetch lookup's end, in `tools.done`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrefetchResult {
    tool: String,
    /// False when it failed, was refused, or did not finish before the deadline.
    ok: bool,
}

/// What a step did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The model called tools; their results go back to it.
    Tool,
    /// The model answered.
    Answer,
    /// The model's call could not be run; it was asked to write it again.
    Retry,
    /// The model was reminded (no answer after a thought, or live data without a tool).
    Nudge,
}

/// How a turn ended.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TurnStatus {
    /// The model answered.
    Done,
    /// Stop, the kill switch, or deleting the session stopped it.
    Stopped,
    /// The step limit was reached while the model still wanted tools.
    MaxSteps,
    /// The model failed, or the prompt alone does not fit the context window.
    Error,
}

/// Why a call did not run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DenyReason {
    /// A person pressed Deny.
    User,
    /// Nobody answered before the approval timeout.
    Timeout,
    /// The turn was stopped while waiting.
    Stopped,
    /// No client was subscribed to the session's events, so nobody could see the card.
    NoClient,
    /// The policy refused it before any card was shown.
    Policy,
}

/// How history was compacted.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionMode {
    /// Summarised by the model into the system message.
    Summarised,
    /// Dropped, oldest first.
    Dropped,
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;

    use super::*;
    use crate::ApiError;

    /// The error shapes described here are the ones `ApiError` writes.
    #[tokio::test]
    async fn error_bodies_have_the_documented_fields() {
        let cases = [
            (ApiError::not_found("gone"), vec!["error"]),
            (
                ApiError::new(StatusCode::FORBIDDEN, "approval_required", "ask")
                    .with_field("decision", "ask")
                    .with_field("reason", "why"),
                vec!["error", "decision", "reason"],
            ),
            (
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "model_not_loaded", "wait")
                    .with_field("status", "loading"),
                vec!["error", "status"],
            ),
        ];
        for (error, keys) in cases {
            let response = error.into_response();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .expect("a small body");
            let body: Value = serde_json::from_slice(&bytes).expect("JSON");
            let found: Vec<&str> = body
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(found, keys);
            let detail: Vec<&str> = body["error"]
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(detail, ["code", "message"]);
        }
    }
}
