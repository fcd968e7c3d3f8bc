//! Percent-decoding, as a URL's reader does it.

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
}
