//! The proposals a person's sessions made, under `/v1/proposals`: the list and one proposal (a
//! tool's review, ids `kt-...`, or another kind), beside their decisions: accepting or rejecting
//! a memory entry, suggestion, plan or card, and a tool proposal's decision signed on one of the
//! person's devices, whose approval deploys the clamped manifest as `u/<user>/<name>@<version>`.
//! Every route is a person's: the operator's token gets 403, and another person's proposal
//! reads as one that does not exist (404).

use axum::Json;
use axum::extract::{Path, Query};
use serde::Deserialize;

use super::{Strict, StrictDecision};
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::KeepCaller;
use crate::keep_wire::{
    AnyProposal, ProposalAccept, ProposalList, ProposalView, ToolDecisionBody, ToolReview,
};
use crate::openapi::ErrorBody;

/// The query of `GET /v1/proposals`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProposalQuery {
    /// Only proposals of this kind: `memory`, `suggestion`, `plan`, `card` or `tool`.
    kind: Option<String>,
}

/// `GET /v1/proposals`.
#[utoipa::path(get, path = "/v1/proposals", tag = "keep", operation_id = "keep_proposals",
    summary = "The caller's proposals (memory entries, suggestions, plans, cards, and tools with their reviews), newest first",
    params(ProposalQuery),
    responses(
        (status = 200, description = "The proposals.", body = ProposalList),
        (status = 400, description = "An unknown `kind`; `invalid`, `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(
    caller: KeepCaller,
    query: Result<Query<ProposalQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ProposalList>, ApiError> {
    let Query(query) = query.map_err(|error| ApiError::bad_request(error.body_text()))?;
    let kind = query.kind.as_deref();
    let proposals = match kind {
        Some("tool") => Vec::new(),
        _ => caller.keep.proposals().list(&caller.identity, kind).await?,
    };
    let tools = match kind {
        None | Some("tool") => caller.keep.tool_proposals().list(&caller.identity).await?,
        Some(_) => Vec::new(),
    };
    Ok(Json(ProposalList { proposals, tools }))
}

/// `GET /v1/proposals/{id}`.
#[utoipa::path(get, path = "/v1/proposals/{id}", tag = "keep", operation_id = "keep_proposal",
    summary = "One of the caller's proposals",
    params(("id" = String, Path, description = "The proposal's id.")),
    responses(
        (status = 200, description = "The proposal: a tool's review (ids `kt-...`), or another kind.", body = AnyProposal),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "Another person's proposal reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<AnyProposal>, ApiError> {
    if id.starts_with(imurun_keep::service::TOOL_PROPOSAL_ID_PREFIX) {
        let review = caller
            .keep
            .tool_proposals()
            .get(&caller.identity, &id)
            .await?;
        return Ok(Json(AnyProposal::Tool(Box::new(review))));
    }
    let view = caller.keep.proposals().get(&caller.identity, &id).await?;
    Ok(Json(AnyProposal::Other(Box::new(view))))
}

/// `POST /v1/proposals/{id}/accept`.
#[utoipa::path(post, path = "/v1/proposals/{id}/accept", tag = "keep", operation_id = "keep_accept_proposal",
    summary = "Accept one of the caller's pending proposals; one from a tainted session needs `confirm_tainted`",
    params(("id" = String, Path, description = "The proposal's id.")),
    request_body = ProposalAccept,
    responses(
        (status = 200, description = "Accepted.", body = ProposalView),
        (status = 400, description = "Not a `ProposalAccept`; `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such proposal of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Decided already (`conflict`); tainted and not confirmed (`confirm_tainted`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn accept(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): Strict<ProposalAccept>,
) -> Result<Json<ProposalView>, ApiError> {
    let view = caller
        .keep
        .proposals()
        .decide(&caller.identity, &id, true, body.confirm_tainted)
        .await?;
    Ok(Json(view))
}

/// `POST /v1/proposals/{id}/reject`.
#[utoipa::path(post, path = "/v1/proposals/{id}/reject", tag = "keep", operation_id = "keep_reject_proposal",
    summary = "Reject one of the caller's pending proposals",
    params(("id" = String, Path, description = "The proposal's id.")),
    responses(
        (status = 200, description = "Rejected.", body = ProposalView),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such proposal of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Decided already; `conflict`.", body = ErrorBody),
    ))]
pub(crate) async fn reject(
    caller: KeepCaller,
    Path(id): Path<String>,
) -> Result<Json<ProposalView>, ApiError> {
    let view = caller
        .keep
        .proposals()
        .decide(&caller.identity, &id, false, false)
        .await?;
    Ok(Json(view))
}

/// `POST /v1/proposals/{id}/decision`.
#[utoipa::path(post, path = "/v1/proposals/{id}/decision", tag = "keep", operation_id = "keep_decide_tool",
    summary = "Approve or deny one of the caller's tool proposals with a decision signed on one of their devices; an approval deploys the clamped manifest as u/<user>/<name>@<version>",
    params(("id" = String, Path, description = "The tool proposal's id (`kt-...`).")),
    request_body = ToolDecisionBody,
    responses(
        (status = 200, description = "Decided: the review, now `approved` (deployed) or `denied`.", body = ToolReview),
        (status = 400, description = "Not a `ToolDecisionBody`; `bad_request`, `invalid`, `not_canonical`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); the decision refused: unsigned, another key's or user's, a changed field or hash, expired, its nonce used, made against another ceiling or agent version (`decision_refused`, `bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No such proposal of the caller's; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "Decided already, the version deployed already (`conflict`); a tainted proposal approved without `confirm_tainted` (`confirm_tainted`); a version not above the last (`rolled_back`).", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn decide(
    caller: KeepCaller,
    Path(id): Path<String>,
    StrictJson(body): StrictDecision<ToolDecisionBody>,
) -> Result<Json<ToolReview>, ApiError> {
    let review = caller
        .keep
        .tool_proposals()
        .decide(&caller.identity, &id, &body.decision.into_signed())
        .await?;
    Ok(Json(review))
}
