//! The one place errors become HTTP responses: [`ApiError`], and [`ApiJson`] and
//! [`OptionalApiJson`], the JSON body extractors whose rejections take the same shape.
//!
//! Every error body is `{"error": {"code": "<code>", "message": "<a sentence for a person>"}}` with the
//! status that fits; a few carry more fields (`status` on `model_not_loaded`, `decision` and
//! `reason` on a refused tool run). A 500 never shows internals: the store's message stays in
//! the server, and the client is told that something failed on the server's side.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use imurun_agent::SkillError;
use imurun_store::StoreError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The longest message an error answer carries, in characters.
pub(crate) const ERROR_MESSAGE_CHARS_MAX: usize = 2_000;

/// An error answer of the API: a status, a stable machine code, a human sentence, and
/// optional extra fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    extra: Map<String, Value>,
}

impl ApiError {
    /// An error with this status, code and message. A message quoting a huge request (serde
    /// names an unknown field in full) is cut to [`ERROR_MESSAGE_CHARS_MAX`] characters, so an
    /// error answer stays small whatever was sent.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if let Some((at, _)) = message.char_indices().nth(ERROR_MESSAGE_CHARS_MAX) {
            message.truncate(at);
            message.push_str("… (cut)");
        }
        ApiError {
            status,
            code,
            message,
            extra: Map::new(),
        }
    }

    /// 400 `bad_request`: the body or a parameter is wrong; `message` says how.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409 `conflict`: the request clashes with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 413 `too_large`: a body or a field is past its stated bound.
    pub fn too_large(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    /// 500 `internal`: the message is generic on purpose; details stay on the server.
    pub fn internal() -> Self {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the server could not complete the request; try again, and if it keeps failing look \
             in the server's log for the request id this answer's `x-request-id` header names",
        )
    }

    /// Adds a field to the body beside `error`.
    pub fn with_field(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The machine code in `error.code`.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The human sentence in the `message` field.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// An error answer's code and sentence, in the response's extensions, for Keep's door to
/// journal without reading the body back.
#[derive(Debug, Clone)]
pub(crate) struct ErrorNote {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let note = ErrorNote {
            code: self.code,
            message: self.message.clone(),
        };
        let mut error = Map::new();
        error.insert("code".to_owned(), Value::from(self.code));
        error.insert("message".to_owned(), Value::from(self.message));
        let mut body = Map::new();
        body.insert("error".to_owned(), Value::Object(error));
        body.extend(self.extra);
        let mut response = (self.status, Json(Value::Object(body))).into_response();
        response.extensions_mut().insert(note);
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match &error {
            StoreError::NotFound { .. } => ApiError::not_found(error.to_string()),
            StoreError::AlreadyExists { .. } => ApiError::conflict(error.to_string()),
            StoreError::InvalidId { .. } => ApiError::bad_request(error.to_string()),
            _ if error.is_unstorable_text() => unstorable_text(),
            _ if error.is_unavailable() => database_unavailable(&error),
            StoreError::TooLarge { .. } => ApiError::too_large(error.to_string()),
            StoreError::RowsMaxReached { .. } => ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "store_full",
                error.to_string(),
            ),
            // Queries, I/O, decoding: internals that mean nothing to the client and may name
            // paths on this machine; the log (in the request's span) keeps them.
            _ => {
                tracing::error!("the store failed: {error}");
                ApiError::internal()
            }
        }
    }
}

impl From<SkillError> for ApiError {
    fn from(error: SkillError) -> Self {
        match &error {
            SkillError::InvalidId { .. } | SkillError::Invalid { .. } => {
                ApiError::bad_request(error.to_string())
            }
            SkillError::NotFound { .. } => ApiError::not_found(error.to_string()),
            SkillError::AlreadyExists { .. } => ApiError::conflict(error.to_string()),
            SkillError::TooLarge { .. } => ApiError::too_large(error.to_string()),
            SkillError::Full { .. } => ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "store_full",
                error.to_string(),
            ),
            // The message names paths on this machine.
            SkillError::Io { .. } => ApiError::internal(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        let text = rejection.body_text();
        match status {
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::too_large(format!(
                "the request body is larger than this route accepts: {text}"
            )),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
                status,
                "unsupported_media_type",
                "send the body as JSON with the header `Content-Type: application/json`",
            ),
            // Serde's message says where and what: "missing field `prompt` at line 1 column 2".
            _ => ApiError::bad_request(text),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(format!(
                "the request body is larger than this route accepts: {}",
                rejection.body_text()
            ))
        } else {
            ApiError::bad_request(rejection.body_text())
        }
    }
}

