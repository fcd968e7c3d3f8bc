//! Keep mode's routes under `/v1`: who am I, agents (deploy and list), ceilings, the trust
//! root, tokens, enrolment codes, devices, the vault and the journal. Each answers only in Keep
//! mode (otherwise 404 `keep_off`); operator routes refuse a user token before reading the
//! body, the Keep service decides who may do what again, and `ApiError::from` puts its
//! refusals on the wire.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use base64::Engine;
use imurun_keep::service::{
    DeployRequest, ENROL_CODE_TTL_S_DEFAULT, EnrolProof, Identity, TokenRole,
};

use crate::error::{ApiError, SecretJson, StrictJson};
use crate::keep_auth::{KeepCaller, OperatorCaller};
use crate::keep_wire::{
    AgentInfo, AgentList, CeilingInfo, DeployBody, DeviceEnrol, DeviceInfo, DeviceList,
    EnrolCodeCreate, EnrolCodeCreated, JournalCheck, JournalEntryInfo, JournalList, PublicAgent,
    SignedDocument, TokenCreate, TokenCreated, TokenRevoked, VaultDeleted, VaultEntry, VaultList,
    VaultPut, Whoami,
};
use crate::openapi::ErrorBody;

/// The largest deploy body: a 16 MiB bundle in base64, and the policy.
pub(crate) const DEPLOY_BODY_BYTES_MAX: usize = 24 << 20;

/// The largest body of every other Keep route.
const KEEP_BODY_BYTES_MAX: usize = 256 << 10;

type Strict<T> = StrictJson<T, KEEP_BODY_BYTES_MAX>;

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

/// `POST /v1/agents` (operator).
#[utoipa::path(post, path = "/v1/agents", tag = "keep", operation_id = "keep_deploy",
    summary = "Deploy an agent: a signed bundle and a signed policy (operator only)",
    request_body = DeployBody,
    responses(
        (status = 201, description = "Deployed; the version in force.", body = AgentInfo),
        (status = 400, description = "A field is invalid (the error names it), the body is not strict JSON (duplicate names, floats), the bundle is not a component, or a credential is missing from the operator's vault; `invalid`, `not_canonical`, `missing_credential`, `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 403, description = "A user token (`forbidden`); a signature that does not match (`bad_signature`); a key unknown, retired or of the wrong role (`untrusted_key`); an expired policy (`expired`).", body = ErrorBody),
        (status = 409, description = "The version is not above every version deployed for the name; `rolled_back`.", body = ErrorBody),
        (status = 413, description = "The body is over 24 MiB; `too_large`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
        (status = 415, description = "Not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
    ))]
pub(crate) async fn deploy(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): StrictJson<DeployBody, DEPLOY_BODY_BYTES_MAX>,
) -> Result<(StatusCode, Json<AgentInfo>), ApiError> {
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(body.bundle.as_bytes())
        .map_err(|error| ApiError::bad_request(format!("bundle: not standard base64: {error}")))?;
    let request = DeployRequest {
        bundle,
        bundle_signature: imurun_keep::documents::Signature {
            key_id: body.bundle_signature.key_id,
            sig: body.bundle_signature.sig,
        },
        policy: body.policy.into_signed(),
    };
    let view = caller.keep.deploy(&caller.identity, request).await?;
    Ok((StatusCode::CREATED, Json(agent_info(view))))
}

