//! Skills: list, read, create and delete the instruction packs `/<id>` invokes in a prompt.
//!
//! The store reads and writes small files; each call runs on the blocking pool so that a slow
//! disk never stalls the async workers.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use imurun_agent::{
    SKILL_DESCRIPTION_CHARS_MAX, SKILL_NAME_CHARS_MAX, SkillError, SkillStore, StoredSkill,
};

use crate::error::{ApiError, ApiJson};
use crate::openapi::ErrorBody;
use crate::state::ServerState;
use crate::wire::{SkillCreate, SkillDeleted, SkillDetail, SkillInfo, SkillList, SkillPath};

/// `GET /api/skills` → 200 `{"skills": [...]}` by id, at most 1000.
#[utoipa::path(
    get,
    path = "/api/skills",
    tag = "skills",
    operation_id = "list_skills",
    summary = "The stored skills, by id (at most 1000)",
    responses(
        (status = 200, description = "The skills, without their bodies.", body = SkillList, links(
            ("get_skill" = (operation_id = "get_skill", parameters(("id" = "$response.body#/skills/0/id")), description = "The first skill with its body.")),
        )),
        (status = 500, description = "The skill directory could not be read; `internal`.", body = ErrorBody),
    ),
)]
pub(crate) async fn list(State(state): State<ServerState>) -> Result<Json<SkillList>, ApiError> {
    let skills = blocking(&state, |store| store.list()).await?;
    Ok(Json(SkillList {
        skills: skills
            .into_iter()
            .map(|skill| SkillInfo {
                id: skill.id,
                name: skill.name,
                description: skill.description,
                chars: skill.chars,
            })
            .collect(),
    }))
}

/// `POST /api/skills` `{name, description?, body}` → 201 the skill; 400, 409, 413, 507.
#[utoipa::path(
    post,
    path = "/api/skills",
    tag = "skills",
    operation_id = "create_skill",
    summary = "Store a skill; its id is the slug of its name",
    request_body = SkillCreate,
    responses(
        (status = 201, description = "The new skill, stored as `<id>/SKILL.md`.", body = SkillDetail, links(
            ("get_skill" = (operation_id = "get_skill", parameters(("id" = "$response.body#/id")), description = "The skill with its body.")),
            ("delete_skill" = (operation_id = "delete_skill", parameters(("id" = "$response.body#/id")), description = "Delete it.")),
        )),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema (unknown fields are refused): the name is empty, over 200 characters, on more than one line or has no ASCII letter or digit, the description is over 1000 characters, or the body is empty or only white space; `bad_request`.", body = ErrorBody),
        (status = 409, description = "A skill with this id exists already; `conflict`.", body = ErrorBody),
        (status = 413, description = "The skill's body is over 64 KiB, or the request over the server's limit; `too_large`.", body = ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = ErrorBody),
        (status = 507, description = "The store holds 1000 skills; `store_full`.", body = ErrorBody),
        (status = 500, description = "The skill could not be written; `internal`.", body = ErrorBody),
    ),
)]
pub(crate) async fn create(
    State(state): State<ServerState>,
    ApiJson(request): ApiJson<SkillCreate>,
) -> Result<(StatusCode, Json<SkillDetail>), ApiError> {
    check_skill_request(&request)?;
    let skill = blocking(&state, move |store| {
        store.create(
            &request.name,
            request.description.as_deref().unwrap_or_default(),
            &request.body,
        )
    })
    .await?;
    Ok((StatusCode::CREATED, Json(detail_of(skill))))
}

/// `GET /api/skills/{id}` → 200 the skill with its body; 400, 404.
#[utoipa::path(
    get,
    path = "/api/skills/{id}",
    tag = "skills",
    operation_id = "get_skill",
    summary = "A skill with its body",
    params(SkillPath),
    responses(
        (status = 200, description = "The skill.", body = SkillDetail),
        (status = 400, description = "The id is malformed (1 to 64 ASCII letters, digits, `-`, `_`, `.`, not starting with `.`); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No skill has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The skill could not be read; `internal`.", body = ErrorBody),
    ),
)]
pub(crate) async fn detail(
    State(state): State<ServerState>,
    Path(SkillPath { id }): Path<SkillPath>,
) -> Result<Json<SkillDetail>, ApiError> {
    let skill = blocking(&state, move |store| store.get(&id)).await?;
    Ok(Json(detail_of(skill)))
}

/// `DELETE /api/skills/{id}` → 200 `{deleted: true}`; 400, 404.
#[utoipa::path(
    delete,
    path = "/api/skills/{id}",
    tag = "skills",
    operation_id = "delete_skill",
    summary = "Delete a skill and its directory",
    params(SkillPath),
    responses(
        (status = 200, description = "Deleted.", body = SkillDeleted),
        (status = 400, description = "The id is malformed (1 to 64 ASCII letters, digits, `-`, `_`, `.`, not starting with `.`); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No skill has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The skill could not be removed; `internal`.", body = ErrorBody),
    ),
)]
pub(crate) async fn remove(
    State(state): State<ServerState>,
    Path(SkillPath { id }): Path<SkillPath>,
) -> Result<Json<SkillDeleted>, ApiError> {
    blocking(&state, move |store| store.delete(&id)).await?;
    Ok(Json(SkillDeleted { deleted: true }))
}

/// The limits `SkillCreate`'s schema states, on the text as sent. The store checks again after
/// trimming the name and folding the description's white space, which can only shorten them;
/// checking first here keeps the API's answer the one its document gives for every text, a
/// padded name or a description with runs of spaces included.
fn check_skill_request(request: &SkillCreate) -> Result<(), ApiError> {
    let name_chars = request.name.chars().count();
    if name_chars > SKILL_NAME_CHARS_MAX {
        return Err(ApiError::bad_request(format!(
            "the skill's name is {name_chars} characters long; at most {SKILL_NAME_CHARS_MAX} \
             are allowed"
        )));
    }
    if request.name.contains(['\n', '\r']) {
        return Err(ApiError::bad_request("the skill's name must be one line"));
    }
    if !request
        .name
        .bytes()
        .any(|byte| byte.is_ascii_alphanumeric())
    {
        return Err(ApiError::bad_request(
            "the skill's name has no ASCII letter or digit to make the skill's id from",
        ));
    }
    let description_chars = request
        .description
        .as_deref()
        .unwrap_or_default()
        .chars()
        .count();
    if description_chars > SKILL_DESCRIPTION_CHARS_MAX {
        return Err(ApiError::bad_request(format!(
            "the skill's description is {description_chars} characters long; at most \
             {SKILL_DESCRIPTION_CHARS_MAX} are allowed"
        )));
    }
    Ok(())
}

fn detail_of(skill: StoredSkill) -> SkillDetail {
    SkillDetail {
        id: skill.id,
        name: skill.name,
        description: skill.description,
        body: skill.body,
    }
}

/// Runs `work` over the skill store on the blocking pool.
async fn blocking<T: Send + 'static>(
    state: &ServerState,
    work: impl FnOnce(&SkillStore) -> Result<T, SkillError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.skills().clone();
    match tokio::task::spawn_blocking(move || work(&store)).await {
        Ok(result) => result.map_err(ApiError::from),
        // The work panicked: nothing the client can act on.
        Err(_) => Err(ApiError::internal()),
    }
}
