//! The syntax of one link, read where the inline scan found one may start:
//! the inside of a wikilink `[[target#anchor|display]]` (also read in
//! properties), and a Markdown link `[text](destination "title")`, whose
//! searches ahead are bounded and charged to the line's work budget.

use super::target::unescape;
use super::{LinkSpan, Span};
use crate::vault::note::{Anchor, Link, LinkKind};

/// Longest link text or destination tried, in bytes: longer `[…](…)` runs are text.
pub(super) const MAX_LINK_SPAN: usize = 2048;

/// `line[start..end]` trimmed, as a span; `None` when nothing is left.
pub(super) fn trimmed(line: &str, start: usize, end: usize) -> Option<Span> {
    let part = &line[start..end];
    let lead = part.len() - part.trim_start().len();
    let kept = part.trim().len();
    (kept > 0).then_some(Span { start: start + lead, end: start + lead + kept })
}

/// The link inside `[[…]]` (`line[start..end]`): target, anchor and display text
/// and their spans in the line (the whole link's span is left to the caller).
pub(super) fn parse_wikilink(
    line: &str,
    start: usize,
    end: usize,
    embed: bool,
    line_no: u32,
) -> Option<LinkSpan> {
    let inner = &line[start..end];
    let (left_len, display) = match inner.find('|') {
        Some(bar) => {
            let left = &inner[..bar];
            (left.strip_suffix('\\').unwrap_or(left).len(), trimmed(line, start + bar + 1, end))
        }
        None => (inner.len(), None),
    };
    let left = &inner[..left_len];
    let (target_len, anchor) = match left.find('#') {
        Some(hash) => (hash, trimmed(line, start + hash + 1, start + left_len)),
        None => (left_len, None),
    };
    let target = trimmed(line, start, start + target_len)
        .unwrap_or(Span { start: start + target_len, end: start + target_len });
    let anchor_value = anchor.and_then(|a| make_anchor(&line[a.range()]));
    let target_text = &line[target.range()];
    if target_text.is_empty() && anchor_value.is_none() {
        return None;
    }
    Some(LinkSpan {
        link: Link {
            target: target_text.to_owned(),
            anchor: anchor_value,
            display: display.map(|d| line[d.range()].to_owned()),
            kind: if embed { LinkKind::Embed } else { LinkKind::Wikilink },
            line: line_no,
        },
        span: Span::default(),
        target,
        anchor,
        display,
        quote: None,
    })
}

/// `^id` is a block anchor, anything else a heading; empty is none.
pub(super) fn make_anchor(anchor: &str) -> Option<Anchor> {
    if anchor.is_empty() {
        None
    } else if let Some(block) = anchor.strip_prefix('^') {
        Some(Anchor::Block(block.trim().to_owned()))
    } else {
        Some(Anchor::Heading(anchor.to_owned()))
    }
}

/// A `[text](destination "title")` at some `[`.
pub(super) struct MarkdownLink {
    /// The text inside `[…]`.
    pub(super) text: Span,
    /// The destination as written, inside `<…>` when it has them.
    pub(super) dest: Span,
    /// The destination with backslash escapes removed.
    pub(super) destination: String,
    /// Offset after the closing `)`.
    pub(super) end: usize,
}

/// Parses a Markdown link at `start`, charging the bytes it reads to `budget`.
pub(super) fn parse_markdown_link(line: &str, start: usize, budget: &mut usize) -> Option<MarkdownLink> {
    if *budget == 0 {
        return None;
    }
    let mut cursor = Cursor { b: line.as_bytes(), at: start, furthest: start };
    let link = markdown_link_at(line, &mut cursor);
    *budget = budget.saturating_sub(cursor.furthest - start + 1);
    link
}

/// A position in a line that remembers how far it got, for the work budget.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
    furthest: usize,
}

impl Cursor<'_> {
    fn advance(&mut self, by: usize) {
        self.at += by;
        self.furthest = self.furthest.max(self.at);
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn skip_spaces(&mut self) {
        let n =
            self.b[self.at.min(self.b.len())..].iter().take_while(|&&c| matches!(c, b' ' | b'\t')).count();
        self.advance(n);
    }
}

/// Parses a Markdown link at the cursor (on its `[`).
fn markdown_link_at(line: &str, c: &mut Cursor<'_>) -> Option<MarkdownLink> {
    let start = c.at;
    let limit = c.b.len().min(start + MAX_LINK_SPAN);
    // The text: balanced brackets, backslash escapes.
    let mut depth = 0usize;
    let close = loop {
        if c.at >= limit {
            return None;
        }
        match c.b[c.at] {
            b'\\' => c.advance(1),
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    break c.at;
                }
            }
            _ => {}
        }
        c.advance(1);
    };
    c.advance(1);
    if c.peek() != Some(b'(') {
        return None;
    }
    let text = Span { start: start + 1, end: close };
    c.advance(1);
    let limit = c.b.len().min(c.at + MAX_LINK_SPAN);
    c.skip_spaces();
    let dest = if c.peek() == Some(b'<') {
        c.advance(1);
        let dest_start = c.at;
        loop {
            match c.b.get(c.at).copied().filter(|_| c.at < limit)? {
                b'>' => break,
                b'<' => return None,
                _ => c.advance(1),
            }
        }
        let dest = Span { start: dest_start, end: c.at };
        c.advance(1);
        dest
    } else {
        let dest_start = c.at;
        let mut parens = 0usize;
        loop {
            if c.at >= limit {
                return None;
            }
            match c.b[c.at] {
                b'\\' if c.b.get(c.at + 1).is_some_and(u8::is_ascii_punctuation) => c.advance(1),
                b'(' => parens += 1,
                b')' if parens == 0 => break,
                b')' => parens -= 1,
                byte if byte <= b' ' => break,
                _ => {}
            }
            c.advance(1);
        }
        Span { start: dest_start, end: c.at }
    };
    let before_title = c.at;
    c.skip_spaces();
    if let Some(quote) = c.peek().filter(|q| matches!(q, b'"' | b'\'' | b'(')) {
        if c.at == before_title {
            return None;
        }
        let closing = if quote == b'(' { b')' } else { quote };
        c.advance(1);
        loop {
            if c.at >= limit {
                return None;
            }
            match c.b[c.at] {
                b'\\' => c.advance(1),
                byte if byte == closing => break,
                _ => {}
            }
            c.advance(1);
        }
        c.advance(1);
        c.skip_spaces();
    }
    if c.peek() != Some(b')') {
        return None;
    }
    Some(MarkdownLink { text, dest, destination: unescape(&line[dest.range()]), end: c.at + 1 })
}