/// `GET /v1/agents`.
#[utoipa::path(get, path = "/v1/agents", tag = "keep", operation_id = "keep_agents",
    summary = "The agents in force: name, version and description",
    responses(
        (status = 200, description = "The agents, by name.", body = AgentList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn agents(caller: KeepCaller) -> Result<Json<AgentList>, ApiError> {
    let agents = caller.keep.public_agents().await?;
    Ok(Json(AgentList {
        agents: agents
            .into_iter()
            .map(|agent| PublicAgent {
                name: agent.name,
                version: agent.version,
                description: agent.description,
            })
            .collect(),
    }))
}

/// `GET /v1/agents/{name}` (operator).
#[utoipa::path(get, path = "/v1/agents/{name}", tag = "keep", operation_id = "keep_agent",
    summary = "One agent in force, with its manifest and signers (operator only)",
    params(("name" = String, Path, description = "The agent's name.")),
    responses(
        (status = 200, description = "The agent.", body = AgentInfo),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such agent; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 409, description = "The stored version is older than one accepted (an old row restored); `rolled_back`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn agent(
    OperatorCaller(caller): OperatorCaller,
    Path(name): Path<String>,
) -> Result<Json<AgentInfo>, ApiError> {
    let view = caller.keep.agent(&caller.identity, &name).await?;
    Ok(Json(agent_info(view)))
}

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
pub(crate) async fn put_ceiling(
    OperatorCaller(caller): OperatorCaller,
    Path(user): Path<String>,
    StrictJson(body): Strict<SignedDocument>,
) -> Result<Json<CeilingInfo>, ApiError> {
    let ceiling = caller
        .keep
        .put_ceiling(&caller.identity, &user, &body.into_signed())
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
pub(crate) async fn ceiling(
    caller: KeepCaller,
    Path(user): Path<String>,
) -> Result<Json<CeilingInfo>, ApiError> {
    let view = caller.keep.ceiling(&caller.identity, &user).await?;
    Ok(Json(CeilingInfo {
        ceiling: to_value(&view.ceiling)?,
        empty_because: view.empty_because,
    }))
}

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
pub(crate) async fn trust_root(
    OperatorCaller(caller): OperatorCaller,
) -> Result<Json<serde_json::Value>, ApiError> {
    let root = caller.keep.trust_root(&caller.identity).await?;
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
pub(crate) async fn rotate_trust_root(
    OperatorCaller(caller): OperatorCaller,
    StrictJson(body): Strict<SignedDocument>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let root = caller
        .keep
        .rotate_trust_root(&caller.identity, &body.into_signed())
        .await?;
    Ok(Json(to_value(&root)?))
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
pub(crate) async fn create_token(
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
    let token = caller.keep.create_token(&caller.identity, &role).await?;
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
pub(crate) async fn revoke_token(
    OperatorCaller(caller): OperatorCaller,
    Path(id): Path<String>,
) -> Result<Json<TokenRevoked>, ApiError> {
    caller.keep.revoke_token(&caller.identity, &id).await?;
    Ok(Json(TokenRevoked { id, revoked: true }))
}

/// `POST /v1/enrol-codes` (operator).
#[utoipa::path(post, path = "/v1/enrol-codes", tag = "keep", operation_id = "keep_enrol_code",
    summary = "Issue a one-time code for a user's first device (operator only)",
    request_body = EnrolCodeCreate,
    responses(
        (status = 201, description = "The code: shown once.", body = EnrolCodeCreated),
        (status = 400, description = "An invalid user or `ttl_s`; `invalid`.", body = ErrorBody),
        (status = 403, description = "A user token; `forbidden`.", body = ErrorBody),
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
pub(crate) async fn devices(caller: KeepCaller) -> Result<Json<DeviceList>, ApiError> {
    let devices = caller.keep.devices(&caller.identity).await?;
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
pub(crate) async fn enrol_device(
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
        .enrol_device(
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
pub(crate) async fn device(
    caller: KeepCaller,
    Path(key_id): Path<String>,
) -> Result<Json<DeviceInfo>, ApiError> {
    let device = caller.keep.device(&caller.identity, &key_id).await?;
    Ok(Json(device_info(device)))
}

/// `DELETE /v1/devices/{key_id}`.
#[utoipa::path(delete, path = "/v1/devices/{key_id}", tag = "keep", operation_id = "keep_retire_device",
    summary = "Retire one of the caller's device keys: it signs nothing from now on",
    params(("key_id" = String, Path, description = "The key's id.")),
    responses(
        (status = 200, description = "Retired.", body = DeviceInfo),
        (status = 404, description = "No live key of the caller's has this id; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn retire_device(
    caller: KeepCaller,
    Path(key_id): Path<String>,
) -> Result<Json<DeviceInfo>, ApiError> {
    let device = caller.keep.retire_device(&caller.identity, &key_id).await?;
    Ok(Json(device_info(device)))
}

/// `GET /v1/vault`.
#[utoipa::path(get, path = "/v1/vault", tag = "keep", operation_id = "keep_vault",
    summary = "The names of the caller's own credentials (never their values)",
    responses((status = 200, description = "The entries, by name.", body = VaultList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn vault(caller: KeepCaller) -> Result<Json<VaultList>, ApiError> {
    let entries = caller.keep.credentials(&caller.identity).await?;
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
pub(crate) async fn put_credential(
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
        .put_credential(&caller.identity, &name, value.as_bytes())
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
pub(crate) async fn delete_credential(
    caller: KeepCaller,
    Path(name): Path<String>,
) -> Result<Json<VaultDeleted>, ApiError> {
    caller
        .keep
        .delete_credential(&caller.identity, &name)
        .await?;
    Ok(Json(VaultDeleted {
        name,
        deleted: true,
    }))
}

/// `GET /v1/journal`.
#[utoipa::path(get, path = "/v1/journal", tag = "keep", operation_id = "keep_journal",
    summary = "The newest 1000 journal entries, newest first: all of them for the operator, those about them for a user",
    responses((status = 200, description = "The entries.", body = JournalList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn journal(caller: KeepCaller) -> Result<Json<JournalList>, ApiError> {
    let entries = caller.keep.journal(&caller.identity).await?;
    Ok(Json(JournalList {
        entries: entries.into_iter().map(journal_info).collect(),
    }))
}

/// `GET /v1/journal/{seq}`.
#[utoipa::path(get, path = "/v1/journal/{seq}", tag = "keep", operation_id = "keep_journal_entry",
    summary = "One journal entry the caller may read",
    params(("seq" = i64, Path, description = "The entry's sequence number.")),
    responses(
        (status = 200, description = "The entry.", body = JournalEntryInfo),
        (status = 404, description = "An entry about another user reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn journal_entry(
    caller: KeepCaller,
    Path(seq): Path<String>,
) -> Result<Json<JournalEntryInfo>, ApiError> {
    let Ok(seq) = seq.parse::<i64>() else {
        return Err(ApiError::from(imurun_keep::KeepError::NotFound(
            "journal entry",
        )));
    };
    let entry = caller.keep.journal_entry(&caller.identity, seq).await?;
    Ok(Json(journal_info(entry)))
}

/// `GET /v1/journal/verify`.
#[utoipa::path(get, path = "/v1/journal/verify", tag = "keep", operation_id = "keep_verify_journal",
    summary = "Check the whole journal's hash chain: the operator sees the first bad entry; a user the entries about them and the first bad entry only when it is about them",
    responses(
        (status = 200, description = "The whole chain's check. For a user, `entries` counts the entries about them that the check read, and when the first bad entry is about another user `first_bad_seq` is null and `reason` is \"an entry that is not about you breaks the chain\".", body = JournalCheck),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn verify_journal(caller: KeepCaller) -> Result<Json<JournalCheck>, ApiError> {
    let report = caller.keep.verify_journal(&caller.identity).await?;
    Ok(Json(JournalCheck {
        entries: report.entries,
        intact: report.first_bad.is_none(),
        first_bad_seq: report.first_bad.as_ref().and_then(|bad| bad.seq),
        reason: report.first_bad.map(|bad| bad.reason),
    }))
}

fn to_value(value: &impl serde::Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(|_| ApiError::internal())
}

fn agent_info(view: imurun_keep::service::AgentView) -> AgentInfo {
    AgentInfo {
        name: view.name,
        version: view.version,
        owner: view.owner,
        bundle_sha256: view.bundle_sha256,
        bundle_size: view.bundle_size,
        signer_key_id: view.signer_key_id,
        policy_key_id: view.policy_key_id,
        manifest: view.manifest,
        deployed_at_ms: view.deployed_at_ms,
        refused: view.refused,
    }
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

fn journal_info(entry: imurun_keep::service::JournalView) -> JournalEntryInfo {
    JournalEntryInfo {
        seq: entry.seq,
        at_ms: entry.at_ms,
        actor: entry.actor,
        user: entry.user,
        kind: entry.kind,
        subject: entry.subject,
        detail: entry.detail,
        prev_hash: entry.prev_hash,
        hash: entry.hash,
    }
}
