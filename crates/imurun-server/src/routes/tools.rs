//! The tool routes: the list, a manual run, and the approvals waiting for a person.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use imurun_core::{Availability, ToolCall};
use imurun_exec::{Caller, OnAsk, Outcome};

use crate::error::{ApiError, ApiJson};
use crate::openapi::{ErrorBody, ToolRefusedBody};
use crate::state::ServerState;
use crate::wire::{
    ApprovalDecided, ApprovalDecision, ApprovalInfo, ApprovalList, ToolInfo, ToolList,
    ToolRunRequest, ToolRunResult,
};

/// `GET /api/tools` → 200 `{"tools": [{name, description, parameters, category, available,
/// unavailable_reason?, offered}]}`, every tool that can run.
#[utoipa::path(
    get,
    path = "/api/tools",
    tag = "tools",
    operation_id = "list_tools",
    summary = "Every tool, with its schema, category and availability",
    responses((status = 200, description = "The tools.", body = ToolList)),
)]
pub(crate) async fn list(State(state): State<ServerState>) -> Json<ToolList> {
    let registry = state.executor().registry();
    let toggles = state.executor().settings().toggles;
    let index = registry.index();
    let tools = registry
        .tools()
        .map(|tool| {
            let spec = tool.spec();
            // A toggle that is off denies the call in every mode, so the tool cannot run now
            // whatever its own state; that reason comes first.
            let toggle_off = toggles
                .for_category(tool.category())
                .filter(|(_, on)| !on)
                .map(|(toggle, _)| format!("the `{toggle}` toggle is off"));
            let (available, unavailable_reason) = match (toggle_off, tool.available()) {
                (Some(reason), _) | (None, Availability::Unavailable(reason)) => {
                    (false, Some(reason))
                }
                (None, Availability::Ready) => (true, None),
            };
            ToolInfo {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
                category: tool.category().as_str().to_owned(),
                available,
                unavailable_reason,
                offered: index.get(&spec.name).is_some_and(|indexed| indexed.offered),
            }
        })
        .collect();
    Json(ToolList { tools })
}

/// `POST /api/tools/run` `{name, args, approved?, session_id?}`: a person runs a tool by hand,
/// through the same executor and policy as the model.
///
/// - 200 `{ok, text, call_id}`: it ran (`ok` false when the tool failed);
/// - 403 `{"error": "approval_required", "decision": "ask", "reason"}`: the policy asks; post
///   again with `"approved": true` once the person agreed;
/// - 403 `{"error": "denied", "decision": "deny", "reason"}`: the policy refuses;
/// - 404 unknown tool; 400 arguments that do not fit the schema.
#[utoipa::path(
    post,
    path = "/api/tools/run",
    tag = "tools",
    operation_id = "run_tool",
    summary = "Run one tool by hand, through the same policy as the model",
    request_body = ToolRunRequest,
    responses(
        (status = 200, description = "It ran; `ok` is false when the tool failed (the text starts with `FAILED:`).", body = ToolRunResult),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused), or the arguments do not fit the tool's schema; `bad_request`.", body = ErrorBody),
        (status = 403, description = "`approval_required` with `decision: ask` (post again with `\"approved\": true` once the person agreed) or `denied` with `decision: deny`.", body = ToolRefusedBody),
        (status = 404, description = "No tool has this name; `not_found`.", body = ErrorBody),
        (status = 413, description = "The body is larger than the server accepts (256 KiB by default); `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ),
)]
pub(crate) async fn run(
    State(state): State<ServerState>,
    ApiJson(request): ApiJson<ToolRunRequest>,
) -> Result<Json<ToolRunResult>, ApiError> {
    if state.executor().registry().resolve(&request.name).is_none() {
        return Err(ApiError::not_found(format!(
            "no tool is named `{}`; GET /api/tools lists them",
            request.name.chars().take(64).collect::<String>()
        )));
    }
    let on_ask = if request.approved == Some(true) {
        OnAsk::Approved
    } else {
        OnAsk::Report
    };
    let caller = Caller::user(request.session_id, on_ask);
    let call = ToolCall::new(request.name, request.args);
    let execution = state.executor().execute(&call, &caller).await;
    let reason = execution
        .verdict
        .as_ref()
        .map(|verdict| verdict.reason.clone())
        .unwrap_or_else(|| execution.output.text.clone());
    match execution.outcome {
        Outcome::Ok | Outcome::Failed => Ok(Json(ToolRunResult {
            ok: execution.output.ok,
            text: execution.output.text,
            call_id: execution.call_id,
        })),
        Outcome::NeedsApproval => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "approval_required",
            format!(
                "`{}` needs a person's approval; post again with \"approved\": true",
                execution.tool
            ),
        )
        .with_field("decision", "ask")
        .with_field("reason", reason)),
        Outcome::Denied(_) | Outcome::NotAllowed => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "denied",
            format!("`{}` may not run: {reason}", execution.tool),
        )
        .with_field("decision", "deny")
        .with_field("reason", reason)),
        Outcome::UnknownTool => Err(ApiError::not_found(execution.output.text)),
        Outcome::InvalidArguments => Err(ApiError::bad_request(execution.output.text)),
    }
}

