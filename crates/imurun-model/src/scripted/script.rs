//! A script: the replies a scripted model gives, in order, and its settings. Built in code
//! with `Script::new` and `Reply`, or read from JSON (`json.rs`); both paths check the same
//! rules, so a `Script` that exists is valid.

use std::sync::Arc;

use imurun_core::{Message, ModelError, Role};

use crate::ScriptError;
use crate::scripted::pieces::split_pieces;

/// The most replies a script may hold. A scripted conversation is a few dozen steps; the
/// bound keeps a runaway generated script from living in every session's memory.
pub const SCRIPT_REPLIES_MAX: usize = 10_000;

/// The longest delay (`delay_ms`, `token_delay_ms`) one reply may ask for: a minute. A
/// longer one is almost surely a typo that would hang a test or a demo.
pub const DELAY_MS_MAX: u64 = 60_000;

/// The name a script gets unless it says otherwise.
pub const DEFAULT_NAME: &str = "scripted";

/// The context window a script gets unless it says otherwise, in tokens.
pub const DEFAULT_CONTEXT_LIMIT: usize = 8192;

/// The longest name a script may give its model, in characters: it is shown in logs and
/// on the page.
pub(crate) const NAME_CHARS_MAX: usize = 128;

/// One reply of a script: what one `generate` call streams, how fast, whether it fails, and
/// optionally which prompt it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub(crate) pieces: Vec<String>,
    pub(crate) error: Option<ModelError>,
    pub(crate) delay_ms: u64,
    pub(crate) token_delay_ms: u64,
    pub(crate) when_last_user_contains: Option<String>,
}

impl Reply {
    /// A reply given as whole text, streamed in the pieces `split_pieces` cuts it into.
    pub fn text(text: &str) -> Self {
        Self::from_pieces(split_pieces(text))
    }

    /// A reply streamed exactly in these pieces; each must be non-empty.
    pub fn tokens<I, S>(pieces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::from_pieces(pieces.into_iter().map(Into::into).collect())
    }

    /// A reply that streams nothing and fails with `error` (after its `delay_ms`).
    pub fn error(error: ModelError) -> Self {
        Self::from_pieces(Vec::new()).then_error(error)
    }

    /// Streams this reply's pieces, then fails with `error`: a connection lost mid-answer.
    pub fn then_error(mut self, error: ModelError) -> Self {
        self.error = Some(error);
        self
    }

    /// Sleeps `delay_ms` before the first piece (or before failing), like a model that
    /// takes a while to read its prompt.
    pub fn delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// Sleeps `token_delay_ms` between two pieces (not before the first, not after the last).
    pub fn token_delay_ms(mut self, token_delay_ms: u64) -> Self {
        self.token_delay_ms = token_delay_ms;
        self
    }

    /// Makes this reply answer only a request whose last user message contains `needle`
    /// (case-sensitive). See `ScriptedModel` for how replies are picked.
    pub fn when_last_user_contains(mut self, needle: &str) -> Self {
        self.when_last_user_contains = Some(needle.to_owned());
        self
    }

    /// The pieces this reply streams, in order.
    pub fn pieces(&self) -> &[String] {
        &self.pieces
    }

    /// The whole text this reply streams when nothing cuts it short.
    pub fn full_text(&self) -> String {
        self.pieces.concat()
    }

    /// Whether this reply may answer a request with these messages.
    pub(crate) fn matches(&self, messages: &[Message]) -> bool {
        let Some(needle) = &self.when_last_user_contains else {
            return true;
        };
        messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .is_some_and(|message| message.content.contains(needle.as_str()))
    }

