//! A canvas text node's Markdown as the vault reads it, and where each byte
//! of it is written in the canvas's JSON: Obsidian renders a text node as
//! Markdown, so `[[links]]` and `[text](links)` in it are links of the graph,
//! and a move rewrites them inside the JSON string that holds them.
//!
//! The string is unescaped here (`\"`, `\n`, `\u4e2d`, surrogate pairs), its
//! links found by the notes' one Markdown model (`markdown::scan`), and each
//! offset of the unescaped text mapped back to the escaped bytes on disk, so
//! an edit replaces exactly the bytes of a link's target, its new text
//! escaped as JSON needs ([`json_escaped`]); every other byte stays.

use super::markdown::{self, NoteSpans, Span};

/// A text node's text, unescaped, and where its bytes are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CanvasText {
    /// The text as Obsidian shows it (unescaped).
    pub(crate) text: String,
    /// Where each run starts, `(offset in text, offset in the canvas)`: a run
    /// of bytes written as they are, or one escape; then where both end.
    runs: Vec<(usize, usize, bool)>,
    /// Its links (and the rest of its Markdown model), spans in `text`.
    pub(crate) spans: NoteSpans,
}

impl CanvasText {
    /// Reads the JSON string literal `literal` (quotes included) written at
    /// byte `at` of the canvas, whose folder is `folder` (Markdown links are
    /// relative to it). `None` when it is not a string literal of strict JSON.
    pub(crate) fn read(literal: &str, at: usize, folder: &str) -> Option<CanvasText> {
        let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
        let start = at + 1;
        let mut text = String::with_capacity(inner.len());
        let mut runs = Vec::new();
        let mut i = 0;
        while i < inner.len() {
            runs.push((text.len(), start + i, true));
            match inner[i..].find('\\') {
                Some(0) => {
                    let (ch, len) = unescape(&inner[i..])?;
                    runs.last_mut()?.2 = false;
                    text.push(ch);
                    i += len;
                }
                found => {
                    let end = found.map_or(inner.len(), |n| i + n);
                    text.push_str(&inner[i..end]);
                    i = end;
                }
            }
        }
        runs.push((text.len(), start + inner.len(), false));
        let scanned = markdown::scan(&text, 0, 1, folder);
        let spans = NoteSpans {
            headings: scanned.headings,
            links: scanned.links,
            tags: scanned.tags,
            block_ids: scanned.block_ids,
            table_rows: scanned.table_rows,
        };
        Some(CanvasText { text, runs, spans })
    }

    /// Where offset `at` of the text (on a character boundary) is written in
    /// the canvas.
    pub(crate) fn raw_offset(&self, at: usize) -> usize {
        let run = self.runs.partition_point(|&(from, _, _)| from <= at).saturating_sub(1);
        match self.runs.get(run) {
            Some(&(from, raw, true)) => raw + (at - from),
            Some(&(_, raw, false)) => raw,
            None => 0,
        }
    }

    /// Where a span of the text is written in the canvas.
    pub(crate) fn raw_span(&self, span: Span) -> Span {
        Span { start: self.raw_offset(span.start), end: self.raw_offset(span.end) }
    }
}

/// `text` as it is written inside a JSON string (no quotes): `"`, `\` and
/// control characters escaped, everything else (Chinese too) as it is.
pub(crate) fn json_escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_owned()
}

/// The character an escape at the start of `s` stands for, and its length;
/// `None` for an escape strict JSON does not have (a lone surrogate too).
fn unescape(s: &str) -> Option<(char, usize)> {
    let simple = match s.as_bytes().get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(s.get(2..6)?)?;
            if !(0xD800..0xE000).contains(&high) {
                return Some((char::from_u32(high)?, 6));
            }
            let low = s.get(6..8).filter(|u| *u == "\\u").and_then(|_| hex4(s.get(8..12)?))?;
            if !(0xD800..0xDC00).contains(&high) || !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(code)?, 12));
        }
        _ => return None,
    };
    Some((simple, 2))
}

fn hex4(digits: &str) -> Option<u32> {
    (digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u32::from_str_radix(digits, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_maps_back_to_its_bytes() {
        let canvas = r#"{"text":"say \"hi\"\n[[\u4e2d文|a\/b]] 😀\ud83d\ude00 [m](x%20y.md)"}"#;
        let at = canvas.find("\"say").unwrap();
        let literal = &canvas[at..canvas.len() - 1];
        let node = CanvasText::read(literal, at, "z").unwrap();
        assert_eq!(node.text, "say \"hi\"\n[[中文|a/b]] 😀😀 [m](x%20y.md)");
        let targets: Vec<(&str, &str, &str)> = node
            .spans
            .links
            .iter()
            .map(|l| (l.link.target.as_str(), l.target.of(&node.text), node.raw_span(l.target).of(canvas)))
            .collect();
        assert_eq!(targets, [("中文", "中文", "\\u4e2d文"), ("z/x y.md", "x%20y.md", "x%20y.md")]);
        let whole = node.raw_span(node.spans.links[0].span);
        assert_eq!(whole.of(canvas), "[[\\u4e2d文|a\\/b]]");
        assert_eq!(node.raw_offset(node.text.len()), canvas.len() - 2);
        assert_eq!(json_escaped("a \"b\"\\\n中"), "a \\\"b\\\"\\\\\\n中");
    }

    proptest::proptest! {
        /// Any text, written as JSON writes it (escapes of every kind mixed
        /// in), reads back as itself, and each of its character boundaries
        /// maps to the escaped bytes that hold what comes before it.
        #[test]
        fn any_escaped_text_reads_back_and_maps_to_its_bytes(
            text in "[a-z\\[\\]|#\"\\\\/\n\t中文😀\u{1}]{0,40}",
            ascii_only in proptest::bool::ANY,
        ) {
            let literal = if ascii_only {
                let mut out = String::from('"');
                for ch in text.chars() {
                    let mut units = [0u16; 2];
                    for unit in ch.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                out.push('"');
                out
            } else {
                serde_json::to_string(&text).unwrap()
            };
            let canvas = format!("{{\"text\":{literal}}}");
            let node = CanvasText::read(&literal, 8, "").unwrap();
            proptest::prop_assert_eq!(&node.text, &text);
            for (at, _) in text.char_indices().chain([(text.len(), ' ')]) {
                let raw = node.raw_offset(at);
                let before: String = serde_json::from_str(&format!("{}\"", &canvas[8..raw])).unwrap();
                proptest::prop_assert_eq!(before.as_str(), &text[..at]);
            }
        }
    }

    #[test]
    fn what_strict_json_lacks_reads_as_nothing() {
        for literal in [r#""\q""#, r#""\ud83d""#, r#""\ude00\ud83d""#, r#""\u12""#, "\"a", "a\""] {
            assert_eq!(CanvasText::read(literal, 0, ""), None, "{literal}");
        }
    }
}
