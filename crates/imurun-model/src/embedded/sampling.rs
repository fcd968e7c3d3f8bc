//! Choosing each generated token: the repetition penalty, the call grammar, then the greedy
//! or sampled choice. The result is exactly the token llama.cpp's sampler chain (grammar →
//! penalties → greedy, or → top-p → temperature → seeded draw) would choose, but for one
//! choice of imurun's: inside a call, from its marker to its closing fence, the penalty is
//! off, since the grammar bounds the call and the penalty only pushes a copied value off
//! the prompt's own digits (`5000` written `500`). After the fence it is on again: without
//! it a small model writes the same call again and again. What differs otherwise is the
//! work per token, which at a hundred tokens a second is a large share of the time:
//!
//! - **The penalty** touches only the tokens of its window (64 at most), where llama.cpp's
//!   sampler looks every token of the vocabulary up in a hash map (49,152 look-ups for
//!   SmolLM2, about a millisecond).
//! - **The grammar waits for the marker here.** llama.cpp's lazy grammar appends every piece
//!   to a buffer and runs a `std::regex` search over the whole buffer after every token,
//!   which grows with the reply. Here the marker is looked for in the last few bytes; when
//!   it appears, the lazy grammar is made and given the tokens from the one where the
//!   marker starts: it triggers on them exactly as it would have on the whole reply (only
//!   the tokens overlapping the marker are replayed into the grammar either way), and
//!   before the trigger a lazy grammar changes no logit.
//! - **Greedy decoding checks the grammar after the choice.** The most likely token (after
//!   the penalty) is checked against the grammar alone; only when the grammar rejects it is
//!   the grammar applied to the whole vocabulary and the choice made again. This is
//!   llama.cpp's own server's order, and for greedy decoding it cannot change the result:
//!   the grammar only removes tokens (their logit becomes −∞, which the penalty leaves at
//!   −∞), so a token that is the first maximum of all and is allowed is the first maximum of
//!   the allowed ones. Sampled decoding keeps the grammar first, over every token: checking
//!   after a random draw would change the distribution.

use std::collections::{HashMap, VecDeque};

use imurun_core::ModelError;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::{Decoding, RepeatPenalty, TOOL_CALL_MARKER, ToolCallGrammar};

/// Chooses tokens for one generation.
pub(super) struct Chooser<'m> {
    decoding: Decoding,
    penalty: Option<PenaltyWindow>,
    grammar: Option<CallGrammar<'m>>,
    /// Sampled decoding's top-p, temperature and seeded draw.
    draw: Option<LlamaSampler>,
    /// The logits with the penalty applied, reused from token to token.
    scratch: Vec<f32>,
    /// Where the reply is: inside a call or not, and its last few bytes.
    place: CallPlace,
}

impl<'m> Chooser<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        decoding: Decoding,
        repeat_penalty: RepeatPenalty,
        tool_grammar: Option<&'m ToolCallGrammar>,
    ) -> Self {
        let draw = match decoding {
            Decoding::Greedy => None,
            Decoding::Sampled {
                temperature,
                top_p,
                seed,
            } => Some(LlamaSampler::chain_simple([
                LlamaSampler::top_p(top_p, 1),
                LlamaSampler::temp(temperature),
                LlamaSampler::dist(seed),
            ])),
        };
        Self {
            decoding,
            penalty: (!repeat_penalty.is_off()).then(|| PenaltyWindow::new(repeat_penalty)),
            grammar: tool_grammar.map(|grammar| CallGrammar::Waiting {
                model,
                grammar,
                recent: VecDeque::new(),
            }),
            draw,
            scratch: Vec::new(),
            place: CallPlace::default(),
        }
    }

    /// Records a token of the reply (a prefill's, or one just chosen); `piece` is its text
    /// with special tokens written out, as the grammar reads it. An end-of-generation token
    /// is never accepted: the generation ends on it.
    pub(super) fn accept(&mut self, token: LlamaToken, piece: &[u8]) -> Result<(), ModelError> {
        if let Some(penalty) = &mut self.penalty {
            penalty.accept(token);
        }
        self.place.accept(piece);
        if let Some(grammar) = &mut self.grammar {
            grammar.accept(token, piece)?;
        }
        if let Some(draw) = &mut self.draw {
            draw.accept(token);
        }
        Ok(())
    }

    /// The next token, from the logits of the last evaluated position.
    pub(super) fn choose(&mut self, logits: &[f32]) -> LlamaToken {
        match self.decoding {
            Decoding::Greedy => self.choose_greedy(logits),
            Decoding::Sampled { .. } => self.choose_sampled(logits),
        }
    }

    /// Whether the grammar holds an open call: the penalty is off there (see the module's
    /// notes).
    fn in_call(&self) -> bool {
        self.place.in_call && matches!(self.grammar, Some(CallGrammar::Active(_)))
    }

    /// The penalty, where it applies.
    fn penalty_now(&self) -> Option<&PenaltyWindow> {
        self.penalty.as_ref().filter(|_| !self.in_call())
    }

    fn choose_greedy(&mut self, logits: &[f32]) -> LlamaToken {
        let in_call = self.in_call();
        let chosen = match self.penalty.as_ref().filter(|_| !in_call) {
            None => first_max(logits),
            Some(penalty) => {
                self.scratch.clear();
                self.scratch.extend_from_slice(logits);
                penalty.apply(&mut self.scratch);
                first_max(&self.scratch)
            }
        };
        let Some(CallGrammar::Active(grammar)) = &mut self.grammar else {
            return chosen;
        };
        if allows(grammar, chosen) {
            return chosen;
        }
        // Rejected: the grammar over every token, then the choice (no penalty inside a
        // call).
        let mut candidates = all_tokens(logits);
        candidates.apply_sampler(grammar);
        let values: Vec<f32> = candidates.data.iter().map(LlamaTokenData::logit).collect();
        first_max(&values)
    }

    fn choose_sampled(&mut self, logits: &[f32]) -> LlamaToken {
        let mut candidates = all_tokens(logits);
        if let Some(CallGrammar::Active(grammar)) = &mut self.grammar {
            candidates.apply_sampler(grammar);
        }
        if let Some(penalty) = self.penalty_now() {
            // The array is in token order (nothing sorted it yet): index = token id.
            for (token, _) in penalty.counts.iter() {
                if let Some(data) = usize::try_from(*token)
                    .ok()
                    .and_then(|index| candidates.data.get_mut(index))
                {
                    data.set_logit(penalty.penalise(data.logit()));
                }
            }
        }
        if let Some(draw) = &mut self.draw {
            candidates.apply_sampler(draw);
        }
        candidates
            .selected_token()
            .unwrap_or_else(|| first_max(logits))
    }
}

