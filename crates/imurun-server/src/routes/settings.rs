//! Settings a person changes while the server runs: permissions, the agent, and the
//! remembered approvals ("grants").
//!
//! Permissions and agent settings are applied at once and saved as `permissions.*` and
//! `agent.*` settings in the store, which `ServerState::start_up` reads back. Grants live in
//! memory only, by design: a restart forgets them.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use imurun_agent::MAX_STEPS_CAP;
use serde_json::json;

use crate::error::{ApiError, ApiJson};
use crate::events::ServerEvent;
use crate::openapi::ErrorBody;
use crate::state::{APPROVAL_TIMEOUT_S_MAX, PERSONA_CHARS_MAX, ServerState};
use crate::wire::{
    AgentSettings, AgentSettingsUpdate, GrantList, GrantsRevoked, PermissionMode,
    PermissionToggles, Permissions, PermissionsUpdate, SessionGrants,
};

/// The saved approval timeout, in seconds, when one was saved.
pub const APPROVAL_TIMEOUT_KEY: &str = "permissions.approvalTimeout";

/// `GET /api/permissions` → 200 `{mode, toggles: {readFiles, writeFiles, runShell, network},
/// approvalTimeout, approvalTimeoutInForce, workspaceRoot, sandbox}`.
#[utoipa::path(
    get,
    path = "/api/permissions",
    tag = "settings",
    operation_id = "get_permissions",
    summary = "The permission mode, toggles, approval timeout and workspace",
    responses(
        (status = 200, description = "The permissions as they are now.", body = Permissions),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn permissions(
    State(state): State<ServerState>,
) -> Result<Json<Permissions>, ApiError> {
    Ok(Json(current_permissions(&state).await?))
}

/// `POST /api/permissions` with any of `mode`, `toggles`, `approvalTimeout` (seconds,
/// 1..=3600) → 200 with the permissions as they are now. The mode and toggles apply to the
/// next call, the approval timeout to the next approval card; all are saved and applied again
/// at the next start. Publishes a global `permissions` event with the same body. 400 for an unknown mode, a timeout out of
/// range, an unknown field, or `workspaceRoot` (read-only while the server runs).
#[utoipa::path(
    post,
    path = "/api/permissions",
    tag = "settings",
    operation_id = "set_permissions",
    summary = "Change the mode, toggles or approval timeout",
    request_body = PermissionsUpdate,
    responses(
        (status = 200, description = "The permissions as they are now; a `permissions` event carries the same body.", body = Permissions),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused): an unknown mode, a timeout outside 1..=3600, or `workspaceRoot` (read-only), whatever its value; `bad_request`.", body = ErrorBody),
        (status = 413, description = "The body is larger than the server accepts (256 KiB by default); `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn set_permissions(
    State(state): State<ServerState>,
    ApiJson(update): ApiJson<PermissionsUpdate>,
) -> Result<Json<Permissions>, ApiError> {
    if update.workspace_root.is_some() {
        return Err(ApiError::bad_request(
            "workspaceRoot cannot change while the server runs: set it in the configuration \
             and restart the server",
        ));
    }
    let mut settings = state.executor().settings();
    if let Some(mode) = update.mode {
        settings.mode = parse_or_bad_request(mode.as_str())?;
    }
    if let Some(toggles) = update.toggles {
        let current = &mut settings.toggles;
        current.read_files = toggles.read_files.unwrap_or(current.read_files);
        current.write_files = toggles.write_files.unwrap_or(current.write_files);
        current.run_shell = toggles.run_shell.unwrap_or(current.run_shell);
        current.network = toggles.network.unwrap_or(current.network);
    }
    if let Some(seconds) = update.approval_timeout
        && !(1..=APPROVAL_TIMEOUT_S_MAX).contains(&seconds)
    {
        return Err(ApiError::bad_request(format!(
            "approvalTimeout is {seconds} seconds; it must be 1 to {APPROVAL_TIMEOUT_S_MAX}"
        )));
    }
    let mut entries = vec![
        ("permissions.mode", json!(settings.mode.as_str())),
        ("permissions.readFiles", json!(settings.toggles.read_files)),
        (
            "permissions.writeFiles",
            json!(settings.toggles.write_files),
        ),
        ("permissions.runShell", json!(settings.toggles.run_shell)),
        ("permissions.network", json!(settings.toggles.network)),
    ];
    if let Some(seconds) = update.approval_timeout {
        entries.push((APPROVAL_TIMEOUT_KEY, json!(seconds)));
    }
    state
        .store()
        .set_settings(entries.iter().map(|(key, value)| (*key, value)))
        .await?;
    state.executor().set_settings(settings);
    if let Some(seconds) = update.approval_timeout {
        state
            .executor()
            .approvals()
            .set_approval_timeout(Duration::from_secs(seconds));
    }
    let now = current_permissions(&state).await?;
    let event = ServerEvent::Permissions {
        permissions: now.clone(),
    };
    state.hub().publish_event(None, &event);
    Ok(Json(now))
}

/// `text` parsed as a `T`, or a 400 with the parser's own message. Generic so that the policy's
/// `Mode` is reached through the executor's settings without naming its crate.
fn parse_or_bad_request<T>(text: &str) -> Result<T, ApiError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|error: T::Err| ApiError::bad_request(error.to_string()))
}

