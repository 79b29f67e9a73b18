//! A parsed note: the data every other layer reads.
//!
//! [`decode_note`] turns a file's bytes into text or says why it cannot (UTF-16,
//! legacy encodings, binary); [`parse_note`] turns text into a [`Note`] and never
//! fails: the frontmatter module reads the metadata, the Markdown scanner the body,
//! and whatever looks wrong becomes a [`Diagnostic`] on the note.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::canvas::is_canvas;
use super::canvas_note::{parse_canvas, read_canvas};
use super::frontmatter::{self, Scan};
use super::markdown;
use crate::sandbox::NotePath;

/// A heading of a note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heading {
    /// 1 to 6.
    pub level: u8,
    /// The heading text without the `#` marks, trimmed.
    pub text: String,
    /// 1-based line in the file as on disk.
    pub line: u32,
}

/// How a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// `[[target]]`, `[[target|shown]]`, `[[target#heading]]`.
    Wikilink,
    /// `![[target]]`.
    Embed,
    /// `[text](relative.md)`.
    Markdown,
    /// `"[[target]]"` as a frontmatter property's value or list item (`up:
    /// "[[target]]"`), as Obsidian reads it; written in quotes. Resolved and
    /// rewritten as a wikilink. An extension of the contract's three kinds.
    Property,
    /// A canvas's file node (or group background): the exact vault path it
    /// names, resolved like a Markdown link's. An extension of the contract's
    /// kinds.
    Canvas,
}

impl LinkKind {
    /// Its name in results: `wikilink`, `embed`, `markdown`, `property`.
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::Wikilink => "wikilink",
            LinkKind::Embed => "embed",
            LinkKind::Markdown => "markdown",
            LinkKind::Property => "property",
            LinkKind::Canvas => "canvas",
        }
    }

    /// Whether the target is a vault path as written (a Markdown link's or a
    /// canvas file node's), not a name to look up.
    pub fn is_path(self) -> bool {
        matches!(self, LinkKind::Markdown | LinkKind::Canvas)
    }
}

impl std::fmt::Display for LinkKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The part of a link after `#`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// `#Heading text`.
    Heading(String),
    /// `#^block-id`.
    Block(String),
}

/// A link from a note, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The target without anchor or display text, e.g. `备份仓库` or `tech/git/remote`;
    /// empty for a same-note link `[[#heading]]`. Markdown links are percent-decoded
    /// and made vault-relative (resolved against the note's folder).
    pub target: String,
    /// The heading or block the link points at.
    pub anchor: Option<Anchor>,
    /// The display text (`[[target|shown]]`, `[shown](x.md)`).
    pub display: Option<String>,
    /// How it was written.
    pub kind: LinkKind,
    /// 1-based line in the file as on disk. A backlink's context is cut from
    /// that line when it is shown ([`link_context`]); no note keeps it.
    pub line: u32,
}

/// Something odd found while parsing, reported rather than failed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// 1-based line, when the problem has one.
    pub line: Option<u32>,
    /// What was odd, e.g. "frontmatter is not valid YAML: ...".
    pub message: String,
}

/// A parsed note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    /// Its vault-relative path.
    pub path: NotePath,
    /// Frontmatter `title`, else an H1 that opens the note (its first content
    /// line after the frontmatter), else the file name without `.md`. A closing
    /// `# References` never names a note.
    pub title: String,
    /// Frontmatter `aliases` (list or single string), in order, without duplicates.
    pub aliases: Vec<String>,
    /// Frontmatter `tags` and inline `#tags`, without `#`, sorted, without duplicates.
    pub tags: Vec<String>,
    /// Frontmatter `description`, else `summary`, else empty.
    pub description: String,
    /// Frontmatter `created`, else `date`, as RFC 3339 (dates become midnight UTC); `None` when absent or unparsable.
    pub created: Option<String>,
    /// The frontmatter as JSON (an empty object when there is none or it is invalid).
    pub frontmatter: serde_json::Value,
    /// Headings in file order.
    pub headings: Vec<Heading>,
    /// Links in file order: in frontmatter properties (see [`LinkKind::Property`]),
    /// then in the body, ignoring code blocks and inline code.
    pub links: Vec<Link>,
    /// Block ids (`^id` at the end of a line), in file order.
    pub block_ids: Vec<String>,
    /// Byte offset where the body starts (after the frontmatter and a BOM).
    pub body_offset: usize,
    /// 1-based line where the body starts.
    pub body_line: u32,
    /// What was odd about the note.
    pub diagnostics: Vec<Diagnostic>,
}

