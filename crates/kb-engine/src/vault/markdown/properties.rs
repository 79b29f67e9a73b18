//! Links in frontmatter properties: `up: "[[Note]]"`, `related: ["[[A]]",
//! "[[B|see B]]"]`, a block list of `- "[[C#Heading]]"` items. Obsidian reads a
//! text or list property whose value is a quoted `[[…]]` as an internal link
//! (its help on properties says so), follows it, lists it as a backlink and
//! rewrites it on a rename; so does the vault here, as links of kind
//! `property`, each with its exact byte spans and its line in the file.
//!
//! What counts, the way Obsidian reads it:
//!
//! - a value that is exactly one wikilink (`[[target]]`, `[[target|shown]]`,
//!   `[[target#Heading]]`, `[[target#^block]]`), written in quotes, as a key's
//!   value or as an item of its list (flow `[…]` or block `- …`). Unquoted,
//!   `[[x]]` is YAML for a list holding a list holding `x`: Obsidian shows it as
//!   a list, not as a link, and so it is no link here either. Text around a
//!   link, an embed (`![[x]]`) or a Markdown link in a property is not a link;
//! - under every top-level key but `aliases`/`alias` (names a note answers to,
//!   not links), `tags`/`tag` and `cssclasses`/`cssclass` (Obsidian's own
//!   property types, never links), in any case; values nested deeper (a mapping
//!   under a key) are not properties Obsidian shows as links.
//!
//! **Where.** A lexical pass over each key's lines (from [`frontmatter_keys`])
//! finds its quoted values and their spans, skipping comments; the YAML parser's
//! value of the key confirms them: the key's link values, in order, must be
//! exactly those the pass found, or none of the key's values is read as a link
//! (an anchor, a tag, a block scalar: shapes the pass does not follow). A span
//! is so never a guess, and [`parse_note`](crate::vault::parse_note) and
//! [`note_spans`](super::note_spans) read the same links from the same parse.
//!
//! **Escapes.** In a single-quoted value `''` is read as `'`; a double-quoted
//! value holding a backslash escape or a line break (its bytes are not its
//! text) is no link. A rewrite writes its bytes through [`LinkSpan::encode`].

use std::ops::Range;

use serde_json::{Map, Value};

use super::link_syntax::{make_anchor, parse_wikilink};
use super::{LinkSpan, PropertyQuote, Span};
use crate::vault::keys::frontmatter_keys;
use crate::vault::note::LinkKind;

/// Keys whose values are never links: names (`aliases`) and Obsidian's own
/// property types (`tags`, `cssclasses`), with their singular forms.
const NOT_LINKS: [&str; 6] = ["aliases", "alias", "tags", "tag", "cssclasses", "cssclass"];

/// The links in the properties of a note's frontmatter (`yaml`: the byte range
/// of its YAML in `text`; `map`: the YAML as parsed), in file order.
pub(crate) fn property_links(text: &str, yaml: Range<usize>, map: &Map<String, Value>) -> Vec<LinkSpan> {
    let Some(block) = text.get(yaml) else { return Vec::new() };
    if !block.contains("[[") {
        return Vec::new();
    }
    let mut lines = LineCounter::default();
    let mut out = Vec::new();
    for key in frontmatter_keys(text) {
        if NOT_LINKS.iter().any(|name| name.eq_ignore_ascii_case(&key.key)) {
            continue;
        }
        let Some(value) = map.get(&key.key) else { continue };
        let expected = link_values(value);
        if expected.is_empty() {
            continue;
        }
        let region = Span { start: key.span.end, end: key.entry.end };
        let found: Vec<Quoted> =
            quoted_values(text, region).into_iter().filter(|quoted| is_whole_link(&quoted.text)).collect();
        if !found.iter().map(|quoted| quoted.text.as_str()).eq(expected.iter().copied()) {
            continue;
        }
        for quoted in found.iter().filter(|quoted| quoted.exact) {
            let line = lines.line_at(text, quoted.inner.start);
            if let Some(link) = property_link(text, quoted, line) {
                out.push(link);
            }
        }
    }
    out
}

