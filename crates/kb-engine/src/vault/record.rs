//! [`NoteRecord`]: what the index remembers about a file between runs.
//!
//! A record is the manifest entry of a file (size, modification time, content
//! hash) together with the parts of its parse that listings, tags and the link
//! graph need. Records are stored in the index beside the searchable fields, so
//! the manifest and the index are committed together and can never disagree, and
//! a server starts without re-reading the vault.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Diagnostic, Headings, Links, Note};
use crate::sandbox::{hex, strip_md};

/// Which readable area a file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// A note in a notes root.
    Note,
    /// A standard (read-only, listed by `list_standards`).
    Standard,
    /// A file in a `read_also` folder.
    ReadAlso,
}

/// The manifest entry and parse summary of one Markdown file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteRecord {
    /// Vault-relative path.
    pub path: String,
    /// Its area.
    pub kind: NoteKind,
    /// Size in bytes when indexed.
    pub size: u64,
    /// Modification time when indexed, nanoseconds since the Unix epoch.
    pub modified_ns: i64,
    /// Birth time, nanoseconds since the Unix epoch, where the platform knows it.
    pub born_ns: Option<i64>,
    /// `sha256:<hex>` of the file's bytes.
    pub hash: String,
    /// Display title.
    pub title: String,
    /// Aliases.
    pub aliases: Vec<String>,
    /// Tags (frontmatter and inline), sorted.
    pub tags: Vec<String>,
    /// Description or summary.
    pub description: String,
    /// Frontmatter `created`/`date` as RFC 3339.
    pub created: Option<String>,
    /// Headings, packed.
    pub headings: Headings,
    /// Links as written, packed.
    pub links: Links,
    /// Block ids.
    pub block_ids: Vec<String>,
    /// 1-based line where the body starts.
    pub body_line: u32,
    /// Parse diagnostics (a non-UTF-8 file has one and nothing else).
    pub diagnostics: Vec<Diagnostic>,
}

impl NoteRecord {
    /// The record as a long-lived in-memory catalog keeps it: every list cut
    /// to its length (a record decoded from the index grows its lists as it
    /// reads them). Links and headings are packed already.
    pub fn compact(mut self) -> Self {
        self.aliases.shrink_to_fit();
        self.tags.shrink_to_fit();
        self.block_ids.shrink_to_fit();
        self.diagnostics.shrink_to_fit();
        self
    }

    /// Builds a record from a parsed note and the file's facts.
    pub(crate) fn from_note(
        note: Note,
        kind: NoteKind,
        size: u64,
        modified_ns: i64,
        born_ns: Option<i64>,
        hash: String,
    ) -> Self {
        NoteRecord {
            path: note.path.as_str().to_owned(),
            kind,
            size,
            modified_ns,
            born_ns,
            hash,
            title: note.title,
            aliases: note.aliases,
            tags: note.tags,
            description: note.description,
            created: note.created,
            headings: Headings::from(note.headings),
            links: Links::from(note.links),
            block_ids: note.block_ids,
            body_line: note.body_line,
            diagnostics: note.diagnostics,
        }
    }

    /// The file name without `.md` (any case, as [`NotePath::stem`](crate::sandbox::NotePath::stem)).
    pub fn stem(&self) -> &str {
        strip_md(self.path.rsplit('/').next().unwrap_or(&self.path))
    }

    /// The parent folder, `""` at the top level.
    pub fn folder(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(folder, _)| folder)
    }

    /// Whether this is a map of content: tagged `MOC` (any case, or a `MOC/...` tag)
    /// or titled `MOC` / `... MOC`.
    pub(crate) fn is_moc(&self) -> bool {
        let tagged = self.tags.iter().any(|t| {
            t.eq_ignore_ascii_case("moc") || t.get(..4).is_some_and(|head| head.eq_ignore_ascii_case("moc/"))
        });
        let title = self.title.trim();
        let titled = title.eq_ignore_ascii_case("moc")
            || title.len() > 4
                && title.get(title.len() - 4..).is_some_and(|tail| tail.eq_ignore_ascii_case(" moc"));
        tagged || titled
    }
}

/// `sha256:<64 lowercase hex>` of some bytes: the one way hashes are written.
pub fn content_hash(bytes: &[u8]) -> String {
    hex_hash(&Sha256::digest(bytes))
}

/// [`content_hash`] of bytes that arrive in parts (a file too large to hold at once).
#[derive(Debug, Clone, Default)]
pub struct ContentHasher(Sha256);

impl ContentHasher {
    /// Adds the next part.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// `sha256:<64 lowercase hex>` of every part so far, in order.
    pub fn finish(self) -> String {
        hex_hash(&self.0.finalize())
    }
}

fn hex_hash(digest: &[u8]) -> String {
    format!("sha256:{}", hex(digest))
}
