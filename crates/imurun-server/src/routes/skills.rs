//! Skills: list, read, create and delete the instruction packs `/<id>` invokes in a prompt.
//!
//! The store reads and writes small files; each call runs on the blocking pool so that a slow
//! disk never stalls the async workers.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use imurun_agent::{SkillError, SkillStore, StoredSkill};

use crate::error::{ApiError, ApiJson};
use crate::openapi::ErrorBody;
use crate::state::ServerState;
use crate::wire::{SkillCreate, SkillDeleted, SkillDetail, SkillInfo, SkillList};

/// `GET /api/skills` → 200 `{"skills": [...]}` by id, at most 1000.
#[utoipa::path(
    get,
    path = "/api/skills",
    tag = "skills",
    summary = "The stored skills, by id (at most 1000)",
    responses(
        (status = 200, description = "The skills, without their bodies.", body = SkillList),
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
    summary = "Store a skill; its id is the slug of its name",
    request_body = SkillCreate,
    responses(
        (status = 201, description = "The new skill, stored as `<id>/SKILL.md`.", body = SkillDetail),
        (status = 400, description = "The body is not JSON or does not fit the schema, the name is empty, over 200 characters or has no ASCII letter or digit, the description is over 1000 characters, or the body is empty; `bad_request`.", body = ErrorBody),
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
    summary = "A skill with its body",
    params(("id" = String, Path, description = "The skill id.")),
    responses(
        (status = 200, description = "The skill.", body = SkillDetail),
        (status = 400, description = "The id is malformed (1 to 64 ASCII letters, digits, `-`, `_`, `.`, not starting with `.`); `bad_request`.", body = ErrorBody),
        (status = 404, description = "No skill has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The skill could not be read; `internal`.", body = ErrorBody),
    ),
)]
pub(crate) async fn detail(
    State(state): State<ServerState>,
    Path(id): Path<String>,
) -> Result<Json<SkillDetail>, ApiError> {
    let skill = blocking(&state, move |store| store.get(&id)).await?;
    Ok(Json(detail_of(skill)))
}

/// `DELETE /api/skills/{id}` → 200 `{deleted: true}`; 400, 404.
#[utoipa::path(
    delete,
    path = "/api/skills/{id}",
    tag = "skills",
    summary = "Delete a skill and its directory",
    params(("id" = String, Path, description = "The skill id.")),
    responses(
        (status = 200, description = "Deleted.", body = SkillDeleted),
        (status = 400, description = "The id is malformed; `bad_request`.", body = ErrorBody),
        (status = 404, description = "No skill has this id; `not_found`.", body = ErrorBody),
        (status = 500, description = "The skill could not be removed; `internal`.", body = ErrorBody),
    ),
)]
pub(crate) async fn remove(
    State(state): State<ServerState>,
    Path(id): Path<String>,
) -> Result<Json<SkillDeleted>, ApiError> {
    blocking(&state, move |store| store.delete(&id)).await?;
    Ok(Json(SkillDeleted { deleted: true }))
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
