//! A line scanner for the Markdown constructs the vault needs: headings, links,
//! inline tags and block ids, skipping fenced code and inline code.
//!
//! This is deliberately not a full CommonMark parser: one pass over the lines of the
//! body, a few bytes of state (the open code fence, the open paragraph for setext
//! headings), and an inline scan that jumps from one interesting byte (`\`, `` ` ``,
//! `[`, `#`) to the next. It never allocates per character and every search it makes
//! is bounded or cached, so adversarial lines (`[[[[…`, thousands of backticks) stay
//! linear. Blockquotes are understood only as far as fences go (a fence opened in a
//! quote ends with the quote); lists, HTML blocks and indented code are not modelled.

use super::note::{Anchor, Diagnostic, Heading, Link, LinkKind};

/// Everything the scanner found in a body.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    /// Headings in order.
    pub(super) headings: Vec<Heading>,
    /// The file line each heading ends on, parallel to `headings`: its own line
    /// for `# Heading`, the underline's for a setext heading.
    pub(super) heading_ends: Vec<u32>,
    /// Links in order.
    pub(super) links: Vec<Link>,
    /// Inline tags without `#`, in order of appearance, possibly repeated.
    pub(super) tags: Vec<String>,
    /// Block ids in order.
    pub(super) block_ids: Vec<String>,
    /// Unclosed code fences.
    pub(super) diagnostics: Vec<Diagnostic>,
}

/// Longest link text or destination tried, in bytes: longer `[…](…)` runs are text.
const MAX_LINK_SPAN: usize = 2048;
/// Longest context a backlink shows for a link, in characters (the ellipsis included).
const MAX_CONTEXT_CHARS: usize = 160;

/// Scans a body that starts on file line `first_line`. `folder` is the note's folder
/// (vault-relative, `""` at the top), against which Markdown links are resolved.
pub(super) fn scan(body: &str, first_line: u32, folder: &str) -> Scanned {
    let mut scanner = Scanner { folder, out: Scanned::default(), fence: None, para: None, prev_end: 0 };
    let mut line_no = first_line;
    let mut offset = 0;
    for raw in body.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        scanner.line(body, line, offset, line_no);
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
}

/// An open paragraph, for setext headings.
#[derive(Debug, Clone, Copy)]
struct Paragraph {
    /// File line of its first line.
    line: u32,
    /// Byte offset of its first line in the body.
    start: usize,
    /// Whether it lies in a list item, a quote or is indented: then an underline
    /// below it is not a top-level heading.
    nested: bool,
}

struct Scanner<'f> {
    folder: &'f str,
    out: Scanned,
    fence: Option<Fence>,
    para: Option<Paragraph>,
    /// Byte offset in the body of the end of the previous line's content.
    prev_end: usize,
}

