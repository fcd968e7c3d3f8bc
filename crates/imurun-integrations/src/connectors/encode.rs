//! The two encodings the connectors need and that are short enough to own: percent-encoding
//! of one URL path segment, and base64 (standard and URL-safe, RFC 4648).

/// `text` as one URL path segment: every byte outside RFC 3986's unreserved set
/// (`A-Z a-z 0-9 - . _ ~`) is written `%XX`, so `/`, `?` and `#` cannot change the path.
pub(crate) fn percent_encode_segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Standard base64 with padding (MIME encoded words).
pub(crate) fn base64(bytes: &[u8]) -> String {
    encode(bytes, STANDARD)
}

/// URL-safe base64 with padding (Gmail's `raw` message).
pub(crate) fn base64url(bytes: &[u8]) -> String {
    encode(bytes, URL_SAFE)
}

fn encode(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut encoded = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for position in 0..4 {
            if position <= chunk.len() {
                let index = (n >> (18 - 6 * position)) & 0x3f;
                encoded.push(char::from(alphabet[index as usize]));
            } else {
                encoded.push('=');
            }
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, expected) in vectors {
            assert_eq!(base64(plain.as_bytes()), expected);
        }
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8=");
    }

    #[test]
    fn segments_cannot_carry_separators() {
        assert_eq!(percent_encode_segment("a-b.c_d~e"), "a-b.c_d~e");
        assert_eq!(
            percent_encode_segment("x/y?z#w é"),
            "x%2Fy%3Fz%23w%20%C3%A9"
        );
    }
}
