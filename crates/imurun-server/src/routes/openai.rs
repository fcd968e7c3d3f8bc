//! The OpenAI-compatible facade: `GET /v1/models` and `POST /v1/chat/completions`, so that the
//! official `openai` SDKs, Open WebUI and editors can use an imurun agent as a model.
//!
//! A chat completion is one imurun turn, run by the same loop, executor and policy as a prompt
//! from the page:
//!
//! - **Prompt and history.** The last message must be the user's: it is the prompt. Every
//!   `user` message is bounded like a prompt (32 000 characters), wherever it is. Without
//!   `X-Imurun-Session`, every request gets a fresh session titled `openai: <first 40
//!   characters of the prompt>`, and the request's earlier `user` and `assistant` messages
//!   (the last 6, all a turn reads) are written into its transcript as the history. With the
//!   header `X-Imurun-Session: <id>`, the turn runs in that existing session and its own
//!   transcript is the history; the request's earlier messages are then ignored. A session
//!   with a turn running answers 409 (the page would queue the prompt; a client waiting for
//!   its own answer cannot be handed someone else's turn). `user` is not a session: OpenAI
//!   defines it as an end-user id. Every answer carries `X-Imurun-Session` naming the session.
//! - **System messages** (`system` and `developer`) are added after the persona for this turn
//!   only, under a line that says where they come from. They are instructions and nothing
//!   more: the policy decides from the tool, its arguments and the settings, never from text,
//!   so no message can change what a tool may do or what needs approval.
//! - **Approvals.** A call that needs approval waits for a person only while some SSE client
//!   watches the session (or every session, as the page does); otherwise it is denied at once
//!   (`no_client`). The facade's own token stream is the turn's tap, not a subscriber, so it
//!   never makes an approval wait for a card nobody sees.
//! - **Ignored fields**: `model` (whatever is named, the agent answers; responses say
//!   `imurun`), `max_tokens`, `max_completion_tokens`, `temperature`, `top_p`, `stop`, `seed`,
//!   `presence_penalty`, `frequency_penalty`, `logit_bias`, `logprobs`, `user`, `tools`,
//!   `tool_choice`, `response_format` and every other field: the loop has its own per-step
//!   token bound and sampling, and runs imurun's tools, not the client's. `n` other than 1 is
//!   a 400. Content parts other than `text` (images) are a 400.
//! - **Answers.** `finish_reason` is `length` when the turn hit its step limit and `stop`
//!   otherwise (stopped turns included). A turn that fails is a 500 `turn_failed` (streamed:
//!   an `{"error": ...}` event before `[DONE]`). `usage` is the model's own token count of the
//!   client's messages and of the answer; the persona, tool prompt and tool steps are not
//!   counted. A client that disconnects stops its turn.
//! - **Streaming** (`stream: true`): a first chunk with `delta.role`, one chunk per `token`
//!   event of the turn (several tokens in one chunk only if the client reads slower than the
//!   model writes), a last chunk with `finish_reason`, the usage chunk with
//!   `stream_options.include_usage`, then `data: [DONE]`. The tokens are what the page shows
//!   live: call syntax never appears (the loop's `StreamGuard` holds it back), but text a
//!   model writes before a call, and `<think>` thoughts, do; the non-streamed `content` is the
//!   final answer alone.
//! - **Errors** keep the API's one shape with `type` added (equal to `code`), which is what
//!   OpenAI's clients read: `{"error": {"code", "message", "type"}}`.
//!
//! There is no token check yet: no route of this server has one. In Keep mode these routes
//! will need a user token, like every `/v1` route.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::extract::State;
use axum::http::header::{CONTENT_LENGTH, HeaderName};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures_util::{StreamExt, stream};
use imurun_agent::HISTORY_MESSAGES_MAX;
use imurun_core::{Event, TokenUsage};
use imurun_keep::KeepError;
use imurun_keep::service::{Identity, KeepService};
use imurun_store::Role as StoredRole;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::error::{ApiError, ApiJson, keep_error};
use crate::events::ServerEvent;
use crate::keep_auth::{until_revoked, while_authorized};
use crate::openai_wire::{
    AssistantMessage, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage,
    Choice, ChunkChoice, Delta, MessageContent, ModelCard, ModelList, Usage,
};
use crate::sse::HEARTBEAT_TEXT;
use crate::state::{PROMPT_CHARS_MAX, ServerState, lock};
use crate::turns::{
    Tap, TurnOptions, check_prompt, model_not_loaded, recorded_usage, submit_prompt_with, turn_view,
};
use crate::wire::{SessionInfo, TurnView};