impl Note {
    /// The body text (everything after the frontmatter) of the text this note was parsed from.
    pub fn body<'a>(&self, text: &'a str) -> &'a str {
        text.get(self.body_offset..).unwrap_or("")
    }

    /// The text to index: the body, for an Excalidraw drawing only its words
    /// (see `drawing_text`), for a canvas its text nodes (see `canvas_note`).
    pub(crate) fn index_body<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if is_canvas(self.path.as_str()) {
            return std::borrow::Cow::Owned(read_canvas(text).text);
        }
        let body = self.body(text);
        if is_drawing(&self.path) { std::borrow::Cow::Owned(drawing_text(body)) } else { body.into() }
    }
}

/// Whether a note is an Excalidraw drawing (`*.excalidraw.md`).
fn is_drawing(path: &NotePath) -> bool {
    drawing_name(path).is_some()
}

/// A drawing's name: its file name without `.excalidraw.md` (any case).
fn drawing_name(path: &NotePath) -> Option<&str> {
    let stem = path.stem();
    let cut = stem.len().checked_sub(".excalidraw".len())?;
    (stem.is_char_boundary(cut) && stem[cut..].eq_ignore_ascii_case(".excalidraw") && cut > 0)
        .then(|| &stem[..cut])
}

/// The headings the Excalidraw plugin writes to hold its data, not the person's words.
const DRAWING_HEADINGS: [&str; 5] =
    ["excalidraw data", "text elements", "element links", "embedded files", "drawing"];

/// The words of an Excalidraw drawing's body: any Markdown the person wrote and
/// the `Text Elements` section, without the plugin's warning line, its headings,
/// element ids (`^id`), its link and embedded-file tables, `%%` comment blocks
/// and code blocks (the compressed drawing data).
fn drawing_text(body: &str) -> String {
    let mut out = String::new();
    let (mut comment, mut fence, mut table) = (false, None::<&str>, false);
    for line in body.lines() {
        let trimmed = line.trim();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if trimmed == "%%" {
            comment = !comment;
            continue;
        }
        if comment {
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        if trimmed.starts_with("==⚠") {
            continue;
        }
        if trimmed.starts_with('#') {
            let text = trimmed.trim_start_matches('#').trim();
            let key = heading_key(text);
            if DRAWING_HEADINGS.contains(&key.as_str()) {
                table = matches!(key.as_str(), "element links" | "embedded files");
                continue;
            }
            table = false;
        }
        if table {
            continue;
        }
        out.push_str(strip_block_id(line));
        out.push('\n');
    }
    out
}

/// A line without a trailing ` ^block-id`.
fn strip_block_id(line: &str) -> &str {
    let trimmed = line.trim_end();
    match trimmed.rsplit_once(" ^") {
        Some((before, id)) if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            before
        }
        _ => trimmed,
    }
}

/// The byte order mark a note's text may start with. It is kept in the text
/// ([`decode_note`]), so offsets and hashes stay the file's; whatever reads or
/// edits the text skips it ([`bom_len`]) and never adds or drops one.
pub(crate) const BOM: char = '\u{feff}';

/// Length of a BOM at the start of `text` (0 or 3 bytes): where its content starts.
pub(crate) fn bom_len(text: &str) -> usize {
    if text.starts_with(BOM) { BOM.len_utf8() } else { 0 }
}

/// Decodes a file's bytes as UTF-8 text. A UTF-8 BOM is kept in the text (offsets and
/// hashes stay those of the file); the parser skips it. Anything that is not UTF-8
/// (UTF-16, Latin-1, binary) is a diagnostic, not garbage in the index.
pub fn decode_note(bytes: &[u8]) -> Result<&str, Diagnostic> {
    let refuse = |what: &str, line: Option<u32>| {
        Err(Diagnostic {
            line,
            message: format!("not UTF-8 ({what}); convert the file to UTF-8 to index it"),
        })
    };
    if bytes.starts_with(&[0xFF, 0xFE, 0, 0]) {
        return refuse("looks like UTF-32LE: it starts with a UTF-32LE byte order mark", None);
    }
    if bytes.starts_with(&[0, 0, 0xFE, 0xFF]) {
        return refuse("looks like UTF-32BE: it starts with a UTF-32BE byte order mark", None);
    }
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return refuse("looks like UTF-16LE: it starts with a UTF-16LE byte order mark", None);
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return refuse("looks like UTF-16BE: it starts with a UTF-16BE byte order mark", None);
    }
    let head = &bytes[..bytes.len().min(8192)];
    if let Some(first) = head.iter().position(|&b| b == 0) {
        let even = head.iter().step_by(2).filter(|&&b| b == 0).count();
        let odd = head.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
        let quarter = head.len() / 4;
        let guess = if odd > quarter && even * 4 < odd {
            "looks like UTF-16LE"
        } else if even > quarter && odd * 4 < even {
            "looks like UTF-16BE"
        } else {
            "looks like binary data"
        };
        return refuse(&format!("{guess}: NUL byte at offset {first}"), Some(line_at(bytes, first)));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(err) => {
            let at = err.valid_up_to();
            let byte = bytes.get(at).copied().unwrap_or_default();
            refuse(
                &format!(
                    "invalid byte 0x{byte:02X} at offset {at}; perhaps Latin-1, GBK or another legacy encoding"
                ),
                Some(line_at(bytes, at)),
            )
        }
    }
}

