//! The history summariser the loop gives `fit`: the raw model, with its tokens going nowhere,
//! so a summary never streams into the person's answer.

use std::sync::{Mutex, PoisonError};

use imurun_calls::split_think;
use imurun_core::{BoxFuture, GenerateRequest, Message, Model, StopFlag, TokenUsage};

use crate::context::{Summariser, budget};

/// What the model is asked to do.
const SUMMARY_INSTRUCTION: &str = "Summarise the conversation below in at most five short \
     sentences. Keep names, numbers, decisions and open questions. Write only the summary.";

/// The most tokens a summary may take.
const SUMMARY_TOKENS_MAX: usize = 256;

/// Summarises with the raw model.
pub(crate) struct ModelSummariser<'a> {
    pub(crate) model: &'a dyn Model,
    pub(crate) stop: StopFlag,
    /// The tokens summaries take are the turn's too.
    pub(crate) usage: &'a Mutex<TokenUsage>,
}

impl Summariser for ModelSummariser<'_> {
    fn summarise<'a>(&'a self, history: &'a [Message]) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let transcript = transcript_tail(history, self.chars_max());
            let request = GenerateRequest {
                messages: vec![
                    Message::system(SUMMARY_INSTRUCTION),
                    Message::user(transcript),
                ],
                max_tokens: Some(SUMMARY_TOKENS_MAX),
                stop: self.stop.clone(),
                prefill: None,
                calls: None,
            };
            let raw = self.model.generate(&request, &mut |_| {}).await.ok()?;
            let took = TokenUsage::of(self.model, &request, &raw);
            let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
            *usage = usage.plus(took);
            drop(usage);
            let summary = split_think(&raw).visible.trim().to_owned();
            (!summary.is_empty()).then_some(summary)
        })
    }
}

impl ModelSummariser<'_> {
    /// The transcript must itself fit the window with room for the summary: three
    /// characters per token is below the estimate's 3.5, to stay on the safe side.
    fn chars_max(&self) -> usize {
        budget(self.model.context_limit())
            .saturating_sub(SUMMARY_TOKENS_MAX + 64)
            .saturating_mul(3)
    }
}

/// `role: content` lines, keeping the newest `chars_max` characters.
fn transcript_tail(history: &[Message], chars_max: usize) -> String {
    let text: Vec<String> = history
        .iter()
        .map(|message| format!("{}: {}", message.role.as_str(), message.content.trim()))
        .collect();
    let text = text.join("\n");
    let skip = text.chars().count().saturating_sub(chars_max);
    text.chars().skip(skip).collect()
}