/// A JSON body, like [`axum::Json`], whose rejections are [`ApiError`]s in the API's shape.
///
/// Every request body of this API is a JSON object, and a body that is valid JSON of another
/// type (an array, `null`, a string, a number) is a 400 `bad_request`. Serde alone would not
/// say so: a derived `Deserialize` reads an array as a struct's fields in order, so `[null,
/// null]` would pass as a body whose fields are all absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        // `Value` first: the content type, the size and the syntax are checked as `Json` checks
        // them, and the shape is known before serde reads the fields.
        let Json(value) = Json::<Value>::from_request(request, state).await?;
        from_object(value).map(ApiJson)
    }
}

/// A JSON body read strictly, as signed documents must be: duplicate member names, numbers that
/// are not integers within ±(2^53 − 1) and lone surrogates are refused (400) before serde reads
/// the fields, so the host and the party that signed can never read two different documents.
/// The content type must be JSON (415); `bytes_max` bounds the body (413).
#[derive(Debug, Clone, Copy, Default)]
pub struct StrictJson<T, const BYTES_MAX: usize>(pub T);

/// A refused strict body: the error, and what the body claims for Keep's journal (carried in
/// the response's extensions, never in its body).
#[derive(Debug)]
pub struct StrictRejection {
    pub(crate) error: ApiError,
    claimed: Option<imurun_keep::service::Claimed>,
}

impl From<ApiError> for StrictRejection {
    fn from(error: ApiError) -> Self {
        StrictRejection {
            error,
            claimed: None,
        }
    }
}

impl From<BytesRejection> for StrictRejection {
    fn from(rejection: BytesRejection) -> Self {
        ApiError::from(rejection).into()
    }
}

impl IntoResponse for StrictRejection {
    fn into_response(self) -> Response {
        let mut response = self.error.into_response();
        if let Some(claimed) = self.claimed {
            response.extensions_mut().insert(claimed);
        }
        response
    }
}

impl<T, S, const BYTES_MAX: usize> FromRequest<S> for StrictJson<T, BYTES_MAX>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = StrictRejection;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| {
                value
                    .split(';')
                    .next()
                    .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as `Content-Type: application/json`",
            )
            .into());
        }
        let bytes = Bytes::from_request(request, state).await?;
        let refused = |error: ApiError| StrictRejection {
            error,
            claimed: claimed_in(&bytes),
        };
        let value = imurun_keep::canonical::parse_strict(&bytes, BYTES_MAX).map_err(|error| {
            refused(if bytes.len() > BYTES_MAX {
                ApiError::too_large(error.to_string())
            } else {
                ApiError::bad_request(format!("the request body is refused: {error}"))
            })
        })?;
        from_object(value).map(StrictJson).map_err(refused)
    }
}

/// The version and key id a refused signed body claims, read leniently (a duplicated member's
/// last value, any number), for the journal: `None` when it names neither or does not read.
fn claimed_in(bytes: &[u8]) -> Option<imurun_keep::service::Claimed> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    // A deploy's policy, a decision, a ceiling or trust root sent as the envelope itself.
    let envelope = ["policy", "decision"]
        .iter()
        .find_map(|field| value.get(*field))
        .unwrap_or(&value);
    let text = |value: Option<&Value>| {
        value
            .filter(|value| !value.is_null())
            .map(|value| match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
    };
    let claimed = imurun_keep::service::Claimed {
        version: text(envelope.pointer("/signed/version")),
        key_id: text(
            envelope
                .pointer("/signature/key_id")
                .or_else(|| value.pointer("/bundle_signature/key_id")),
        ),
    };
    (claimed != imurun_keep::service::Claimed::default()).then_some(claimed)
}

/// [`StrictJson`] for a body that carries a secret: a 400 never quotes the body (serde's and the
/// strict reader's messages quote the values they refuse, and a value here may be a secret put
/// in the wrong field or of the wrong type).
#[derive(Debug, Clone, Copy, Default)]
pub struct SecretJson<T, const BYTES_MAX: usize>(pub T);

impl<T, S, const BYTES_MAX: usize> FromRequest<S> for SecretJson<T, BYTES_MAX>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match StrictJson::<T, BYTES_MAX>::from_request(request, state).await {
            Ok(StrictJson(body)) => Ok(SecretJson(body)),
            Err(refused) if refused.error.status() == StatusCode::BAD_REQUEST => {
                Err(ApiError::bad_request(
                    "the body is not a strict JSON object of this route's schema (its values are not \
                 quoted back: they may be secret)",
                ))
            }
            Err(refused) => Err(refused.error),
        }
    }
}

/// Keep's refusals on the wire: the rule that refused is the code.
impl From<imurun_keep::KeepError> for ApiError {
    fn from(error: imurun_keep::KeepError) -> Self {
        keep_error(error)
    }
}

