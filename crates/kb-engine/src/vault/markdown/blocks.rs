//! The block pass: one walk over the lines of a body with a few bytes of state
//! (an open code fence, an open paragraph, a GFM table, an HTML comment, the
//! content column of the last list item), deciding for each line whether it is
//! code (fenced, or indented four columns past the list item it may belong to
//! where it cannot continue a paragraph), a comment, a heading, a table row or
//! text to scan for links and tags.
//!
//! Block quotes are understood as far as fences and headings go (a fence opened
//! in a quote ends with the quote; a heading counts only outside quotes), list
//! items only as far as placing a fence in them goes (a fence indented under an
//! item is at most three columns past the item's content column).

use super::syntax::{
    atx_heading, block_id, closes_fence, heading_text, indent_columns, is_delimiter_row, is_thematic_break,
    join_lines, list_item, opens_fence, quote_prefix, setext_underline, table_cells,
};
use super::{BlockIdSpan, HeadingSpan, Scanned, Span};
use crate::vault::note::{Diagnostic, Heading};

/// Scans `text[body_offset..]`; see [`super::scan`].
pub(super) fn scan(text: &str, body_offset: usize, first_line: u32, folder: &str, prose: bool) -> Scanned {
    let mut scanner = Scanner::new(text, folder);
    if prose {
        scanner.out.prose = Some(Vec::new());
    }
    let mut line_no = first_line;
    let mut offset = body_offset;
    for raw in text[body_offset..].split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        scanner.line_inner(line, offset, line_no);
        scanner.prev_start = offset;
        scanner.prev_end = offset + line.len();
        offset += raw.len() + 1;
        line_no = line_no.saturating_add(1);
    }
    if let Some(fence) = scanner.fence {
        scanner.out.diagnostics.push(Diagnostic {
            line: Some(fence.line),
            message: format!(
                "code fence opened on line {} is never closed; the rest of the note is read as code",
                fence.line
            ),
        });
    }
    scanner.out
}

/// An open fenced code block.
#[derive(Debug, Clone, Copy)]
struct Fence {
    /// `` ` `` or `~`.
    marker: u8,
    /// Length of the opening run.
    len: usize,
    /// Blockquote depth it was opened at.
    depth: usize,
    /// File line it was opened on.
    line: u32,
    /// The content column of the list item it was opened in.
    item: Option<usize>,
}

/// An open paragraph, for setext headings.
#[derive(Debug, Clone, Copy)]
struct Paragraph {
    /// File line of its first line.
    line: u32,
    /// Byte offset of its first line.
    start: usize,
    /// Whether it lies in a list item, a quote or is indented: then an underline
    /// below it is not a top-level heading.
    nested: bool,
}