/// The model id the agent answers as.
pub(crate) const AGENT_MODEL_ID: &str = "imurun";

/// The header naming the session a chat completion runs in (request) or ran in (response).
pub(crate) const SESSION_HEADER: &str = "x-imurun-session";

/// Characters of the prompt in a fresh session's title.
const TITLE_PROMPT_CHARS_MAX: usize = 40;

/// The largest error body the `type` field is added to; error bodies are a few hundred bytes.
const ERROR_BODY_BYTES_MAX: usize = 64 << 10;

/// `GET /v1/models` → 200 `{"object": "list", "data": [{"id": "imurun", "object": "model",
/// "created", "owned_by": "imurun"}, ...]}`; once a model is loaded, its own name is a second
/// entry (asking for it still runs the agent).
#[utoipa::path(
    get,
    path = "/v1/models",
    tag = "openai",
    operation_id = "list_models",
    summary = "The models an OpenAI client may name: the agent, `imurun`",
    responses((status = 200, description = "`imurun`, then the loaded model's own name once one is ready; naming either runs the agent.", body = ModelList)),
)]
pub(crate) async fn models(State(state): State<ServerState>) -> Json<ModelList> {
    static CREATED: OnceLock<u64> = OnceLock::new();
    let created = *CREATED.get_or_init(unix_seconds);
    let mut ids = vec![AGENT_MODEL_ID.to_owned()];
    if let Some(model) = state.model().model()
        && model.name() != AGENT_MODEL_ID
    {
        ids.push(model.name().to_owned());
    }
    Json(ModelList {
        object: "list".to_owned(),
        data: ids
            .into_iter()
            .map(|id| ModelCard {
                id,
                object: "model".to_owned(),
                created,
                owned_by: AGENT_MODEL_ID.to_owned(),
            })
            .collect(),
    })
}

