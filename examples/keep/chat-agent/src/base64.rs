//! Standard base64 (RFC 4648, with padding), for the tool's bundle in a `tool.propose` payload.
//! Twenty lines do not earn a crate.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in standard base64 with `=` padding.
pub fn encode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = chunk[0];
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let group = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let sextet = |shift: u32| char::from(ALPHABET[((group >> shift) & 0x3f) as usize]);
        text.push(sextet(18));
        text.push(sextet(12));
        text.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        text.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn encodes_the_rfc_4648_vectors() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (bytes, expected) in cases {
            assert_eq!(encode(bytes), *expected, "{bytes:?}");
        }
    }

    #[test]
    fn uses_the_standard_alphabet_for_the_last_two_sextets() {
        assert_eq!(encode(&[0xfb, 0xff]), "+/8=");
        assert_eq!(encode(&[0x00, 0x61, 0x73, 0x6d]), "AGFzbQ==");
    }
}
