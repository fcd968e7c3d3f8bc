//! The egress uses a person's sessions wait on, under `/v1/approvals`: the list, and the answer
//! (a rule that demands a device signature is approved only by a signed `approve_egress`
//! decision). Every route is a person's: the operator's token gets 403, and another person's
//! waiting use reads as one that does not exist (404).

use axum::Json;
use axum::extract::Path;

use super::Strict;
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::KeepCaller;
use crate::keep_wire::{ApprovalAnswer, ApprovalAnswered, ApprovalList};
use crate::openapi::ErrorBody;

/// `GET /v1/approvals`.
#[utoipa::path(get, path = "/v1/approvals", tag = "keep", operation_id = "keep_approvals",
    summary = "The caller's egress uses waiting for an answer, oldest first",
    responses(
        (status = 200, description = "The waiting uses.", body = ApprovalList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<ApprovalList>, ApiError> {
    let list = caller.keep.approvals().list(&caller.identity).await?;
    Ok(Json(ApprovalList { approvals: list }))
}

/// `POST /v1/approvals/{id}`.
#[utoipa::path(post, path = "/v1/approvals/{id}", tag = "keep", operation_id = "keep_answer_approval",
    summary = "Approve or deny a waiting egress use; a rule demanding a device signature is approved only by a signed `approve_egress` decision",
    params(("id" = String, Path, description = "The waiting use's id.")),
    request_body = ApprovalAnswer,
    responses(
        (status = 200, description = "Handed to the waiting request.", body = ApprovalAnswered),
        (status = 400, description = "Not an `ApprovalAnswer`; `bad_request`, `invalid`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); a decision missing, refused or replayed (`decision_refused`, `bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No such waiting use of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "The request stopped waiting meanwhile; `conflict`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 503, description = "The host does not run sessions; `unavailable`.", body = ErrorBody),
    ))]
pub(crate) async fn answer(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): Strict<ApprovalAnswer>,
) -> Result<Json<ApprovalAnswered>, ApiError> {
    let decision = body.decision.map(|decision| decision.into_signed());
    let approved = caller
        .keep
        .approvals()
        .answer(&caller.identity, &id, body.approve, decision.as_ref())
        .await?;
    Ok(Json(ApprovalAnswered { id, approved }))
}
