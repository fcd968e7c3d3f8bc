//! Properties over generated input: the parser never panics, and whatever it returns is
//! internally consistent.

use imurun_calls::{ParseKind, parse_tool_calls, split_think};
use proptest::prelude::*;

use crate::common::corpus_tools;

/// Fragments that exercise the markers and repairs, so generated text reaches deep paths.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("```tool\n".to_owned()),
        Just("```".to_owned()),
        Just("```json\n".to_owned()),
        Just("`".to_owned()),
        Just("<tool_call>".to_owned()),
        Just("</tool_call>".to_owned()),
        Just("<|python_tag|>".to_owned()),
        Just("<function=get_time>".to_owned()),
        Just("[TOOL_CALLS]".to_owned()),
        Just("<think>".to_owned()),
        Just("</think>".to_owned()),
        Just("{\"name\": \"get_time\"".to_owned()),
        Just("\"args\": {".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("“".to_owned()),
        Just("”".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\\".to_owned()),
        Just("\\u".to_owned()),
        Just("True".to_owned()),
        Just("get_weather(".to_owned()),
        Just(")".to_owned()),
        Just("=".to_owned()),
        Just("\n".to_owned()),
        "[a-z ]{0,8}",
        any::<String>(),
    ]
}

fn model_like_text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_parser_never_panics_and_stays_consistent(text in model_like_text()) {
        let parsed = parse_tool_calls(&text, &corpus_tools());
        match parsed.kind {
            ParseKind::Calls => {
                prop_assert!(!parsed.calls.is_empty());
                prop_assert!(parsed.retry.is_none());
                prop_assert!(parsed.marker_offset.is_some_and(|at| at <= text.len()));
            }
            ParseKind::Retry => {
                prop_assert!(parsed.calls.is_empty());
                prop_assert!(parsed.retry.is_some());
            }
            ParseKind::Answer => {
                prop_assert!(parsed.calls.is_empty());
                prop_assert!(parsed.retry.is_none());
            }
        }
        // Every call names a runnable tool and carries an object of arguments.
        for call in &parsed.calls {
            prop_assert!(corpus_tools().contains(&call.name), "{}", call.name);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _parsed = parse_tool_calls(&text, &corpus_tools());
    }

    #[test]
    fn split_think_keeps_every_visible_byte_in_order(text in model_like_text()) {
        let split = split_think(&text);
        // The visible text is the raw text with thoughts and their tags taken out.
        let mut rest = text.as_str();
        for ch in split.visible.chars() {
            let at = rest.find(ch);
            prop_assert!(at.is_some(), "visible has a character the raw text does not");
            rest = &rest[at.unwrap_or(0) + ch.len_utf8()..];
        }
    }
}
