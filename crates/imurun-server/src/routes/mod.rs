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
//! | `POST /api/sessions` | 201 [`SessionInfo`](crate::wire::SessionInfo); 400, 413 |
//! | `GET /api/sessions` | 200 [`SessionList`](crate::wire::SessionList) |
//! | `GET`/`PATCH`/`DELETE /api/sessions/{id}` | 200; 400, 404 (`PATCH`: 413, 415) |
//! | `POST /api/sessions/{id}/prompts` | 202 [`PromptAccepted`](crate::wire::PromptAccepted); 400, 404, 413, 415, 429, 503, 507 |
//! | `POST /api/sessions/{id}/stop` | 200 [`Stopped`](crate::wire::Stopped) |
//! | `GET /api/sessions/{id}/turns[/{turn_id}]` | 200 [`TurnList`](crate::wire::TurnList) / [`TurnView`](crate::wire::TurnView); 400, 404 |
//! | `POST /api/stop` | 200 [`KillSwitch`](crate::wire::KillSwitch) |
//! | `GET /api/integrations` | 200 [`IntegrationList`](crate::wire::IntegrationList) |
//! | `GET /api/skills` | 200 [`SkillList`](crate::wire::SkillList) |
//! | `POST /api/skills` | 201 [`SkillDetail`](crate::wire::SkillDetail); 400, 409, 413, 507 |
//! | `GET`/`DELETE /api/skills/{id}` | 200 [`SkillDetail`](crate::wire::SkillDetail) / [`SkillDeleted`](crate::wire::SkillDeleted); 400, 404 |
//! | `GET /api/events?session=ID` | SSE, `Last-Event-ID` honoured |
//! | `GET /api/openapi.json` | 200, this table as an OpenAPI 3.1 document |
//! | `GET /v1/models` | 200 [`ModelList`](crate::openai_wire::ModelList) (OpenAI's shape) |
//! | `POST /v1/chat/completions` | 200 [`ChatCompletion`](crate::openai_wire::ChatCompletion) or SSE chunks; 400, 404, 409, 413, 415, 500, 503, 507 |
//! | `GET /` | 200 the web page (`web/index.html`); not in the OpenAPI document |
//! | `GET /assets/{file}` | 200 one of the page's files; 404; not in the OpenAPI document |
//!
//! Keep mode's routes under `/v1` are in [`keep`], one file per resource.
//!
//! Every error is an [`ApiError`](crate::ApiError) body; unknown paths are 404 and wrong
//! methods 405 in the same shape. With an API token, every route but `GET /api/health` may also
//! answer 401; every JSON body that is not a JSON object of its schema is a 400.

pub(crate) mod events;
pub(crate) mod integrations;
pub(crate) mod keep;
pub(crate) mod meta;
pub(crate) mod openai;
pub(crate) mod page;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod skills;
pub(crate) mod tools;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter, get, on};
use utoipa::openapi::path::HttpMethod;

use crate::error::{method_not_allowed, no_such_route};
use crate::openapi;
use crate::state::ServerState;

pub use settings::APPROVAL_TIMEOUT_KEY;

/// The API's router over `state`, built from the route table (`table` below).
pub fn router(state: ServerState) -> Router {
    let body_bytes_max = state.options().body_bytes_max;
    let mut router = Router::new();
    for route in table() {
        // Two entries with one path (GET and POST) merge into one method router.
        router = router.route(&route.path, route.method_router);
    }
    router
        .fallback(no_such_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_bytes_max))
        .layer(axum::middleware::from_fn(openai::add_error_type))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_token,
        ))
        .layer(axum::middleware::from_fn(request_span))
        .with_state(state)
}