/// `POST /v1/chat/completions` → 200 a `chat.completion`, or `text/event-stream` of
/// `chat.completion.chunk`s with `stream: true`. Errors: 400 bad body (no messages, last not
/// the user's, empty prompt, non-text parts, `n` > 1), 404 unknown `X-Imurun-Session`, 409 a
/// turn runs there, 413 too long, 500 `turn_failed`, 503 no model. See the module docs.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "openai",
    operation_id = "chat_completions",
    summary = "One imurun turn as an OpenAI chat completion, whole or streamed",
    request_body = ChatCompletionRequest,
    params(("X-Imurun-Session" = Option<String>, Header, description = "Run the turn in this existing session, whose transcript is then the history (the request's earlier messages are ignored). Absent: a fresh session per request, holding the request's history. The response names the session in the same header.", pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$", min_length = 1, max_length = 128)),
    responses(
        (status = 200, description = "The answer: a `chat.completion`, or with `stream: true` a `text/event-stream` of `data: <chat.completion.chunk>` messages ending with `data: [DONE]`.", content(
            (ChatCompletion = "application/json"),
            (crate::openai_wire::ChatCompletionEvent = "text/event-stream"),
        ), headers(
            ("X-Imurun-Session" = String, description = "The session the turn ran in: the one the request named, or the fresh one made for it."),
        ), links(
            ("get_session" = (operation_id = "get_session", parameters(("id" = "$response.header.X-Imurun-Session")), description = "The session the turn ran in, with its transcript.")),
            ("list_turns" = (operation_id = "list_turns", parameters(("id" = "$response.header.X-Imurun-Session")), description = "Its turns.")),
        )),
        (status = 400, description = "The body is not JSON, not a JSON object, or does not fit the schema: the last message is not the user's or its text is empty (a rule the schema cannot state), a message with an unknown role, a content part other than `text`, or `n` other than 1; or `X-Imurun-Session` is not a session id; `bad_request`.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No session has the id of `X-Imurun-Session`; `not_found`.", body = crate::openapi::ErrorBody),
        (status = 409, description = "A turn is running in the session of `X-Imurun-Session`; `conflict`.", body = crate::openapi::ErrorBody),
        (status = 413, description = "A `user` message, or the `system` and `developer` messages together, are longer than 32 000 characters, or the body is over the server's limit (256 KiB by default); `too_large`.", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body was not sent as `Content-Type: application/json`; `unsupported_media_type`.", body = crate::openapi::ErrorBody),
        (status = 500, description = "`turn_failed`: the turn ended in an error; or `internal`: the store failed.", body = crate::openapi::ErrorBody),
        (status = 503, description = "No model is ready; `model_not_loaded`.", body = crate::openapi::ModelNotLoadedBody),
        (status = 507, description = "The session of `X-Imurun-Session` holds its most messages; `store_full`.", body = crate::openapi::ErrorBody),
    ),
)]
pub(crate) async fn chat_completions(
    State(state): State<ServerState>,
    headers: HeaderMap,
    caller: Option<Extension<Identity>>,
    ApiJson(request): ApiJson<ChatCompletionRequest>,
) -> Result<Response, ApiError> {
    // On a Keep host the operator's token is checked again before the answer goes out, and
    // before each chunk of a streamed one: a token revoked during the turn gets no more of it.
    let recheck = match (state.options().keep.clone(), caller) {
        (Some(keep), Some(Extension(identity))) => Some((keep, identity)),
        // Keep mode's door always names the caller; without one nothing is answered.
        (Some(_), None) => return Err(keep_error(KeepError::Unauthorized)),
        (None, _) => None,
    };
    let conversation = Conversation::read(&request)?;
    // Refused before a session is made: no model, no turn.
    state
        .model()
        .model()
        .ok_or_else(|| model_not_loaded(&state))?;
    let session_id = open_session(&state, &headers, &conversation).await?;
    // The turn's own tap: it sees every token of the turn, from its first.
    let feed = request.stream.unwrap_or(false).then(TokenFeed::new);
    let options = TurnOptions {
        instructions: conversation.instructions(),
        refuse_if_running: true,
        tap: feed.as_ref().map(|feed| feed.tap()),
    };
    let started =
        submit_prompt_with(&state, &session_id, conversation.prompt.clone(), options).await?;
    // `refuse_if_running` means the prompt was never queued, so the turn is ours.
    let ended = started.ended.ok_or_else(ApiError::internal)?;
    let answer = AnswerParts {
        state: state.clone(),
        completion_id: format!("chatcmpl-{}", started.accepted.turn_id),
        created: unix_seconds(),
        usage: TokenUsage::default(),
        stop_guard: StopOnDrop {
            state: state.clone(),
            session_id: session_id.clone(),
            turn_id: started.accepted.turn_id.clone(),
            armed: true,
        },
        session_id: session_id.clone(),
        turn_id: started.accepted.turn_id,
        ended,
    };
    let mut response = match feed {
        Some(feed) => {
            let include_usage = request
                .stream_options
                .and_then(|options| options.include_usage)
                .unwrap_or(false);
            stream_answer(answer, feed, include_usage, recheck)
        }
        None => whole_answer(answer, recheck).await?,
    };
    if let Ok(value) = HeaderValue::from_str(&session_id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(SESSION_HEADER), value);
    }
    Ok(response)
}

/// A request's conversation, checked.
struct Conversation {
    prompt: String,
    /// Earlier `user` and `assistant` messages, the last [`HISTORY_MESSAGES_MAX`], oldest first.
    history: Vec<(StoredRole, String)>,
    /// The texts of the `system` and `developer` messages, in order.
    system: Vec<String>,
}

