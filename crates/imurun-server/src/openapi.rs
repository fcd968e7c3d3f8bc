//! The OpenAPI document served at `GET /api/openapi.json`: generated from the handlers'
//! `#[utoipa::path]` annotations and the `ToSchema` derives of the types that go on the wire,
//! plus the shapes that exist on the wire but not as Rust types: the error bodies (built by
//! `ApiError`) and the hub's `stream.*` notices (built in `hub.rs`).
//!
//! Each handler's annotation is also where the router reads its method and path (see
//! `routes::table`), and `tests/all/openapi.rs` checks that the operations listed in
//! [`ApiDoc`] are exactly the routes served, so a route cannot be added without appearing here.
//! The live events are described by the types that are serialized onto the stream
//! (`imurun_core::Event`, `ServerEvent`, `TurnEvent`) composed with the hub's stamp (see
//! [`StreamEventSchema`]), and a person's Keep events (`GET /v1/events`) by Keep's own
//! (`imurun_keep::events::KeepEvent` and the server's `keep_events`, see
//! [`KeepStreamEventSchema`]); the tests check real events against those schemas, field by
//! field. What the whole router does to every request, the API token and the request id, is
//! added to every operation in one place too ([`TokenAuth`], [`RequestIds`]), as the router adds
//! it in one middleware.

#![allow(dead_code)] // The error and notice shapes are described, never built as these types.

use axum::Json;
use imurun_core::Event;
use serde::Serialize;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::request_body::RequestBody;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder, ObjectBuilder, Ref, Schema, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{Content, OpenApi as Document, RefOr, Required};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::events::{ServerEvent, TurnEvent};
use crate::keep_events::{KeepNotice, OmittedEvent};
use crate::routes::REQUEST_ID_HEADER;
use imurun_keep::events::KeepEvent;

/// The OpenAPI document of this server's API.
pub fn api_document() -> Document {
    ApiDoc::openapi()
}

/// `GET /api/openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    operation_id = "openapi",
    summary = "This API as an OpenAPI 3.1 document",
    responses((status = 200, description = "The OpenAPI document.", body = Object)),
)]
pub(crate) async fn openapi_json() -> Json<Document> {
    Json(api_document())
}

