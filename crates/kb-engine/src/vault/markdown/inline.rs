//! The inline pass over one line of text: code spans, HTML comments, wikilinks,
//! embeds, Markdown links and tags, each recorded with its byte span.
//!
//! The scan jumps from one interesting byte (`\`, `` ` ``, `<`, `[`, `#`) to the
//! next; searches ahead (closing backticks, `]]`, a link's end, `-->`) are
//! bounded or cached so a hostile line costs linear time.

//!
//! A link's own syntax, once the scan has found where one may start, is read
//! in `link_syntax`.

use super::blocks::Scanner;
use super::link_syntax::{MAX_LINK_SPAN, parse_markdown_link, parse_wikilink, trimmed};
use super::target::markdown_target;
use super::{LinkSpan, Span, TagSpan};
use crate::vault::note::{Link, LinkKind};

/// Bytes the inline scan stops at.
static SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    table[b'\\' as usize] = true;
    table[b'`' as usize] = true;
    table[b'[' as usize] = true;
    table[b'#' as usize] = true;
    table[b'<' as usize] = true;
    table
};

impl Scanner<'_> {
    /// Scans `line[from..]` (the line starts at `offset` in the note) for code
    /// spans, comments, links and tags. With `multiline`, a comment left open may
    /// close on a later line of the paragraph. Returns where the text after the
    /// last comment starts, `None` when the line ends inside one.
    pub(super) fn inline(
        &mut self,
        line: &str,
        from: usize,
        offset: usize,
        line_no: u32,
        multiline: bool,
    ) -> Option<usize> {
        let b = line.as_bytes();
        if let Some(prose) = &mut self.out.prose
            && from < b.len()
        {
            prose.push(Span { start: offset + from, end: offset + b.len() });
        }
        let collect = self.out.prose.is_some();
        let mut i = from;
        let mut visible_from = from;
        let mut escaped = usize::MAX;
        let mut code_closers = CodeCloserCache::default();
        // Bytes the code-span and Markdown-link searches may still read on this line:
        // a linear bound however hostile the line.
        let mut budget = b.len().saturating_mul(8).saturating_add(4 * MAX_LINK_SPAN);
        // Set when no `[[` / `]]` exists at or after this offset.
        let mut no_brackets_from = usize::MAX;
        // Set when no `-->` exists at or after this offset on the line.
        let mut no_comment_close_from = usize::MAX;
        while i < b.len() {
            match b[i..].iter().position(|&c| SPECIAL[usize::from(c)]) {
                Some(skip) => i += skip,
                None => break,
            }
            match b[i] {
                b'\\' => {
                    if b.get(i + 1).is_some_and(u8::is_ascii_punctuation) {
                        escaped = i + 1;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                b'`' => {
                    let run = b[i..].iter().take_while(|&&c| c == b'`').count();
                    i = match code_closers.find(b, i + run, run, &mut budget) {
                        Some(end) => {
                            if collect {
                                self.out.hidden.push(Span { start: offset + i, end: offset + end });
                            }
                            end
                        }
                        None => i + run,
                    };
                }
                b'<' => {
                    if !b[i..].starts_with(b"<!--") {
                        i += 1;
                        continue;
                    }
                    let close = if i + 4 >= no_comment_close_from { None } else { find(&b[i + 4..], b"-->") };
                    match close {
                        Some(at) => {
                            if collect {
                                self.out
                                    .hidden
                                    .push(Span { start: offset + i, end: offset + i + 4 + at + 3 });
                            }
                            i += 4 + at + 3;
                            visible_from = i;
                        }
                        None => {
                            no_comment_close_from = i + 4;
                            if multiline && let Some(end) = self.comment_close(offset + i + 4) {
                                if collect {
                                    self.out.hidden.push(Span { start: offset + i, end: offset + b.len() });
                                }
                                self.comment_until = end;
                                return None;
                            }
                            i += 4;
                        }
                    }
                }
                b'[' => {
                    let embed = i > 0 && b[i - 1] == b'!' && escaped != i - 1;
                    let start = if embed { i - 1 } else { i };
                    if b.get(i + 1) == Some(&b'[') {
                        if i + 2 >= no_brackets_from {
                            i += 1;
                            continue;
                        }
                        match find_double_bracket(b, i + 2) {
                            Some((close, true)) => {
                                if let Some(mut link) = parse_wikilink(line, i + 2, close, embed, line_no) {
                                    link.span = Span { start, end: close + 2 };
                                    self.out.links.push(shift(link, offset));
                                    i = close + 2;
                                    continue;
                                }
                            }
                            Some((_, false)) => {}
                            None => no_brackets_from = i + 2,
                        }
                    }
                    if let Some(md) = parse_markdown_link(line, i, &mut budget) {
                        if let Some((target, anchor)) = markdown_target(&md.destination, self.folder) {
                            let display = trimmed(line, md.text.start, md.text.end);
                            let kind = if embed { LinkKind::Embed } else { LinkKind::Markdown };
                            let raw = &line[md.dest.start..md.dest.end];
                            let hash = raw.find('#');
                            let target_end = md.dest.start + hash.unwrap_or(raw.len());
                            let link = LinkSpan {
                                link: Link {
                                    target,
                                    anchor,
                                    display: display.map(|d| line[d.range()].to_owned()),
                                    kind,
                                    line: line_no,
                                },
                                span: Span { start, end: md.end },
                                target: Span { start: md.dest.start, end: target_end },
                                anchor: hash.map(|_| Span { start: target_end + 1, end: md.dest.end }),
                                display,
                                quote: None,
                            };
                            self.out.links.push(shift(link, offset));
                        }
                        i = md.end;
                        continue;
                    }
                    i += 1;
                }
                _ => {
                    // `#`
                    if escaped != i
                        && starts_tag(line, i)
                        && let Some((tag, end)) = tag_at(line, i + 1)
                    {
                        self.out.tags.push(TagSpan {
                            tag: tag.to_owned(),
                            span: Span { start: offset + i, end: offset + i + 1 + tag.len() },
                        });
                        i = end;
                        continue;
                    }
                    i += 1;
                }
            }
        }
        Some(visible_from)
    }

    /// Where an inline comment opened at `from` (after its `<!--`) ends, just
    /// after `-->`, when that comes before the paragraph ends at a blank line.
    fn comment_close(&mut self, from: usize) -> Option<usize> {
        let text = self.text.as_bytes();
        let close = match self.close_cache {
            Some((searched, found)) if searched <= from && found.is_none_or(|at| at >= from) => found,
            _ => {
                let found = find(&text[from..], b"-->").map(|at| from + at);
                self.close_cache = Some((from, found));
                found
            }
        }?;
        let blank = match self.blank_cache {
            Some((searched, found)) if searched <= from && found >= from => found,
            _ => {
                let found = next_blank_line(text, from);
                self.blank_cache = Some((from, found));
                found
            }
        };
        (close < blank).then_some(close + 3)
    }
}

/// Moves a link's spans from line offsets to note offsets.
fn shift(mut link: LinkSpan, by: usize) -> LinkSpan {
    let move_span = |s: Span| Span { start: s.start + by, end: s.end + by };
    link.span = move_span(link.span);
    link.target = move_span(link.target);
    link.anchor = link.anchor.map(move_span);
    link.display = link.display.map(move_span);
    link
}

/// The first occurrence of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The offset of the first blank line (only spaces, tabs or `\r`) starting after
/// `from`, or the end of the text.
fn next_blank_line(text: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(newline) = text[at..].iter().position(|&c| c == b'\n') {
        let start = at + newline + 1;
        let len = text[start..].iter().position(|&c| c == b'\n').unwrap_or(text.len() - start);
        if text[start..start + len].iter().all(|c| matches!(c, b' ' | b'\t' | b'\r')) {
            return start;
        }
        at = start;
    }
    text.len()
}

/// Finds closing backtick runs, remembering run lengths that have no closer further
/// on, so a line of unmatched runs costs linear time.
#[derive(Default)]
struct CodeCloserCache {
    /// Bit `n` set: no run of exactly `n` backticks after the last search point.
    missing: u64,
}

impl CodeCloserCache {
    /// The offset after the first run of exactly `run` backticks at or after `from`.
    fn find(&mut self, b: &[u8], from: usize, run: usize, budget: &mut usize) -> Option<usize> {
        let bit = if run < 64 { 1u64 << run } else { 0 };
        if self.missing & bit != 0 || *budget == 0 {
            return None;
        }
        let found = Self::search(b, from, run);
        *budget = budget.saturating_sub(found.unwrap_or(b.len()).saturating_sub(from));
        if found.is_none() {
            self.missing |= bit;
        }
        found
    }

    fn search(b: &[u8], from: usize, run: usize) -> Option<usize> {
        let mut i = from;
        while i < b.len() {
            let Some(skip) = b[i..].iter().position(|&c| c == b'`') else { break };
            i += skip;
            let len = b[i..].iter().take_while(|&&c| c == b'`').count();
            if len == run {
                return Some(i + len);
            }
            i += len;
        }
        None
    }
}

/// The first `[[` or `]]` at or after `from`: its offset and whether it closes.
fn find_double_bracket(b: &[u8], from: usize) -> Option<(usize, bool)> {
    let mut i = from;
    while i + 1 < b.len() {
        let skip = b[i..b.len() - 1].iter().position(|&c| c == b'[' || c == b']')?;
        i += skip;
        if b[i + 1] == b[i] {
            return Some((i, b[i] == b']'));
        }
        i += 1;
    }
    None
}

/// Whether a `#` at `at` may start a tag: at the start of the line or after
/// whitespace, `(` or `,`.
fn starts_tag(line: &str, at: usize) -> bool {
    match line[..at].chars().next_back() {
        None => true,
        Some(c) => c.is_whitespace() || c == '(' || c == ',',
    }
}

/// The tag starting at `from` (just after `#`) and the offset after it. A tag is a run
/// of tag characters with at least one that is not a digit, `-`, `_` or `/`; a
/// trailing `/` is dropped.
fn tag_at(line: &str, from: usize) -> Option<(&str, usize)> {
    let rest = &line[from..];
    let len = rest.find(|c: char| !is_tag_char(c)).unwrap_or(rest.len());
    let tag = rest[..len].trim_end_matches('/');
    tag.bytes().any(|c| !matches!(c, b'0'..=b'9' | b'-' | b'_' | b'/')).then_some((tag, from + len))
}

/// Letters, digits (any script), `_`, `-`, `/`; beyond ASCII, anything that is not
/// whitespace or punctuation, so combining marks (Thai, Devanagari) and emoji stay in.
fn is_tag_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/');
    }
    !c.is_whitespace()
        && !matches!(c,
            '\u{00A0}'..='\u{00BF}' | '\u{00D7}' | '\u{00F7}'
            | '\u{2000}'..='\u{206F}'
            | '\u{2190}'..='\u{21FF}'
            | '\u{2E00}'..='\u{2E7F}'
            | '\u{3000}'..='\u{303F}'
            | '\u{FE10}'..='\u{FE1F}'
            | '\u{FE30}'..='\u{FE4F}'
            | '\u{FF00}'..='\u{FF0F}'
            | '\u{FF1A}'..='\u{FF20}'
            | '\u{FF3B}'..='\u{FF40}'
            | '\u{FF5B}'..='\u{FF65}'
            | '\u{FEFF}')
}