pub(super) struct Scanner<'t> {
    /// The whole note: offsets are into it.
    pub(super) text: &'t str,
    pub(super) folder: &'t str,
    pub(super) out: Scanned,
    fence: Option<Fence>,
    para: Option<Paragraph>,
    /// Inside a GFM table's rows.
    table: bool,
    /// Inside an HTML comment block (a line that starts with `<!--`), until a
    /// line holding `-->`.
    block_comment: bool,
    /// Offset just after the `-->` of an inline comment that spans lines.
    pub(super) comment_until: usize,
    /// Content column of the last list item, while lines may still belong to it.
    list_content: Option<usize>,
    /// Whether the previous line was blank.
    prev_blank: bool,
    /// Offsets of the start and of the end of the content of the previous line.
    prev_start: usize,
    prev_end: usize,
    /// The last search for `-->`: where it started and what it found.
    pub(super) close_cache: Option<(usize, Option<usize>)>,
    /// The last search for a blank line: where it started and what it found.
    pub(super) blank_cache: Option<(usize, usize)>,
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str, folder: &'t str) -> Self {
        Scanner {
            text,
            folder,
            out: Scanned::default(),
            fence: None,
            para: None,
            table: false,
            block_comment: false,
            comment_until: 0,
            list_content: None,
            prev_blank: true,
            prev_start: 0,
            prev_end: 0,
            close_cache: None,
            blank_cache: None,
        }
    }

    fn line_inner(&mut self, line: &str, offset: usize, line_no: u32) {
        let blank = line.trim().is_empty();
        self.block(line, offset, line_no);
        self.prev_blank = blank;
    }

    /// Indentation relative to the list item the line may belong to.
    fn relative(&self, indent: usize) -> usize {
        match self.list_content {
            Some(column) if indent >= column => indent - column,
            _ => indent,
        }
    }

    fn block(&mut self, line: &str, offset: usize, line_no: u32) {
        if self.comment_until > offset {
            // Inside an inline comment opened on an earlier line of the paragraph.
            if let Some(from) = self.comment_until.checked_sub(offset).filter(|&from| from <= line.len()) {
                self.text_line(line, from, offset, line_no, true);
            }
            return;
        }
        let bytes = line.as_bytes();
        let (depth, quoted) = quote_prefix(bytes);
        let inner = &line[quoted..];
        let ws = inner.bytes().take_while(|b| matches!(b, b' ' | b'\t')).count();
        let text = &inner[ws..];
        let indent = indent_columns(&inner.as_bytes()[..ws]);
        let relative = self.relative(indent);
        if let Some(fence) = self.fence {
            let left_item = fence.item.is_some_and(|column| !text.is_empty() && indent < column);
            if depth >= fence.depth && !left_item {
                if relative <= 3 && closes_fence(text.as_bytes(), fence.marker, fence.len) {
                    self.fence = None;
                }
                return;
            }
            // Leaving the blockquote or list item ends a fence opened inside it.
            self.fence = None;
            if left_item {
                self.list_content = None;
            }
        }
        if self.block_comment {
            if line.contains("-->") {
                self.block_comment = false;
            }
            return;
        }
        if text.is_empty() {
            self.para = None;
            self.table = false;
            return;
        }
        // A fence or comment may open a list item's content too.
        let mut opener = text;
        match list_item(text.as_bytes()) {
            Some(width) if relative <= 3 => {
                self.list_content = Some(indent + width);
                opener = text.get(width..).unwrap_or("");
            }
            // Only a paragraph continues lazily: any other line left of the
            // content column ends the item.
            _ if (self.prev_blank || self.para.is_none())
                && self.list_content.is_some_and(|column| indent < column) =>
            {
                self.list_content = None;
            }
            _ => {}
        }
        if relative >= 4 && self.para.is_none() && !self.table {
            // Indented code (from the list item's content column, so nested
            // list content is not): it cannot interrupt a paragraph.
            return;
        }
        if relative <= 3 {
            if let Some((marker, len)) = opens_fence(opener.as_bytes()) {
                let item = self.list_content.filter(|&column| indent >= column || opener.len() < text.len());
                self.fence = Some(Fence { marker, len, depth, line: line_no, item });
                self.para = None;
                self.table = false;
                return;
            }
            if let Some(rest) = opener.strip_prefix("<!--") {
                self.block_comment = !rest.contains("-->");
                self.para = None;
                self.table = false;
                return;
            }
        }
        if depth == 0 && indent <= 3 {
            if let Some((level, content)) = atx_heading(text) {
                let content_start = offset + line.len() - content.len();
                let range = heading_text(content);
                let span = Span { start: content_start + range.start, end: content_start + range.end };
                self.out.headings.push(HeadingSpan {
                    heading: Heading { level, text: content[range].to_owned(), line: line_no },
                    last_line: line_no,
                    span: Span { start: offset, end: offset + line.len() },
                    text: span,
                });
                self.para = None;
                self.table = false;
                self.inline(line, line.len() - content.len(), offset, line_no, false);
                return;
            }
            if let Some(para) = self.para
                && !para.nested
                && let Some(level) = setext_underline(text.as_bytes())
            {
                self.setext(para, level, offset + line.len(), line_no);
                return;
            }
        }
        if is_thematic_break(text.as_bytes()) {
            self.para = None;
            self.table = false;
            return;
        }
        if self.para.is_some()
            && is_delimiter_row(text)
            && table_cells(&self.text[self.prev_start..self.prev_end]) == table_cells(text)
        {
            // A GFM table: its header was the paragraph's last line.
            self.out.table_rows.push(Span { start: self.prev_start, end: self.prev_end });
            self.out.table_rows.push(Span { start: offset, end: offset + line.len() });
            self.para = None;
            self.table = true;
            return;
        }
        if self.table {
            self.out.table_rows.push(Span { start: offset, end: offset + line.len() });
            self.text_line(line, 0, offset, line_no, false);
            return;
        }
        if depth > 0 || list_item(text.as_bytes()).is_some() {
            self.para = Some(Paragraph { line: line_no, start: offset, nested: true });
        } else if self.para.is_none() {
            self.para = Some(Paragraph { line: line_no, start: offset, nested: ws > 0 });
        }
        self.text_line(line, 0, offset, line_no, true);
    }

    /// A setext heading: the open paragraph's lines over an underline ending at `end`.
    fn setext(&mut self, para: Paragraph, level: u8, end: usize, line_no: u32) {
        let lines = self.text.get(para.start..self.prev_end).unwrap_or("");
        let lead = lines.len() - lines.trim_start().len();
        let trail = lines.len() - lines.trim_end().len();
        self.out.headings.push(HeadingSpan {
            heading: Heading { level, text: join_lines(lines), line: para.line },
            last_line: line_no,
            span: Span { start: para.start, end },
            text: Span { start: para.start + lead, end: self.prev_end - trail },
        });
        self.para = None;
    }

    /// A line of text from `from`: its links and tags, then a block id at its end
    /// unless a comment hides it.
    fn text_line(&mut self, line: &str, from: usize, offset: usize, line_no: u32, multiline: bool) {
        let visible_from = self.inline(line, from, offset, line_no, multiline);
        if let Some(visible_from) = visible_from
            && let Some((id, span)) = block_id(line)
            && span.start >= visible_from
        {
            self.out.block_ids.push(BlockIdSpan {
                id: id.to_owned(),
                span: Span { start: offset + span.start, end: offset + span.end },
            });
        }
    }
}