/// The operations and shapes of the API. Every handler the router serves is listed in
/// `paths`; `tests/all/openapi.rs` fails when one is missing.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "imurun API",
        description = "The HTTP API of imurun, a local-first agent runtime. Every error is \
            `{\"error\": {\"code\", \"message\"}}` (see `ErrorBody`); an unknown path is 404 \
            `not_found` and a known path with another method is 405 `method_not_allowed`, in \
            the same shape. Live events arrive over SSE at `GET /api/events`; each message's \
            `data:` is one `StreamEvent`. The prose reference is `docs/api.md`.",
    ),
    paths(
        crate::routes::keep::tokens::whoami,
        crate::routes::keep::agents::deploy,
        crate::routes::keep::agents::list,
        crate::routes::keep::agents::detail,
        crate::routes::keep::ceilings::put,
        crate::routes::keep::ceilings::detail,
        crate::routes::keep::trust::detail,
        crate::routes::keep::trust::rotate,
        crate::routes::keep::tokens::create,
        crate::routes::keep::tokens::revoke,
        crate::routes::keep::devices::enrol_code,
        crate::routes::keep::devices::list,
        crate::routes::keep::devices::enrol,
        crate::routes::keep::devices::detail,
        crate::routes::keep::devices::retire,
        crate::routes::keep::vault::list,
        crate::routes::keep::vault::put,
        crate::routes::keep::vault::remove,
        crate::routes::keep::journal::list,
        crate::routes::keep::journal::verify,
        crate::routes::keep::journal::entry,
        crate::routes::keep::people::list,
        crate::routes::keep::people::add,
        crate::routes::keep::people::detail,
        crate::routes::keep::people::revoke,
        crate::routes::keep::sessions::start,
        crate::routes::keep::sessions::list,
        crate::routes::keep::sessions::detail,
        crate::routes::keep::sessions::conversation,
        crate::routes::keep::sessions::delete,
        crate::routes::keep::sessions::message,
        crate::routes::keep::sessions::file,
        crate::routes::keep::sessions::stop,
        crate::routes::keep::sessions::events,
        crate::routes::keep::proposals::list,
        crate::routes::keep::proposals::detail,
        crate::routes::keep::proposals::accept,
        crate::routes::keep::proposals::reject,
        crate::routes::keep::proposals::decide,
        crate::routes::keep::tools::list,
        crate::routes::keep::tools::detail,
        crate::routes::keep::tools::revoke,
        crate::routes::keep::tools::clear_taint,
        crate::routes::keep::settings::host,
        crate::routes::keep::settings::tool_propose,
        crate::routes::keep::settings::set_tool_propose,
        crate::routes::keep::approvals::list,
        crate::routes::keep::approvals::answer,
        crate::routes::meta::health,
        crate::routes::meta::model,
        openapi_json,
        crate::routes::tools::list,
        crate::routes::tools::run,
        crate::routes::tools::approvals,
        crate::routes::tools::decide,
        crate::routes::settings::permissions,
        crate::routes::settings::set_permissions,
        crate::routes::integrations::list,
        crate::routes::settings::agent,
        crate::routes::settings::set_agent,
        crate::routes::settings::grants,
        crate::routes::settings::revoke_all_grants,
        crate::routes::settings::revoke_grants,
        crate::routes::sessions::create,
        crate::routes::sessions::list,
        crate::routes::sessions::detail,
        crate::routes::sessions::rename,
        crate::routes::sessions::remove,
        crate::routes::sessions::prompt,
        crate::routes::sessions::stop,
        crate::routes::sessions::turns,
        crate::routes::sessions::turn,
        crate::routes::sessions::kill_switch,
        crate::routes::skills::list,
        crate::routes::skills::create,
        crate::routes::skills::detail,
        crate::routes::skills::remove,
        crate::routes::events::stream,
        crate::routes::openai::models,
        crate::routes::openai::chat_completions,
    ),
    components(schemas(
        ErrorBody,
        ToolRefusedBody,
        ModelNotLoadedBody,
        Event,
        ServerEvent,
        TurnEvent<'static>,
        EventStamp,
        StreamNotice,
        EventMessage,
        KeepEvent,
        OmittedEvent,
        KeepNotice,
        KeepEventMessage,
    )),
    modifiers(
        &StreamEventSchema,
        &KeepStreamEventSchema,
        &TokenAuth,
        &RequestIds,
        &OptionalBodies
    ),
    tags(
        (name = "meta", description = "Health, the model slot and this document."),
        (name = "tools", description = "Tools, running one by hand, and approvals."),
        (name = "settings", description = "Permissions, agent settings and remembered grants."),
        (name = "sessions", description = "Sessions, prompts, turns, Stop and the kill switch."),
        (name = "skills", description = "Skills: instruction packs a prompt invokes with `/<id>`."),
        (name = "events", description = "The live event stream (SSE)."),
        (name = "keep", description = "Keep mode (`imurun serve --keep`): tokens, agents, ceilings, the trust root, devices, the vault, the journal, sessions in cells, their events, proposals and egress approvals. Each answers 404 outside Keep mode; see `docs/keep/`."),
        (name = "openai", description = "The OpenAI-compatible facade: an imurun agent as a model for OpenAI clients. Errors here also carry `type`, equal to `code`."),
    ),
)]
pub struct ApiDoc;

/// Every error: `{"error": {"code", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "not_found", "message": "no session has this id"}}))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The `error` object of every error body.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable machine code: `bad_request`, `unauthorized`, `not_found`,
    /// `method_not_allowed`, `conflict`, `too_large`, `unsupported_media_type`,
    /// `approval_required`, `denied`, `queue_full`, `model_not_loaded`, `store_full`,
    /// `database_unavailable`, `turn_failed` (the OpenAI facade) or `internal`.
    pub code: String,
    /// A sentence for a person; do not parse it.
    pub message: String,
    /// Only on `/v1/` routes, for OpenAI's clients: the same as `code`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
}

/// `POST /api/tools/run` 403: the policy asks (`approval_required`, `decision: ask`) or
/// refuses (`denied`, `decision: deny`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "approval_required", "message": "`shell` needs a person's approval; post again with \"approved\": true"}, "decision": "ask", "reason": "running shell commands needs approval in ask mode"}))]
pub struct ToolRefusedBody {
    pub error: ErrorDetail,
    /// `ask`: post again with `"approved": true` once the person agreed; `deny`: it may not
    /// run at all.
    pub decision: String,
    /// The policy's reason, for a person.
    pub reason: String,
}

