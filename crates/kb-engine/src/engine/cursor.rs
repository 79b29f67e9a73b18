//! Paging cursors (`list_notes`, `audit_vault`, the overview's `since`): a
//! version prefix and the hex of a few lines of text, opaque to the agent. Each
//! caller says what the lines are and checks them on return; this module only
//! wraps and unwraps them.

use crate::sandbox::{hex, unhex};

/// `prefix` and the hex of `text`.
pub(crate) fn encode(prefix: &str, text: &str) -> String {
    format!("{prefix}{}", hex(text.as_bytes()))
}

/// The text a cursor made by [`encode`] with `prefix` carries; `None` when it
/// is not one (another prefix, odd or non-hex digits, not UTF-8).
pub(crate) fn decode(prefix: &str, cursor: &str) -> Option<String> {
    let digits = cursor.strip_prefix(prefix)?;
    if digits.len() % 2 != 0 {
        return None;
    }
    let bytes: Vec<u8> = digits
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| std::str::from_utf8(pair).ok().and_then(unhex::<1>).map(|[byte]| byte))
        .collect::<Option<_>>()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_carries_its_text_and_only_under_its_prefix() {
        let cursor = encode("l1", "z\n0\n笔记/a.md");
        assert_eq!(decode("l1", &cursor).as_deref(), Some("z\n0\n笔记/a.md"));
        assert_eq!(decode("a1", &cursor), None);
        assert_eq!(decode("l1", "l1abc"), None, "odd digits");
        assert_eq!(decode("l1", "l1zz"), None, "not hex");
        assert_eq!(decode("l1", "l1ff"), None, "not UTF-8");
    }
}