async fn current_permissions(state: &ServerState) -> Result<Permissions, ApiError> {
    let settings = state.executor().settings();
    let in_force_s = state.executor().approvals().approval_timeout().as_secs();
    let saved_s = state
        .store()
        .get_setting(APPROVAL_TIMEOUT_KEY)
        .await?
        .and_then(|value| value.as_u64());
    // `PermissionMode` names every policy mode (a test holds the two lists together).
    let mode = PermissionMode::from_name(settings.mode.as_str()).ok_or_else(ApiError::internal)?;
    Ok(Permissions {
        mode,
        toggles: PermissionToggles {
            read_files: settings.toggles.read_files,
            write_files: settings.toggles.write_files,
            run_shell: settings.toggles.run_shell,
            network: settings.toggles.network,
        },
        approval_timeout: saved_s.unwrap_or(in_force_s),
        approval_timeout_in_force: in_force_s,
        workspace_root: state.executor().workspace().root().display().to_string(),
        sandbox: state.options().sandbox.clone(),
    })
}

/// `GET /api/agent` → 200 `{maxSteps, persona, summariseHistory}`.
#[utoipa::path(
    get,
    path = "/api/agent",
    tag = "settings",
    operation_id = "get_agent",
    summary = "The agent settings the next turn starts with",
    responses((status = 200, description = "The agent settings.", body = AgentSettings)),
)]
pub(crate) async fn agent(State(state): State<ServerState>) -> Json<AgentSettings> {
    Json(agent_settings(&state))
}

/// `POST /api/agent` with any of `maxSteps` (1..=20), `persona` (at most 4000 characters),
/// `summariseHistory` → 200 with the settings as they are now; they apply from the next turn
/// and are saved as `agent.*`. 400 for a value out of range or an unknown field.
#[utoipa::path(
    post,
    path = "/api/agent",
    tag = "settings",
    operation_id = "set_agent",
    summary = "Change the step limit, persona or history compaction",
    request_body = AgentSettingsUpdate,
    responses(
        (status = 200, description = "The agent settings as they are now; they apply from the next turn.", body = AgentSettings),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused): `maxSteps` outside 1..=20, or a persona over 4000 characters; `bad_request`.", body = ErrorBody),
        (status = 413, description = "The body is larger than the server accepts (256 KiB by default); `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 500, description = "The store failed; `internal`, details only in the server's log.", body = ErrorBody),
    ),
)]
pub(crate) async fn set_agent(
    State(state): State<ServerState>,
    ApiJson(update): ApiJson<AgentSettingsUpdate>,
) -> Result<Json<AgentSettings>, ApiError> {
    let mut config = state.agent_config();
    if let Some(max_steps) = update.max_steps {
        if !(1..=MAX_STEPS_CAP).contains(&max_steps) {
            return Err(ApiError::bad_request(format!(
                "maxSteps is {max_steps}; it must be 1 to {MAX_STEPS_CAP}"
            )));
        }
        config.max_steps = max_steps;
    }
    if let Some(persona) = update.persona {
        let chars = persona.chars().count();
        if chars > PERSONA_CHARS_MAX {
            return Err(ApiError::bad_request(format!(
                "the persona is {chars} characters long; at most {PERSONA_CHARS_MAX} are allowed"
            )));
        }
        config.persona = persona;
    }
    if let Some(summarise) = update.summarise_history {
        config.summarise_history = summarise;
    }
    let entries = [
        ("agent.maxSteps", json!(config.max_steps)),
        ("agent.persona", json!(config.persona)),
        ("agent.summariseHistory", json!(config.summarise_history)),
    ];
    state
        .store()
        .set_settings(entries.iter().map(|(key, value)| (*key, value)))
        .await?;
    state.set_agent_config(config);
    Ok(Json(agent_settings(&state)))
}