/// `POST /api/sessions/{id}/prompts` 503: no model is ready yet.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "model_not_loaded", "message": "the model is still loading; try again in a moment"}, "status": "loading"}))]
pub struct ModelNotLoadedBody {
    pub error: ErrorDetail,
    /// The model slot: `none`, `loading` or `failed`.
    pub status: String,
}

/// What the hub stamps on every event it numbers (the `stream.*` notices have only `ts`).
#[derive(Debug, Serialize, ToSchema)]
pub struct EventStamp {
    /// The same number as the SSE `id:` line: increasing by one per event from 1 (a restart
    /// begins again at 1). Send the last one received as `Last-Event-ID` to replay what
    /// followed it.
    pub id: u64,
    /// When the event was published, in milliseconds since the Unix epoch.
    pub ts: u64,
}

/// The hub's own notices about the stream itself: never buffered, never replayed, no `id`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum StreamNotice {
    /// Events `missed_from..=missed_to` fell out of the replay buffer before the client came
    /// back; what follows starts after them. Reload state and carry on.
    #[serde(rename = "stream.gap")]
    StreamGap {
        ts: u64,
        missed_from: u64,
        missed_to: u64,
    },
    /// The server never issued `last_event_id` (it restarted); what follows is everything
    /// still buffered, from `replay_from`.
    #[serde(rename = "stream.reset")]
    StreamReset {
        ts: u64,
        last_event_id: u64,
        replay_from: u64,
    },
    /// The last message of the response: the client fell `queue_events_max` events behind at
    /// event `missed_from`. Reconnect with `Last-Event-ID` to replay what is still buffered.
    #[serde(rename = "stream.lagged")]
    StreamLagged {
        ts: u64,
        missed_from: u64,
        queue_events_max: usize,
    },
}

/// One message of `GET /api/events` as OpenAPI describes an event of a `text/event-stream`: its
/// fields (`data`, `id`), with `data` a JSON `StreamEvent`.
#[derive(Debug)]
pub struct EventMessage;

impl utoipa::PartialSchema for EventMessage {
    fn schema() -> RefOr<Schema> {
        let id = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[0-9]+$"))
            .description(Some(
                "The event's `id` (absent on the `stream.*` notices): send the last one received \
                 as `Last-Event-ID` when reconnecting.",
            ));
        sse_event_schema(
            "One SSE message: an `id:` line (absent on the hub's `stream.*` notices) and one \
             `data:` line holding a `StreamEvent`. No `event:` line is sent.",
            json_string(Ref::from_schema_name("StreamEvent").into()),
            Some(id.into()),
        )
    }
}

impl ToSchema for EventMessage {}

/// One message of `GET /v1/events`: its `data` a JSON `KeepStreamEvent`.
#[derive(Debug)]
pub struct KeepEventMessage;

impl utoipa::PartialSchema for KeepEventMessage {
    fn schema() -> RefOr<Schema> {
        let id = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[0-9]+$"))
            .description(Some(
                "The event's `id`, numbered per person (absent on the `stream.*` notices of the \
                 hub): send the last one received as `Last-Event-ID` when reconnecting.",
            ));
        sse_event_schema(
            "One SSE message of a person's Keep events: an `id:` line (absent on the hub's \
             `stream.*` notices) and one `data:` line holding a `KeepStreamEvent`. No `event:` \
             line is sent.",
            json_string(Ref::from_schema_name(KEEP_STREAM_EVENT).into()),
            Some(id.into()),
        )
    }
}

impl ToSchema for KeepEventMessage {}

/// The schema of one event of a `text/event-stream` response, as OpenAPI 3.1 (and 3.2's
/// `itemSchema`) describes it: an object of the event's fields, `data` (the `data:` line's
/// text) and, where the server sends one, `id`.
pub(crate) fn sse_event_schema(
    description: &str,
    data: RefOr<Schema>,
    id: Option<RefOr<Schema>>,
) -> RefOr<Schema> {
    let mut event = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .property("data", data)
        .required("data");
    if let Some(id) = id {
        event = event.property("id", id);
    }
    event.into()
}

/// A string holding JSON that `content` describes: an SSE event's `data`.
pub(crate) fn json_string(content: RefOr<Schema>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .content_media_type("application/json")
        .content_schema(Some(content))
        .into()
}

