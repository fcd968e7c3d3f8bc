//! Keep's agents under `/v1/agents`: the operator deploys one (a signed bundle and a signed
//! policy) and reads one with its manifest and signers; anyone lists the agents in force.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use base64::Engine;
use imurun_keep::service::DeployRequest;

use crate::error::{ApiError, StrictJson};
use crate::keep_auth::{KeepCaller, OperatorCaller};
use crate::keep_wire::{AgentInfo, AgentList, DeployBody, PublicAgent};
use crate::openapi::ErrorBody;

/// The largest deploy body: a 16 MiB bundle in base64, and the policy.
pub(crate) const DEPLOY_BODY_BYTES_MAX: usize = 24 << 20;

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
    let view = caller
        .keep
        .agents()
        .deploy(&caller.identity, request)
        .await?;
    Ok((StatusCode::CREATED, Json(agent_info(view))))
}

/// `GET /v1/agents`.
#[utoipa::path(get, path = "/v1/agents", tag = "keep", operation_id = "keep_agents",
    summary = "The agents in force: name, version, description and reach; for the operator also every stored agent, refused ones with why",
    responses(
        (status = 200, description = "The agents, by name; `deployed` for the operator only.", body = AgentList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<AgentList>, ApiError> {
    let deployed = if caller.identity.user().is_none() {
        let views = caller.keep.agents().list(&caller.identity).await?;
        Some(views.into_iter().map(agent_info).collect())
    } else {
        None
    };
    let agents = caller.keep.agents().public().await?;
    Ok(Json(AgentList {
        agents: agents
            .into_iter()
            .map(|agent| PublicAgent {
                name: agent.name,
                version: agent.version,
                description: agent.description,
                reach: agent.reach,
            })
            .collect(),
        deployed,
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
pub(crate) async fn detail(
    OperatorCaller(caller): OperatorCaller,
    Path(name): Path<String>,
) -> Result<Json<AgentInfo>, ApiError> {
    let view = caller.keep.agents().get(&caller.identity, &name).await?;
    Ok(Json(agent_info(view)))
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