fn agent_settings(state: &ServerState) -> AgentSettings {
    let config = state.agent_config();
    AgentSettings {
        max_steps: config.max_steps,
        persona: config.persona,
        summarise_history: config.summarise_history,
    }
}

/// `GET /api/grants` → 200 `{"grants": [{session_id, tools: [name]}]}`: the tools each session
/// runs without asking, until the server restarts.
#[utoipa::path(
    get,
    path = "/api/grants",
    tag = "settings",
    operation_id = "list_grants",
    summary = "The tools each session runs without asking (until restart)",
    responses((status = 200, description = "The remembered approvals, by session.", body = GrantList)),
)]
pub(crate) async fn grants(State(state): State<ServerState>) -> Json<GrantList> {
    let grants = state
        .executor()
        .grants_by_session()
        .into_iter()
        .map(|(session_id, tools)| SessionGrants { session_id, tools })
        .collect();
    Json(GrantList { grants })
}

/// `DELETE /api/grants/{session_id}` → 200 `{"sessions": 0|1}`: that session asks again.
#[utoipa::path(
    delete,
    path = "/api/grants/{session_id}",
    tag = "settings",
    operation_id = "revoke_grants",
    summary = "Forget one session's remembered approvals",
    params(("session_id" = String, Path, description = "The session; an unknown one (or any other string) is not an error: it had no grants.")),
    responses((status = 200, description = "`sessions` is 1 when the session had grants, else 0; a `grants.revoked` event follows when it is 1.", body = GrantsRevoked)),
)]
pub(crate) async fn revoke_grants(
    State(state): State<ServerState>,
    Path(session_id): Path<String>,
) -> Json<GrantsRevoked> {
    Json(GrantsRevoked {
        sessions: revoke(&state, Some(&session_id)),
    })
}

/// `DELETE /api/grants` → 200 `{"sessions": n}`: every session asks again.
#[utoipa::path(
    delete,
    path = "/api/grants",
    tag = "settings",
    operation_id = "revoke_all_grants",
    summary = "Forget every session's remembered approvals",
    responses((status = 200, description = "How many sessions had grants; a `grants.revoked` event follows when some did.", body = GrantsRevoked)),
)]
pub(crate) async fn revoke_all_grants(State(state): State<ServerState>) -> Json<GrantsRevoked> {
    Json(GrantsRevoked {
        sessions: revoke(&state, None),
    })
}

/// Forgets the grants of `session_id`, or of every session; returns how many had some.
pub(crate) fn revoke(state: &ServerState, session_id: Option<&str>) -> usize {
    let sessions: Vec<String> = match session_id {
        Some(session_id) => {
            if state.executor().forget_session(session_id) {
                vec![session_id.to_owned()]
            } else {
                Vec::new()
            }
        }
        None => state.executor().forget_all_sessions(),
    };
    if !sessions.is_empty() {
        let event = ServerEvent::GrantsRevoked {
            session_ids: sessions.clone(),
        };
        state.hub().publish_event(None, &event);
    }
    sessions.len()
}