/// The values of a key that are one link each: the key's string, or the
/// strings of its list, in order.
fn link_values(value: &Value) -> Vec<&str> {
    let strings: Vec<&str> = match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    strings.into_iter().filter(|s| is_whole_link(s)).collect()
}

/// Whether a value is exactly one wikilink: `[[` … `]]` with no other `[[` or
/// `]]` inside.
fn is_whole_link(value: &str) -> bool {
    let Some(inner) = value.strip_prefix("[[").and_then(|rest| rest.strip_suffix("]]")) else {
        return false;
    };
    !inner.contains("[[") && !inner.contains("]]")
}

/// A quoted scalar of a key's entry.
struct Quoted {
    /// Its bytes between the quotes.
    inner: Span,
    /// Its text as YAML reads it.
    text: String,
    /// The quote it is written in.
    quote: PropertyQuote,
    /// Whether its bytes map onto its text one to one (but `''`, read as `'`).
    exact: bool,
}

/// The quoted scalars of a key's entry (`region`: from the end of the key as
/// written to the end of its last line) that stand as the key's value or as an
/// item of its list, outside comments, in order.
fn quoted_values(text: &str, region: Span) -> Vec<Quoted> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut flow, mut mapping) = (0usize, 0usize);
    // The last byte outside whitespace, comments and quotes.
    let mut significant = 0u8;
    let mut i = region.start;
    while i < region.end {
        let b = bytes[i];
        let before = if i > region.start { bytes[i - 1] } else { b'\n' };
        let token_start = matches!(before, b' ' | b'\t' | b'\n' | b'\r' | b'[' | b',');
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'#' if matches!(before, b' ' | b'\t' | b'\n' | b'\r') => {
                while i < region.end && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' if token_start => {
                let Some((quoted, end)) = quoted_at(text, i, region.end) else { break };
                let stands = match significant {
                    b':' | b'-' => flow == 0,
                    b'[' | b',' => flow == 1 && mapping == 0,
                    _ => false,
                };
                if stands {
                    out.push(quoted);
                }
                significant = b;
                i = end;
                continue;
            }
            b'[' | b'{' if token_start || before == b':' => {
                flow += 1;
                mapping += usize::from(b == b'{');
                significant = b;
            }
            b']' | b'}' => {
                flow = flow.saturating_sub(1);
                if b == b'}' {
                    mapping = mapping.saturating_sub(1);
                }
                significant = b;
            }
            _ => significant = b,
        }
        i += 1;
    }
    out
}