    /// The rules every reply keeps, in code and in JSON alike.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(at) = self.pieces.iter().position(String::is_empty) {
            return Err(format!("piece {at} is empty; every piece needs some text"));
        }
        for (field, delay_ms) in [
            ("delay_ms", self.delay_ms),
            ("token_delay_ms", self.token_delay_ms),
        ] {
            if delay_ms > DELAY_MS_MAX {
                return Err(format!("{field} is {delay_ms}; at most {DELAY_MS_MAX}"));
            }
        }
        if self.when_last_user_contains.as_deref() == Some("") {
            return Err("when_last_user_contains is empty; it would match every request".into());
        }
        Ok(())
    }

    /// The rules a fallback keeps besides a reply's own: it answers whatever is left, so it
    /// has no condition.
    pub(crate) fn check_fallback(&self) -> Result<(), String> {
        self.check()?;
        if self.when_last_user_contains.is_some() {
            return Err("a fallback reply cannot have when_last_user_contains".into());
        }
        Ok(())
    }

    fn from_pieces(pieces: Vec<String>) -> Self {
        Self {
            pieces,
            error: None,
            delay_ms: 0,
            token_delay_ms: 0,
            when_last_user_contains: None,
        }
    }
}

/// A checked script. Cloning is cheap (the replies are shared), and every `model()` made
/// from one script replays it from the start: one script can serve many sessions.
#[derive(Debug, Clone)]
pub struct Script {
    inner: Arc<ScriptInner>,
}

#[derive(Debug, Clone)]
struct ScriptInner {
    name: String,
    context_limit: usize,
    enforce_context_limit: bool,
    replies: Vec<Reply>,
    fallback: Option<Reply>,
}

impl Script {
    /// A script of these replies, with the default name and context limit, no fallback, and
    /// the context limit enforced.
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> Result<Self, ScriptError> {
        let replies: Vec<Reply> = replies.into_iter().collect();
        if replies.len() > SCRIPT_REPLIES_MAX {
            return Err(ScriptError::TooManyReplies {
                replies: replies.len(),
                replies_max: SCRIPT_REPLIES_MAX,
            });
        }
        for (index, reply) in replies.iter().enumerate() {
            reply
                .check()
                .map_err(|message| ScriptError::InvalidReply { index, message })?;
        }
        Ok(Self::checked(replies))
    }

