//! Conflict copies: files that may hold a person's save, kept apart in the
//! inbox rather than among the notes.
//!
//! An apply that finds a save racing it (a swap's new file written to while
//! in place, a late save that cannot go back to its note) and recovery after a
//! crash (a temporary file beside a note holding neither the proposal's text
//! nor a part of it) never remove such a file and never leave it among the
//! notes, where it would be indexed, searched and shown as a note of its own.
//! It goes to `inbox/conflicts/<date>/<the note's path without .md>.conflict-<8
//! hex of the proposal id>.md` (for a save that reached a replaced file after
//! its apply had finished, 8 hex of the replaced bytes' hash instead: see
//! `sandbox/parked.rs`), which names the note it belongs to, and stays
//! until the person removes it: `get_vault_overview` and `list_proposals`
//! count them and name the first 20, `kb-index inbox list` and `kb-index status`
//! print a line for each with what to do.

use super::layout::{Inbox, short_id, today};
use crate::error::Result;
use crate::sandbox::{NotePath, Sandbox};

/// The folder of conflict copies under the inbox.
const CONFLICTS: &str = "conflicts";

/// What marks a conflict copy's file name, before the id's 8 hex digits.
const MARK: &str = ".conflict-";

/// A conflict copy in the inbox and the note it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictCopy {
    /// The copy, in `inbox/conflicts/`.
    pub path: String,
    /// The note whose save it may hold.
    pub note: String,
}

impl Inbox {
    /// Where a possible save of `note`, met while applying (or recovering)
    /// proposal `id`, is kept apart.
    pub(crate) fn conflict_copy(&self, note: &NotePath, id: &str) -> Result<NotePath> {
        self.copy_named(note, short_id(id))
    }

    /// Where a save of `note` that reached a file after its apply had
    /// finished (a parked file, `sandbox/parked.rs`) is kept apart: named
    /// after the first 8 hex digits of `hash`, the replaced bytes' hash.
    pub(crate) fn late_save_copy(&self, note: &NotePath, hash: &str) -> Result<NotePath> {
        self.copy_named(note, hash.get(..8).unwrap_or(hash))
    }

    fn copy_named(&self, note: &NotePath, hex: &str) -> Result<NotePath> {
        let stem = note.as_str().strip_suffix(".md").unwrap_or(note.as_str());
        self.path(&format!("{CONFLICTS}/{}/{stem}{MARK}{hex}.md", today()))
    }
}

/// Every conflict copy in the inbox, sorted by path.
pub fn conflict_copies(sandbox: &Sandbox) -> Vec<ConflictCopy> {
    let inbox = Inbox::of(sandbox);
    let Ok(root) = inbox.path(CONFLICTS) else { return Vec::new() };
    let mut found = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        folders.extend(sandbox.list_inbox_folders(&folder).unwrap_or_default());
        for file in sandbox.list_inbox(&folder).unwrap_or_default() {
            if let Some(note) = note_of(root.as_str(), file.as_str()) {
                found.push(ConflictCopy { path: file.as_str().to_owned(), note });
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// The note a conflict copy's path names: `<root>/<date>/<stem>.conflict-<hex>[-n].md`
/// gives `<stem>.md`.
fn note_of(root: &str, path: &str) -> Option<String> {
    let rest = path.strip_prefix(root)?.strip_prefix('/')?;
    let (_date, copy) = rest.split_once('/')?;
    let (stem, _) = copy.rsplit_once(MARK)?;
    Some(format!("{stem}.md"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_names_its_note() {
        let root = "inbox/conflicts";
        assert_eq!(
            note_of(root, "inbox/conflicts/2026-12-06/z/备份仓库.conflict-1a2b3c4d.md").as_deref(),
            Some("z/备份仓库.md")
        );
        assert_eq!(
            note_of(root, "inbox/conflicts/2026-12-06/top.conflict-1a2b3c4d-2.md").as_deref(),
            Some("top.md")
        );
        assert_eq!(note_of(root, "inbox/conflicts/stray.md"), None);
        assert_eq!(note_of(root, "inbox/conflicts/2026-12-06/no-mark.md"), None);
    }
}
