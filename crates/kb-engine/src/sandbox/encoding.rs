//! Byte encodings every layer shares: lowercase hex (content hashes, proposal
//! ids, token hashes, temp-file names) and `%XX` percent-decoding (path checks,
//! Markdown link destinations, resource URIs).
//!
//! One decoder, so a path checked for percent-encoded traversal is decoded
//! exactly as a link or a resource URI is.

/// Lowercase hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// Exactly `N` bytes from `2 * N` hex digits (either case), else `None`.
pub fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *slot = hex_value(pair[0])? << 4 | hex_value(pair[1])?;
    }
    Some(out)
}

/// The value of one hex digit (either case).
fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// One round of `%XX` decoding (either case); a `%` not followed by two hex
/// digits stays as it is.
pub fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%'
            && let (Some(hi), Some(lo)) =
                (text.get(i + 1).copied().and_then(hex_value), text.get(i + 2).copied().and_then(hex_value))
        {
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(hex(&[0x00, 0x7f, 0xab, 0xff]), "007fabff");
        assert_eq!(unhex::<4>("007FABff"), Some([0x00, 0x7f, 0xab, 0xff]));
        assert_eq!(unhex::<2>("+f00"), None);
        assert_eq!(unhex::<2>("00f"), None);
        assert_eq!(percent_decode(b"a%2Fb%2e%zz%4"), b"a/b.%zz%4");
        assert_eq!(percent_decode(b"%+5%E5%A4%87"), "%+5备".as_bytes());
    }
}
