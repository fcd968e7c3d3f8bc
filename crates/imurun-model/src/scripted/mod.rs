//! The scripted model: a `Model` that replays a script of replies, for tests, demos and
//! benchmarks. The script and its JSON format live beside it (`script.rs`, `json.rs`).

mod json;
mod pieces;
mod script;

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use imurun_core::{BoxFuture, GenerateRequest, Message, Model, ModelError};

pub use json::SCRIPT_BYTES_MAX;
pub use pieces::split_pieces;
pub use script::{
    DEFAULT_CONTEXT_LIMIT, DEFAULT_NAME, DELAY_MS_MAX, Reply, SCRIPT_REPLIES_MAX, Script,
};

use crate::ScriptError;
use crate::pause::pause;

/// How many requests a model keeps for `requests()`: the newest ones. A test's turn makes a
/// handful; the bound keeps a long-running demo server with a fallback reply from growing.
pub const REQUESTS_KEPT_MAX: usize = 1024;

/// A model that replays a `Script`.
///
/// Each `generate` call takes the first unused reply, in script order, that answers its
/// request: a reply without `when_last_user_contains` answers any request, one with it only a
/// request whose last user message contains that text. So a script without conditions is
/// replayed strictly in order, and a reply skipped for its condition waits for a later call.
/// A used reply is never given again. When no unused reply answers, the script's fallback
/// reply does, or the call fails with `ModelError::Protocol` ("the script has no reply left").
///
/// The reply is taken when `generate` is called, not when its future is first polled, under
/// a mutex shared by all callers: concurrent sessions using one model get replies in the
/// order of their calls, none lost and none given twice. Use `clone_fresh` (or
/// `Script::model`) to give each session its own replay of the same script.
///
/// Before a reply is taken, a request whose messages count more tokens than the context
/// limit fails with `ModelError::ContextOverflow` and uses no reply (unless the script turns
/// that off). Token counts are the seed's estimate, `Model::count_tokens`'s default.
///
/// Replaying a reply: sleep `delay_ms`, then stream the pieces through `on_token`, sleeping
/// `token_delay_ms` between two pieces, then fail with the reply's error if it has one,
/// else return the pieces joined. The stop flag is checked before every piece and during
/// sleeps; once set, the call returns `Ok` with the pieces streamed so far. `max_tokens`
/// counts pieces: after that many the call returns `Ok` with them. Either way a reply's
/// error is not raised when the stream was cut short before it. Delays sleep on Tokio's
/// clock (a script without delays needs no runtime).
#[derive(Debug)]
pub struct ScriptedModel {
    script: Script,
    state: Mutex<ReplayState>,
}

/// Where a replay stands. Never held across an `.await`.
#[derive(Debug)]
struct ReplayState {
    /// `used[i]` once reply `i` has been given.
    used: Vec<bool>,
    /// Every reply before this index is used, so a search for the next one starts here.
    first_unused: usize,
    requests: VecDeque<Vec<Message>>,
    request_count: usize,
}

impl ScriptedModel {
    /// A model replaying `script` from its start.
    pub fn new(script: Script) -> Self {
        let state = Mutex::new(ReplayState {
            used: vec![false; script.replies().len()],
            first_unused: 0,
            requests: VecDeque::new(),
            request_count: 0,
        });
        Self { script, state }
    }

    /// A model replaying a script read from JSON text.
    pub fn from_json(json: &str) -> Result<Self, ScriptError> {
        Script::from_json(json).map(Self::new)
    }

    /// A model replaying a script read from a JSON file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, ScriptError> {
        Script::from_file(path).map(Self::new)
    }

    /// A model replaying plain text replies in order, each streamed word by word.
    pub fn from_texts<I, S>(texts: I) -> Result<Self, ScriptError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Script::from_texts(texts).map(Self::new)
    }

    /// A new model replaying the same script from its start, with no requests recorded:
    /// one per session.
    pub fn clone_fresh(&self) -> Self {
        Self::new(self.script.clone())
    }

    pub fn script(&self) -> &Script {
        &self.script
    }

    /// The messages of every request received, oldest first, including requests that
    /// failed; only the newest `REQUESTS_KEPT_MAX` are kept.
    pub fn requests(&self) -> Vec<Vec<Message>> {
        self.lock().requests.iter().cloned().collect()
    }

    /// How many requests were received, including any no longer kept.
    pub fn request_count(&self) -> usize {
        self.lock().request_count
    }

    /// How many of the script's replies have not been given yet (the fallback aside).
    pub fn replies_left(&self) -> usize {
        self.lock().used.iter().filter(|used| !**used).count()
    }

    fn lock(&self) -> MutexGuard<'_, ReplayState> {
        // The state is only changed by short code that does not panic between the steps of
        // one change, so a poisoned lock still guards consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the request and picks its reply, all under one lock so concurrent callers
    /// are served in call order.
    fn take_reply(&self, messages: &[Message]) -> Result<&Reply, ModelError> {
        let mut state = self.lock();
        state.request_count += 1;
        if state.requests.len() == REQUESTS_KEPT_MAX {
            state.requests.pop_front();
        }
        state.requests.push_back(messages.to_vec());

        let limit = self.script.context_limit();
        if self.script.enforces_context_limit() {
            let tokens = self.count_tokens(messages);
            if tokens > limit {
                return Err(ModelError::ContextOverflow { tokens, limit });
            }
        }

        let replies = self.script.replies();
        let start = state.first_unused;
        let found = (start..replies.len())
            .find(|&index| !state.used[index] && replies[index].matches(messages));
        if let Some(index) = found {
            state.used[index] = true;
            while state.first_unused < replies.len() && state.used[state.first_unused] {
                state.first_unused += 1;
            }
            return Ok(&replies[index]);
        }
        if let Some(fallback) = self.script.fallback() {
            return Ok(fallback);
        }
        let left = state.used.iter().filter(|used| !**used).count();
        let message = if left == 0 {
            format!(
                "the script has no reply left: all {} were used",
                replies.len()
            )
        } else {
            format!(
                "the script has no reply left for this request: none of the {left} unused \
                 replies matches its last user message"
            )
        };
        Err(ModelError::Protocol { message })
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        self.script.name()
    }

    fn context_limit(&self) -> usize {
        self.script.context_limit()
    }

    /// A prefill is streamed first; the script's reply continues it.
    fn supports_prefill(&self) -> bool {
        true
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        let reply = self.take_reply(&request.messages);
        Box::pin(async move { replay(reply?, request, on_token).await })
    }
}

/// Streams one reply, honouring the request's stop flag and `max_tokens`.
async fn replay(
    reply: &Reply,
    request: &GenerateRequest,
    on_token: &mut (dyn FnMut(&str) + Send),
) -> Result<String, ModelError> {
    let mut answer = request.prefill.clone().unwrap_or_default();
    if !answer.is_empty() {
        on_token(&answer);
    }
    if !pause(reply.delay_ms, &request.stop).await {
        return Ok(answer);
    }
    let pieces_max = request.max_tokens.unwrap_or(usize::MAX);
    for (index, piece) in reply.pieces.iter().enumerate() {
        if index == pieces_max {
            return Ok(answer);
        }
        if index > 0 && !pause(reply.token_delay_ms, &request.stop).await {
            return Ok(answer);
        }
        if request.stop.is_stopped() {
            return Ok(answer);
        }
        on_token(piece);
        answer.push_str(piece);
    }
    match &reply.error {
        Some(error) => Err(error.clone()),
        None => Ok(answer),
    }
}
