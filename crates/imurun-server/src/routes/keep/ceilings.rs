//! Users' ceilings under `/v1/ceilings`: the operator puts an operator-signed `imurun.ceiling`
//! in force and reads anyone's; a person reads their own (another's reads as one that does not
//! exist).

use axum::Json;
use axum::extract::Path;

use super::{Strict, to_value};
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::{KeepCaller, OperatorCaller};
use crate::keep_wire::{CeilingInfo, SignedDocument};
use crate::openapi::ErrorBody;

/// `PUT /v1/ceilings/{user}` (operator).
#[utoipa::path(put, path = "/v1/ceilings/{user}", tag = "keep", operation_id = "keep_put_ceiling",
    summary = "Set a user's ceiling: an operator-signed `imurun.ceiling` (operator only)",
    params(("user" = String, Path, description = "The user.")),
    request_body = SignedDocument,
    responses(
        (status = 200, description = "The ceiling now in force.", body = CeilingInfo),
        (status = 400, description = "Invalid or not for this user; `invalid`, `not_canonical`, `bad_request`.", body = ErrorBody),
        (status = 403, description = "A user token, a bad signature, an untrusted or retired key, or expired.", body = ErrorBody),
        (status = 409, description = "Not above the version in force; `rolled_back`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn put(
    OperatorCaller(caller): OperatorCaller,
    Path(user): Path<String>,
    StrictJson(body): Strict<SignedDocument>,
) -> Result<Json<CeilingInfo>, ApiError> {
    let ceiling = caller
        .keep
        .ceilings()
        .put(&caller.identity, &user, &body.into_signed())
        .await?;
    Ok(Json(CeilingInfo {
        ceiling: to_value(&ceiling)?,
        empty_because: None,
    }))
}

/// `GET /v1/ceilings/{user}`.
#[utoipa::path(get, path = "/v1/ceilings/{user}", tag = "keep", operation_id = "keep_ceiling",
    summary = "A user's ceiling in force (the operator's for anyone, a user's own)",
    params(("user" = String, Path, description = "The user.")),
    responses(
        (status = 200, description = "The ceiling; the empty one (version 0) when none is in force.", body = CeilingInfo),
        (status = 404, description = "Another user's ceiling reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    caller: KeepCaller,
    Path(user): Path<String>,
) -> Result<Json<CeilingInfo>, ApiError> {
    let view = caller.keep.ceilings().get(&caller.identity, &user).await?;
    Ok(Json(CeilingInfo {
        ceiling: to_value(&view.ceiling)?,
        empty_because: view.empty_because,
    }))
}
