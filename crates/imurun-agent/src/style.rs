//! The house style and the live-data rules every system message carries, and the fixed
//! sentences the loop adds to what the model reads.
//!
//! The wording of `LIVE_DATA_RULE`, `OFFLINE_SENTENCE` and the "can't check" admission is
//! shared on purpose: the rule teaches the admission, pre-fetch failures use it, and
//! [`crate::admits_no_live_data`] recognises it, so the three cannot drift apart.

/// The persona used when the caller does not give one.
pub const DEFAULT_PERSONA: &str =
    "You are imurun, a helpful assistant running on this person's own computer.";

/// The house rule for live values: weather, prices, news, scores, the time somewhere.
pub const LIVE_DATA_RULE: &str = "Live data (the time, weather, prices, news, scores, anything \
     current) may only be stated from a tool result or the Context block. If you have neither, \
     say that live data can't be checked right now, and give no current values from memory.";

/// What pre-fetch failures and offline tools say, in the same words the rule teaches.
pub const OFFLINE_SENTENCE: &str =
    "Live data can't be checked right now: the lookup failed or this computer is offline.";

/// How answers should read. Short rules: small models follow a few plain sentences better
/// than a long list.
pub const HOUSE_STYLE: &str = "Answer in the language of the question. Be direct and brief: \
     lead with the answer, then only the detail that helps. Use Markdown only when it makes \
     the answer easier to read. If you do not know, say so.";

/// Appended once to every failed tool result, so a small model does not invent the output
/// it did not get.
pub const FAILED_SUFFIX: &str = "Do not guess what the tool would have returned.";

/// The note added before the last step when tools were used: no call will run any more.
pub const LAST_STEP_NOTE: &str = "[note] No more tool calls: this is the last step. Answer now \
     with what you have, and say what you could not find out.";

/// The answer when the last step still asked for a tool and wrote nothing before the call.
pub const STEP_LIMIT_SENTENCE: &str = "I reached the tool step limit for this turn before I \
     could finish. Ask again, or raise the step limit, to let me continue.";

/// The answer when a step ran past its time bound (`{seconds}`: the bound): the turn ends.
pub const STEP_TIME_SENTENCE: &str = "I stopped: the model was still writing after {seconds} \
     seconds, the most one step may take, so this turn ended there and nothing from that step \
     ran. Ask again, perhaps for something shorter.";

/// The answer when a person declined a call (`{tool}`: its name in backticks) and no call of
/// the turn had run before it: the turn ends there.
pub const DECLINED_SENTENCE: &str = "Nothing was done: {tool} was declined, so it did not run.";

/// The answer when a person declined a call after others of the turn ran: the turn ends there,
/// and what ran before it stands (its steps show it).
pub const DECLINED_AFTER_WORK_SENTENCE: &str = "I stopped there: {tool} was declined, so it did \
     not run, and nothing after it was done. What ran before it is in the steps above.";

/// Why a call holding a worked example's value did not run, as its step shows it (the page
/// pairs no tool record with such a call: `EXAMPLE_VALUE_REASON` in `web/chat.js`).
pub const EXAMPLE_VALUE_REASON: &str = "its value comes from the worked example, not from you";

/// Why the calls after a declined one in the same step did not run, as their step shows it.
pub const AFTER_DECLINE_REASON: &str = "an earlier call of this step was declined";

/// The note after an answer cut off by the step's token bound (`{tokens}`: the bound).
pub const STEP_TOKENS_NOTE: &str = "(The answer was cut off at {tokens} tokens, the most one step \
     may write.)";

/// The one nudge after a thought with no answer.
pub const FINAL_ANSWER_NUDGE: &str =
    "You thought about it but gave no answer. Give your final answer now.";

/// The nudge after the prompt's first reply held only calls that have nothing of the
/// question in them (`{tool}`: the first such tool).
pub const UNRELATED_CALL_NUDGE: &str = "The call to `{tool}` did not run: nothing in the \
     question points to it (no word of it, no value from it). Answer the question in plain \
     words, or say what you cannot do.";

/// The answer when even the nudge produced only a thought.
pub const NO_ANSWER_SENTENCE: &str = "I could not put an answer into words. Please ask again.";

/// The one realtime nudge: the question asks about the present and the answer neither used
/// a tool nor admitted that it could not check.
pub const REALTIME_NUDGE: &str = "This question is about the present, and your answer used no \
     tool result. Call a tool to check it now, or say that live data can't be checked right \
     now. Do not give current values from memory.";

/// The note added when a step asked for more calls than run in one step.
pub const CALLS_DROPPED_NOTE: &str =
    "[note] Only the first calls of a step run. Call the others again if you still need them.";

/// `text` with [`FAILED_SUFFIX`] appended once: a result that already ends with it (a cached
/// one, or a tool that says it itself) is left alone.
pub fn with_failed_suffix(text: &str) -> String {
    let trimmed = text.trim_end();
    if trimmed.ends_with(FAILED_SUFFIX) {
        return trimmed.to_owned();
    }
    format!("{trimmed} {FAILED_SUFFIX}")
}

/// The start of a reply the loop writes for the model when `CallPrefill` asks for it: the
/// call marker taught in the tool prompt, so the model only has to finish the call.
pub const CALL_PREFILL: &str = "```tool\n";

/// The note after a step whose every call had already run in this turn: small models repeat
/// a call instead of reading its result.
pub const REPEATED_CALL_NOTE: &str = "[note] You already made this call; its result is above. \
     Answer the question from it now.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failed_suffix_is_appended_once() {
        let once = with_failed_suffix("FAILED: no network");
        assert_eq!(
            once,
            "FAILED: no network Do not guess what the tool would have returned."
        );
        assert_eq!(with_failed_suffix(&once), once);
        assert_eq!(with_failed_suffix(&format!("{once}\n")), once);
    }

    #[test]
    fn the_rule_teaches_the_admission_the_offline_sentence_uses() {
        assert!(LIVE_DATA_RULE.contains("live data can't be checked right now"));
        assert!(
            OFFLINE_SENTENCE
                .to_lowercase()
                .contains("live data can't be checked right now")
        );
        assert!(crate::admits_no_live_data(OFFLINE_SENTENCE));
    }
}