/// What `StreamEvent`, one SSE message's `data:`, says to a person reading the document.
const STREAM_EVENT_DESCRIPTION: &str = "One SSE message's `data:`: a JSON object whose `type` \
    says which event it is. An event of the agent layer (`Event`), of a turn (`TurnEvent`: the \
    loop's events and the tool and sub-agent events of the calls the turn made, with its \
    `turn_id`) or of the server (`ServerEvent`), stamped by the hub with `id` and `ts` \
    (`EventStamp`); or one of the hub's notices (`StreamNotice`), which carry `ts` but no \
    `id`. A call a person runs by hand (`POST /api/tools/run`) has no `turn_id`. New types may \
    appear: ignore the ones you do not know.";

/// Adds `StreamEvent`: the schema of one message of `GET /api/events`, composed from the types
/// the server serializes onto the stream and the hub's stamp.
///
/// `anyOf`, not `oneOf`: the branches overlap on purpose. A turn's event is also an `Event`
/// with one more field, and the server's `turn.end` (a turn whose task failed) has the fields
/// of the loop's `turn.end` and an `error`.
#[derive(Debug)]
struct StreamEventSchema;

/// The schema `name` with the hub's stamp (`id`, `ts`).
fn stamped(name: std::borrow::Cow<'static, str>) -> Schema {
    Schema::AllOf(
        AllOfBuilder::new()
            .item(Ref::from_schema_name(name))
            .item(Ref::from_schema_name(EventStamp::name()))
            .build(),
    )
}

/// Adds the schema `name` of one message of an event stream: `anyOf` the stamped `events`, or
/// one of the hub's notices.
fn add_stream_schema(
    document: &mut Document,
    name: &str,
    description: &str,
    events: impl IntoIterator<Item = std::borrow::Cow<'static, str>>,
) {
    let any_of = events
        .into_iter()
        .fold(
            AnyOfBuilder::new().description(Some(description)),
            |any_of, event| any_of.item(stamped(event)),
        )
        .item(Ref::from_schema_name(StreamNotice::name()))
        .build();
    document
        .components
        .get_or_insert_with(Default::default)
        .schemas
        .insert(name.to_owned(), RefOr::T(Schema::AnyOf(any_of)));
}

impl Modify for StreamEventSchema {
    fn modify(&self, document: &mut Document) {
        let events = [TurnEvent::name(), Event::name(), ServerEvent::name()];
        add_stream_schema(document, "StreamEvent", STREAM_EVENT_DESCRIPTION, events);
    }
}

/// The name of the schema of one `data:` of `GET /v1/events`.
const KEEP_STREAM_EVENT: &str = "KeepStreamEvent";

/// What `KeepStreamEvent` says to a person reading the document.
const KEEP_STREAM_EVENT_DESCRIPTION: &str = "One SSE message's `data:` on a person's Keep \
    stream (`GET /v1/events`): a JSON object whose `type` says which event it is. One of Keep's \
    events (`KeepEvent`: `session.*`, `egress.*`, `proposal.*`, `tool.*`, `refusal`, \
    `journal.failed`), an event too large to keep or to cross hosts in its place \
    (`OmittedEvent`, its `type` the event's own) or the host's `stream.missed` (`KeepNotice`), \
    each stamped by the person's hub with `id` and `ts` (`EventStamp`); or one of the hub's \
    notices (`StreamNotice`). See `docs/keep/sessions.md`. New types may appear: ignore the \
    ones you do not know.";

/// Adds `KeepStreamEvent`: the schema of one message of `GET /v1/events`, composed from the
/// types the host serializes onto a person's stream and the hub's stamp, as `StreamEvent` is
/// for the assistant's. `anyOf`: an `OmittedEvent` carries a Keep event's `type`.
#[derive(Debug)]
struct KeepStreamEventSchema;

impl Modify for KeepStreamEventSchema {
    fn modify(&self, document: &mut Document) {
        let events = [KeepEvent::name(), OmittedEvent::name(), KeepNotice::name()];
        add_stream_schema(
            document,
            KEEP_STREAM_EVENT,
            KEEP_STREAM_EVENT_DESCRIPTION,
            events,
        );
    }
}

/// The route that needs no token (`auth.rs`'s `OPEN_PATHS`).
const OPEN_PATH: &str = "/api/health";

/// The route whose token may also come in the query string (`auth.rs`'s `EVENTS_PATH`).
const EVENTS_PATH: &str = "/api/events";

