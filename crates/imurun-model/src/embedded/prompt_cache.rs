//! The prompt cache: the evaluated prompts of recent conversations, kept so that a prompt
//! which starts like one of them evaluates only what differs.
//!
//! The worker's context holds one prompt at a time (the *live* one). Every step of an agent's
//! turn resends the same long system message and the conversation so far, but the steps of
//! different sessions, the history summariser and sub-agents interleave, so the live prompt
//! alone is often the wrong one. Before the live prompt is overwritten by one that shares
//! little with it, its llama.cpp sequence state (the keys and values of its tokens) is copied
//! into this cache; a later prompt that starts more like a cached entry than like the live
//! prompt gets that entry's state copied back first. Entries are bounded in number and in
//! bytes and evicted least recently used.
//!
//! Copies rather than more llama.cpp sequences: a sequence needs its whole share of the
//! context allocated up front (slots × `n_ctx` × the bytes of one token's keys and values)
//! whether used or not, while a copy costs only the tokens it holds; and copying a state back
//! is hundreds of times faster than evaluating it (`docs/models.md`, "Prompt cache").
//!
//! The choice of what to keep and where a prompt goes (`plan`) is pure, and tested here on
//! plain numbers; the worker carries it out on the context.

/// A saved sequence state: only its size matters here.
pub(super) trait SavedState {
    fn byte_len(&self) -> usize;
}

impl SavedState for llama_cpp_2::SeqState {
    fn byte_len(&self) -> usize {
        llama_cpp_2::SeqState::byte_len(self)
    }
}

/// A saved entry must beat the live prompt by this many tokens to be copied back: copying
/// costs time in proportion to the entry's length (microseconds per token), evaluating
/// about two milliseconds per token, so a small gain is not worth a large copy.
pub(super) const RESTORE_GAIN_MIN_TOKENS: usize = 16;

/// The live prompt is saved before it is overwritten only when at least this many of its
/// tokens would be lost: the next step of the same conversation drops only the last few
/// (the reply's tokens as sampled against the same text tokenised afresh).
pub(super) const SAVE_DROP_MIN_TOKENS: usize = 64;

/// How the cache is doing, for tests, logs and `EmbeddedModel::prompt_cache_stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCacheStats {
    /// Entries held now (besides the live prompt in the context).
    pub slots: usize,
    /// Their bytes (the states' sizes; the token lists are small beside them).
    pub bytes: usize,
    /// The bounds: at most `slots_max` entries and `bytes_max` bytes.
    pub slots_max: usize,
    pub bytes_max: usize,
    /// How many times a live prompt was saved, an entry copied back into the context, and an
    /// entry evicted to stay within the bounds, since the model was loaded.
    pub saves: u64,
    pub restores: u64,
    pub evictions: u64,
}

struct Entry<T, S> {
    tokens: Vec<T>,
    state: S,
}

/// Saved prompt states, least recently used first.
pub(super) struct PromptCache<T, S> {
    /// Oldest first: an entry is used when it is copied back, and then it leaves the cache
    /// (it is the live prompt), so the order of insertion is the order of use.
    entries: Vec<Entry<T, S>>,
    bytes: usize,
    slots_max: usize,
    bytes_max: usize,
    saves: u64,
    restores: u64,
    evictions: u64,
}

/// Where the prompt's reused start comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// The live prompt: keep its first `common` tokens.
    Live { common: usize },
    /// The cached entry `index`: copy it back, then keep its first `common` tokens.
    Restore { index: usize, common: usize },
}

/// What to do before evaluating a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Plan {
    /// Save the live prompt first: it would otherwise be lost.
    pub(super) save_live: bool,
    pub(super) source: Source,
}

impl<T: PartialEq + Clone, S: SavedState> PromptCache<T, S> {
    pub(super) fn new(slots_max: usize, bytes_max: usize) -> Self {
        Self {
            entries: Vec::new(),
            bytes: 0,
            slots_max,
            bytes_max,
            saves: 0,
            restores: 0,
            evictions: 0,
        }
    }

    pub(super) fn is_enabled(&self) -> bool {
        self.slots_max > 0 && self.bytes_max > 0
    }

