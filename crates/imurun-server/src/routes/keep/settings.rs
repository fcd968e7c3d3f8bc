//! Keep's settings under `/v1/settings`, the operator's: the host's settings that matter, read
//! only, and the `tool.propose` switch, for every host on the database.

use axum::Json;

use super::StrictDecision;
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::OperatorCaller;
use crate::keep_wire::{HostView, ToolProposeBody, ToolProposeInfo};
use crate::openapi::ErrorBody;

/// `GET /v1/settings`.
#[utoipa::path(get, path = "/v1/settings", tag = "keep", operation_id = "keep_host_settings",
    summary = "The host's settings that matter, read only: its name, its database's engine, whether it runs cells, the loopback ports opened to cells, and the `tool.propose` switch (operator only). They are set in the configuration",
    responses(
        (status = 200, description = "The settings in force.", body = HostView),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn host(
    OperatorCaller(caller): OperatorCaller,
) -> Result<Json<HostView>, ApiError> {
    Ok(Json(
        caller.keep.host_settings().view(&caller.identity).await?,
    ))
}

/// `GET /v1/settings/tool-propose`.
#[utoipa::path(get, path = "/v1/settings/tool-propose", tag = "keep", operation_id = "keep_tool_propose",
    summary = "Whether agents may propose tools on the hosts of this database (operator only)",
    responses(
        (status = 200, description = "The switch in force.", body = ToolProposeInfo),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn tool_propose(
    OperatorCaller(caller): OperatorCaller,
) -> Result<Json<ToolProposeInfo>, ApiError> {
    Ok(Json(
        caller
            .keep
            .host_settings()
            .tool_propose(&caller.identity)
            .await?
            .into(),
    ))
}

/// `PUT /v1/settings/tool-propose`.
#[utoipa::path(put, path = "/v1/settings/tool-propose", tag = "keep", operation_id = "keep_set_tool_propose",
    summary = "Turn `tool.propose` on or off for every host on this database (operator only; journaled). Off: a cell's proposal is refused before it is read (rule `forbidden`); proposals already pending stay pending and may still be decided",
    request_body = ToolProposeBody,
    responses(
        (status = 200, description = "Set.", body = ToolProposeInfo),
        (status = 400, description = "Not a `ToolProposeBody`; `bad_request`, `not_canonical`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn set_tool_propose(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): StrictDecision<ToolProposeBody>,
) -> Result<Json<ToolProposeInfo>, ApiError> {
    let view = caller
        .keep
        .host_settings()
        .set_tool_propose(&caller.identity, body.enabled)
        .await?;
    Ok(Json(view.into()))
}