/// Whether a reply is inside a call: from the end of a call marker (```` ```tool ````) to
/// the end of the fence that closes it (a newline and ```` ``` ````, which a call's JSON
/// cannot hold: its strings have no raw newline).
#[derive(Debug, Default)]
struct CallPlace {
    in_call: bool,
    /// The last bytes of the reply, enough to hold a marker.
    tail: Vec<u8>,
}

impl CallPlace {
    const CLOSE: &'static [u8] = b"\n```";

    fn accept(&mut self, piece: &[u8]) {
        let marker = TOOL_CALL_MARKER.as_bytes();
        for &byte in piece {
            self.tail.push(byte);
            if self.tail.len() > marker.len() {
                self.tail.remove(0);
            }
            if self.tail.ends_with(marker) {
                self.in_call = true;
            } else if self.tail.ends_with(Self::CLOSE) {
                self.in_call = false;
            }
        }
    }
}

/// The first index of the largest value, as llama.cpp's greedy sampler finds it (a strict
/// `>` from the start: ties go to the lowest token id).
fn first_max(values: &[f32]) -> LlamaToken {
    let mut best = 0;
    let mut best_value = values.first().copied().unwrap_or(f32::NEG_INFINITY);
    for (index, &value) in values.iter().enumerate().skip(1) {
        if value > best_value {
            best = index;
            best_value = value;
        }
    }
    LlamaToken(i32::try_from(best).unwrap_or(0))
}

/// Every token with its logit, in token order, as llama.cpp's sampler starts.
fn all_tokens(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::from_iter(
        logits.iter().enumerate().map(|(index, &logit)| {
            LlamaTokenData::new(LlamaToken(i32::try_from(index).unwrap_or(0)), logit, 0.0)
        }),
        false,
    )
}

/// Whether the grammar, in its present state, allows `token` next.
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data
        .first()
        .is_some_and(|data| data.logit() != f32::NEG_INFINITY)
}

/// llama.cpp's repetition penalty: the tokens among the last `last_n` accepted, with their
/// counts (the frequency and presence penalties are zero, so only the repeat factor acts).
struct PenaltyWindow {
    penalty: f32,
    last_n: usize,
    recent: VecDeque<LlamaToken>,
    counts: HashMap<i32, u32>,
}

impl PenaltyWindow {
    fn new(repeat_penalty: RepeatPenalty) -> Self {
        let last_n = usize::from(repeat_penalty.last_n);
        Self {
            penalty: repeat_penalty.penalty,
            last_n,
            recent: VecDeque::with_capacity(last_n),
            counts: HashMap::with_capacity(last_n),
        }
    }

    fn accept(&mut self, token: LlamaToken) {
        *self.counts.entry(token.0).or_insert(0) += 1;
        if self.recent.len() >= self.last_n
            && let Some(old) = self.recent.pop_front()
            && let Some(count) = self.counts.get_mut(&old.0)
        {
            *count -= 1;
            if *count == 0 {
                self.counts.remove(&old.0);
            }
        }
        self.recent.push_back(token);
    }