/// The API token (`auth.rs`): when the server has one, every operation but `GET /api/health`
/// needs it and answers 401 without it. When it has none (the loopback default) nothing is
/// asked, so each operation's security is optional: `{}` or the token.
#[derive(Debug)]
struct TokenAuth;

impl Modify for TokenAuth {
    fn modify(&self, document: &mut Document) {
        let components = document.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The server's API token (`server.api_token`, `IMURUN_API_TOKEN`, \
                         `--api-token`), when it has one; required to bind beyond loopback.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "access_token",
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
                "access_token",
                "The API token in the query string, percent-encoded where needed: only \
                 `GET /api/events`, for a browser's `EventSource`, which cannot set headers.",
            ))),
        );
        for (path, item) in document.paths.paths.iter_mut() {
            if path == OPEN_PATH {
                continue;
            }
            let mut security = vec![
                SecurityRequirement::default(),
                SecurityRequirement::new("token", Vec::<String>::new()),
            ];
            if path == EVENTS_PATH {
                security.push(SecurityRequirement::new(
                    "access_token",
                    Vec::<String>::new(),
                ));
            }
            for operation in operations_mut(item) {
                operation.security = Some(security.clone());
                let unauthorized = ResponseBuilder::new()
                    .description(
                        "The server has an API token and the request did not carry it, or \
                         carried another; `unauthorized`, with `WWW-Authenticate: Bearer`.",
                    )
                    .header(
                        "WWW-Authenticate",
                        HeaderBuilder::new()
                            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                            .description(Some("`Bearer`."))
                            .build(),
                    )
                    .content("application/json", Content::new(Some(error_body_ref())))
                    .build();
                operation
                    .responses
                    .responses
                    .insert("401".to_owned(), unauthorized.into());
            }
        }
    }
}

/// `x-request-id` on every answer (`routes::request_span`), for finding its log lines.
#[derive(Debug)]
struct RequestIds;

impl Modify for RequestIds {
    fn modify(&self, document: &mut Document) {
        let header = HeaderBuilder::new()
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .description(Some(
                "This request's id (`req-17`): the server's log lines for it carry the same id.",
            ))
            .build();
        for item in document.paths.paths.values_mut() {
            for operation in operations_mut(item) {
                for response in operation.responses.responses.values_mut() {
                    if let RefOr::T(response) = response {
                        response
                            .headers
                            .insert(REQUEST_ID_HEADER.to_owned(), header.clone().into());
                    }
                }
            }
        }
    }
}

/// Request bodies a client may leave out, which `#[utoipa::path]` cannot say without also
/// allowing `null` (an `Option<T>` body): the session a `POST /api/sessions` without a body
/// creates has no title.
#[derive(Debug)]
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, document: &mut Document) {
        let body = document
            .paths
            .paths
            .get_mut("/api/sessions")
            .and_then(|item| item.post.as_mut())
            .and_then(|operation| operation.request_body.as_mut());
        if let Some(RefOr::T(RequestBody { required, .. })) = body {
            *required = Some(Required::False);
        }
    }
}

/// Every operation of a path item.
fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.options.as_mut(),
        item.head.as_mut(),
        item.patch.as_mut(),
        item.trace.as_mut(),
    ]
    .into_iter()
    .flatten()
}

fn error_body_ref() -> RefOr<Schema> {
    Ref::from_schema_name(ErrorBody::name()).into()
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use serde_json::Value;

    use crate::ApiError;

    /// The error shapes described here are the ones `ApiError` writes.
    #[tokio::test]
    async fn error_bodies_have_the_documented_fields() {
        let cases = [
            (ApiError::not_found("gone"), vec!["error"]),
            (
                ApiError::new(StatusCode::FORBIDDEN, "approval_required", "ask")
                    .with_field("decision", "ask")
                    .with_field("reason", "why"),
                vec!["error", "decision", "reason"],
            ),
            (
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "model_not_loaded", "wait")
                    .with_field("status", "loading"),
                vec!["error", "status"],
            ),
        ];
        for (error, keys) in cases {
            let response = error.into_response();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .expect("a small body");
            let body: Value = serde_json::from_slice(&bytes).expect("JSON");
            let found: Vec<&str> = body
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(found, keys);
            let detail: Vec<&str> = body["error"]
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(detail, ["code", "message"]);
        }
    }
}
