//! The one Markdown model of a note: every heading, link, inline tag and block id
//! the vault knows of, each with its exact byte span in the file.
//!
//! Everything that reads Markdown structure goes through here: [`parse_note`]
//! (titles, outline, links for the graph and the index), sections for
//! `read_note`, recall and a patch's `replace_section`, and whatever rewrites a
//! link. A span is a byte range of the file as on disk (frontmatter and BOM
//! included), so an edit can replace a span and nothing else.
//!
//! This is deliberately not a full CommonMark parser: one pass over the lines of
//! the body ([`blocks`]: fences, HTML comments, GFM tables, ATX and setext
//! headings, enough of lists and quotes to place them), and an inline scan
//! ([`inline`]) that jumps from one interesting byte to the next. It never
//! allocates per character and every search it makes is bounded or cached, so
//! adversarial lines (`[[[[…`, thousands of backticks) stay linear. Where it
//! differs from CommonMark on purpose is listed in `tests/it/vault_parse.rs`
//! (`INTENDED_DIFFERENCES`), checked against the `markdown` crate there.
//!
//! [`parse_note`]: super::parse_note

mod blocks;
mod inline;
mod link_syntax;
mod properties;
mod syntax;
mod target;

use std::borrow::Cow;
use std::ops::Range;

use super::note::{Diagnostic, Heading, Link};
use crate::sandbox::NotePath;

pub(super) use properties::property_links;
pub(super) use syntax::atx_heading_line;

/// A byte range in a note's text as on disk: frontmatter and BOM included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span as a range, for slicing.
    pub fn range(self) -> Range<usize> {
        self.start..self.end
    }

    /// The text it covers; empty when it does not fit `text`.
    pub fn of(self, text: &str) -> &str {
        text.get(self.range()).unwrap_or("")
    }
}

/// `text` with each span replaced by its new text, in one pass: the one way
/// every edit by spans is written (a patch's frontmatter keys, a move's link
/// targets, the audit's fixes, a plan's stored splices, a canvas's paths).
/// Replacements are taken in the order of the text (ties in the order given);
/// one that overlaps a replacement before it is left out, so the result never
/// garbles the text. Each span must lie on character boundaries of `text`.
pub(crate) fn replace_spans<'a>(
    text: &str,
    replacements: impl IntoIterator<Item = (Span, &'a str)>,
) -> String {
    let mut sorted: Vec<(Span, &str)> = replacements.into_iter().collect();
    sorted.sort_by_key(|(span, _)| span.start);
    let grown: usize = sorted.iter().map(|(_, new)| new.len()).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut at = 0;
    for (span, new) in sorted {
        if span.start < at {
            continue;
        }
        out.push_str(&text[at..span.start]);
        out.push_str(new);
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// A heading and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadingSpan {
    /// The heading as [`parse_note`](super::parse_note) gives it (`line` is its first line).
    pub heading: Heading,
    /// Its last line: the same line for `# Heading`, the underline for a setext
    /// heading (`Setup` over `=====`).
    pub last_line: u32,
    /// Its lines, from the start of the first to the end of the last (the
    /// underline of a setext heading), without the final line ending.
    pub span: Span,
    /// Its text as written: after `#` and spaces and before a closing `#` run, or
    /// the text lines of a setext heading (their line breaks included: the
    /// heading's `text` joins them with spaces).
    pub text: Span,
}

/// A link and where each of its parts is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpan {
    /// The link as [`parse_note`](super::parse_note) gives it.
    pub link: Link,
    /// The whole link: `[[…]]`, `![[…]]`, `[…](…)` or `![…](…)`.
    pub span: Span,
    /// The target as written, trimmed: `a/b` in `[[ a/b #h|x]]`; for a Markdown
    /// link the destination before `#`, still percent-encoded, inside `<…>` when
    /// it has them. Empty (at the `#`) for a same-note link.
    pub target: Span,
    /// The anchor as written, after `#` (`^id` for a block).
    pub anchor: Option<Span>,
    /// The display text as written, trimmed: after `|`, or inside `[…]`.
    pub display: Option<Span>,
    /// For a link in a frontmatter property (`up: "[[Note]]"`), the quotes its
    /// value is written in; `None` in the body.
    pub quote: Option<PropertyQuote>,
}

