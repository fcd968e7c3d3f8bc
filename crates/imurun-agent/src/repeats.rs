//! Lists that went round in a loop. A small model writing a list argument can repeat an
//! item until the token limit (`["Divorce", "Divorce", "Divorce", ...]`). In
//! the prompt's first call to a tool that is not one of imurun's own, a run of the same text
//! item `RUN_MIN` times or more back to back in a list keeps one copy. Numbers are kept as
//! written (`[0, 0, 0]` is a list a person writes); so are runs of two.

use imurun_core::ToolCall;
use serde_json::Value;

/// The shortest run of one text item read as a loop.
const RUN_MIN: usize = 3;

/// Collapses, in every list argument of `call`, each run of the same text item of
/// `RUN_MIN` or more to one copy; returns the names of the arguments changed.
pub(crate) fn collapse_repeated_items(call: &mut ToolCall) -> Vec<String> {
    if imurun_core::builtin::is_builtin(&call.name) {
        return Vec::new();
    }
    let mut changed = Vec::new();
    for (name, value) in &mut call.args {
        let Value::Array(items) = value else {
            continue;
        };
        let mut kept: Vec<Value> = Vec::with_capacity(items.len());
        let mut at = 0;
        while at < items.len() {
            let run = items[at..]
                .iter()
                .take_while(|item| *item == &items[at])
                .count();
            let copies = if items[at].is_string() && run >= RUN_MIN {
                1
            } else {
                run
            };
            kept.extend(std::iter::repeat_n(items[at].clone(), copies));
            at += run;
        }
        if kept.len() != items.len() {
            *items = kept;
            changed.push(name.clone());
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_text_item_repeated_three_times_or_more_is_kept_once() {
        let mut call = ToolCall::new(
            "lawyer.find_nearby",
            json!({
                "city": "Chicago",
                "specialty": ["Divorce", "Divorce", "Divorce", "Divorce"],
                "languages": ["English", "Spanish", "Spanish", "Spanish", "English"],
                "pair": ["a", "a"],
                "zeros": [0, 0, 0, 0],
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        );
        let mut changed = collapse_repeated_items(&mut call);
        changed.sort_unstable();
        assert_eq!(changed, ["languages", "specialty"]);
        assert_eq!(
            Value::Object(call.args),
            json!({
                "city": "Chicago",
                "specialty": ["Divorce"],
                "languages": ["English", "Spanish", "English"],
                "pair": ["a", "a"],
                "zeros": [0, 0, 0, 0],
            })
        );
    }
}
