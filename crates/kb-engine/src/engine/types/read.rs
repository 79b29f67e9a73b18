//! `read_note`, `list_standards` and `list_tags`: a note's content and outline,
//! the standards, the tags with their counts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::TAGS_LIMIT;
use super::{is_false, is_zero};

/// `read_note` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadNoteArgs {
    /// Vault-relative path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A wikilink target. Or give `path`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Or a wikilink target.")]
    pub reference: Option<String>,
    /// One heading's section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// A truncated read's `next_offset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// Page size (default 65536).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
    /// A canvas as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<bool>,
    /// A past version: a `commit` of `list_history` (or 7+ digits of one), or
    /// a time (RFC 3339: the version in force then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "A list_history `commit`, or a time.")]
    pub at: Option<String>,
}

/// A heading in a note's outline.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct OutlineEntry {
    /// 1 to 6.
    pub level: u8,
    /// Heading text.
    pub text: String,
    /// 1-based line.
    pub line: u32,
}

/// `read_note` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct NoteContent {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Parsed frontmatter (an empty object when there is none).
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    /// The file's text exactly as on disk (or the requested section), this page of it;
    /// a canvas's text nodes, top to bottom (`raw`: its JSON).
    pub content: String,
    /// `sha256:<hex>` of the whole file: the `base_hash` a patch needs.
    pub hash: String,
    /// File size in bytes.
    pub size: u64,
    /// Last modification time (RFC 3339).
    pub modified: String,
    /// Headings with 1-based lines (on the first page only: empty when `offset` > 0).
    pub outline: Vec<OutlineEntry>,
    /// Whether more content follows.
    pub truncated: bool,
    /// Where to continue (`offset`) when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Whether `frontmatter` was cut to fit the page (long values, long lists, keys
    /// past its share); the whole frontmatter is the start of `content` at offset 0.
    #[serde(default, skip_serializing_if = "is_false")]
    pub frontmatter_truncated: bool,
    /// Values, list items and keys cut or left out of `frontmatter`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frontmatter_omitted: u64,
    /// Whether `outline` is cut: headings past its share of the page, or a note so
    /// large that only its start is parsed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub outline_truncated: bool,
    /// Headings left out of `outline` (of those parsed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outline_omitted: u64,
    /// What this answer left out and how to read the rest (for a canvas: that
    /// `content` is its text nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// A standard.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct StandardEntry {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Last modification time (RFC 3339).
    pub updated: String,
}

/// `list_standards` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Standards {
    /// By path.
    pub standards: Vec<StandardEntry>,
}

/// `list_tags` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTagsArgs {
    /// Only tags starting with this (`type/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How many tags ([`TAGS_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = TAGS_LIMIT.min, max = TAGS_LIMIT.max), description = TAGS_LIMIT.how_many("How many tags"))]
    pub limit: Option<u32>,
}

/// A tag and how many notes carry it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct TagCount {
    /// The tag without `#`, nested tags in full (`type/synthesis`).
    pub tag: String,
    /// Notes carrying it.
    pub count: u64,
    /// Whether the tag registry lists it.
    pub registered: bool,
}

/// `list_tags` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Tags {
    /// By count, then by tag.
    pub tags: Vec<TagCount>,
    /// The tag registry note, or null.
    pub registry: Option<String>,
}
