//! The plan of a multi-file proposal (`move`, `delete`, `batch`, `revert`): the
//! file operations it makes, each with the exact bytes before and after, staged
//! as `<stem>.plan.json` beside its metadata (whose `content_sha256` is the
//! plan's hash, so a plan edited by hand is refused as tampered).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::error::Result;
use crate::sandbox::NotePath;

/// The plan format version.
pub(crate) const PLAN_SCHEMA: u32 = 1;

/// What one operation does to the vault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOpKind {
    /// Creates a note that does not exist.
    Create,
    /// Replaces a note's bytes.
    Write,
    /// Renames a note (and maybe rewrites it: its links, its aliases).
    Move,
    /// Moves a note into `inbox/trash/<date>/`.
    Trash,
    /// Moves a file kept as bytes (an attachment, or any file a folder move
    /// carries that is not text it rewrites): renamed, never rewritten, so its
    /// bytes and mode go with it; `sha256` is what it must hold.
    MoveFile,
}

/// One file operation, with the bytes it expects and leaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOp {
    /// What it does.
    pub op: FileOpKind,
    /// The note it acts on (a move's source).
    pub path: String,
    /// A move's destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The note's text before (absent for a create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The note's text after (absent for a trash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// A create that brings a note back (a revert of its delete): the inbox
    /// file its text was kept in (its copy in the trash, or the archived plan
    /// holding it when that copy is gone). The note gets back that file's
    /// permissions, which are its own; a new note, without one, gets the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// A `move_file`'s bytes' hash (the plan holds no text of such a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl FileOp {
    /// Where the note is after the operation (`None`: in the trash).
    pub fn destination(&self) -> Option<&str> {
        match self.op {
            FileOpKind::Move | FileOpKind::MoveFile => self.to.as_deref(),
            FileOpKind::Trash => None,
            FileOpKind::Create | FileOpKind::Write => Some(&self.path),
        }
    }

    /// The vault paths it touches.
    pub fn touched(&self) -> Vec<&str> {
        let mut out = vec![self.path.as_str()];
        out.extend(self.to.as_deref());
        out
    }
}

/// A multi-file proposal's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Always `PLAN_SCHEMA`.
    pub schema: u32,
    /// One line for a person ("move a.md → b.md, rewrite 3 links in 2 notes").
    pub summary: String,
    /// The operations, applied in order (and undone in reverse).
    pub files: Vec<FileOp>,
    /// A folder move's folders, the moved folder first: the apply makes each
    /// destination (an empty folder too, which no file would make) before the
    /// files move, and removes each source it left empty once they have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<FolderMove>,
    /// What a person should know before approving that no file's diff shows
    /// (the links a move leaves leading where they led but makes ambiguous),
    /// a line each, shown under the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<String>,
    /// The notes outside the plan linking to the notes it moves or trashes,
    /// as it was judged on them (`propose/linkers.rs`); set when it is staged, absent
    /// in a plan staged before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linkers: Option<Linkers>,
}

/// One folder of a folder move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderMove {
    /// Where it is.
    pub from: String,
    /// Where it goes.
    pub to: String,
}

impl Plan {
    /// The files holding the texts the plan holds, whose permissions the files
    /// staging it may not exceed: every note it rewrites, moves or trashes, as
    /// it is now, and the file each note it brings back was kept in. A new
    /// note it creates has no file behind it.
    pub(crate) fn notes_held(&self) -> Result<Vec<NotePath>> {
        self.files
            .iter()
            .filter_map(|op| if op.before.is_some() { Some(&op.path) } else { op.kept.as_ref() })
            .map(|path| NotePath::parse(path))
            .collect()
    }
}

/// What a plan was judged on (see `propose/linkers.rs`): the notes it watches and the notes outside it
/// linking to them, each with its links' fingerprint ([`Linker::links`](crate::write::Linker::links)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linkers {
    /// The notes watched: moved (old paths), trashed, or named like a moved
    /// note's new name; sorted.
    pub targets: Vec<String>,
    /// Each note outside the plan that linked to them, by path: its links' fingerprint.
    pub notes: BTreeMap<String, String>,
}

/// What a rewrite's texts are taken to be when its note holds neither: no
/// file's bytes (it holds a NUL), so every check of the note finds it changed.
pub(super) fn unknown_text(path: &str) -> String {
    format!("\u{0}kb-mcp: {path} holds neither the text this plan rewrites nor the one it leaves\u{0}")
}

/// Whether a text is [`unknown_text`].
pub(crate) fn is_unknown_text(text: &str) -> bool {
    text.starts_with("\u{0}kb-mcp: ")
}
