//! `get_related_notes`: a note's outlinks, backlinks and broken links.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments naming one note.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteRefArgs {
    /// Vault-relative path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A wikilink target. Or give `path`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Or a wikilink target.")]
    pub reference: Option<String>,
}

/// An outgoing link.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Outlink {
    /// The target as written, anchor included (`备份仓库#同步不等于备份`).
    pub target: String,
    /// The vault path it resolves to, or null when broken.
    pub resolved: Option<String>,
    /// `wikilink`, `embed`, `markdown`, or `property` (a quoted `"[[…]]"` as a
    /// frontmatter property's value: an extension of the contract's three).
    #[schemars(with = "String")]
    pub kind: super::LinkKind,
    /// 1-based line.
    pub line: u32,
}

/// An incoming link.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct BacklinkOut {
    /// The linking note.
    pub path: String,
    /// Its title.
    pub title: String,
    /// 1-based line of the link in the linking note.
    pub line: u32,
    /// The line around the link.
    pub context: String,
}

/// A broken link.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct BrokenLink {
    /// The target as written.
    pub target: String,
    /// 1-based line.
    pub line: u32,
    /// `missing_note`, `missing_heading` or `missing_block`.
    #[schemars(with = "String")]
    pub reason: BrokenReason,
}

/// What a broken link lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokenReason {
    /// No note or file has that name.
    MissingNote,
    /// The note exists but has no such heading.
    MissingHeading,
    /// The note exists but has no such block id.
    MissingBlock,
}

impl BrokenReason {
    /// Its name in results: `missing_note`, `missing_heading`, `missing_block`.
    pub fn name(self) -> &'static str {
        match self {
            BrokenReason::MissingNote => "missing_note",
            BrokenReason::MissingHeading => "missing_heading",
            BrokenReason::MissingBlock => "missing_block",
        }
    }
}

impl std::fmt::Display for BrokenReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// A note by path and title.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct NoteTitle {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
}

/// `get_related_notes` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Related {
    /// The note.
    pub path: String,
    /// Its links, in file order.
    pub outlinks: Vec<Outlink>,
    /// Links to it, by linking path then line.
    pub backlinks: Vec<BacklinkOut>,
    /// Its links that lead nowhere.
    pub broken: Vec<BrokenLink>,
    /// Maps of content that link to it.
    pub mocs: Vec<NoteTitle>,
    /// Whether a list was cut at 500 entries.
    pub truncated: bool,
}
