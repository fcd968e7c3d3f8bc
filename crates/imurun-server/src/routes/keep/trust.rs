//! Keep's trust root under `/v1/trust-root`, the operator's: the one in force, and a new one
//! signed by an active policy key of the current one.

use axum::Json;

use super::{Strict, to_value};
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::OperatorCaller;
use crate::keep_wire::SignedDocument;
use crate::openapi::ErrorBody;

/// `GET /v1/trust-root` (operator).
#[utoipa::path(get, path = "/v1/trust-root", tag = "keep", operation_id = "keep_trust_root",
    summary = "The trust root in force (operator only)",
    responses(
        (status = 200, description = "The `imurun.trust_root` document.", body = Object),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 409, description = "The stored root is older than one accepted; `rolled_back`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    OperatorCaller(caller): OperatorCaller,
) -> Result<Json<serde_json::Value>, ApiError> {
    let root = caller.keep.trust_roots().view(&caller.identity).await?;
    Ok(Json(to_value(&root)?))
}

/// `POST /v1/trust-root` (operator).
#[utoipa::path(post, path = "/v1/trust-root", tag = "keep", operation_id = "keep_rotate_trust_root",
    summary = "Put a new trust root in force, signed by an active policy key of the current one (operator only)",
    request_body = SignedDocument,
    responses(
        (status = 200, description = "The new trust root.", body = Object),
        (status = 400, description = "Invalid; `invalid`, `not_canonical`, `bad_request`.", body = ErrorBody),
        (status = 403, description = "A user token, a bad signature, an untrusted or retired key, or expired.", body = ErrorBody),
        (status = 409, description = "Not above the version in force; `rolled_back`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn rotate(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): Strict<SignedDocument>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let root = caller
        .keep
        .trust_roots()
        .rotate(&caller.identity, &body.into_signed())
        .await?;
    Ok(Json(to_value(&root)?))
}
