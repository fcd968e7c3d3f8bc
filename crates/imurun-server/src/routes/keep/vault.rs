//! A person's credentials under `/v1/vault`: their names (never their values), storing one
//! (sealed at rest, never returned) and deleting one.

use axum::Json;
use axum::extract::Path;

use super::KEEP_BODY_BYTES_MAX;
use crate::error::{ApiError, SecretJson};
use crate::keep_auth::KeepCaller;
use crate::keep_wire::{VaultDeleted, VaultEntry, VaultList, VaultPut};
use crate::openapi::ErrorBody;

/// `GET /v1/vault`.
#[utoipa::path(get, path = "/v1/vault", tag = "keep", operation_id = "keep_vault",
    summary = "The names of the caller's own credentials (never their values)",
    responses((status = 200, description = "The entries, by name.", body = VaultList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<VaultList>, ApiError> {
    let entries = caller.keep.vault().list(&caller.identity).await?;
    Ok(Json(VaultList {
        entries: entries
            .into_iter()
            .map(|entry| VaultEntry {
                name: entry.name,
                updated_at_ms: entry.updated_at_ms,
            })
            .collect(),
    }))
}

/// `PUT /v1/vault/{name}`.
#[utoipa::path(put, path = "/v1/vault/{name}", tag = "keep", operation_id = "keep_put_credential",
    summary = "Store or replace one of the caller's credentials; sealed at rest, never returned",
    params(("name" = String, Path, description = "The credential's name: 1 to 64 of a-z, 0-9, - and _.")),
    request_body = VaultPut,
    responses(
        (status = 200, description = "Stored.", body = VaultEntry),
        (status = 400, description = "An invalid name, or an empty or over-8-KiB value; `invalid`, `bad_request`.", body = ErrorBody),
        (status = 409, description = "The caller's vault holds 256 entries; `conflict`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn put(
    caller: KeepCaller,
    Path(name): Path<String>,
    SecretJson(body): SecretJson<VaultPut, KEEP_BODY_BYTES_MAX>,
) -> Result<Json<VaultEntry>, ApiError> {
    // The value is read as any JSON value and checked here, so that serde's message for a
    // wrong type (which quotes the value) never reaches the answer.
    let Some(value) = body.value.as_str() else {
        return Err(ApiError::bad_request("value: a string is expected"));
    };
    if value.len() > imurun_keep::vault::SECRET_BYTES_MAX {
        return Err(ApiError::bad_request(format!(
            "value: a credential is at most {} bytes",
            imurun_keep::vault::SECRET_BYTES_MAX
        )));
    }
    let entry = caller
        .keep
        .vault()
        .put(&caller.identity, &name, value.as_bytes())
        .await?;
    Ok(Json(VaultEntry {
        name: entry.name,
        updated_at_ms: entry.updated_at_ms,
    }))
}

/// `DELETE /v1/vault/{name}`.
#[utoipa::path(delete, path = "/v1/vault/{name}", tag = "keep", operation_id = "keep_delete_credential",
    summary = "Delete one of the caller's credentials",
    params(("name" = String, Path, description = "The credential's name.")),
    responses(
        (status = 200, description = "Deleted.", body = VaultDeleted),
        (status = 404, description = "The caller has no credential of this name; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn remove(
    caller: KeepCaller,
    Path(name): Path<String>,
) -> Result<Json<VaultDeleted>, ApiError> {
    caller.keep.vault().delete(&caller.identity, &name).await?;
    Ok(Json(VaultDeleted {
        name,
        deleted: true,
    }))
}