    /// Decides where `prompt` goes, given the tokens the context holds (`live`): to the
    /// source sharing the longest common start with it (the live prompt on a tie), and
    /// whether the live prompt must be saved first. At least the prompt's last token is
    /// always evaluated (its logits choose the first generated token), so `common` is below
    /// the prompt's length.
    pub(super) fn plan(&self, live: &[T], prompt: &[T]) -> Plan {
        let usable = prompt.len().saturating_sub(1);
        let live_common = common_prefix(live, prompt).min(usable);
        let best = self
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (index, common_prefix(&entry.tokens, prompt).min(usable)))
            // The longest; among equals, the most recent.
            .max_by_key(|&(index, common)| (common, index));
        let source = match best {
            Some((index, common)) if common >= live_common + RESTORE_GAIN_MIN_TOKENS => {
                Source::Restore { index, common }
            }
            _ => Source::Live {
                common: live_common,
            },
        };
        let kept = match source {
            Source::Live { common } => common,
            Source::Restore { .. } => 0,
        };
        let save_live = self.is_enabled()
            && live.len() - kept.min(live.len()) >= SAVE_DROP_MIN_TOKENS
            && !self.holds_start_of(live);
        Plan { save_live, source }
    }

    /// Saves a prompt's state: entries it contains are dropped (it covers them), then the
    /// least recently used are evicted until the bounds hold. A state larger than the whole
    /// byte bound is not kept, nor one an entry already holds. Returns whether it was kept.
    pub(super) fn insert(&mut self, tokens: Vec<T>, state: S) -> bool {
        let size = state.byte_len();
        if !self.is_enabled() || size > self.bytes_max || self.holds_start_of(&tokens) {
            return false;
        }
        let mut index = 0;
        while index < self.entries.len() {
            let entry = &self.entries[index];
            if common_prefix(&entry.tokens, &tokens) == entry.tokens.len() {
                let removed = self.entries.remove(index);
                self.bytes -= removed.state.byte_len();
            } else {
                index += 1;
            }
        }
        while !self.entries.is_empty()
            && (self.entries.len() + 1 > self.slots_max || self.bytes + size > self.bytes_max)
        {
            let evicted = self.entries.remove(0);
            self.bytes -= evicted.state.byte_len();
            self.evictions += 1;
        }
        self.bytes += size;
        self.entries.push(Entry { tokens, state });
        self.saves += 1;
        true
    }

    /// Takes entry `index` out to copy it back into the context. When the prompt keeps only
    /// part of it, the worker puts it back (`insert`) once copied, as the most recently used.
    pub(super) fn take(&mut self, index: usize) -> (Vec<T>, S) {
        let entry = self.entries.remove(index);
        self.bytes -= entry.state.byte_len();
        self.restores += 1;
        (entry.tokens, entry.state)
    }

    pub(super) fn stats(&self) -> PromptCacheStats {
        PromptCacheStats {
            slots: self.entries.len(),
            bytes: self.bytes,
            slots_max: self.slots_max,
            bytes_max: self.bytes_max,
            saves: self.saves,
            restores: self.restores,
            evictions: self.evictions,
        }
    }

    /// Whether an entry already starts with all of `tokens`: saving them would add nothing.
    pub(super) fn holds_start_of(&self, tokens: &[T]) -> bool {
        self.entries
            .iter()
            .any(|entry| common_prefix(&entry.tokens, tokens) == tokens.len())
    }
}