/// Header naming a request's id in every answer, so a person can find its log lines.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Runs each request in a span carrying its id, method and route (the path's shape, never its
/// query, which may hold the events route's token), logs failures, and names the id in the
/// answer.
async fn request_span(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tracing::Instrument;

    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let request_id = format!("req-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let span = tracing::info_span!("request", id = %request_id, %method, %route);
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    if status.is_server_error() {
        span.in_scope(|| tracing::warn!(status = status.as_u16(), "the request failed"));
    } else {
        span.in_scope(|| tracing::debug!(status = status.as_u16(), "answered"));
    }
    if let Ok(value) = axum::http::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// Every API operation the router serves, as `("GET", "/api/health")` pairs in table order:
/// what the test in `tests/all/openapi.rs` compares with the OpenAPI document. The page's
/// routes are not API operations (see [`page_operations`]).
pub fn served_operations() -> Vec<(String, String)> {
    table()
        .into_iter()
        .filter(|route| route.in_api_document)
        .map(|route| (method_name(&route.method).to_owned(), route.path))
        .collect()
}

/// The web page's operations (`GET /`, `GET /assets/{file}`): served by the same router but
/// deliberately left out of the OpenAPI document, which describes the API a program calls,
/// not the static files of one of its clients.
pub fn page_operations() -> Vec<(String, String)> {
    table()
        .into_iter()
        .filter(|route| !route.in_api_document)
        .map(|route| (method_name(&route.method).to_owned(), route.path))
        .collect()
}

/// One entry of the route table.
struct Route {
    method: HttpMethod,
    path: String,
    method_router: MethodRouter<ServerState>,
    /// Whether the OpenAPI document lists it: every route but the page's.
    in_api_document: bool,
}

/// The route table: every handler with its `#[utoipa::path]` annotation (the `__path_*` type
/// the macro generates). The method and path come from the annotation, so the router serves
/// exactly what the handler's documentation says; the same handler must also be listed in
/// [`openapi::ApiDoc`], which the test checks. Keep's entries come from [`keep::table`]. This
/// is the only place routes are added: a tidy test fails on any other `.route(` in the crate.
fn table() -> Vec<Route> {
    [
        route(meta::__path_health, meta::health),
        route(meta::__path_model, meta::model),
        route(openapi::__path_openapi_json, openapi::openapi_json),
        route(tools::__path_list, tools::list),
        route(tools::__path_run, tools::run),
        route(tools::__path_approvals, tools::approvals),
        route(tools::__path_decide, tools::decide),
        route(integrations::__path_list, integrations::list),
        route(settings::__path_permissions, settings::permissions),
        route(settings::__path_set_permissions, settings::set_permissions),
        route(settings::__path_agent, settings::agent),
        route(settings::__path_set_agent, settings::set_agent),
        route(settings::__path_grants, settings::grants),
        route(
            settings::__path_revoke_all_grants,
            settings::revoke_all_grants,
        ),
        route(settings::__path_revoke_grants, settings::revoke_grants),
        route(sessions::__path_create, sessions::create),
        route(sessions::__path_list, sessions::list),
        route(sessions::__path_detail, sessions::detail),
        route(sessions::__path_rename, sessions::rename),
        route(sessions::__path_remove, sessions::remove),
        route(sessions::__path_prompt, sessions::prompt),
        route(sessions::__path_stop, sessions::stop),
        route(sessions::__path_turns, sessions::turns),
        route(sessions::__path_turn, sessions::turn),
        route(sessions::__path_kill_switch, sessions::kill_switch),
        route(skills::__path_list, skills::list),
        route(skills::__path_create, skills::create),
        route(skills::__path_detail, skills::detail),
        route(skills::__path_remove, skills::remove),
        route(events::__path_stream, events::stream),
        route(openai::__path_models, openai::models),
        route(openai::__path_chat_completions, openai::chat_completions),
        keep::table(),
        page_route(page::INDEX_PATH, get(page::index)),
        page_route("/assets/{file}", get(page::asset)),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The entry of one of the page's routes, which has no OpenAPI annotation.
fn page_route(path: &str, method_router: MethodRouter<ServerState>) -> Vec<Route> {
    vec![Route {
        method: HttpMethod::Get,
        path: path.to_owned(),
        method_router,
        in_api_document: false,
    }]
}

/// [`route`] with its own body limit, above the router's: a Keep deploy carries its bundle.
fn route_with_body_limit<P, H, T>(operation: P, handler: H, body_bytes_max: usize) -> Vec<Route>
where
    P: utoipa::Path,
    H: Handler<T, ServerState>,
    T: 'static,
{
    route(operation, handler)
        .into_iter()
        .map(|mut entry| {
            entry.method_router = entry
                .method_router
                .layer(DefaultBodyLimit::max(body_bytes_max));
            entry
        })
        .collect()
}

/// The entries of `handler` at the method(s) and path of its annotation `_operation`.
fn route<P, H, T>(_operation: P, handler: H) -> Vec<Route>
where
    P: utoipa::Path,
    H: Handler<T, ServerState>,
    T: 'static,
{
    P::methods()
        .into_iter()
        .map(|method| Route {
            method_router: on(method_filter(&method), handler.clone()),
            method,
            path: P::path(),
            in_api_document: true,
        })
        .collect()
}

fn method_filter(method: &HttpMethod) -> MethodFilter {
    match method {
        HttpMethod::Get => MethodFilter::GET,
        HttpMethod::Post => MethodFilter::POST,
        HttpMethod::Put => MethodFilter::PUT,
        HttpMethod::Delete => MethodFilter::DELETE,
        HttpMethod::Options => MethodFilter::OPTIONS,
        HttpMethod::Head => MethodFilter::HEAD,
        HttpMethod::Patch => MethodFilter::PATCH,
        HttpMethod::Trace => MethodFilter::TRACE,
    }
}

fn method_name(method: &HttpMethod) -> &'static str {
    match method {
        HttpMethod::Get => "GET",
        HttpMethod::Post => "POST",
        HttpMethod::Put => "PUT",
        HttpMethod::Delete => "DELETE",
        HttpMethod::Options => "OPTIONS",
        HttpMethod::Head => "HEAD",
        HttpMethod::Patch => "PATCH",
        HttpMethod::Trace => "TRACE",
    }
}
