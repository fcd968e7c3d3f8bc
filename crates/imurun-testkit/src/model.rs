//! [`TestModel`]: a model for tests that replays replies in order, records every request,
//! and can fail, panic, stop its own turn, or wait for a gate the test opens.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use imurun_core::{BoxFuture, GenerateRequest, Message, Model, ModelError, StopFlag};
use tokio::sync::Semaphore;

/// One reply.
#[derive(Debug, Clone)]
pub struct Reply {
    text: String,
    gate: Option<Arc<Semaphore>>,
    ending: Ending,
}

/// How a reply ends once its gate (if any) opens.
#[derive(Debug, Clone, PartialEq)]
enum Ending {
    Answer,
    Fail(ModelError),
    /// Sets this stop flag (the turn's), then answers (a Stop press mid-generation).
    StopDuring(StopFlag),
    Panic,
}

impl Reply {
    /// Streams `text`.
    pub fn text(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            gate: None,
            ending: Ending::Answer,
        }
    }

    /// Fails with `error`.
    pub fn fail(error: ModelError) -> Self {
        Self {
            ending: Ending::Fail(error),
            ..Self::text("")
        }
    }

    /// Fails with a transport error saying `message`.
    pub fn error(message: &str) -> Self {
        Self::fail(ModelError::Transport {
            message: message.to_owned(),
        })
    }

    /// Panics, as a buggy back-end would.
    pub fn panic() -> Self {
        Self {
            ending: Ending::Panic,
            ..Self::text("")
        }
    }

    /// Stops the turn (`stop`, the flag its request carries: a generation's own flag is a
    /// child of it), then streams `text`.
    pub fn stop_during(text: &str, stop: &StopFlag) -> Self {
        Self {
            ending: Ending::StopDuring(stop.clone()),
            ..Self::text(text)
        }
    }

    /// This reply, given only once `gate` has a permit (the test adds one to open it) or the
    /// request is stopped (then the reply is empty).
    pub fn gated(mut self, gate: &Arc<Semaphore>) -> Self {
        self.gate = Some(Arc::clone(gate));
        self
    }
}

/// Replays replies in order; once they run out, the fallback (by default a failure that
/// says so) answers every request.
#[derive(Debug)]
pub struct TestModel {
    replies: Mutex<VecDeque<Reply>>,
    fallback: Option<Reply>,
    requests: Mutex<Vec<GenerateRequest>>,
    context_limit: usize,
    counts_characters: bool,
    prefills: bool,
    piece_chars: usize,
}

impl TestModel {
    /// `replies`, a context of 8192 tokens, the core's token estimate, pieces of three
    /// characters (so markers split across tokens), no prefill.
    pub fn new(replies: Vec<Reply>) -> Self {
        Self {
            replies: Mutex::new(replies.into()),
            fallback: None,
            requests: Mutex::new(Vec::new()),
            context_limit: 8192,
            counts_characters: false,
            prefills: false,
            piece_chars: 3,
        }
    }

    /// Replies given by text.
    pub fn texts(texts: &[&str]) -> Self {
        Self::new(texts.iter().map(|text| Reply::text(text)).collect())
    }

    pub fn with_context_limit(mut self, context_limit: usize) -> Self {
        self.context_limit = context_limit;
        self
    }

    /// Counts one token per character, as an exact back-end that disagrees with the
    /// estimate would.
    pub fn counting_characters(mut self) -> Self {
        self.counts_characters = true;
        self
    }

    /// Continues a started reply, as the embedded back-end does: the reply streamed and
    /// returned is the prefill followed by the script's text.
    pub fn prefilling(mut self) -> Self {
        self.prefills = true;
        self
    }

    /// The reply for every request once the script has run out.
    pub fn with_fallback(mut self, fallback: Reply) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// Streams each reply as one piece.
    pub fn whole_pieces(mut self) -> Self {
        self.piece_chars = usize::MAX;
        self
    }

    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }

    /// Every request's messages, oldest first.
    pub fn received(&self) -> Vec<Vec<Message>> {
        self.requests()
            .into_iter()
            .map(|request| request.messages)
            .collect()
    }

    /// Every request's prefill, oldest first.
    pub fn prefills(&self) -> Vec<Option<String>> {
        self.requests()
            .into_iter()
            .map(|request| request.prefill)
            .collect()
    }

    /// Every request, oldest first.
    pub fn requests(&self) -> Vec<GenerateRequest> {
        self.requests.lock().expect("requests lock").clone()
    }

    /// Replies not given yet.
    pub fn replies_left(&self) -> usize {
        self.replies.lock().expect("replies lock").len()
    }

    fn next_reply(&self) -> Reply {
        let next = self.replies.lock().expect("replies lock").pop_front();
        next.or_else(|| self.fallback.clone()).unwrap_or_else(|| {
            Reply::fail(ModelError::Protocol {
                message: "the test model's script ran out".to_owned(),
            })
        })
    }
}

impl Model for TestModel {
    fn name(&self) -> &str {
        "test-model"
    }

    fn context_limit(&self) -> usize {
        self.context_limit
    }

    fn count_tokens(&self, messages: &[Message]) -> usize {
        if self.counts_characters {
            messages.iter().map(|m| m.content.chars().count()).sum()
        } else {
            imurun_core::estimate_tokens(messages)
        }
    }

    fn supports_prefill(&self) -> bool {
        self.prefills
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        self.requests
            .lock()
            .expect("requests lock")
            .push(request.clone());
        let reply = self.next_reply();
        Box::pin(async move {
            if let Some(gate) = &reply.gate {
                tokio::select! {
                    permit = gate.acquire() => match permit {
                        Ok(permit) => permit.forget(),
                        Err(_) => return Ok(String::new()),
                    },
                    () = request.stop.stopped() => return Ok(String::new()),
                }
            }
            match reply.ending {
                Ending::Answer => {}
                Ending::Fail(error) => return Err(error),
                Ending::StopDuring(stop) => stop.stop(),
                Ending::Panic => panic!("the test model panics, as asked"),
            }
            let prefill = match (self.prefills, &request.prefill) {
                (true, Some(prefill)) => prefill.as_str(),
                _ => "",
            };
            let text = format!("{prefill}{}", reply.text);
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(self.piece_chars.min(chars.len().max(1))) {
                on_token(&piece.iter().collect::<String>());
            }
            Ok(text)
        })
    }
}