impl Scanner<'_> {
    fn line(&mut self, body: &str, line: &str, offset: usize, line_no: u32) {
        self.line_inner(body, line, offset, line_no);
        self.prev_end = offset + line.len();
    }

    fn line_inner(&mut self, body: &str, line: &str, offset: usize, line_no: u32) {
        let bytes = line.as_bytes();
        let (depth, quoted) = quote_prefix(bytes);
        if let Some(fence) = self.fence {
            if depth >= fence.depth {
                if closes_fence(&bytes[quoted..], fence) {
                    self.fence = None;
                }
                return;
            }
            // Leaving the blockquote ends a fence opened inside it.
            self.fence = None;
        }
        let inner = &line[quoted..];
        let ws = inner.bytes().take_while(|b| matches!(b, b' ' | b'\t')).count();
        let text = &inner[ws..];
        if text.is_empty() {
            self.para = None;
            return;
        }
        if let Some((marker, len)) = opens_fence(text.as_bytes()) {
            self.fence = Some(Fence { marker, len, depth, line: line_no });
            self.para = None;
            return;
        }
        if depth == 0 && indent_columns(&bytes[..ws]) <= 3 {
            if let Some((level, content)) = atx_heading(text) {
                let text_start = line.len() - content.len();
                self.out.headings.push(Heading { level, text: heading_text(content), line: line_no });
                self.out.heading_ends.push(line_no);
                self.para = None;
                self.inline(line, text_start, line_no);
                return;
            }
            if let Some(para) = self.para
                && !para.nested
                && let Some(level) = setext_underline(text.as_bytes())
            {
                let lines = body.get(para.start..self.prev_end).unwrap_or("");
                self.out.headings.push(Heading { level, text: join_lines(lines), line: para.line });
                self.out.heading_ends.push(line_no);
                self.para = None;
                return;
            }
        }
        if is_thematic_break(text.as_bytes()) {
            self.para = None;
            return;
        }
        if depth > 0 || is_list_item(text.as_bytes()) {
            self.para = Some(Paragraph { line: line_no, start: offset, nested: true });
        } else if self.para.is_none() {
            self.para = Some(Paragraph { line: line_no, start: offset, nested: ws > 0 });
        }
        if let Some(id) = block_id(line) {
            self.out.block_ids.push(id.to_owned());
        }
        self.inline(line, 0, line_no);
    }

    /// Scans `line[from..]` for code spans, links and tags.
    fn inline(&mut self, line: &str, from: usize, line_no: u32) {
        let b = line.as_bytes();
        let mut i = from;
        let mut escaped = usize::MAX;
        let mut code_closers = CodeCloserCache::default();
        // Bytes the code-span and Markdown-link searches may still read on this line:
        // a linear bound however hostile the line.
        let mut budget = b.len().saturating_mul(8).saturating_add(4 * MAX_LINK_SPAN);
        // Set when no `[[` / `]]` exists at or after this offset.
        let mut no_brackets_from = usize::MAX;
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
                        Some(end) => end,
                        None => i + run,
                    };
                }
                b'[' => {
                    let embed = i > 0 && b[i - 1] == b'!' && escaped != i - 1;
                    if b.get(i + 1) == Some(&b'[') {
                        if i + 2 >= no_brackets_from {
                            i += 1;
                            continue;
                        }
                        match find_double_bracket(b, i + 2) {
                            Some((close, true)) => {
                                if let Some((target, anchor, display)) = parse_wikilink(&line[i + 2..close]) {
                                    let kind = if embed { LinkKind::Embed } else { LinkKind::Wikilink };
                                    self.out.links.push(Link {
                                        target,
                                        anchor,
                                        display,
                                        kind,
                                        line: line_no,
                                    });
                                    i = close + 2;
                                    continue;
                                }
                            }
                            Some((_, false)) => {}
                            None => no_brackets_from = i + 2,
                        }
                    }
                    if let Some(link) = parse_markdown_link(line, i, &mut budget) {
                        if let Some((target, anchor)) = markdown_target(&link.destination, self.folder) {
                            let display = Some(link.text.trim()).filter(|s| !s.is_empty()).map(str::to_owned);
                            let kind = if embed { LinkKind::Embed } else { LinkKind::Markdown };
                            self.out.links.push(Link { target, anchor, display, kind, line: line_no });
                        }
                        i = link.end;
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
                        self.out.tags.push(tag.to_owned());
                        i = end;
                        continue;
                    }
                    i += 1;
                }
            }
        }
    }
}

/// Bytes the inline scan stops at.
static SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    table[b'\\' as usize] = true;
    table[b'`' as usize] = true;
    table[b'[' as usize] = true;
    table[b'#' as usize] = true;
    table
};

