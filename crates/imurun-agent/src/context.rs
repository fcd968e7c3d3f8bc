//! The context budget: `fit` shrinks a turn's messages until they fit the model's window,
//! leaving room for the reply.
//!
//! Budget = limit − reserve, reserve = clamp(limit / 4, 256, 2048). Every tool result is
//! capped at clamp(limit · 3.5 / 4, 800, 6000) characters. When the messages are still over
//! budget, room is freed in this order, stopping as soon as they fit:
//!
//! 1. old tool results (all but the newest step's) are cut to 400 characters;
//! 2. the history before the prompt is summarised by the raw model into the system message,
//!    or, with no summariser or no summary, dropped oldest first (`compaction.*` events);
//! 3. the newest tool results are cut to 400 characters;
//! 4. the longest message is trimmed, repeatedly, down to a marker at the least.
//!
//! The prompt (the message at `prompt_index`) is never changed. Token counts come from the
//! caller's counter — the model's own — so the result holds when a back-end counts exactly.

use imurun_core::{BoxFuture, CompactionMode, Event, EventSink, Message, Role};

/// Tool results are fed back as user messages starting with this header.
pub const TOOL_RESULT_HEADER: &str = "[tool result: ";

/// What old tool results are cut to in the first step, and the newest ones in the third.
pub const SHORT_TOOL_RESULT_CHARS: usize = 400;

/// A history summary is cut to this many characters.
pub const SUMMARY_CHARS_MAX: usize = 2000;

/// What a trimmed message ends with (and, at the least, is).
pub const TRIM_MARKER: &str = "[…trimmed]";

/// What a cut tool result ends with.
const CUT_MARKER: &str = "\n[…cut]";

/// The heading the summary goes under in the system message.
const SUMMARY_HEADING: &str = "\n\n## Earlier in this conversation (summarised)\n";

/// Trimming passes per message at most: each pass removes at least an eighth of the
/// longest message, so this is far more than any real input needs.
const TRIM_PASSES_PER_MESSAGE: usize = 64;

/// Tokens kept free for the reply: clamp(limit / 4, 256, 2048).
pub fn reserve(limit: usize) -> usize {
    (limit / 4).clamp(256, 2048)
}

/// Tokens the messages may take: limit − reserve (0 when the reserve is the whole window).
pub fn budget(limit: usize) -> usize {
    limit.saturating_sub(reserve(limit))
}

/// Characters a tool result may keep: clamp(limit · 3.5 / 4, 800, 6000).
pub fn tool_result_chars_max(limit: usize) -> usize {
    (limit.saturating_mul(7) / 8).clamp(800, 6000)
}

/// Whether `message` is a tool result fed back to the model.
pub fn is_tool_result(message: &Message) -> bool {
    message.role == Role::User && message.content.starts_with(TOOL_RESULT_HEADER)
}

/// Summarises history for the budget. The loop's implementation asks the raw model, so the
/// summary never streams into the answer; `None` means no summary (the history is dropped).
pub trait Summariser: Send + Sync {
    fn summarise<'a>(&'a self, history: &'a [Message]) -> BoxFuture<'a, Option<String>>;
}

/// How many tokens a list of messages takes: the model's own count.
pub type TokenCounter<'a> = dyn Fn(&[Message]) -> usize + Sync + 'a;

/// What `fit` works with.
#[derive(Clone, Copy)]
pub struct Fit<'a> {
    /// The model's context window in tokens.
    pub limit: usize,
    pub count: &'a TokenCounter<'a>,
    pub summariser: Option<&'a dyn Summariser>,
    pub events: &'a dyn EventSink,
    pub session_id: Option<&'a str>,
}

impl std::fmt::Debug for Fit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fit")
            .field("limit", &self.limit)
            .field("summariser", &self.summariser.is_some())
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// What `fit` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fitted {
    /// Where the prompt is now (history before it may have been removed).
    pub prompt_index: usize,
    /// Tokens of the messages as they are now.
    pub tokens: usize,
    pub budget: usize,
    /// False only when the prompt with everything else at its least does not fit.
    pub fits: bool,
    pub compaction: Option<CompactionMode>,
}

/// Shrinks `messages` to the budget. `prompt_index` is the prompt, which is never changed;
/// the messages before it (after a leading system message) are the history.
pub async fn fit(messages: &mut Vec<Message>, prompt_index: usize, fit: &Fit<'_>) -> Fitted {
    let budget = budget(fit.limit);
    let mut fitted = Fitted {
        prompt_index,
        tokens: 0,
        budget,
        fits: true,
        compaction: None,
    };
    let cap = tool_result_chars_max(fit.limit);
    for message in messages
        .iter_mut()
        .filter(|message| is_tool_result(message))
    {
        cut_to(message, cap);
    }
    if fits_now(messages, &mut fitted, fit) {
        return fitted;
    }
    let newest = newest_tool_results_start(messages);
    for message in messages[..newest].iter_mut() {
        if is_tool_result(message) {
            cut_to(message, SHORT_TOOL_RESULT_CHARS);
        }
    }
    if fits_now(messages, &mut fitted, fit) {
        return fitted;
    }
    compact_history(messages, &mut fitted, fit).await;
    if fits_now(messages, &mut fitted, fit) {
        return fitted;
    }
    let newest = newest_tool_results_start(messages);
    for message in messages[newest..].iter_mut() {
        if is_tool_result(message) {
            cut_to(message, SHORT_TOOL_RESULT_CHARS);
        }
    }
    trim_longest(messages, &mut fitted, fit);
    fitted
}