impl Conversation {
    fn read(request: &ChatCompletionRequest) -> Result<Conversation, ApiError> {
        if let Some(n) = request.n.filter(|n| *n != 1) {
            return Err(ApiError::bad_request(format!(
                "`n` is {n}; an imurun turn gives exactly one answer, so only 1 is accepted"
            )));
        }
        // Every `user` message is bounded like a prompt, wherever it is.
        let mut texts = Vec::with_capacity(request.messages.len());
        for message in &request.messages {
            let text = message_text(message)?;
            match message.role.as_str() {
                "system" | "developer" | "assistant" | "tool" | "function" => {}
                "user" => {
                    let chars = text.chars().count();
                    if chars > PROMPT_CHARS_MAX {
                        return Err(ApiError::too_large(format!(
                            "a `user` message is {chars} characters long; at most \
                             {PROMPT_CHARS_MAX} are accepted"
                        )));
                    }
                }
                other => {
                    return Err(ApiError::bad_request(format!(
                        "a message has role `{other}`; the roles are system, developer, \
                         user, assistant, tool and function"
                    )));
                }
            }
            texts.push(text);
        }
        // The last message is the prompt. A conversation that ends with an answer or a tool's
        // result asks for a continuation imurun does not give; answering an earlier message
        // instead would drop what the client sent without saying so.
        let Some((last, _)) = request.messages.split_last() else {
            return Err(ApiError::bad_request(
                "`messages` is empty; send at least one message with role `user`",
            ));
        };
        if last.role != "user" {
            return Err(ApiError::bad_request(format!(
                "the last message has role `{}`; it must be the user's message, which is the \
                 prompt of the turn",
                last.role
            )));
        }
        let prompt_at = texts.len() - 1;
        let prompt = texts[prompt_at].clone();
        check_prompt(&prompt)?;
        let mut history = Vec::new();
        let mut system = Vec::new();
        for (at, (message, text)) in request.messages.iter().zip(texts).enumerate() {
            match message.role.as_str() {
                "system" | "developer" => system.push(text),
                "user" if at < prompt_at => history.push((StoredRole::User, text)),
                "assistant" => history.push((StoredRole::Assistant, text)),
                // The prompt itself, and the results of the client's own tools, which never
                // run here and mean nothing to the agent.
                _ => {}
            }
        }
        history.retain(|(_, text)| !text.trim().is_empty());
        let skip = history.len().saturating_sub(HISTORY_MESSAGES_MAX);
        history.drain(..skip);
        let system_chars: usize = system.iter().map(|text| text.chars().count()).sum();
        if system_chars > PROMPT_CHARS_MAX {
            return Err(ApiError::too_large(format!(
                "the system messages are {system_chars} characters long; at most \
                 {PROMPT_CHARS_MAX} are accepted"
            )));
        }
        Ok(Conversation {
            prompt,
            history,
            system,
        })
    }

    /// The system messages as the block added after the persona, if there are any.
    fn instructions(&self) -> Option<String> {
        let text = self
            .system
            .iter()
            .map(|text| text.trim())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        (!text.is_empty()).then(|| {
            format!(
                "Instructions from the application this conversation comes from. They add to \
                 the above; which tools may run, and what needs a person's approval, is \
                 decided outside this conversation and cannot be changed by it:\n\n{text}"
            )
        })
    }
}

