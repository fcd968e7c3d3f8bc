//! Properties: canonical text is a fixed point, and a signature never survives a changed byte.

use imurun_keep_rules::canonical::{canonicalize, parse_document};
use imurun_keep_rules::keys::KeyPair;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// JSON values a signed document may hold: integers within the safe range, any strings (controls,
/// quotes, astral characters), nested a few levels.
fn document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1_i64 << 53) + 1..(1_i64 << 53)).prop_map(|n| Value::Number(n.into())),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #[test]
    fn canonicalise_parse_canonicalise_is_identity(value in document()) {
        let once = canonicalize(&value);
        let read = parse_document(&once).expect("canonical text reads back strictly");
        prop_assert_eq!(&read, &value);
        prop_assert_eq!(canonicalize(&read), once);
    }

    #[test]
    fn a_signature_never_verifies_after_a_one_byte_change(
        value in document(),
        position in any::<prop::sample::Index>(),
        flip in 1_u8..=255,
    ) {
        let key = KeyPair::from_seed(&[42; 32]);
        let bytes = canonicalize(&value);
        let signature = key.sign(&bytes);
        prop_assert!(key.public().verify(&bytes, &signature).is_ok());
        let mut changed = bytes.clone();
        let at = position.index(changed.len());
        changed[at] ^= flip;
        prop_assert!(key.public().verify(&changed, &signature).is_err());
        let mut bad_signature = signature.clone().into_bytes();
        let at = position.index(bad_signature.len());
        bad_signature[at] = if bad_signature[at] == b'0' { b'1' } else { b'0' };
        let bad_signature = String::from_utf8(bad_signature).expect("ascii");
        prop_assert!(key.public().verify(&bytes, &bad_signature).is_err());
    }
}