/// The quotes a property's link is written in: what bytes written into the
/// link must be escaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PropertyQuote {
    /// `"[[Note]]"`: a `"` or `\` would need a backslash escape.
    Double,
    /// `'[[Note]]'`: a `'` is written twice.
    Single,
}

impl LinkSpan {
    /// `new` (a target, an anchor or display text) as it must be written inside
    /// this link: as it is in the body; in a property's quotes, `'` doubled
    /// inside single quotes. `None` when it cannot be written there and still
    /// be read as this link: `"` or `\` inside double quotes (their escapes
    /// would make the value no link, see `properties.rs`), a line break in any.
    pub(crate) fn encode<'a>(&self, new: &'a str) -> Option<Cow<'a, str>> {
        match self.quote {
            None => Some(Cow::Borrowed(new)),
            Some(_) if new.contains(['\n', '\r']) => None,
            Some(PropertyQuote::Double) if new.contains(['"', '\\']) => None,
            Some(PropertyQuote::Double) => Some(Cow::Borrowed(new)),
            Some(PropertyQuote::Single) if new.contains('\'') => Some(Cow::Owned(new.replace('\'', "''"))),
            Some(PropertyQuote::Single) => Some(Cow::Borrowed(new)),
        }
    }
}

/// An inline tag and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagSpan {
    /// The tag without `#`.
    pub tag: String,
    /// `#tag` as written.
    pub span: Span,
}

/// A block id and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockIdSpan {
    /// The id without `^`.
    pub id: String,
    /// `^id` as written.
    pub span: Span,
}

/// Everything the scanner found in a body, in file order.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    pub(super) headings: Vec<HeadingSpan>,
    pub(super) links: Vec<LinkSpan>,
    pub(super) tags: Vec<TagSpan>,
    pub(super) block_ids: Vec<BlockIdSpan>,
    /// Unclosed code fences.
    pub(super) diagnostics: Vec<Diagnostic>,
    /// When asked for ([`prose_spans`]): every stretch of text the inline pass
    /// read (outside fences, comment blocks and frontmatter), in file order.
    pub(super) prose: Option<Vec<Span>>,
    /// With `prose`: the code spans and inline comments inside those stretches.
    pub(super) hidden: Vec<Span>,
    /// The lines of GFM tables (header and delimiter rows included), in file order.
    pub(super) table_rows: Vec<Span>,
}

/// The Markdown model of a note: where each of its headings, links, inline tags
/// and block ids is written, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoteSpans {
    /// Headings (outside code, comments and quotes).
    pub headings: Vec<HeadingSpan>,
    /// Links in frontmatter properties, then wikilinks, embeds and local
    /// Markdown links of the body.
    pub links: Vec<LinkSpan>,
    /// Inline tags (frontmatter tags are values of the `tags` key).
    pub tags: Vec<TagSpan>,
    /// Block ids.
    pub block_ids: Vec<BlockIdSpan>,
    /// The lines of GFM tables, header and delimiter rows included (without
    /// their line endings), in file order: where a `|` ends a cell.
    pub table_rows: Vec<Span>,
}

impl NoteSpans {
    /// Whether the byte at `at` lies in a row of a GFM table.
    pub(crate) fn in_table(&self, at: usize) -> bool {
        let next = self.table_rows.partition_point(|row| row.end < at);
        self.table_rows.get(next).is_some_and(|row| row.start <= at)
    }
}

