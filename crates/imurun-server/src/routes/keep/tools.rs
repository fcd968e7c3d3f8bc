//! A person's deployed tools under `/v1/tools`: the list, one tool, clearing a tool's taint
//! (device-signed) and revoking a tool (no device: taking authority away needs none). These
//! routes are a person's, but for revoking, which the operator may do to any person's tool.
//! Another person's tool reads as one that does not exist (404). The decision that deploys a
//! tool is a proposal's (`proposals.rs`).

use axum::Json;
use axum::extract::Path;

use super::StrictDecision;
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::KeepCaller;
use crate::keep_wire::{ClearTaintBody, ToolList, ToolView};
use crate::openapi::ErrorBody;

/// `GET /v1/tools`.
#[utoipa::path(get, path = "/v1/tools", tag = "keep", operation_id = "keep_tools",
    summary = "The caller's deployed tools, each at its highest version",
    responses(
        (status = 200, description = "The tools.", body = ToolList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<ToolList>, ApiError> {
    let tools = caller.keep.tools().list(&caller.identity).await?;
    Ok(Json(ToolList { tools }))
}

/// `GET /v1/tools/{name}`.
#[utoipa::path(get, path = "/v1/tools/{name}", tag = "keep", operation_id = "keep_tool",
    summary = "One of the caller's tools",
    params(("name" = String, Path, description = "The tool's name (without `u/<user>/`).")),
    responses(
        (status = 200, description = "The tool at its highest version.", body = ToolView),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such tool of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    caller: KeepCaller,
    Path(name): Path<String>,
) -> Result<Json<ToolView>, ApiError> {
    Ok(Json(
        caller.keep.tools().get(&caller.identity, &name).await?,
    ))
}

/// `POST /v1/tools/{name}/revoke`.
#[utoipa::path(post, path = "/v1/tools/{name}/revoke", tag = "keep", operation_id = "keep_revoke_tool",
    summary = "Revoke one of the caller's tools, every version, at once: from this write on no call starts it, and its calls in flight on every host are stopped. The operator may revoke any person's tool, named `u/<user>/<name>` (slashes percent-encoded)",
    params(("name" = String, Path, description = "The tool's name (a person: with or without `u/<user>/`; the operator: `u/<user>/<name>`).")),
    responses(
        (status = 200, description = "Revoked.", body = ToolView),
        (status = 400, description = "The operator named a tool without `u/<user>/`; `invalid`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "No such tool (of the caller's, for a person); `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Revoked already; `conflict`.", body = ErrorBody),
    ))]
pub(crate) async fn revoke(
    caller: KeepCaller,
    Path(name): Path<String>,
) -> Result<Json<ToolView>, ApiError> {
    Ok(Json(
        caller.keep.tools().revoke(&caller.identity, &name).await?,
    ))
}

/// `POST /v1/tools/{name}/clear-taint`.
#[utoipa::path(post, path = "/v1/tools/{name}/clear-taint", tag = "keep", operation_id = "keep_clear_tool_taint",
    summary = "Clear a tainted tool's mark with a decision signed on one of the caller's devices: its egress leaves ask mode",
    params(("name" = String, Path, description = "The tool's name (without `u/<user>/`).")),
    request_body = ClearTaintBody,
    responses(
        (status = 200, description = "Cleared.", body = ToolView),
        (status = 400, description = "Not a `ClearTaintBody`; `bad_request`, `invalid`, `not_canonical`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); the decision refused (`decision_refused`, `bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No such tool of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "No taint to clear, revoked, or a newer version meanwhile; `conflict`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn clear_taint(
    caller: KeepCaller,
    Path(name): Path<String>,
    StrictJson(body): StrictDecision<ClearTaintBody>,
) -> Result<Json<ToolView>, ApiError> {
    let view = caller
        .keep
        .tools()
        .clear_taint(&caller.identity, &name, &body.decision.into_signed())
        .await?;
    Ok(Json(view))
}
