//! Keep's tokens under `/v1`: who holds the caller's token, and the operator making a token
//! (shown once) and revoking one at once.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use imurun_keep::service::{Identity, TokenRole};

use super::Strict;
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::{KeepCaller, OperatorCaller};
use crate::keep_wire::{TokenCreate, TokenCreated, TokenRevoked, Whoami};
use crate::openapi::ErrorBody;

/// `GET /v1/whoami`.
#[utoipa::path(get, path = "/v1/whoami", tag = "keep", operation_id = "keep_whoami",
    summary = "Who holds this token",
    responses(
        (status = 200, description = "The token's role, user and id.", body = Whoami),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn whoami(caller: KeepCaller) -> Json<Whoami> {
    Json(match caller.identity {
        Identity::Operator { token_id } => Whoami {
            role: "operator".into(),
            user: None,
            token_id,
        },
        Identity::User { name, token_id } => Whoami {
            role: "user".into(),
            user: Some(name),
            token_id,
        },
    })
}

/// `POST /v1/tokens` (operator).
#[utoipa::path(post, path = "/v1/tokens", tag = "keep", operation_id = "keep_create_token",
    summary = "Make a token for a user or the operator; shown once (operator only)",
    request_body = TokenCreate,
    responses(
        (status = 201, description = "The token and its id.", body = TokenCreated),
        (status = 400, description = "Neither or both of `user` and `operator`, or an invalid user name; `bad_request`, `invalid`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn create(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): Strict<TokenCreate>,
) -> Result<(StatusCode, Json<TokenCreated>), ApiError> {
    let role = match (body.user, body.operator) {
        (Some(user), false) => TokenRole::User(user),
        (None, true) => TokenRole::Operator,
        _ => {
            return Err(ApiError::bad_request(
                "give either `user` or `operator: true`",
            ));
        }
    };
    let token = caller.keep.tokens().create(&caller.identity, &role).await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            id: token.id,
            token: token.token,
        }),
    ))
}

/// `DELETE /v1/tokens/{id}` (operator).
#[utoipa::path(delete, path = "/v1/tokens/{id}", tag = "keep", operation_id = "keep_revoke_token",
    summary = "Revoke a token at once (operator only)",
    params(("id" = String, Path, description = "The token's id.")),
    responses(
        (status = 200, description = "Revoked.", body = TokenRevoked),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No live token has this id; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn revoke(
    OperatorCaller(caller): OperatorCaller,
    Path(id): Path<String>,
) -> Result<Json<TokenRevoked>, ApiError> {
    caller.keep.tokens().revoke(&caller.identity, &id).await?;
    Ok(Json(TokenRevoked { id, revoked: true }))
}
