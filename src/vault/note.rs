//! A parsed note: the data every other layer reads.

use serde::Serialize;

use crate::sandbox::NotePath;

/// A heading of a note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Heading {
    /// 1 to 6.
    pub level: u8,
    /// The heading text without the `#` marks, trimmed.
    pub text: String,
    /// 1-based line in the file as on disk.
    pub line: u32,
}

/// How a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// `[[target]]`, `[[target|shown]]`, `[[target#heading]]`.
    Wikilink,
    /// `![[target]]`.
    Embed,
    /// `[text](relative.md)`.
    Markdown,
}

/// The part of a link after `#`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// `#Heading text`.
    Heading(String),
    /// `#^block-id`.
    Block(String),
}

/// A link from a note, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// 1-based line in the file as on disk.
    pub line: u32,
    /// The line around the link, trimmed and cut to at most 160 characters.
    pub context: String,
}

/// Something odd found while parsing, reported rather than failed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// Frontmatter `title`, else the first H1, else the file name without `.md`.
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
    /// Links in file order, ignoring code blocks and inline code.
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
}

/// Decodes a file's bytes as UTF-8 text. A UTF-8 BOM is kept in the text (offsets and
/// hashes stay those of the file); the parser skips it. Anything that is not UTF-8
/// (UTF-16, Latin-1, binary) is a diagnostic, not garbage in the index.
pub fn decode_note(bytes: &[u8]) -> Result<&str, Diagnostic> {
    let _ = bytes;
    todo!()
}

/// Parses a note's text. Total: never fails, never panics.
pub fn parse_note(path: &NotePath, text: &str) -> Note {
    let _ = (path, text);
    todo!()
}