/// `GET /api/tools/approvals` → 200 `{"pending": [{id, call_id, tool, args, session_id,
/// reason, deadline, rememberable, depth}]}`, soonest deadline first; `deadline` is in
/// milliseconds since the Unix epoch.
#[utoipa::path(
    get,
    path = "/api/tools/approvals",
    tag = "tools",
    operation_id = "list_approvals",
    summary = "The calls waiting for a person's approval, soonest deadline first",
    responses((status = 200, description = "The pending approvals.", body = ApprovalList, links(
        ("decide_approval" = (operation_id = "decide_approval", parameters(("id" = "$response.body#/pending/0/id")), description = "Approve or deny the call that times out first.")),
    ))),
)]
pub(crate) async fn approvals(State(state): State<ServerState>) -> Json<ApprovalList> {
    let executor = state.executor();
    let pending = executor
        .approvals()
        .pending()
        .into_iter()
        .map(|card| {
            // The reason the policy gave when it asked, kept on the card (a tainted session's
            // "this session read untrusted content" included).
            let reason = card.reason;
            ApprovalInfo {
                id: card.approval_id,
                call_id: card.call_id,
                tool: card.tool,
                args: card.args,
                session_id: card.session_id,
                reason,
                deadline: card.deadline_ms,
                rememberable: card.rememberable,
                depth: card.depth,
            }
        })
        .collect();
    Json(ApprovalList { pending })
}

/// `POST /api/tools/approvals/{id}` `{"approved": bool, "remember": bool}` → 200
/// `{id, approved, remember}`; 404 when no approval waits under that id (answered, timed out,
/// or its turn stopped).
#[utoipa::path(
    post,
    path = "/api/tools/approvals/{id}",
    tag = "tools",
    operation_id = "decide_approval",
    summary = "Approve or deny a pending call",
    params(("id" = String, Path, description = "The `approval_id` of `tool.approval_needed` (or `id` of `GET /api/tools/approvals`); any other string is a 404.")),
    request_body = ApprovalDecision,
    responses(
        (status = 200, description = "The decision was handed to the waiting call.", body = ApprovalDecided),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No approval waits under this id: answered, timed out, or its turn stopped; `not_found`.", body = ErrorBody),
        (status = 413, description = "The body is larger than the server accepts (256 KiB by default); `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ),
)]
pub(crate) async fn decide(
    State(state): State<ServerState>,
    Path(id): Path<String>,
    ApiJson(decision): ApiJson<ApprovalDecision>,
) -> Result<Json<ApprovalDecided>, ApiError> {
    state
        .executor()
        .approvals()
        .decide(&id, decision.approved, decision.remember)
        .map_err(|_| {
            ApiError::not_found(
                "no approval waits under this id: it was answered, timed out, or its turn stopped",
            )
        })?;
    Ok(Json(ApprovalDecided {
        id,
        approved: decision.approved,
        remember: decision.remember,
    }))
}
