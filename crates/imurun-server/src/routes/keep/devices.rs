//! People's device keys under `/v1`: the operator's one-time enrolment code for a person's first
//! device; a person enrolling a device (with that code, or with a decision signed by a device
//! of theirs), listing theirs, reading one and retiring one (with a decision signed by a device of theirs). Another person's key reads as one
//! that does not exist (404).

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use imurun_keep::service::{ENROL_CODE_TTL_S_DEFAULT, EnrolProof};

use super::{Strict, StrictDecision};
use crate::error::{ApiError, StrictJson};
use crate::keep_auth::{KeepCaller, OperatorCaller};
use crate::keep_wire::{
    DeviceEnrol, DeviceInfo, DeviceList, EnrolCodeCreate, EnrolCodeCreated, RetireDeviceBody,
};
use crate::openapi::ErrorBody;

/// `POST /v1/enrol-codes` (operator).
#[utoipa::path(post, path = "/v1/enrol-codes", tag = "keep", operation_id = "keep_enrol_code",
    summary = "Issue a one-time code for a user's first device (operator only)",
    request_body = EnrolCodeCreate,
    responses(
        (status = 201, description = "The code: shown once.", body = EnrolCodeCreated),
        (status = 400, description = "An invalid user or `ttl_s`; `invalid`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 409, description = "The user has a live device: a code enrols only a first device; `conflict`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn enrol_code(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): Strict<EnrolCodeCreate>,
) -> Result<(StatusCode, Json<EnrolCodeCreated>), ApiError> {
    let ttl_s = body.ttl_s.unwrap_or(ENROL_CODE_TTL_S_DEFAULT);
    let code = caller
        .keep
        .devices()
        .enrol_code(&caller.identity, &body.user, ttl_s)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(EnrolCodeCreated {
            user: body.user,
            code,
            expires_in_s: ttl_s,
        }),
    ))
}

/// `GET /v1/devices`.
#[utoipa::path(get, path = "/v1/devices", tag = "keep", operation_id = "keep_devices",
    summary = "The caller's device keys, retired ones included",
    responses((status = 200, description = "The devices, oldest first.", body = DeviceList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<DeviceList>, ApiError> {
    let devices = caller.keep.devices().list(&caller.identity).await?;
    Ok(Json(DeviceList {
        devices: devices.into_iter().map(device_info).collect(),
    }))
}

/// `POST /v1/devices`.
#[utoipa::path(post, path = "/v1/devices", tag = "keep", operation_id = "keep_enrol_device",
    summary = "Register a device key: the first with an enrolment code, later ones with a decision signed by an existing device",
    request_body = DeviceEnrol,
    responses(
        (status = 201, description = "Registered.", body = DeviceInfo),
        (status = 400, description = "A malformed key or label, or neither or both proofs; `invalid`, `bad_request`.", body = ErrorBody),
        (status = 403, description = "The code is unknown, used, expired or another user's; a second device without a decision; a decision refused (`decision_refused`, `untrusted_key`, `bad_signature`, `expired`); an operator token.", body = ErrorBody),
        (status = 409, description = "The key is registered already; `conflict`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn enrol(
    caller: KeepCaller,
    StrictJson(body): Strict<DeviceEnrol>,
) -> Result<(StatusCode, Json<DeviceInfo>), ApiError> {
    let proof = match (body.enrol_code, body.decision) {
        (Some(code), None) => EnrolProof::Code(code),
        (None, Some(decision)) => EnrolProof::Decision(decision.into_signed()),
        _ => {
            return Err(ApiError::bad_request(
                "give either `enrol_code` or `decision`",
            ));
        }
    };
    let device = caller
        .keep
        .devices()
        .enrol(
            &caller.identity,
            &body.public_key,
            &body.label,
            &body.possession,
            proof,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(device_info(device))))
}

/// `GET /v1/devices/{key_id}`.
#[utoipa::path(get, path = "/v1/devices/{key_id}", tag = "keep", operation_id = "keep_device",
    summary = "One of the caller's device keys",
    params(("key_id" = String, Path, description = "The key's id.")),
    responses(
        (status = 200, description = "The device.", body = DeviceInfo),
        (status = 404, description = "Another user's key reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn detail(
    caller: KeepCaller,
    Path(key_id): Path<String>,
) -> Result<Json<DeviceInfo>, ApiError> {
    let device = caller.keep.devices().get(&caller.identity, &key_id).await?;
    Ok(Json(device_info(device)))
}

/// `POST /v1/devices/{key_id}/retire`.
#[utoipa::path(post, path = "/v1/devices/{key_id}/retire", tag = "keep", operation_id = "keep_retire_device",
    summary = "Retire one of the caller's device keys with a decision signed by one of their devices (the key itself included): it signs nothing from now on",
    params(("key_id" = String, Path, description = "The key's id.")),
    request_body = RetireDeviceBody,
    responses(
        (status = 200, description = "Retired.", body = DeviceInfo),
        (status = 400, description = "Not a `RetireDeviceBody`; `bad_request`, `invalid`, `not_canonical`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "The operator's token (`forbidden`); the decision refused (`decision_refused`, `bad_signature`, `untrusted_key`, `expired`).", body = ErrorBody),
        (status = 404, description = "No key of the caller's has this id (another person's reads as one that does not exist); `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "The key is retired already; `conflict`.", body = ErrorBody),
        (status = 413, description = "The body is over its limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn retire(
    caller: KeepCaller,
    Path(key_id): Path<String>,
    StrictJson(body): StrictDecision<RetireDeviceBody>,
) -> Result<Json<DeviceInfo>, ApiError> {
    let device = caller
        .keep
        .devices()
        .retire(&caller.identity, &key_id, &body.decision.into_signed())
        .await?;
    Ok(Json(device_info(device)))
}

fn device_info(view: imurun_keep::service::DeviceView) -> DeviceInfo {
    DeviceInfo {
        key_id: view.key_id,
        public_key: view.public_key,
        label: view.label,
        created_at_ms: view.created_at_ms,
        retired_at_ms: view.retired_at_ms,
    }
}
