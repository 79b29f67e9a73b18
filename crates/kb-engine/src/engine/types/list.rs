//! `list_notes`: the vault's `ls` — a folder's direct notes, one page at a
//! time, and its subfolders with the number of notes below each.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::LIST_NOTES_LIMIT;
use super::is_zero;

/// `list_notes` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListNotesArgs {
    /// The folder to list, vault-relative (default: the vault's top level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Folder (default: the top level).")]
    pub folder: Option<String>,
    /// Only notes carrying this tag (a parent tag matches its children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Only notes with this tag (`type` takes `type/x`).")]
    pub tag: Option<String>,
    /// `path` (default), `updated` or `created` (newest first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<ListSort>,
    /// How many notes a page holds ([`LIST_NOTES_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = LIST_NOTES_LIMIT.min, max = LIST_NOTES_LIMIT.max),
        description = LIST_NOTES_LIMIT.how_many("Notes per page")
    )]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page, with the same other arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "The last page's `next_cursor`.")]
    pub cursor: Option<String>,
}

/// How `list_notes` orders the notes.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ListSort {
    /// By path.
    #[default]
    Path,
    /// By last modification, newest first.
    Updated,
    /// By creation (frontmatter `created`/`date`, else the file's birth time), newest first.
    Created,
}

/// A subfolder in a `list_notes` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct FolderCount {
    /// Vault-relative path.
    pub path: String,
    /// Notes anywhere below it (carrying the tag, when one is given).
    pub notes: u64,
}

/// A note in a `list_notes` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ListedNote {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Last modification, RFC 3339.
    pub updated: String,
    /// Creation (frontmatter `created`/`date`, else the file's birth time), RFC 3339.
    pub created: String,
    /// Tags (at most 20; see `tags_omitted`).
    pub tags: Vec<String>,
    /// Tags left out of `tags`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tags_omitted: u64,
}

/// `list_notes` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct NoteList {
    /// The folder listed (`""`: the vault's top level).
    pub folder: String,
    /// Its direct subfolders holding notes, by path, with their counts (on the
    /// first page only: later pages hold notes alone).
    pub folders: Vec<FolderCount>,
    /// Subfolders left out of `folders` (at most 500 are listed): list them by
    /// narrowing `folder`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folders_omitted: u64,
    /// This page of the folder's direct notes.
    pub notes: Vec<ListedNote>,
    /// The folder's direct notes (carrying the tag, when one is given), on all pages.
    pub total: u64,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The vault's folders and files in path order, cut to a size: what the
/// `kb://tree` resource lists (not a tool result; `list_notes` pages through
/// the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Folders holding a file, at any depth, in path order (as many as fit).
    pub folders: Vec<String>,
    /// Files in path order, as many as fit.
    pub notes: Vec<TreeNote>,
    /// How many files are indexed in all.
    pub notes_total: usize,
}

/// A file in the [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNote {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Its area: a note, a standard or a `read_also` file.
    pub kind: crate::vault::NoteKind,
}