    /// A script of plain text replies, each streamed word by word.
    pub fn from_texts<I, S>(texts: I) -> Result<Self, ScriptError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::new(texts.into_iter().map(|text| Reply::text(text.as_ref())))
    }

    /// Names the model (`Model::name`); the default is `scripted`.
    pub fn with_name(mut self, name: &str) -> Self {
        Arc::make_mut(&mut self.inner).name = name.to_owned();
        self
    }

    /// Sets the context window in tokens; the default is `DEFAULT_CONTEXT_LIMIT`. A limit
    /// of 0 is raised to 1, since no model has an empty window.
    pub fn with_context_limit(mut self, context_limit: usize) -> Self {
        Arc::make_mut(&mut self.inner).context_limit = context_limit.max(1);
        self
    }

    /// Whether a request whose messages count more tokens than the context limit fails with
    /// `ModelError::ContextOverflow`, as a real back-end's would (the default), or is
    /// answered anyway.
    pub fn with_enforced_context_limit(mut self, enforce: bool) -> Self {
        Arc::make_mut(&mut self.inner).enforce_context_limit = enforce;
        self
    }

    /// Answers every request no reply is left for with `fallback`, instead of failing.
    pub fn with_fallback(mut self, fallback: Reply) -> Result<Self, ScriptError> {
        fallback
            .check_fallback()
            .map_err(|message| ScriptError::InvalidFallback { message })?;
        Arc::make_mut(&mut self.inner).fallback = Some(fallback);
        Ok(self)
    }

    /// A model that replays this script from the start.
    pub fn model(&self) -> crate::ScriptedModel {
        crate::ScriptedModel::new(self.clone())
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn context_limit(&self) -> usize {
        self.inner.context_limit
    }

    pub fn enforces_context_limit(&self) -> bool {
        self.inner.enforce_context_limit
    }

    pub fn replies(&self) -> &[Reply] {
        &self.inner.replies
    }

    pub fn fallback(&self) -> Option<&Reply> {
        self.inner.fallback.as_ref()
    }

    /// A script from parts the caller has already checked (the JSON reader checks each
    /// part where it reads it, to say where a mistake is).
    pub(crate) fn checked(replies: Vec<Reply>) -> Self {
        Self {
            inner: Arc::new(ScriptInner {
                name: DEFAULT_NAME.to_owned(),
                context_limit: DEFAULT_CONTEXT_LIMIT,
                enforce_context_limit: true,
                replies,
                fallback: None,
            }),
        }
    }

    /// Sets a fallback the caller has already checked.
    pub(crate) fn with_checked_fallback(mut self, fallback: Option<Reply>) -> Self {
        Arc::make_mut(&mut self.inner).fallback = fallback;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_built_in_code_are_checked_and_the_error_names_the_reply() {
        let cases: Vec<(Reply, &str)> = vec![
            (
                Reply::tokens(["a", ""]),
                "replies[1]: piece 1 is empty; every piece needs some text",
            ),
            (
                Reply::text("x").delay_ms(60_001),
                "replies[1]: delay_ms is 60001; at most 60000",
            ),
            (
                Reply::text("x").token_delay_ms(u64::MAX),
                "replies[1]: token_delay_ms is 18446744073709551615; at most 60000",
            ),
            (
                Reply::text("x").when_last_user_contains(""),
                "replies[1]: when_last_user_contains is empty; it would match every request",
            ),
        ];
        for (bad, expect) in cases {
            let error = Script::new([Reply::text("fine"), bad]).unwrap_err();
            assert_eq!(error.to_string(), expect);
        }
    }

    #[test]
    fn a_script_may_hold_at_most_the_bound_of_replies() {
        let at_bound = vec![Reply::text("x"); SCRIPT_REPLIES_MAX];
        assert_eq!(
            Script::new(at_bound).unwrap().replies().len(),
            SCRIPT_REPLIES_MAX
        );
        let over = vec![Reply::text("x"); SCRIPT_REPLIES_MAX + 1];
        assert!(matches!(
            Script::new(over),
            Err(ScriptError::TooManyReplies {
                replies: 10_001,
                replies_max: 10_000
            })
        ));
    }

    #[test]
    fn a_fallback_cannot_have_a_condition() {
        let script = Script::from_texts(["a"]).unwrap();
        let error = script
            .with_fallback(Reply::text("b").when_last_user_contains("x"))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the fallback reply: a fallback reply cannot have when_last_user_contains"
        );
    }

    #[test]
    fn a_condition_looks_at_the_last_user_message_only() {
        let reply = Reply::text("x").when_last_user_contains("weather");
        let cases: &[(&[Message], bool)] = &[
            (&[], false),
            (&[Message::user("the weather in Lima?")], true),
            (&[Message::user("the Weather in Lima?")], false),
            (&[Message::system("weather"), Message::user("hi")], false),
            (
                &[Message::user("weather?"), Message::assistant("sunny")],
                true,
            ),
            (
                &[
                    Message::user("weather?"),
                    Message::user("[tool result: x] 3"),
                ],
                false,
            ),
        ];
        for (messages, expect) in cases {
            assert_eq!(reply.matches(messages), *expect, "{messages:?}");
        }
        assert!(Reply::text("no condition").matches(&[]));
    }

    #[test]
    fn settings_have_defaults_and_a_context_limit_is_at_least_one() {
        let script = Script::from_texts(["a"]).unwrap();
        assert_eq!(script.name(), "scripted");
        assert_eq!(script.context_limit(), 8192);
        assert!(script.enforces_context_limit());
        assert!(script.fallback().is_none());
        let script = script
            .with_name("demo")
            .with_context_limit(0)
            .with_enforced_context_limit(false);
        assert_eq!(script.name(), "demo");
        assert_eq!(script.context_limit(), 1);
        assert!(!script.enforces_context_limit());
    }
}
