//! RFC 8785's published vectors, and the ES6 number samples, through the canonicaliser.

use std::path::PathBuf;

use imurun_keep_rules::canonical::{canonicalize, parse_document};

fn data(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/rfc8785")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

const VECTORS: &[&str] = &[
    "arrays",
    "french",
    "structures",
    "unicode",
    "values",
    "weird",
];

#[test]
fn rfc8785_vectors_canonicalise_byte_for_byte() {
    for name in VECTORS {
        let input: serde_json::Value =
            serde_json::from_slice(&data(&format!("{name}.input.json"))).expect("input parses");
        let want = data(&format!("{name}.output.json"));
        assert_eq!(
            String::from_utf8_lossy(&canonicalize(&input)),
            String::from_utf8_lossy(&want),
            "{name}"
        );
    }
}

#[test]
fn the_strict_reader_takes_the_integer_vectors_and_refuses_the_others() {
    for name in VECTORS {
        let read = parse_document(&data(&format!("{name}.input.json")));
        match *name {
            // `values` holds 4.50 and 1E30, `structures` holds 56.0: not integers.
            "values" | "structures" => {
                let error = read.expect_err(name).to_string();
                assert!(error.contains("not an integer"), "{name}: {error}");
            }
            _ => {
                let value = read.unwrap_or_else(|error| panic!("{name}: {error}"));
                assert_eq!(
                    canonicalize(&value),
                    data(&format!("{name}.output.json")),
                    "{name}"
                );
            }
        }
    }
}

#[test]
fn es6_number_samples_are_written_as_ecmascript_does() {
    let text = String::from_utf8(data("es6-numbers.txt")).expect("utf-8");
    let mut checked = 0;
    for line in text.lines().filter(|line| !line.is_empty()) {
        let (bits, want) = line.split_once(',').expect("hex,expected");
        let value = f64::from_bits(u64::from_str_radix(bits, 16).expect("hex"));
        let number = serde_json::Number::from_f64(value).expect("finite");
        let got = canonicalize(&serde_json::Value::Number(number));
        assert_eq!(String::from_utf8_lossy(&got), want, "{bits}");
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn key_order_and_escapes() {
    let value =
        parse_document(br#"{"z":1,"a":{"y":[true,null],"b":"\u00e9\t\u0007"},"A":"\"\\","":0}"#)
            .expect("parses");
    assert_eq!(
        String::from_utf8_lossy(&canonicalize(&value)),
        "{\"\":0,\"A\":\"\\\"\\\\\",\"a\":{\"b\":\"\u{e9}\\t\\u0007\",\"y\":[true,null]},\"z\":1}"
    );
}
