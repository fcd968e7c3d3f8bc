//! `GET /api/health` and `GET /api/model`.

use axum::Json;
use axum::extract::State;

use crate::state::{ModelStatus, ServerState};
use crate::wire::{Health, ModelInfo};

/// `GET /api/health` → 200 `{"status": "ok", "version", "keep"}`. Answers while the model loads.
#[utoipa::path(
    get,
    path = "/api/health",
    tag = "meta",
    operation_id = "health",
    summary = "Whether the server answers, and its version",
    responses((status = 200, description = "The server answers (also while the model loads).", body = Health)),
)]
pub(crate) async fn health(State(state): State<ServerState>) -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
        version: state.options().version.clone(),
        keep: state.options().keep.is_some(),
    })
}

/// `GET /api/model` → 200 `{status, name, context_limit, message?}`; `status` is `none`,
/// `loading`, `ready` or `failed` (with `message`).
#[utoipa::path(
    get,
    path = "/api/model",
    tag = "meta",
    operation_id = "get_model",
    summary = "The model slot: none, loading, ready or failed",
    responses((status = 200, description = "Where the model stands; prompts answer 503 until `ready`.", body = ModelInfo)),
)]
pub(crate) async fn model(State(state): State<ServerState>) -> Json<ModelInfo> {
    let status = state.model().status();
    let model = state.model().model();
    let message = match &status {
        ModelStatus::Failed { message } => Some(message.clone()),
        _ => None,
    };
    Json(ModelInfo {
        status: status.as_str().to_owned(),
        name: model.as_ref().map(|model| model.name().to_owned()),
        context_limit: model.as_ref().map(|model| model.context_limit()),
        message,
    })
}