/// Recounts; true when the messages fit.
fn fits_now(messages: &[Message], fitted: &mut Fitted, fit: &Fit<'_>) -> bool {
    fitted.tokens = (fit.count)(messages);
    fitted.fits = fitted.tokens <= fitted.budget;
    fitted.fits
}

/// Tool results after the last assistant message belong to the newest step.
fn newest_tool_results_start(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |at| at + 1)
}

/// Step 2: summarise the history into the system message, or drop it oldest first.
async fn compact_history(messages: &mut Vec<Message>, fitted: &mut Fitted, fit: &Fit<'_>) {
    let start = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
    let history = start..fitted.prompt_index;
    if history.is_empty() {
        return;
    }
    let session_id = fit.session_id.map(str::to_owned);
    fit.events.publish(Event::CompactionStart {
        session_id: session_id.clone(),
        messages: history.len(),
        tokens: fitted.tokens,
        budget: fitted.budget,
    });
    let summary = match fit.summariser {
        Some(summariser) => summariser.summarise(&messages[history.clone()]).await,
        None => None,
    };
    let summary = summary.filter(|text| !text.trim().is_empty());
    let (mode, removed) = match summary {
        Some(summary) => {
            let text = format!(
                "{SUMMARY_HEADING}{}",
                cut(summary.trim(), SUMMARY_CHARS_MAX)
            );
            messages.drain(history.clone());
            if start == 1 {
                messages[0].content.push_str(&text);
            } else {
                messages.insert(0, Message::system(text.trim_start()));
            }
            let removed = history.len();
            fitted.prompt_index = fitted.prompt_index - removed + usize::from(start == 0);
            (CompactionMode::Summarised, removed)
        }
        None => {
            let removed = oldest_to_drop(messages, start, fitted, fit);
            messages.drain(start..start + removed);
            fitted.prompt_index -= removed;
            (CompactionMode::Dropped, removed)
        }
    };
    fitted.compaction = Some(mode);
    fitted.tokens = (fit.count)(messages);
    fit.events.publish(Event::CompactionDone {
        session_id,
        mode,
        messages: removed,
        tokens: fitted.tokens,
    });
}

/// The fewest oldest history messages whose removal makes the messages fit, or all of them.
/// A binary search: removing more never takes more tokens, and counting is the cost.
fn oldest_to_drop(messages: &mut [Message], start: usize, fitted: &Fitted, fit: &Fit<'_>) -> usize {
    let history_len = fitted.prompt_index - start;
    let (mut low, mut high) = (1, history_len);
    if !fits_without(messages, start, high, fitted.budget, fit) {
        return history_len;
    }
    while low < high {
        let middle = low + (high - low) / 2;
        if fits_without(messages, start, middle, fitted.budget, fit) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    high
}

/// Whether the messages fit without the `dropped` oldest history messages, counted without
/// copying any: the kept messages are a tail of the list once a leading system message is
/// swapped next to it, and it is swapped back afterwards.
fn fits_without(
    messages: &mut [Message],
    start: usize,
    dropped: usize,
    budget: usize,
    fit: &Fit<'_>,
) -> bool {
    if start == 0 || dropped == 0 {
        return (fit.count)(&messages[dropped..]) <= budget;
    }
    let at = start + dropped - 1;
    messages.swap(0, at);
    let fits = (fit.count)(&messages[at..]) <= budget;
    messages.swap(0, at);
    fits
}

/// Step 4: trim the longest message other than the prompt until the messages fit or every
/// other message is down to the marker.
fn trim_longest(messages: &mut [Message], fitted: &mut Fitted, fit: &Fit<'_>) {
    let marker_chars = TRIM_MARKER.chars().count();
    let passes_max = messages.len().saturating_mul(TRIM_PASSES_PER_MESSAGE);
    for _ in 0..passes_max {
        if fits_now(messages, fitted, fit) {
            return;
        }
        let longest = messages
            .iter()
            .enumerate()
            .filter(|(at, _)| *at != fitted.prompt_index)
            .map(|(at, message)| (at, message.content.chars().count()))
            .filter(|(_, chars)| *chars > marker_chars)
            .max_by_key(|&(at, chars)| (chars, std::cmp::Reverse(at)));
        let Some((at, chars)) = longest else {
            return;
        };
        // Remove about as many characters as the excess takes at the estimate's density,
        // and at least an eighth, so a counter that disagrees still converges quickly.
        let excess = fitted.tokens - fitted.budget;
        let remove = excess.saturating_mul(4).max(chars / 8).max(1);
        let keep = chars.saturating_sub(remove + marker_chars);
        let head = cut(&messages[at].content, keep).trim_end().to_owned();
        messages[at].content = format!("{head}{TRIM_MARKER}");
    }
    fits_now(messages, fitted, fit);
}

/// Cuts `message` to `chars_max` characters plus a marker, when that makes it shorter.
fn cut_to(message: &mut Message, chars_max: usize) {
    let marker_chars = CUT_MARKER.chars().count();
    if message.content.chars().count() > chars_max + marker_chars {
        let head = cut(&message.content, chars_max).to_owned();
        message.content = format!("{head}{CUT_MARKER}");
    }
}

/// The first `chars_max` characters of `text`.
pub(crate) fn cut(text: &str, chars_max: usize) -> &str {
    match text.char_indices().nth(chars_max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests;