/// The 1-based line of a byte offset.
fn line_at(bytes: &[u8], offset: usize) -> u32 {
    let newlines = bytes[..offset.min(bytes.len())].iter().filter(|&&b| b == b'\n').count();
    u32::try_from(newlines).unwrap_or(u32::MAX).saturating_add(1)
}

/// A heading's comparison key: case-insensitive, whitespace collapsed. Link
/// anchors, `read_note` sections and patch section edits all find a heading by it.
pub fn heading_key(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// A link's context: the line that holds it, trimmed and cut to at most 160
/// characters.
pub fn link_context(line: &str) -> String {
    markdown::make_context(line)
}

/// The byte offset where a note's body starts (after the frontmatter), the
/// same as [`parse_note`]'s `body_offset` at a fraction of its cost.
pub fn body_offset(text: &str) -> usize {
    frontmatter::body_offset(text)
}

/// Parses a note's text (a canvas's as `canvas_note` reads it). Total: never
/// fails, never panics.
pub fn parse_note(path: &NotePath, text: &str) -> Note {
    if is_canvas(path.as_str()) {
        return parse_canvas(path, text);
    }
    let mut diagnostics = Vec::new();
    let bom = bom_len(text);
    let (map, yaml_range, body_offset, body_line) = match frontmatter::scan(text) {
        Scan::Absent => (Map::new(), 0..0, bom, 1),
        Scan::Unclosed => {
            diagnostics.push(Diagnostic {
                line: Some(1),
                message: "frontmatter opened by `---` on line 1 is never closed by a `---` line; \
                          the whole file is read as body"
                    .to_owned(),
            });
            (Map::new(), 0..0, bom, 1)
        }
        Scan::Found { frontmatter, error_line } => {
            if let Some(error) = frontmatter.error {
                diagnostics.push(Diagnostic { line: error_line, message: error });
            }
            let map = match frontmatter.value {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            (map, frontmatter.yaml, frontmatter.end, frontmatter.body_line)
        }
    };
    let yaml = &text[yaml_range.clone()];
    if let Some((message, line)) = frontmatter::tag_comment_problem(&map, yaml) {
        diagnostics.push(Diagnostic { line: Some(line), message });
    }
    let (created, problems) = frontmatter::created(&map, yaml);
    diagnostics.extend(problems.into_iter().map(|(message, line)| Diagnostic { line, message }));

    let mut links: Vec<Link> =
        markdown::property_links(text, yaml_range, &map).into_iter().map(|l| l.link).collect();
    let scanned = markdown::scan(text, body_offset, body_line, path.parent());
    diagnostics.extend(scanned.diagnostics);
    links.extend(scanned.links.into_iter().map(|l| l.link));

    let drawing = drawing_name(path);
    let mut headings: Vec<Heading> = scanned.headings.into_iter().map(|h| h.heading).collect();
    if drawing.is_some() {
        // The plugin's own headings are not the drawing's outline (nor its title).
        headings.retain(|h| !DRAWING_HEADINGS.contains(&heading_key(&h.text).as_str()));
    }
    let title = frontmatter::title(&map)
        .or_else(|| opening_h1(&text[body_offset..], body_line, &headings))
        .unwrap_or_else(|| drawing.unwrap_or(path.stem()).to_owned());
    let mut tags = frontmatter::tags(&map);
    tags.extend(scanned.tags.into_iter().map(|t| t.tag));
    Note {
        path: path.clone(),
        title,
        aliases: frontmatter::aliases(&map),
        tags: dedupe_tags(tags),
        description: frontmatter::description(&map),
        created,
        frontmatter: Value::Object(map),
        headings,
        links,
        block_ids: scanned.block_ids.into_iter().map(|b| b.id).collect(),
        body_offset,
        body_line,
        diagnostics,
    }
}

/// The text of the H1 on the body's first non-blank line, if that line is one
/// (ATX `# Title` or the text line of a setext `Title` / `===`).
fn opening_h1(body: &str, body_line: u32, headings: &[Heading]) -> Option<String> {
    let body = &body[bom_len(body)..];
    let blank_lines = body.lines().take_while(|line| line.trim().is_empty()).count();
    let first = body_line.saturating_add(u32::try_from(blank_lines).unwrap_or(u32::MAX));
    headings.iter().find(|h| h.line == first && h.level == 1 && !h.text.is_empty()).map(|h| h.text.clone())
}

/// Drops repeats ignoring case (the first spelling wins), then sorts by bytes.
fn dedupe_tags(tags: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::with_capacity(tags.len());
    let mut out: Vec<String> = tags.into_iter().filter(|tag| seen.insert(tag.to_lowercase())).collect();
    out.sort_unstable();
    out
}