/// The answer to a request whose text (a body's field, an id in the path) holds a NUL
/// character: PostgreSQL cannot store or compare one, and no engine takes it.
fn unstorable_text() -> ApiError {
    ApiError::bad_request(
        "the request holds a NUL character (U+0000), which the database cannot store".to_owned(),
    )
}

/// The answer while the database cannot be reached (a PostgreSQL server down or unreachable,
/// every connection busy past the wait): 503, "try again", and nothing of the cause that could
/// name a host or a path; the log keeps that.
fn database_unavailable(error: &StoreError) -> ApiError {
    tracing::error!("the database cannot be reached: {error}");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "database_unavailable",
        "the database cannot be reached just now; try again shortly",
    )
}

/// Keep's refusals on the wire: the rule that refused is the code.
pub(crate) fn keep_error(error: imurun_keep::KeepError) -> ApiError {
    use imurun_keep::KeepError;
    if let KeepError::Store(store) = &error {
        if store.is_unavailable() {
            return database_unavailable(store);
        }
        if store.is_unstorable_text() {
            return unstorable_text();
        }
    }
    let status = match &error {
        KeepError::Rule(rule) => match rule_status(rule) {
            Some(status) => status,
            None => {
                tracing::error!(error = %error, "a Keep request failed on the server's side");
                return ApiError::internal();
            }
        },
        KeepError::Unauthorized => StatusCode::UNAUTHORIZED,
        KeepError::Forbidden(_) => StatusCode::FORBIDDEN,
        KeepError::NotFound(_) => StatusCode::NOT_FOUND,
        KeepError::Conflict(_) => StatusCode::CONFLICT,
        KeepError::NotInitialised | KeepError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        // The agent answered with an error of its own: the session goes on.
        KeepError::Cell { kind: "guest", .. } => StatusCode::UNPROCESSABLE_ENTITY,
        KeepError::Cell {
            kind: "no_slot", ..
        } => StatusCode::SERVICE_UNAVAILABLE,
        // The cell could not start (what it imports is not granted, it does not compile) or
        // ended (a limit, a trap).
        KeepError::Cell { .. } => StatusCode::CONFLICT,
        KeepError::Store(_) | KeepError::KeyFile { .. } => {
            tracing::error!(error = %error, "a Keep request failed on the server's side");
            return ApiError::internal();
        }
    };
    ApiError::new(status, error.rule(), error.to_string())
}

/// A rule's refusal on the wire, or `None` where the rule failed on the server's side (the
/// vault, the random numbers).
fn rule_status(rule: &imurun_keep::RuleError) -> Option<StatusCode> {
    use imurun_keep::RuleError;
    Some(match rule {
        RuleError::Canonical(_)
        | RuleError::Invalid { .. }
        | RuleError::MissingCredential { .. } => StatusCode::BAD_REQUEST,
        RuleError::Signature(_)
        | RuleError::Untrusted(_)
        | RuleError::Expired { .. }
        | RuleError::Decision(_)
        | RuleError::ForbiddenAuthority(_) => StatusCode::FORBIDDEN,
        RuleError::RolledBack { .. } | RuleError::ConfirmTainted(_) | RuleError::Conflict(_) => {
            StatusCode::CONFLICT
        }
        RuleError::Vault(_) | RuleError::Random(_) => return None,
    })
}

/// [`ApiJson`] for a body that may be left out: an empty body is `None`; one of white space
/// only is not JSON, and a 400 like any other body that is not. The content type is not checked, so that a client may post nothing without one.
#[derive(Debug, Clone, Copy, Default)]
pub struct OptionalApiJson<T>(pub Option<T>);

impl<T, S> FromRequest<S> for OptionalApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state).await?;
        if bytes.is_empty() {
            return Ok(OptionalApiJson(None));
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(|error| {
            ApiError::bad_request(format!("the request body is not valid JSON: {error}"))
        })?;
        from_object(value).map(|body| OptionalApiJson(Some(body)))
    }
}

/// `value` read as a `T`, when it is a JSON object; every request body of this API is one.
fn from_object<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    let kind = match &value {
        Value::Object(_) => {
            // Serde's message says what is wrong: "missing field `prompt`", "unknown field
            // `titel`, expected `title`", "invalid type: string \"x\", expected u64".
            return serde_json::from_value(value)
                .map_err(|error| ApiError::bad_request(error.to_string()));
        }
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    };
    Err(ApiError::bad_request(format!(
        "the request body is {kind}; it must be a JSON object"
    )))
}

/// The answer of a route that has no such path: 404 in the API's shape.
pub(crate) async fn no_such_route() -> ApiError {
    ApiError::not_found("no route has this path; see GET /api/health for a start")
}

/// The answer of a route that exists but not for this method: 405 in the API's shape.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not accept this method",
    )
}