/// Blockquote depth of a line and the offset after its `>` markers.
fn quote_prefix(b: &[u8]) -> (usize, usize) {
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
fn indent_columns(ws: &[u8]) -> usize {
    ws.iter().fold(0, |col, &c| if c == b'\t' { col + 4 - col % 4 } else { col + 1 })
}

/// An opening fence: three or more backticks (whose info string has no backtick) or
/// tildes. Returns the marker and the run length.
fn opens_fence(text: &[u8]) -> Option<(u8, usize)> {
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

/// Whether a line (after its quote markers) closes `fence`: the same marker, at least
/// as long, nothing but whitespace after.
fn closes_fence(text: &[u8], fence: Fence) -> bool {
    let start = text.iter().take_while(|&&c| matches!(c, b' ' | b'\t')).count();
    let text = &text[start..];
    let len = text.iter().take_while(|&&c| c == fence.marker).count();
    len >= fence.len && text[len..].iter().all(|&c| matches!(c, b' ' | b'\t'))
}

/// A line that is an ATX heading on its own (at most three columns of indent, as
/// the scanner reads one at the top level): its level and text.
pub(super) fn atx_heading_line(line: &str) -> Option<(u8, String)> {
    let ws = line.bytes().take_while(|b| matches!(b, b' ' | b'\t')).count();
    if indent_columns(&line.as_bytes()[..ws]) > 3 {
        return None;
    }
    atx_heading(&line[ws..]).map(|(level, content)| (level, heading_text(content)))
}

/// An ATX heading: level and the text after the marker (still untrimmed).
fn atx_heading(text: &str) -> Option<(u8, &str)> {
    let b = text.as_bytes();
    let level = b.iter().take(7).take_while(|&&c| c == b'#').count();
    if level == 0 || level > 6 || !matches!(b.get(level), None | Some(b' ' | b'\t')) {
        return None;
    }
    Some((u8::try_from(level).unwrap_or(6), &text[level..]))
}

/// A heading's text: trimmed, without a closing run of `#`.
fn heading_text(content: &str) -> String {
    let trimmed = content.trim();
    let without = trimmed.trim_end_matches('#');
    if without.is_empty() {
        String::new()
    } else if without.ends_with([' ', '\t']) {
        without.trim_end().to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// A setext underline: a run of `=` (level 1) or `-` (level 2), then only whitespace.
fn setext_underline(text: &[u8]) -> Option<u8> {
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
fn join_lines(lines: &str) -> String {
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
fn is_thematic_break(text: &[u8]) -> bool {
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

/// `- x`, `* x`, `+ x`, `1. x`, `1) x` (or the marker alone).
fn is_list_item(text: &[u8]) -> bool {
    let marker_end = match text.first() {
        Some(b'-' | b'*' | b'+') => 1,
        Some(c) if c.is_ascii_digit() => {
            let digits = text.iter().take(10).take_while(|c| c.is_ascii_digit()).count();
            if !matches!(text.get(digits), Some(b'.' | b')')) {
                return false;
            }
            digits + 1
        }
        _ => return false,
    };
    matches!(text.get(marker_end), None | Some(b' ' | b'\t'))
}

/// A block id `^id` ending the line, after whitespace or alone on it.
fn block_id(line: &str) -> Option<&str> {
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
    Some(&t[caret + 1..])
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
        let found = self.search(b, from, run);
        *budget = budget.saturating_sub(found.unwrap_or(b.len()).saturating_sub(from));
        if found.is_none() {
            self.missing |= bit;
        }
        found
    }

    fn search(&self, b: &[u8], from: usize, run: usize) -> Option<usize> {
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

/// Splits the inside of `[[…]]` into target, anchor and display text.
fn parse_wikilink(inner: &str) -> Option<(String, Option<Anchor>, Option<String>)> {
    let (left, display) = match inner.split_once('|') {
        Some((left, display)) => (left.strip_suffix('\\').unwrap_or(left), Some(display)),
        None => (inner, None),
    };
    let (target, anchor) = match left.split_once('#') {
        Some((target, anchor)) => (target, make_anchor(anchor.trim())),
        None => (left, None),
    };
    let target = target.trim();
    if target.is_empty() && anchor.is_none() {
        return None;
    }
    let display = display.map(str::trim).filter(|d| !d.is_empty()).map(str::to_owned);
    Some((target.to_owned(), anchor, display))
}

/// `^id` is a block anchor, anything else a heading; empty is none.
fn make_anchor(anchor: &str) -> Option<Anchor> {
    if anchor.is_empty() {
        None
    } else if let Some(block) = anchor.strip_prefix('^') {
        Some(Anchor::Block(block.trim().to_owned()))
    } else {
        Some(Anchor::Heading(anchor.to_owned()))
    }
}

/// A `[text](destination "title")` at `start` (the `[`).
struct MarkdownLink<'a> {
    text: &'a str,
    destination: String,
    /// Offset after the closing `)`.
    end: usize,
}

/// Parses a Markdown link at `start`, charging the bytes it reads to `budget`.
fn parse_markdown_link<'a>(line: &'a str, start: usize, budget: &mut usize) -> Option<MarkdownLink<'a>> {
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
fn markdown_link_at<'a>(line: &'a str, c: &mut Cursor<'_>) -> Option<MarkdownLink<'a>> {
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
    let text = &line[start + 1..close];
    c.advance(1);
    let limit = c.b.len().min(c.at + MAX_LINK_SPAN);
    c.skip_spaces();
    let destination = if c.peek() == Some(b'<') {
        c.advance(1);
        let dest_start = c.at;
        loop {
            match c.b.get(c.at).copied().filter(|_| c.at < limit)? {
                b'>' => break,
                b'<' => return None,
                _ => c.advance(1),
            }
        }
        let destination = unescape(&line[dest_start..c.at]);
        c.advance(1);
        destination
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
        unescape(&line[dest_start..c.at])
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
    Some(MarkdownLink { text, destination, end: c.at + 1 })
}

/// Removes backslash escapes before ASCII punctuation.
fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && next.is_ascii_punctuation()
        {
            out.push(next);
            chars.next();
        } else {
            out.push(c);
        }
    }
    out
}

/// The vault-relative target and anchor of a local Markdown link, `None` for external
/// links (a URL scheme or `//host`) and empty destinations.
fn markdown_target(destination: &str, folder: &str) -> Option<(String, Option<Anchor>)> {
    if destination.is_empty() || destination.starts_with("//") || has_scheme(destination) {
        return None;
    }
    let (path, fragment) = match destination.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (destination, None),
    };
    let anchor = fragment.and_then(|f| make_anchor(percent_decode(f).trim()));
    let path = percent_decode(path);
    if path.is_empty() {
        return anchor.map(|anchor| (String::new(), Some(anchor)));
    }
    Some((resolve_relative(&path, folder).unwrap_or(path), anchor))
}

/// `scheme:` as in RFC 3986, at least two characters (so `C:` is not one).
fn has_scheme(s: &str) -> bool {
    let b = s.as_bytes();
    let len = b.iter().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-')).count();
    len >= 2 && b[0].is_ascii_alphabetic() && b.get(len) == Some(&b':')
}

/// Decodes `%XX` escapes; invalid UTF-8 after decoding leaves the text as written.
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    String::from_utf8(crate::sandbox::percent_decode(s.as_bytes())).unwrap_or_else(|_| s.to_owned())
}

/// Resolves a link path against the note's folder (`/` starts at the vault root);
/// `None` when `..` would leave the vault.
fn resolve_relative(path: &str, folder: &str) -> Option<String> {
    let mut segments: Vec<&str> = Vec::new();
    let rest = match path.strip_prefix('/') {
        Some(rest) => rest,
        None => {
            segments.extend(folder.split('/').filter(|s| !s.is_empty()));
            path
        }
    };
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop()?;
            }
            other => segments.push(other),
        }
    }
    Some(segments.join("/"))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids() {
        assert_eq!(block_id("text ^abc-1"), Some("abc-1"));
        assert_eq!(block_id("^abc"), Some("abc"));
        assert_eq!(block_id("x^2"), None);
        assert_eq!(block_id("[^1]"), None);
        assert_eq!(block_id("text ^"), None);
        assert_eq!(block_id("text ^ab_c"), None);
    }

    #[test]
    fn relative_paths() {
        assert_eq!(resolve_relative("a.md", "z").as_deref(), Some("z/a.md"));
        assert_eq!(resolve_relative("../b.md", "z/x").as_deref(), Some("z/b.md"));
        assert_eq!(resolve_relative("/b.md", "z/x").as_deref(), Some("b.md"));
        assert_eq!(resolve_relative("../../b.md", "z"), None);
        assert_eq!(percent_decode("a%20b%E5%A4%87"), "a b备");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%FF"), "%FF");
    }

    #[test]
    fn schemes() {
        assert!(has_scheme("https://x"));
        assert!(has_scheme("mailto:a@b"));
        assert!(has_scheme("obsidian://open"));
        assert!(!has_scheme("C:/x"));
        assert!(!has_scheme("a.md"));
    }

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
