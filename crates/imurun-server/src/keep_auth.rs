//! Keep mode's door: every `/api` and `/v1` route needs a Keep token
//! (`Authorization: Bearer imk_...`, or `?access_token=` on `GET /api/events`), the health
//! check included. The holder's [`Identity`] goes into the request's extensions for the Keep
//! routes; the assistant's routes (everything under `/api` but the health check, and the
//! OpenAI-compatible `/v1/chat/completions` and `/v1/models`) belong to the operator, so a user
//! token gets 403 there.

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use imurun_keep::KeepError;
use imurun_keep::service::{Claimed, DoorRefusal, Identity, KeepService, noting_refusals};

use crate::error::{ApiError, ErrorNote};
use crate::state::ServerState;

/// The assistant's routes under `/v1`: the OpenAI-compatible facade, which drives the
/// operator's assistant.
const ASSISTANT_V1_PATHS: &[&str] = &["/v1/chat/completions", "/v1/models"];

/// The health check: any Keep token reaches it (it says only that the server answers).
const HEALTH_PATH: &str = "/api/health";

/// Checks the Keep token of a request to `path`; `given` is the token as sent.
pub(crate) async fn check(
    keep: &KeepService,
    mut request: Request,
    given: Option<Vec<u8>>,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let token = given.and_then(|bytes| String::from_utf8(bytes).ok());
    let identity = match token {
        Some(token) => keep.tokens().authenticate(&token).await,
        None => Err(KeepError::Unauthorized),
    };
    let identity = match identity {
        Ok(identity) => identity,
        Err(error) => return unauthorized(error),
    };
    let assistant = (path.starts_with("/api/") && path != HEALTH_PATH)
        || ASSISTANT_V1_PATHS.contains(&path.as_str());
    let subject = format!("{} {path}", request.method());
    if assistant && identity.require_operator().is_err() {
        let response = ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "in Keep mode the assistant's routes are the operator's; a user token reaches the \
             Keep routes under /v1",
        )
        .into_response();
        return journaled(keep, &identity, subject, response).await;
    }
    request.extensions_mut().insert(identity.clone());
    let (response, journaled_already) = noting_refusals(next.run(request)).await;
    // The assistant's own answers are the operator's business, not Keep's refusals.
    if assistant || journaled_already {
        return response;
    }
    journaled(keep, &identity, subject, response).await
}

/// Refusals a signed-in identity gets: every 4xx but 401 (which has no identity).
fn is_refusal(status: StatusCode) -> bool {
    status.is_client_error() && status != StatusCode::UNAUTHORIZED
}

/// `response`, after journaling it when it is a refusal. A 404 is journaled where only the
/// operator reads it: an id of another person's answers exactly as one that never existed,
/// and the person's own journal shows neither.
async fn journaled(
    keep: &KeepService,
    identity: &Identity,
    subject: String,
    response: Response,
) -> Response {
    let status = response.status();
    if !is_refusal(status) {
        return response;
    }
    // The answer's own code and sentence, as the API's errors note them; an answer made
    // elsewhere (a path the router could not read) by its status alone.
    let note = response.extensions().get::<ErrorNote>();
    let refusal = DoorRefusal {
        rule: note.map_or_else(
            || {
                status
                    .canonical_reason()
                    .unwrap_or("refused")
                    .to_ascii_lowercase()
                    .replace(' ', "_")
            },
            |note| note.code.to_owned(),
        ),
        subject,
        reason: note.map(|note| note.message.clone()).unwrap_or_default(),
        status: status.as_u16(),
        operator_only: status == StatusCode::NOT_FOUND,
        claimed: response.extensions().get::<Claimed>().cloned(),
    };
    if let Err(error) = keep.journal().door_refusal(identity, &refusal).await {
        tracing::warn!("a refusal could not be journaled: {error}");
    }
    response
}

fn unauthorized(error: KeepError) -> Response {
    let response_error = match error {
        KeepError::Unauthorized => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this Keep host needs a valid token: send `Authorization: Bearer <token>`",
        ),
        other => crate::error::keep_error(other),
    };
    let mut response = response_error.into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// The Keep service and the caller, for a Keep route. Without Keep mode the route reaches
/// nothing and answers 404 `keep_off`.
#[derive(Debug, Clone)]
pub(crate) struct KeepCaller {
    pub(crate) keep: KeepService,
    pub(crate) identity: Identity,
}

impl FromRequestParts<ServerState> for KeepCaller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ServerState,
    ) -> Result<Self, Self::Rejection> {
        let Some(keep) = state.options().keep.clone() else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "keep_off",
                "Keep mode is not on for this server: start it with `imurun serve --keep` (after \
                 `imurun keep init`)",
            ));
        };
        let identity = parts
            .extensions
            .get::<Identity>()
            .cloned()
            .ok_or_else(|| crate::error::keep_error(KeepError::Unauthorized))?;
        Ok(KeepCaller { keep, identity })
    }
}

/// [`KeepCaller`] for an operator route: a user token is refused (403) before the body is read.
/// The Keep service checks the identity again.
#[derive(Debug, Clone)]
pub(crate) struct OperatorCaller(pub(crate) KeepCaller);

impl FromRequestParts<ServerState> for OperatorCaller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ServerState,
    ) -> Result<Self, Self::Rejection> {
        let caller = KeepCaller::from_request_parts(parts, state).await?;
        caller
            .identity
            .require_operator()
            .map_err(crate::error::keep_error)?;
        Ok(OperatorCaller(caller))
    }
}

/// `records` for as long as `identity`'s token works: each is sent only after the token is
/// checked again, so a token revoked meanwhile (by any host or the command line) ends the
/// stream at its next item (an event of a stream, a chunk of a streamed completion).
pub(crate) fn while_authorized<S, T>(
    records: S,
    keep: KeepService,
    identity: Identity,
) -> impl Stream<Item = T> + use<S, T>
where
    S: Stream<Item = T>,
{
    records
        .then(move |record| {
            let (keep, identity) = (keep.clone(), identity.clone());
            async move {
                keep.tokens()
                    .still_authorized(&identity)
                    .await
                    .then_some(record)
            }
        })
        .take_while(|record| std::future::ready(record.is_some()))
        .filter_map(std::future::ready)
}

/// How often a long answer checks its caller's token while nothing else would.
const RECHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Resolves once `identity`'s token no longer works, checked every second: a turn that sends
/// nothing for a while (a tool step, a wait for an approval) still ends soon after a revoke.
pub(crate) async fn until_revoked(keep: KeepService, identity: Identity) {
    loop {
        tokio::time::sleep(RECHECK_INTERVAL).await;
        if !keep.tokens().still_authorized(&identity).await {
            return;
        }
    }
}
