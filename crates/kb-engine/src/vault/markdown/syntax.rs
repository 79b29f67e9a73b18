//! The line syntax the block scanner recognises: quote markers, indentation,
//! fences, ATX and setext headings, thematic breaks, list items, GFM table rows
//! and block ids. Each function reads one line (or its text after the quote
//! markers and indentation) and keeps no state.

use super::Span;

/// Blockquote depth of a line and the offset after its `>` markers.
pub(super) fn quote_prefix(b: &[u8]) -> (usize, usize) {
    let mut depth = 0;
    let mut at = 0;
    loop {
        let spaces = b[at..].iter().take(3).take_while(|&&c| c == b' ').count();
        if b.get(at + spaces) != Some(&b'>') {
            return (depth, at);
        }
        depth += 1;
        at += spaces + 1;
        if matches!(b.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
    }
}

/// Width of leading whitespace, tabs rounding up to the next multiple of 4.
pub(super) fn indent_columns(ws: &[u8]) -> usize {
    ws.iter().fold(0, |col, &c| if c == b'\t' { col + 4 - col % 4 } else { col + 1 })
}

/// An opening fence: three or more backticks (whose info string has no backtick) or
/// tildes. Returns the marker and the run length.
pub(super) fn opens_fence(text: &[u8]) -> Option<(u8, usize)> {
    let marker = *text.first()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let len = text.iter().take_while(|&&c| c == marker).count();
    if len < 3 || (marker == b'`' && text[len..].contains(&b'`')) {
        return None;
    }
    Some((marker, len))
}

/// Whether a line's text (after quote markers and indentation) closes a fence of
/// `marker` opened by a run of `len`: the same marker, at least as long, nothing
/// but whitespace after.
pub(super) fn closes_fence(text: &[u8], marker: u8, len: usize) -> bool {
    let run = text.iter().take_while(|&&c| c == marker).count();
    run >= len && text[run..].iter().all(|&c| matches!(c, b' ' | b'\t'))
}

/// A line that is an ATX heading on its own (at most three columns of indent, as
/// the scanner reads one at the top level): its level and text.
pub(crate) fn atx_heading_line(line: &str) -> Option<(u8, String)> {
    let ws = line.bytes().take_while(|b| matches!(b, b' ' | b'\t')).count();
    if indent_columns(&line.as_bytes()[..ws]) > 3 {
        return None;
    }
    let (level, content) = atx_heading(&line[ws..])?;
    let text = heading_text(content);
    Some((level, content[text].to_owned()))
}

/// An ATX heading: level and the text after the marker (still untrimmed).
pub(super) fn atx_heading(text: &str) -> Option<(u8, &str)> {
    let b = text.as_bytes();
    let level = b.iter().take(7).take_while(|&&c| c == b'#').count();
    if level == 0 || level > 6 || !matches!(b.get(level), None | Some(b' ' | b'\t')) {
        return None;
    }
    Some((u8::try_from(level).unwrap_or(6), &text[level..]))
}

/// Where a heading's text lies in the content after its `#` marks: trimmed,
/// without a closing run of `#` (kept when not set off by a space: `# C#`).
pub(super) fn heading_text(content: &str) -> std::ops::Range<usize> {
    let start = content.len() - content.trim_start().len();
    let trimmed = content.trim();
    let end = start + trimmed.len();
    let without = trimmed.trim_end_matches('#');
    if without.is_empty() {
        start..start
    } else if without.ends_with([' ', '\t']) {
        start..start + without.trim_end().len()
    } else {
        start..end
    }
}

/// A setext underline: a run of `=` (level 1) or `-` (level 2), then only whitespace.
pub(super) fn setext_underline(text: &[u8]) -> Option<u8> {
    let marker = *text.first()?;
    let level = match marker {
        b'=' => 1,
        b'-' => 2,
        _ => return None,
    };
    let len = text.iter().take_while(|&&c| c == marker).count();
    text[len..].iter().all(|&c| matches!(c, b' ' | b'\t')).then_some(level)
}

/// A paragraph's lines joined into one heading text.
pub(super) fn join_lines(lines: &str) -> String {
    let mut out = String::new();
    for line in lines.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// `***`, `---`, `___` (three or more, spaces allowed between).
pub(super) fn is_thematic_break(text: &[u8]) -> bool {
    let Some(&marker) = text.first() else { return false };
    if !matches!(marker, b'*' | b'-' | b'_') {
        return false;
    }
    let mut count = 0;
    for &c in text {
        if c == marker {
            count += 1;
        } else if !matches!(c, b' ' | b'\t') {
            return false;
        }
    }
    count >= 3
}

/// `- x`, `* x`, `+ x`, `1. x`, `1) x` (or the marker alone): the width of the
/// marker and the spaces after it (the item's content column, relative to the
/// marker's).
pub(super) fn list_item(text: &[u8]) -> Option<usize> {
    let marker_end = match text.first() {
        Some(b'-' | b'*' | b'+') => 1,
        Some(c) if c.is_ascii_digit() => {
            let digits = text.iter().take(10).take_while(|c| c.is_ascii_digit()).count();
            if !matches!(text.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    if !matches!(text.get(marker_end), None | Some(b' ' | b'\t')) {
        return None;
    }
    let spaces = text[marker_end..].iter().take_while(|&&c| c == b' ').count();
    Some(marker_end + if (1..=4).contains(&spaces) { spaces } else { 1 })
}

/// The number of cells of a GFM table row: every `|` not escaped by `\` (even
/// in a code span) separates two; one leading and one trailing `|` are dropped.
pub(super) fn table_cells(text: &str) -> usize {
    let t = text.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = match t.strip_suffix('|') {
        Some(rest) if !rest.ends_with('\\') => rest,
        _ => t,
    };
    let b = t.as_bytes();
    let (mut cells, mut i) = (1, 0);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'|' => cells += 1,
            _ => {}
        }
        i += 1;
    }
    cells
}

/// A GFM delimiter row (`| --- | :-: |`, `--|--`): cells of `-` with optional
/// `:` at either end, at least one `|` or `:` so a bare `---` stays a setext
/// underline or a thematic break.
pub(super) fn is_delimiter_row(text: &str) -> bool {
    let t = text.trim();
    if !t.contains('|') && !t.contains(':') {
        return false;
    }
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').all(|cell| {
        let cell = cell.trim_matches([' ', '\t']);
        let inner = cell.strip_prefix(':').unwrap_or(cell);
        let inner = inner.strip_suffix(':').unwrap_or(inner);
        !inner.is_empty() && inner.bytes().all(|c| c == b'-')
    })
}

/// A block id `^id` ending the line, after whitespace or alone on it: the id and
/// the span of `^id` within the line.
pub(super) fn block_id(line: &str) -> Option<(&str, Span)> {
    let t = line.trim_end();
    let b = t.as_bytes();
    let id_len = b.iter().rev().take_while(|c| c.is_ascii_alphanumeric() || **c == b'-').count();
    if id_len == 0 || id_len == b.len() {
        return None;
    }
    let caret = b.len() - id_len - 1;
    if b[caret] != b'^' || (caret > 0 && !matches!(b[caret - 1], b' ' | b'\t')) {
        return None;
    }
    Some((&t[caret + 1..], Span { start: caret, end: t.len() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids() {
        let id = |line| block_id(line).map(|(id, _)| id);
        assert_eq!(id("text ^abc-1"), Some("abc-1"));
        assert_eq!(block_id("text ^abc-1 "), Some(("abc-1", Span { start: 5, end: 11 })));
        assert_eq!(id("^abc"), Some("abc"));
        assert_eq!(id("x^2"), None);
        assert_eq!(id("[^1]"), None);
        assert_eq!(id("text ^"), None);
        assert_eq!(id("text ^ab_c"), None);
    }

    #[test]
    fn table_rows() {
        assert_eq!(table_cells("| a | b |"), 2);
        assert_eq!(table_cells("a | b"), 2);
        assert_eq!(table_cells("| a \\| b |"), 1);
        assert!(is_delimiter_row("| --- | :-: |"));
        assert!(is_delimiter_row("--|--"));
        assert!(is_delimiter_row(":---"));
        assert!(!is_delimiter_row("---"));
        assert!(!is_delimiter_row("| a | --- |"));
    }

    #[test]
    fn headings_and_lists() {
        assert_eq!(atx_heading_line("  ## Setup ##"), Some((2, "Setup".to_owned())));
        assert_eq!(atx_heading_line("# C#"), Some((1, "C#".to_owned())));
        assert_eq!(atx_heading_line("#Setup"), None);
        assert_eq!(list_item(b"- x"), Some(2));
        assert_eq!(list_item(b"10.  x"), Some(5));
        assert_eq!(list_item(b"-x"), None);
    }
}
