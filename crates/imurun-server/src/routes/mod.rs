//! The router: every route of the API, one file per group, under one body limit.
//!
//! | route | answers |
//! | --- | --- |
//! | `GET /api/health` | 200 [`Health`](crate::wire::Health) |
//! | `GET /api/model` | 200 [`ModelInfo`](crate::wire::ModelInfo) |
//! | `GET /api/tools` | 200 [`ToolList`](crate::wire::ToolList) |
//! | `POST /api/tools/run` | 200 [`ToolRunResult`](crate::wire::ToolRunResult); 403 ask/deny; 404; 400 |
//! | `GET /api/tools/approvals` | 200 [`ApprovalList`](crate::wire::ApprovalList) |
//! | `POST /api/tools/approvals/{id}` | 200 [`ApprovalDecided`](crate::wire::ApprovalDecided); 404 |
//! | `GET`/`POST /api/permissions` | 200 [`Permissions`](crate::wire::Permissions); 400 |
//! | `GET`/`POST /api/agent` | 200 [`AgentSettings`](crate::wire::AgentSettings); 400 |
//! | `GET /api/grants`, `DELETE /api/grants`, `DELETE /api/grants/{session_id}` | 200 |
//! | `POST /api/sessions` | 201 [`SessionInfo`](crate::wire::SessionInfo) |
//! | `GET /api/sessions` | 200 [`SessionList`](crate::wire::SessionList) |
//! | `GET`/`PATCH`/`DELETE /api/sessions/{id}` | 200; 404 |
//! | `POST /api/sessions/{id}/prompts` | 202 [`PromptAccepted`](crate::wire::PromptAccepted); 400, 404, 413, 429, 503 |
//! | `POST /api/sessions/{id}/stop` | 200 [`Stopped`](crate::wire::Stopped) |
//! | `GET /api/sessions/{id}/turns[/{turn_id}]` | 200 [`TurnList`](crate::wire::TurnList) / [`TurnView`](crate::wire::TurnView); 404 |
//! | `POST /api/stop` | 200 [`KillSwitch`](crate::wire::KillSwitch) |
//! | `GET /api/events?session=ID` | SSE, `Last-Event-ID` honoured |
//!
//! Every error is an [`ApiError`](crate::ApiError) body; unknown paths are 404 and wrong
//! methods 405 in the same shape.

mod events;
mod meta;
mod sessions;
mod settings;
mod tools;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};

use crate::error::{method_not_allowed, no_such_route};
use crate::state::ServerState;

pub use settings::APPROVAL_TIMEOUT_KEY;

/// The API's router over `state`.
pub fn router(state: ServerState) -> Router {
    let body_bytes_max = state.options().body_bytes_max;
    Router::new()
        .route("/api/health", get(meta::health))
        .route("/api/model", get(meta::model))
        .route("/api/tools", get(tools::list))
        .route("/api/tools/run", post(tools::run))
        .route("/api/tools/approvals", get(tools::approvals))
        .route("/api/tools/approvals/{id}", post(tools::decide))
        .route(
            "/api/permissions",
            get(settings::permissions).post(settings::set_permissions),
        )
        .route("/api/agent", get(settings::agent).post(settings::set_agent))
        .route(
            "/api/grants",
            get(settings::grants).delete(settings::revoke_all_grants),
        )
        .route("/api/grants/{session_id}", delete(settings::revoke_grants))
        .route("/api/sessions", get(sessions::list).post(sessions::create))
        .route(
            "/api/sessions/{id}",
            get(sessions::detail)
                .patch(sessions::rename)
                .delete(sessions::remove),
        )
        .route("/api/sessions/{id}/prompts", post(sessions::prompt))
        .route("/api/sessions/{id}/stop", post(sessions::stop))
        .route("/api/sessions/{id}/turns", get(sessions::turns))
        .route("/api/sessions/{id}/turns/{turn_id}", get(sessions::turn))
        .route("/api/stop", post(sessions::kill_switch))
        .route("/api/events", get(events::stream))
        .fallback(no_such_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_bytes_max))
        .with_state(state)
}
