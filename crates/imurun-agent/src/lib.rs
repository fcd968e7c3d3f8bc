//! imurun's turn loop: [`AgentLoop`] plays one turn — session → turn → step — against the
//! [`imurun_core::Model`] trait and the [`imurun_exec::ToolExecutor`], never a concrete
//! back-end. It owns the context budget ([`fit`]), the one system message
//! ([`system_message`]), the house style and the live-data rules ([`is_realtime`]).
//!
//! Skills are stored in a [`SkillStore`] and invoked with `/<id>` tokens ([`take_skills`]).
//!
//! Before the model reads a prompt, the pre-fetch ([`intents`], [`PREFETCH_DEADLINE`]) looks
//! up what it plainly asks about the present through the executor and hands the results to
//! the model as the Context block. Sub-agents ([`RunAgentTool`]) are nested loops over the same
//! executor. The prompt queue ([`PromptQueue`]), the stop flag and the clock ([`Clock`]) are
//! the loop's other inputs. No I/O happens here beyond what the model, the executor and the
//! skill store (small files in one directory) do.

mod agent;
mod arithmetic;
mod change;
mod clock;
mod context;
mod currency;
mod error;
mod file_answer;
mod ground;
mod likely;
mod prefetch;
mod prompt;
mod queue;
mod rates;
mod realtime;
mod repeats;
mod skills;
mod stated;
mod step;
mod style;
mod subagent;
mod summary;
mod tool_match;
mod turn;
mod unsaid;

pub use agent::{
    AgentConfig, AgentLoop, CALLS_PER_STEP_MAX, CallPrefill, HISTORY_MESSAGES_MAX, MAX_STEPS_CAP,
    MAX_STEPS_DEFAULT, STEP_TIME_MAX_DEFAULT, TurnRequest, TurnResult,
};
pub use clock::noon_utc;
pub use context::{
    Fit, Fitted, SHORT_TOOL_RESULT_CHARS, SUMMARY_CHARS_MAX, Summariser, TOOL_RESULT_HEADER,
    TRIM_MARKER, TokenCounter, budget, fit, is_tool_result, reserve, tool_result_chars_max,
};
pub use error::AgentError;
pub use imurun_core::{Clock, FixedClock, SystemClock};
pub use likely::{
    CALL_MARGIN_MIN, CALL_START, Likelihood, NAMED_CALL_MARGIN_MIN, OPTIONAL_SPAN_MEAN_MIN,
    OPTIONAL_SPAN_WORDS_MAX, SPAN_MEAN_MIN, SPAN_STARTS_MAX, SPAN_WORDS_MAX,
    STANDING_CALL_MARGIN_MIN, call_opening,
};
pub use prefetch::{Intents, PREFETCH_DEADLINE, asks_for_a_change, intents};
pub use prompt::{
    CONTEXT_CHARS_MAX, SKILL_BODY_CHARS_MAX, SKILLS_MAX, Skill, SystemPrompt, example_values,
    system_message, tool_prompt, tool_prompt_for,
};
pub use queue::{PromptQueue, QUEUED_PROMPTS_MAX};
pub use realtime::{admits_no_live_data, asks_the_time, is_realtime};
pub use skills::{
    ONLY_SKILLS_PROMPT, SKILL_BODY_BYTES_MAX, SKILL_DESCRIPTION_CHARS_MAX, SKILL_FILE,
    SKILL_ID_CHARS_MAX, SKILL_NAME_CHARS_MAX, SKILLS_LISTED_MAX, SkillError, SkillStore,
    SkillSummary, StoredSkill, slug, take_skills,
};
pub use step::CALL_LINE_STARTS;
pub use style::{
    AFTER_DECLINE_REASON, CALL_PREFILL, CALLS_DROPPED_NOTE, DECLINED_AFTER_WORK_SENTENCE,
    DECLINED_SENTENCE, DEFAULT_PERSONA, EXAMPLE_VALUE_REASON, FAILED_SUFFIX, FINAL_ANSWER_NUDGE,
    HOUSE_STYLE, LAST_STEP_NOTE, LIVE_DATA_RULE, NO_ANSWER_SENTENCE, OFFLINE_SENTENCE,
    REALTIME_NUDGE, REPEATED_CALL_NOTE, STEP_LIMIT_SENTENCE, STEP_TIME_SENTENCE, STEP_TOKENS_NOTE,
    UNRELATED_CALL_NUDGE, with_failed_suffix,
};
pub use subagent::{
    HELPER_DIRECTIVE, ModelSource, RunAgentTool, SUB_AGENT_STEPS_DEFAULT, SUB_AGENT_STEPS_MAX,
};