/// How many tokens `a` and `b` share from the start.
pub(super) fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state of so many bytes.
    struct Bytes(usize);

    impl SavedState for Bytes {
        fn byte_len(&self) -> usize {
            self.0
        }
    }

    /// `len` tokens: a shared start of `shared` (0, 1, 2, ...) then ones unique to `tag`.
    fn prompt(shared: usize, tag: u32, len: usize) -> Vec<u32> {
        (0..len)
            .map(|i| {
                let i = u32::try_from(i).unwrap();
                if (i as usize) < shared {
                    i
                } else {
                    tag * 100_000 + i
                }
            })
            .collect()
    }

    fn cache(slots_max: usize, bytes_max: usize) -> PromptCache<u32, Bytes> {
        PromptCache::new(slots_max, bytes_max)
    }

    #[test]
    fn the_next_step_of_the_same_conversation_keeps_the_live_prompt_and_saves_nothing() {
        let cache = cache(4, 1000);
        let step1 = prompt(300, 1, 500);
        let mut step2 = step1.clone();
        step2.extend(prompt(0, 9, 40));
        let plan = cache.plan(&step1, &step2);
        assert_eq!(
            plan,
            Plan {
                save_live: false,
                source: Source::Live { common: 500 }
            }
        );
    }

    #[test]
    fn another_conversation_saves_the_live_prompt_and_keeps_the_shared_system_message() {
        let cache = cache(4, 1000);
        let a = prompt(300, 1, 500);
        let b = prompt(300, 2, 450);
        let plan = cache.plan(&a, &b);
        assert_eq!(
            plan,
            Plan {
                save_live: true,
                source: Source::Live { common: 300 }
            }
        );
    }

    #[test]
    fn a_prompt_goes_to_the_entry_with_the_longest_common_start() {
        let mut cache = cache(4, 1000);
        let a = prompt(300, 1, 500);
        let b = prompt(300, 2, 600);
        let c = prompt(300, 3, 700);
        assert!(cache.insert(a.clone(), Bytes(10)));
        assert!(cache.insert(b.clone(), Bytes(10)));
        let mut b_next = b.clone();
        b_next.extend(prompt(0, 8, 20));
        let plan = cache.plan(&c, &b_next);
        assert_eq!(
            plan,
            Plan {
                save_live: true,
                source: Source::Restore {
                    index: 1,
                    common: 600
                }
            }
        );
        let (tokens, _) = cache.take(1);
        assert_eq!(tokens, b);
        assert_eq!(cache.stats().slots, 1);
        assert_eq!(cache.stats().restores, 1);
    }

    #[test]
    fn a_small_gain_does_not_copy_an_entry_back() {
        let mut cache = cache(4, 1000);
        let a = prompt(300, 1, 500);
        cache.insert(prompt(300 + RESTORE_GAIN_MIN_TOKENS - 1, 2, 900), Bytes(10));
        let plan = cache.plan(&a, &prompt(300 + RESTORE_GAIN_MIN_TOKENS - 1, 3, 900));
        assert_eq!(plan.source, Source::Live { common: 300 });
    }

    #[test]
    fn at_least_the_last_token_is_evaluated() {
        let mut cache = cache(4, 1000);
        let a = prompt(0, 1, 500);
        cache.insert(a.clone(), Bytes(10));
        assert_eq!(
            cache.plan(&[], &a).source,
            Source::Restore {
                index: 0,
                common: 499
            }
        );
        assert_eq!(
            cache.plan(&a, &a),
            Plan {
                save_live: false,
                source: Source::Live { common: 499 }
            }
        );
    }

    #[test]
    fn entries_are_evicted_least_recently_used_within_both_bounds() {
        let mut cache = cache(2, 100);
        cache.insert(prompt(0, 1, 10), Bytes(40));
        cache.insert(prompt(0, 2, 10), Bytes(40));
        cache.insert(prompt(0, 3, 10), Bytes(40));
        let stats = cache.stats();
        assert_eq!((stats.slots, stats.bytes, stats.evictions), (2, 80, 1));
        // The oldest went: a prompt like it is no longer matched.
        assert_eq!(
            cache.plan(&[], &prompt(0, 1, 10)).source,
            Source::Live { common: 0 }
        );
        // Bytes bind too: a 70-byte state leaves room for nothing else.
        cache.insert(prompt(0, 4, 10), Bytes(70));
        let stats = cache.stats();
        assert_eq!((stats.slots, stats.bytes, stats.evictions), (1, 70, 3));
        // A state larger than the whole bound is not kept, and evicts nothing.
        assert!(!cache.insert(prompt(0, 5, 10), Bytes(101)));
        assert_eq!(cache.stats().slots, 1);
    }

    #[test]
    fn a_saved_prompt_replaces_the_entries_it_contains_and_is_not_saved_twice() {
        let mut cache = cache(4, 1000);
        let short = prompt(0, 1, 100);
        let mut long = short.clone();
        long.extend(prompt(0, 2, 100));
        cache.insert(short.clone(), Bytes(10));
        cache.insert(long.clone(), Bytes(20));
        assert_eq!((cache.stats().slots, cache.stats().bytes), (1, 20));
        assert!(!cache.insert(short, Bytes(10)), "held by the longer entry");
        // A live prompt that an entry already holds is not saved again.
        let other = prompt(0, 3, 200);
        assert!(!cache.plan(&long[..150], &other).save_live);
        assert!(cache.plan(&other, &long[..150]).save_live);
    }

    #[test]
    fn a_disabled_cache_saves_nothing() {
        let mut cache = cache(0, 1000);
        assert!(!cache.insert(prompt(0, 1, 100), Bytes(10)));
        let plan = cache.plan(&prompt(0, 1, 100), &prompt(0, 2, 100));
        assert!(!plan.save_live);
    }
}