/// The spans of a note's text, read exactly as [`parse_note`](super::parse_note)
/// reads it: the same headings, links, tags and block ids, in the same order.
pub fn note_spans(path: &NotePath, text: &str) -> NoteSpans {
    let offset = super::frontmatter::body_offset(text);
    let first_line = u32::try_from(text[..offset].matches('\n').count() + 1).unwrap_or(u32::MAX);
    let scanned = scan(text, offset, first_line, path.parent());
    let mut links = frontmatter_links(text);
    links.extend(scanned.links);
    NoteSpans {
        headings: scanned.headings,
        links,
        tags: scanned.tags,
        block_ids: scanned.block_ids,
        table_rows: scanned.table_rows,
    }
}

/// The links in a note's frontmatter properties, read as
/// [`parse_note`](super::parse_note) reads them (the YAML is parsed only when
/// the block holds a `[[`).
fn frontmatter_links(text: &str) -> Vec<LinkSpan> {
    let Some(yaml) = super::frontmatter::yaml_range(text) else { return Vec::new() };
    if !text[yaml].contains("[[") {
        return Vec::new();
    }
    match super::frontmatter::scan(text) {
        super::frontmatter::Scan::Found { frontmatter, .. } => match &frontmatter.value {
            serde_json::Value::Object(map) => property_links(text, frontmatter.yaml, map),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Scans `text[body_offset..]`, the body, whose first line is file line
/// `first_line`. `folder` is the note's folder (vault-relative, `""` at the top),
/// against which Markdown links are resolved. Spans are offsets in `text`.
pub(super) fn scan(text: &str, body_offset: usize, first_line: u32, folder: &str) -> Scanned {
    blocks::scan(text, body_offset.min(text.len()), first_line, folder, false)
}

/// A note's prose: the byte ranges of its text where words are written as words,
/// in file order. Left out: frontmatter, code (fenced and inline), HTML
/// comments, links (their display text too) and inline tags. What an unlinked
/// mention is looked for in.
pub fn prose_spans(path: &NotePath, text: &str) -> Vec<Span> {
    let offset = super::frontmatter::body_offset(text);
    let first_line = u32::try_from(text[..offset].matches('\n').count() + 1).unwrap_or(u32::MAX);
    let scanned = blocks::scan(text, offset.min(text.len()), first_line, path.parent(), true);
    let mut hidden = scanned.hidden;
    hidden.extend(scanned.links.iter().map(|link| link.span));
    hidden.extend(scanned.tags.iter().map(|tag| tag.span));
    hidden.sort_by_key(|span| span.start);
    let mut out = Vec::new();
    let mut next_hidden = 0;
    for stretch in scanned.prose.unwrap_or_default() {
        let mut at = stretch.start;
        while next_hidden < hidden.len() && hidden[next_hidden].end <= at {
            next_hidden += 1;
        }
        let mut k = next_hidden;
        while k < hidden.len() && hidden[k].start < stretch.end {
            if hidden[k].start > at {
                out.push(Span { start: at, end: hidden[k].start });
            }
            at = at.max(hidden[k].end);
            k += 1;
        }
        if at < stretch.end {
            out.push(Span { start: at, end: stretch.end });
        }
    }
    out
}

/// Longest context a backlink shows for a link, in characters (the ellipsis included).
const MAX_CONTEXT_CHARS: usize = 160;

/// The trimmed line, cut to at most [`MAX_CONTEXT_CHARS`] characters.
pub(super) fn make_context(line: &str) -> String {
    let trimmed = line.trim();
    match trimmed.char_indices().nth(MAX_CONTEXT_CHARS) {
        None => trimmed.to_owned(),
        Some(_) => {
            let cut = trimmed.char_indices().nth(MAX_CONTEXT_CHARS - 1).map_or(trimmed.len(), |(i, _)| i);
            let mut out = trimmed[..cut].to_owned();
            out.push('…');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts() {
        let long: String = "字".repeat(200);
        let context = make_context(&long);
        assert_eq!(context.chars().count(), MAX_CONTEXT_CHARS);
        assert!(context.ends_with('…'));
        assert_eq!(make_context("  short  "), "short");
        assert_eq!(make_context(&"a".repeat(160)).len(), 160);
    }
}