/// The text of a message: the string, or its `text` parts joined by new lines.
fn message_text(message: &ChatMessage) -> Result<String, ApiError> {
    match &message.content {
        None => Ok(String::new()),
        Some(MessageContent::Text(text)) => Ok(text.clone()),
        Some(MessageContent::Parts(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in parts {
                match (part.kind.as_str(), &part.text) {
                    ("text", Some(text)) => texts.push(text.as_str()),
                    ("text", None) => {
                        return Err(ApiError::bad_request(
                            "a content part of type `text` has no `text`",
                        ));
                    }
                    (other, _) => {
                        return Err(ApiError::bad_request(format!(
                            "a content part has type `{other}`; only `text` parts are \
                             understood"
                        )));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
    }
}

/// The session named by `X-Imurun-Session`, or a fresh one holding the request's history.
async fn open_session(
    state: &ServerState,
    headers: &HeaderMap,
    conversation: &Conversation,
) -> Result<String, ApiError> {
    if let Some(value) = headers.get(SESSION_HEADER) {
        let session_id = value.to_str().map_err(|_| {
            ApiError::bad_request("the X-Imurun-Session header is not a readable session id")
        })?;
        state.store().get_session(session_id).await?;
        return Ok(session_id.to_owned());
    }
    let title = session_title(&conversation.prompt);
    let session = state.store().create_session(None, Some(&title)).await?;
    for (role, text) in &conversation.history {
        state
            .store()
            .append_message(&session.id, *role, text)
            .await?;
    }
    let info = SessionInfo {
        id: session.id.clone(),
        title: session.title,
        created_at_ms: session.created_at_ms,
        updated_at_ms: session.updated_at_ms,
    };
    // As `POST /api/sessions` does: a page's session list hears of sessions it is not watching.
    let event = ServerEvent::SessionCreated {
        session_id: info.id.clone(),
        session: info,
    };
    state.hub().publish_event(None, &event);
    Ok(session.id)
}

/// `openai: ` and the first 40 characters of the prompt, white space folded.
fn session_title(prompt: &str) -> String {
    let folded = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = folded.chars().take(TITLE_PROMPT_CHARS_MAX).collect();
    format!("openai: {cut}")
}

/// What answering a started turn needs, streamed or not.
struct AnswerParts {
    state: ServerState,
    completion_id: String,
    created: u64,
    /// The turn's tokens, read with its stored view once it has ended.
    usage: TokenUsage,
    session_id: String,
    turn_id: String,
    ended: watch::Receiver<bool>,
    stop_guard: StopOnDrop,
}

impl AnswerParts {
    /// Waits until the turn has ended and its view is stored, and returns the view.
    async fn outcome(&mut self) -> Result<TurnView, ApiError> {
        // An `Err` means the turn task is gone, which also means it has ended.
        let _ = self.ended.wait_for(|ended| *ended).await;
        self.stop_guard.armed = false;
        let turn = self
            .state
            .store()
            .get_turn(&self.session_id, &self.turn_id)
            .await?;
        self.usage = recorded_usage(&turn);
        Ok(turn_view(turn, None))
    }

    /// Every generation of the turn: the tokens of each request the loop sent the model and
    /// of each reply, counted by the model (exact for the embedded model, the estimate for
    /// back-ends that cannot count). Known once [`AnswerParts::outcome`] has returned.
    fn usage(&self) -> Usage {
        let usage = self.usage;
        Usage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
        }
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<String>, usage: Option<Value>) -> SseEvent {
        let chunk = ChatCompletionChunk {
            id: self.completion_id.clone(),
            object: "chat.completion.chunk".to_owned(),
            created: self.created,
            model: AGENT_MODEL_ID.to_owned(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason,
            }],
            usage,
        };
        sse_json(&chunk)
    }
}

/// `stop`, or `length` for a turn that reached its step limit.
fn finish_reason(view: &TurnView) -> String {
    if view.status == "max-steps" {
        "length".to_owned()
    } else {
        "stop".to_owned()
    }
}

fn turn_failed(view: &TurnView) -> ApiError {
    let reason = view
        .error
        .clone()
        .unwrap_or_else(|| "no reason was recorded".to_owned());
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "turn_failed",
        format!("the turn failed: {reason}"),
    )
}

async fn whole_answer(
    mut answer: AnswerParts,
    recheck: Option<(KeepService, Identity)>,
) -> Result<Response, ApiError> {
    // A token revoked while the turn runs gets nothing, and the turn stops (dropping `answer`
    // stops it).
    let view = match recheck {
        Some((keep, identity)) => {
            let view = tokio::select! {
                view = answer.outcome() => view?,
                () = until_revoked(keep.clone(), identity.clone()) => {
                    return Err(keep_error(KeepError::Unauthorized));
                }
            };
            if !keep.tokens().still_authorized(&identity).await {
                return Err(keep_error(KeepError::Unauthorized));
            }
            view
        }
        None => answer.outcome().await?,
    };
    if view.status == "error" {
        return Err(turn_failed(&view));
    }
    let completion = ChatCompletion {
        id: answer.completion_id.clone(),
        object: "chat.completion".to_owned(),
        created: answer.created,
        model: AGENT_MODEL_ID.to_owned(),
        choices: vec![Choice {
            index: 0,
            message: AssistantMessage {
                role: "assistant".to_owned(),
                content: view.answer.clone(),
            },
            finish_reason: finish_reason(&view),
        }],
        usage: answer.usage(),
    };
    Ok(Json(completion).into_response())
}

fn stream_answer(
    answer: AnswerParts,
    feed: Arc<TokenFeed>,
    include_usage: bool,
    recheck: Option<(KeepService, Identity)>,
) -> Response {
    let heartbeat = answer.state.options().heartbeat_interval;
    // The stream is polled only while the client reads it: a watchdog of its own stops the
    // turn once the token is revoked, whether or not the client is still reading.
    if let Some((keep, identity)) = recheck.clone() {
        let stop = StopOnDrop {
            state: answer.state.clone(),
            session_id: answer.session_id.clone(),
            turn_id: answer.turn_id.clone(),
            armed: true,
        };
        let mut ended = answer.ended.clone();
        tokio::spawn(async move {
            let mut stop = stop;
            tokio::select! {
                () = until_revoked(keep, identity) => {}
                // The turn ended on its own: nothing to stop.
                _ = ended.wait_for(|ended| *ended) => stop.armed = false,
            }
        });
    }
    let streamer = Streamer {
        answer,
        feed,
        include_usage,
        streamed: String::new(),
        phase: Phase::Start,
    };
    let events = stream::unfold(streamer, |mut streamer| async move {
        let events = streamer.next_events().await?;
        Some((events, streamer))
    })
    .flat_map(|events| stream::iter(events.into_iter().map(Ok::<_, Infallible>)));
    // Ending the stream drops the streamer, which stops the turn.
    let events = match recheck {
        Some((keep, identity)) => while_authorized(events, keep.clone(), identity.clone())
            .take_until(until_revoked(keep, identity))
            .boxed(),
        None => events.boxed(),
    };
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(heartbeat).text(HEARTBEAT_TEXT))
        .into_response()
}

/// Where a streamed answer stands.
enum Phase {
    Start,
    Tokens,
    End,
    Finished,
}

/// The state of one streamed answer. Dropping it (the client went away) stops the turn.
struct Streamer {
    answer: AnswerParts,
    feed: Arc<TokenFeed>,
    include_usage: bool,
    /// The answer text sent so far.
    streamed: String,
    phase: Phase,
}

impl Streamer {
    /// The next events to send; `None` once `[DONE]` has gone.
    async fn next_events(&mut self) -> Option<Vec<SseEvent>> {
        match self.phase {
            Phase::Start => {
                self.phase = Phase::Tokens;
                let delta = Delta {
                    role: Some("assistant".to_owned()),
                    content: Some(String::new()),
                };
                Some(vec![self.chunk(delta, None)])
            }
            Phase::Tokens => Some(self.tokens().await),
            Phase::End => {
                self.phase = Phase::Finished;
                Some(self.end().await)
            }
            Phase::Finished => None,
        }
    }

    /// Waits for tokens of the turn and returns them as one chunk; moves on at its end.
    async fn tokens(&mut self) -> Vec<SseEvent> {
        loop {
            let (text, ended) = self.take_feed();
            if ended {
                self.phase = Phase::End;
            }
            if !text.is_empty() {
                self.streamed.push_str(&text);
                let delta = Delta {
                    role: None,
                    content: Some(text),
                };
                return vec![self.chunk(delta, None)];
            }
            if ended {
                return Vec::new();
            }
            // The turn task flips `ended` after its own `turn.end`; watching it too means a
            // turn that somehow never published one still ends the stream.
            let turn_over = tokio::select! {
                () = self.feed.notify.notified() => false,
                result = self.answer.ended.wait_for(|ended| *ended) => {
                    drop(result);
                    true
                }
            };
            if turn_over {
                self.phase = Phase::End;
                let (text, _) = self.take_feed();
                if text.is_empty() {
                    return Vec::new();
                }
                self.streamed.push_str(&text);
                let delta = Delta {
                    role: None,
                    content: Some(text),
                };
                return vec![self.chunk(delta, None)];
            }
        }
    }

    /// The text of this turn's tokens waiting in the feed, and whether its end came.
    fn take_feed(&mut self) -> (String, bool) {
        let items = std::mem::take(&mut *lock(&self.feed.items));
        let mut text = String::new();
        let mut ended = false;
        for item in items {
            match item {
                FeedItem::Token(more) => text.push_str(&more),
                FeedItem::End => ended = true,
            }
        }
        (text, ended)
    }

    /// The last chunk, the usage chunk and `[DONE]`; or an error event and `[DONE]`.
    async fn end(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let view = match self.answer.outcome().await {
            Ok(view) if view.status == "error" => Err(turn_failed(&view)),
            other => other,
        };
        match view {
            Ok(view) => {
                // A back-end that does not stream still gets its answer to the client.
                if self.streamed.is_empty() && !view.answer.is_empty() {
                    self.streamed.clone_from(&view.answer);
                    let delta = Delta {
                        role: None,
                        content: Some(view.answer.clone()),
                    };
                    events.push(self.chunk(delta, None));
                }
                events.push(self.chunk(Delta::default(), Some(finish_reason(&view))));
                if self.include_usage {
                    let usage = self.answer.usage();
                    events.push(usage_chunk(&self.answer, usage));
                }
            }
            Err(error) => events.push(sse_json(&json!({"error": {
                "code": error.code(),
                "message": error.message(),
                "type": error.code(),
            }}))),
        }
        events.push(SseEvent::default().data("[DONE]"));
        events
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<String>) -> SseEvent {
        let usage = self.include_usage.then_some(Value::Null);
        self.answer.chunk(delta, finish_reason, usage)
    }
}

/// The usage chunk: as OpenAI sends it, no choices and the counts in `usage`.
fn usage_chunk(answer: &AnswerParts, usage: Usage) -> SseEvent {
    sse_json(&ChatCompletionChunk {
        id: answer.completion_id.clone(),
        object: "chat.completion.chunk".to_owned(),
        created: answer.created,
        model: AGENT_MODEL_ID.to_owned(),
        choices: Vec::new(),
        usage: Some(serde_json::to_value(usage).unwrap_or(Value::Null)),
    })
}

fn sse_json(value: &impl serde::Serialize) -> SseEvent {
    // Wire types and `json!` values always serialize.
    SseEvent::default().data(serde_json::to_string(value).unwrap_or_default())
}

/// The `token` and `turn.end` events of one turn, as its tap hands them over.
///
/// Bounded by the turn's output: tokens that arrive while the client is still reading are
/// joined onto the last waiting piece rather than queued one by one, so the queue holds a few
/// items and at most the text of the turn's answer.
struct TokenFeed {
    items: Mutex<VecDeque<FeedItem>>,
    notify: Notify,
}

enum FeedItem {
    Token(String),
    End,
}

impl TokenFeed {
    fn new() -> Arc<TokenFeed> {
        Arc::new(TokenFeed {
            items: Mutex::new(VecDeque::new()),
            notify: Notify::new(),
        })
    }

    /// The turn's tap that fills this feed.
    fn tap(self: &Arc<Self>) -> Tap {
        let feed = Arc::clone(self);
        Arc::new(move |event: &Event| feed.push(event))
    }

    fn push(&self, event: &Event) {
        let mut items = lock(&self.items);
        match event {
            Event::TurnEnd { .. } => items.push_back(FeedItem::End),
            Event::Token { text, .. } => match items.back_mut() {
                Some(FeedItem::Token(last)) => last.push_str(text),
                _ => items.push_back(FeedItem::Token(text.clone())),
            },
            _ => return,
        }
        drop(items);
        self.notify.notify_one();
    }
}

/// Stops the turn when dropped while armed: a client that goes away stops its turn, as the
/// Stop button would.
struct StopOnDrop {
    state: ServerState,
    session_id: String,
    turn_id: String,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(turn) = lock(&self.state.inner.turns)
            .get(&self.session_id)
            .filter(|turn| turn.turn_id == self.turn_id)
        {
            turn.stop.stop();
        }
    }
}

/// Middleware of the whole router: adds `type` (equal to `code`) to the error bodies of `/v1`
/// paths, as OpenAI's clients expect it; other paths pass through untouched.
pub(crate) async fn add_error_type(request: Request, next: Next) -> Response {
    let is_v1 = request.uri().path().starts_with("/v1/");
    let response = next.run(request).await;
    let status = response.status();
    if !is_v1 || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, ERROR_BODY_BYTES_MAX).await else {
        return ApiError::internal().into_response();
    };
    let mut value: Value = match serde_json::from_slice(&bytes) {
        Ok(value) => value,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    if let Some(error) = value.get_mut("error").and_then(Value::as_object_mut)
        && let Some(code) = error.get("code").cloned()
    {
        error.entry("type").or_insert(code);
    }
    parts.headers.remove(CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(value.to_string()))
}

fn unix_seconds() -> u64 {
    u64::try_from(imurun_core::now_unix_ms() / 1_000).unwrap_or(0)
}