    /// One logit, penalised as llama.cpp does it: divided when positive, multiplied when
    /// not, so the token always becomes less likely.
    fn penalise(&self, logit: f32) -> f32 {
        if logit <= 0.0 {
            logit * self.penalty
        } else {
            logit / self.penalty
        }
    }

    /// Penalises, in `values` indexed by token id, every token of the window.
    fn apply(&self, values: &mut [f32]) {
        for token in self.counts.keys() {
            if let Some(value) = usize::try_from(*token)
                .ok()
                .and_then(|index| values.get_mut(index))
            {
                *value = self.penalise(*value);
            }
        }
    }
}

/// Whether the grammar `sampler` can take `token` next (llama.cpp aborts the process when
/// told to take one it cannot).
pub(super) fn grammar_takes(sampler: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    sampler.apply(&mut one);
    one.data
        .first()
        .is_some_and(|data| data.logit() != f32::NEG_INFINITY)
}

/// The call grammar of one generation: waiting for the marker, then a llama.cpp grammar
/// sampler.
enum CallGrammar<'m> {
    Waiting {
        model: &'m LlamaModel,
        grammar: &'m ToolCallGrammar,
        /// The last tokens and their pieces: enough bytes to hold the marker's beginning.
        recent: VecDeque<(LlamaToken, Vec<u8>)>,
    },
    Active(LlamaSampler),
}

impl CallGrammar<'_> {
    fn accept(&mut self, token: LlamaToken, piece: &[u8]) -> Result<(), ModelError> {
        let Self::Waiting {
            model,
            grammar,
            recent,
        } = self
        else {
            if let Self::Active(sampler) = self {
                // llama.cpp aborts the process on a token its grammar cannot take (a prefill
                // that is not a valid call's start): ask the grammar first.
                if !grammar_takes(sampler, token) {
                    return Err(ModelError::Protocol {
                        message: format!(
                            "the reply's start is not a valid tool call: the call grammar cannot take {:?} after what came before",
                            String::from_utf8_lossy(piece)
                        ),
                    });
                }
                sampler.accept(token);
            }
            return Ok(());
        };
        recent.push_back((token, piece.to_vec()));
        let text: Vec<u8> = recent
            .iter()
            .flat_map(|(_, piece)| piece.iter().copied())
            .collect();
        let marker = TOOL_CALL_MARKER.as_bytes();
        let Some(start) = text
            .windows(marker.len())
            .position(|window| window == marker)
        else {
            // Keep only what a marker ending in a later piece could start in.
            let mut kept = text.len();
            while let Some((_, first)) = recent.front() {
                if kept - first.len() < marker.len() - 1 {
                    break;
                }
                kept -= first.len();
                recent.pop_front();
            }
            return Ok(());
        };
        // The tokens that end after the marker's start: llama.cpp's lazy grammar replays
        // exactly these when it triggers, whatever came before them.
        let mut end = 0;
        let mut overlapping = Vec::new();
        for (token, piece) in recent.iter() {
            end += piece.len();
            if end > start {
                overlapping.push(*token);
            }
        }
        let mut sampler = LlamaSampler::grammar_lazy(
            model,
            grammar.gbnf(),
            ToolCallGrammar::root_rule(),
            [TOOL_CALL_MARKER],
            &[],
        )
        .map_err(|error| ModelError::Protocol {
            message: format!("llama.cpp refused the tool-call grammar: {error}"),
        })?;
        sampler.accept_many(&overlapping);
        *self = Self::Active(sampler);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_ties_go_to_the_lowest_token_id() {
        assert_eq!(first_max(&[1.0, 3.0, 2.0, 3.0]), LlamaToken(1));
        assert_eq!(first_max(&[f32::NEG_INFINITY; 3]), LlamaToken(0));
    }

    #[test]
    fn the_penalty_window_counts_the_last_n_tokens_as_llama_cpp_does() {
        let mut window = PenaltyWindow::new(RepeatPenalty {
            penalty: 2.0,
            last_n: 3,
        });
        for token in [5, 6, 5, 7] {
            window.accept(LlamaToken(token));
        }
        // The window is 6, 5, 7: the first 5 left it.
        let mut counts: Vec<_> = window.counts.iter().map(|(t, c)| (*t, *c)).collect();
        counts.sort_unstable();
        assert_eq!(counts, vec![(5, 1), (6, 1), (7, 1)]);
        let mut values = vec![1.0, 1.0, 1.0, 1.0, 1.0, 4.0, -4.0, 0.0, 1.0];
        window.apply(&mut values);
        assert_eq!(values, vec![1.0, 1.0, 1.0, 1.0, 1.0, 2.0, -8.0, 0.0, 1.0]);
        // A repeated token's count falls as its copies leave.
        for token in [7, 7, 7] {
            window.accept(LlamaToken(token));
        }
        assert_eq!(window.counts.get(&7), Some(&3));
        assert_eq!(window.counts.len(), 1);
    }
}
