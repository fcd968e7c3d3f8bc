//! Percent-encoding and -decoding, as a URL's writer and reader do it.

/// `text` with every byte but letters, digits and `-._~` escaped as `%XX` (upper case): safe
/// as one segment of a path or one value of a query.
pub fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// `text` with every `%XX` escape decoded; a `%` not followed by two hexadecimal digits stays
/// as it is.
pub fn percent_decoded_bytes(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_decoded_and_anything_else_is_kept() {
        assert_eq!(percent_decoded_bytes("abc-123"), b"abc-123");
        assert_eq!(percent_decoded_bytes("a%2Bb%2Fc%3D"), b"a+b/c=");
        assert_eq!(percent_decoded_bytes("%e2%82%ac"), "\u{20ac}".as_bytes());
        for kept in ["%", "%4", "%zz%4", "%+1", "100%"] {
            assert_eq!(percent_decoded_bytes(kept), kept.as_bytes(), "{kept}");
        }
        assert_eq!(percent_decoded_bytes("%%41"), b"%A");
    }

    #[test]
    fn everything_but_unreserved_bytes_is_escaped_and_decodes_back() {
        assert_eq!(percent_encoded("u/alice/calc"), "u%2Falice%2Fcalc");
        assert_eq!(percent_encoded("a-b._~Z9"), "a-b._~Z9");
        assert_eq!(percent_encoded("é %"), "%C3%A9%20%25");
        let text = "u/alice/x?y#z%";
        assert_eq!(
            percent_decoded_bytes(&percent_encoded(text)),
            text.as_bytes()
        );
    }
}
