//! Encodings every layer shares: lowercase hex (content hashes, proposal ids,
//! token hashes, temp-file names), `%XX` percent-decoding (path checks,
//! Markdown link destinations, resource URIs) and RFC 3339 times (file times
//! in answers, proposal and audit times, token records).
//!
//! One decoder, so a path checked for percent-encoded traversal is decoded
//! exactly as a link or a resource URI is; one time format, so every time
//! kb-mcp writes reads the same.

use jiff::tz::TimeZone;
use jiff::{Timestamp, Unit};

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

/// The clock a time is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// UTC, written `Z`: a file's time in answers, the same on every machine.
    Utc,
    /// The machine's time zone, with its offset: when kb-mcp did something, in
    /// the files it writes for a person (proposals, audit lines, token records).
    Local,
}

/// `at` as RFC 3339 to the second (its fraction dropped) in `zone`:
/// `2026-01-20T09:05:03Z`, `2026-01-20T17:05:03+08:00`.
pub fn rfc3339(at: Timestamp, zone: Zone) -> String {
    match zone {
        Zone::Utc => at.to_zoned(TimeZone::UTC).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Zone::Local => at.to_zoned(TimeZone::system()).strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
    }
}

/// A file time (nanoseconds since the epoch) to the nearest second, as
/// answers give it.
pub fn file_time(nanos: i64) -> Timestamp {
    Timestamp::from_nanosecond(i128::from(nanos))
        .map(|at| at.round(Unit::Second).unwrap_or(at))
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_times_are_utc_to_the_nearest_second() {
        for (nanos, expected) in [
            (0, "1970-01-01T00:00:00Z"),
            (1_768_900_000_499_999_999, "2026-01-20T09:06:40Z"),
            (1_768_900_000_500_000_000, "2026-01-20T09:06:41Z"),
            (-1_500_000_000, "1969-12-31T23:59:58Z"),
            (i64::MAX, "2262-04-11T23:47:17Z"),
            (i64::MIN, "1677-09-21T00:12:43Z"),
        ] {
            let at = file_time(nanos);
            assert_eq!(rfc3339(at, Zone::Utc), expected, "{nanos}");
            assert_eq!(rfc3339(at, Zone::Utc), at.to_string(), "{nanos}: jiff's own form");
        }
        let local = rfc3339(file_time(0), Zone::Local);
        assert_eq!(local.len(), "1970-01-01T00:00:00+00:00".len(), "{local}");
    }

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
