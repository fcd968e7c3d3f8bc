//! People under `/v1`, the operator's: who tokens were made for, with counts of their tokens,
//! devices, tools and live sessions (never their content); a person added with a token and an
//! enrolment code at once; one person with her tokens and tools; a person revoked as a whole.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use imurun_keep::service::ENROL_CODE_TTL_S_DEFAULT;

use super::Strict;
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::OperatorCaller;
use crate::keep_wire::{PeopleList, PersonAdd, PersonAdded, PersonDetail, PersonRevoked};
use crate::openapi::ErrorBody;

/// `GET /v1/people` (operator).
#[utoipa::path(get, path = "/v1/people", tag = "keep", operation_id = "keep_people",
    summary = "Everyone tokens were made for, by name, with counts of their tokens, devices, tools and live sessions (operator only)",
    responses(
        (status = 200, description = "The people.", body = PeopleList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(
    OperatorCaller(caller): OperatorCaller,
) -> Result<Json<PeopleList>, ApiError> {
    let people = caller.keep.people().list(&caller.identity).await?;
    Ok(Json(PeopleList { people }))
}

/// `POST /v1/people` (operator).
#[utoipa::path(post, path = "/v1/people", tag = "keep", operation_id = "keep_add_person",
    summary = "Add a person: her first token and an enrolment code for her first device, both shown once (operator only)",
    request_body = PersonAdd,
    responses(
        (status = 201, description = "Added.", body = PersonAdded),
        (status = 400, description = "Not a `PersonAdd`, an invalid user name or code lifetime; `bad_request`, `invalid`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode; `keep_off`.", body = ErrorBody),
        (status = 409, description = "She is here already, with a device (a code would enrol nothing): make her a token instead; `conflict`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn add(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): Strict<PersonAdd>,
) -> Result<(StatusCode, Json<PersonAdded>), ApiError> {
    let ttl_s = body.enrol_code_ttl_s.unwrap_or(ENROL_CODE_TTL_S_DEFAULT);
    let added = caller
        .keep
        .people()
        .add(&caller.identity, &body.user, ttl_s)
        .await?;
    Ok((StatusCode::CREATED, Json(added)))
}

/// `GET /v1/people/{user}` (operator).
#[utoipa::path(get, path = "/v1/people/{user}", tag = "keep", operation_id = "keep_person",
    summary = "One person: her counts, her tokens (ids and dates) and her tools (operator only)",
    params(("user" = String, Path, description = "The person's name.")),
    responses(
        (status = 200, description = "The person.", body = PersonDetail),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No token was ever made for this name (`not_found`); `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    OperatorCaller(caller): OperatorCaller,
    Path(user): Path<String>,
) -> Result<Json<PersonDetail>, ApiError> {
    Ok(Json(
        caller.keep.people().get(&caller.identity, &user).await?,
    ))
}

/// `DELETE /v1/people/{user}` (operator).
#[utoipa::path(delete, path = "/v1/people/{user}", tag = "keep", operation_id = "keep_revoke_person",
    summary = "Revoke a person: her tokens, enrolment codes, sessions on this host, tools and devices, each journaled as the operator's (operator only)",
    params(("user" = String, Path, description = "The person's name.")),
    responses(
        (status = 200, description = "What was revoked.", body = PersonRevoked),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No token was ever made for this name (`not_found`); `keep_off` when the server is not in Keep mode.", body = ErrorBody),
    ))]
pub(crate) async fn revoke(
    OperatorCaller(caller): OperatorCaller,
    Path(user): Path<String>,
) -> Result<Json<PersonRevoked>, ApiError> {
    let revoked = caller.keep.people().revoke(&caller.identity, &user).await?;
    Ok(Json(revoked))
}