/// The quoted scalar opening at `start` (on its quote) and the offset after its
/// closing quote; `None` when it does not close before `end`.
fn quoted_at(text: &str, start: usize, end: usize) -> Option<(Quoted, usize)> {
    let bytes = text.as_bytes();
    let quote = bytes[start];
    let mut i = start + 1;
    let mut exact = true;
    let mut decoded = String::new();
    let mut from = start + 1;
    while i < end {
        match bytes[i] {
            b'\\' if quote == b'"' => {
                exact = false;
                i += 2;
                continue;
            }
            b'\n' | b'\r' => exact = false,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => {
                decoded.push_str(&text[from..=i]);
                i += 2;
                from = i;
                continue;
            }
            c if c == quote => {
                let inner = Span { start: start + 1, end: i };
                let text_of = if exact {
                    decoded.push_str(&text[from..i]);
                    decoded
                } else {
                    // Read as YAML reads it, to match the parsed value; never a span.
                    yaml_serde::from_str::<String>(&text[start..=i]).unwrap_or_default()
                };
                let quote = if quote == b'"' { PropertyQuote::Double } else { PropertyQuote::Single };
                return Some((Quoted { inner, text: text_of, quote, exact }, i + 1));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The link a quoted value holds (`line`: the file line it is on).
fn property_link(text: &str, quoted: &Quoted, line: u32) -> Option<LinkSpan> {
    let Span { start, end } = quoted.inner;
    let mut link = parse_wikilink(text, start + 2, end - 2, false, line)?;
    link.span = Span { start, end };
    link.link.kind = LinkKind::Property;
    link.quote = Some(quoted.quote);
    if quoted.quote == PropertyQuote::Single && text[start..end].contains("''") {
        // The parts as YAML reads them; the spans stay those of the bytes.
        let read = |span: Span| span.of(text).replace("''", "'");
        link.link.target = read(link.target);
        link.link.display = link.display.map(read);
        link.link.anchor = link.anchor.and_then(|anchor| make_anchor(&read(anchor)));
    }
    Some(link)
}

/// File lines of increasing offsets, counted once over the text.
#[derive(Default)]
struct LineCounter {
    at: usize,
    line: u32,
}

impl LineCounter {
    /// The 1-based line of `offset` (never before the last asked for).
    fn line_at(&mut self, text: &str, offset: usize) -> u32 {
        if self.line == 0 {
            self.line = 1;
        }
        let offset = offset.max(self.at);
        let newlines = text[self.at..offset].bytes().filter(|&b| b == b'\n').count();
        self.line = self.line.saturating_add(u32::try_from(newlines).unwrap_or(u32::MAX));
        self.at = offset;
        self.line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The property links of `text`, written `line: bytes -> target#anchor|display`
    /// (the anchor as written, the target and display text as read).
    fn check(text: &str, expected: &[&str]) {
        let found = crate::vault::frontmatter::scan(text);
        let crate::vault::frontmatter::Scan::Found { frontmatter, .. } = found else {
            panic!("no frontmatter in {text:?}")
        };
        let map = frontmatter.value.as_object().cloned().unwrap_or_default();
        let links = property_links(text, frontmatter.yaml, &map);
        let got: Vec<String> = links
            .iter()
            .map(|l| {
                let anchor = l.anchor.map(|a| format!("#{}", a.of(text))).unwrap_or_default();
                let display = l.link.display.as_ref().map(|d| format!("|{d}")).unwrap_or_default();
                format!("{}: {} -> {}{anchor}{display}", l.link.line, l.span.of(text), l.link.target)
            })
            .collect();
        assert_eq!(got, expected, "links of {text:?}");
        assert!(links.iter().all(|l| l.link.kind == LinkKind::Property));
    }

    #[test]
    fn quoted_values_and_list_items_are_links() {
        check(
            "---\nrelated: \"[[A]]\"\nup: [\"[[B]]\", '[[C|see C]]'] # [[not]]\nnext:\n  - \"[[D#Setup]]\"\n  \
             - plain\n  - '[[E#^blk]]'\n---\n[[body]]\n",
            &[
                "2: [[A]] -> A",
                "3: [[B]] -> B",
                "3: [[C|see C]] -> C|see C",
                "5: [[D#Setup]] -> D#Setup",
                "7: [[E#^blk]] -> E#^blk",
            ],
        );
    }

    #[test]
    fn what_is_no_link() {
        // Unquoted (a nested list), names and tags, text around a link, an
        // embed, a comment, a nested mapping, an escape, a block scalar.
        check(
            "---\nup: [[A]]\naliases: [\"[[B]]\"]\nTags: \"[[C]]\"\ncssclasses: ['[[D]]']\nnote: \"see [[E]]\"\n\
             pic: \"![[F]]\"\n# old: \"[[G]]\"\nmeta:\n  up: \"[[H]]\"\nesc: \"[[I\\u0041]]\"\nblock: |\n  \"[[J]]\"\n\
             anchored: &a \"[[K]]\"\n---\n",
            &[],
        );
        // Broken YAML: Obsidian reads no property.
        check("---\nup: \"[[A]]\"\nup: [\n---\n", &[]);
    }

    #[test]
    fn a_single_quoted_value_reads_its_doubled_quote() {
        let text = "---\nup: '[[Bob''s note#It''s|Bob''s]]'\n---\n";
        check(text, &["2: [[Bob''s note#It''s|Bob''s]] -> Bob's note#It''s|Bob's"]);
    }
}
