//! Splitting a reasoning model's thought from its visible answer.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::work::Work;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

// Built once: a finder's set-up costs more than searching a short answer.
static OPEN_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(OPEN));
static CLOSE_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(CLOSE));

/// A raw output split into what the person sees and what the model thought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The text outside every thought, in order (borrowed when there is no thought).
    pub visible: Cow<'a, str>,
    /// The thoughts, trimmed and joined by blank lines.
    pub thought: String,
    /// Where each piece of `visible` came from in the raw text, so an offset in `visible`
    /// can be mapped back to the raw text (`raw_offset`).
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    visible_start: usize,
    raw_start: usize,
}

impl Split<'_> {
    /// The offset in the raw text of byte `offset` of `visible`.
    pub fn raw_offset(&self, offset: usize) -> usize {
        let piece = match self
            .pieces
            .iter()
            .rposition(|piece| piece.visible_start <= offset)
        {
            Some(slot) => self.pieces[slot],
            None => return offset,
        };
        piece.raw_start + (offset - piece.visible_start)
    }
}

/// Splits `<think>…</think>` thoughts from the visible answer.
///
/// Handles a closed thought, an orphan `…</think>` (the chat template already emitted the
/// opening tag), and an unclosed `<think>` (generation stopped mid-thought). Tool calls are
/// read from `visible` only, so a call inside a thought is never run.
pub fn split_think(raw: &str) -> Split<'_> {
    split_think_counting(raw, &mut Work::default())
}

pub(crate) fn split_think_counting<'a>(raw: &'a str, work: &mut Work) -> Split<'a> {
    let (open_finder, close_finder) = (&*OPEN_FINDER, &*CLOSE_FINDER);
    let mut visible = String::new();
    let mut thoughts: Vec<&str> = Vec::new();
    let mut pieces = Vec::new();

    let first_open = open_finder.find(raw.as_bytes());
    work.add(first_open.map_or(raw.len(), |at| at + OPEN.len()));
    let Some(first_open) = first_open else {
        // No opening tag: an orphan closing tag means the template opened the thought.
        let close = close_finder.find(raw.as_bytes());
        work.add(close.map_or(raw.len(), |at| at + CLOSE.len()));
        return match close {
            Some(close) => {
                let after = close + CLOSE.len();
                Split {
                    visible: Cow::Borrowed(&raw[after..]),
                    thought: raw[..close].trim().to_owned(),
                    pieces: vec![Piece {
                        visible_start: 0,
                        raw_start: after,
                    }],
                }
            }
            None => Split {
                visible: Cow::Borrowed(raw),
                thought: String::new(),
                pieces: vec![Piece {
                    visible_start: 0,
                    raw_start: 0,
                }],
            },
        };
    };

    let mut cursor = 0;
    let mut next_open = Some(first_open);
    while let Some(open) = next_open {
        pieces.push(Piece {
            visible_start: visible.len(),
            raw_start: cursor,
        });
        visible.push_str(&raw[cursor..open]);
        let body = open + OPEN.len();
        let close = close_finder
            .find(&raw.as_bytes()[body..])
            .map(|at| body + at);
        work.add(close.map_or(raw.len() - body, |at| at + CLOSE.len() - body));
        match close {
            Some(close) => {
                thoughts.push(raw[body..close].trim());
                cursor = close + CLOSE.len();
                next_open = open_finder
                    .find(&raw.as_bytes()[cursor..])
                    .map(|at| cursor + at);
                work.add(next_open.map_or(raw.len() - cursor, |at| at - cursor));
            }
            None => {
                thoughts.push(raw[body..].trim());
                cursor = raw.len();
                next_open = None;
            }
        }
    }
    pieces.push(Piece {
        visible_start: visible.len(),
        raw_start: cursor,
    });
    visible.push_str(&raw[cursor..]);

    let thought = thoughts
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    Split {
        visible: Cow::Owned(visible),
        thought,
        pieces,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, visible: &str, thought: &str) {
        let split = split_think(raw);
        assert_eq!(split.visible.trim(), visible, "visible of {raw:?}");
        assert_eq!(split.thought, thought, "thought of {raw:?}");
    }

    #[test]
    fn splits_every_shape_of_thought() {
        check("no thought here", "no thought here", "");
        check("<think>\nplan\n</think>\nanswer", "answer", "plan");
        check("plan only\n</think>\nanswer", "answer", "plan only");
        check("<think>\nHmm, the user wants", "", "Hmm, the user wants");
        check(
            "before <think>a</think> middle <think>b</think> after",
            "before  middle  after",
            "a\n\nb",
        );
        check("<think></think>answer", "answer", "");
    }

    #[test]
    fn maps_visible_offsets_back_to_raw_offsets() {
        let raw = "<think>abc</think>XY<think>d</think>Z";
        let split = split_think(raw);
        assert_eq!(split.visible, "XYZ");
        for (offset, ch) in split.visible.char_indices() {
            assert_eq!(raw[split.raw_offset(offset)..].chars().next(), Some(ch));
        }
    }
}
