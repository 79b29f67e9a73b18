//! A plan's operations as a person reviews them: each file's change with its
//! unified diff, a move as a rename, a trash as the note's removal.

use super::operations::{FileOp, FileOpKind, is_unknown_text};
use crate::write::text::{LineDiff, unified_diff};

/// One file a proposal would write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The vault-relative path.
    pub path: String,
    /// `create`, `change`, `move` or `delete`.
    pub op: &'static str,
    /// The unified diff (`--- /dev/null` for a new note).
    pub diff: String,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
}

/// One operation of a plan as a person reviews it: a move as a rename (with
/// the diff of what changes inside the note), a trash as the note's removal.
/// `diffed`: a rewrite's texts already diffed (else they are diffed here).
pub(crate) fn op_change(op: &FileOp, diffed: Option<&LineDiff<'_>>) -> FileChange {
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    match op.op {
        FileOpKind::Create => {
            let (diff, added, removed) = unified_diff(&op.path, "", after);
            let diff = diff.replacen(&format!("--- a/{}\n", op.path), "--- /dev/null\n", 1);
            FileChange { path: op.path.clone(), op: "create", diff, added, removed }
        }
        FileOpKind::Write if is_unknown_text(before) => {
            let diff = format!(
                "--- a/{0}\n+++ b/{0}\n# {0} changed since the proposal was made: applying it answers stale_base\n",
                op.path
            );
            FileChange { path: op.path.clone(), op: "change", diff, added: 0, removed: 0 }
        }
        FileOpKind::Write => {
            let (diff, added, removed) = match diffed {
                Some(diffed) => diffed.unified(&op.path),
                None => unified_diff(&op.path, before, after),
            };
            FileChange { path: op.path.clone(), op: "change", diff, added, removed }
        }
        FileOpKind::Move => {
            let to = op.to.clone().unwrap_or_default();
            let mut diff = format!("rename from {}\nrename to {to}\n", op.path);
            let (mut added, mut removed) = (0, 0);
            if before != after {
                let (body, a, r) = unified_diff(&to, before, after);
                diff.push_str(&body.replacen(&format!("--- a/{to}\n"), &format!("--- a/{}\n", op.path), 1));
                (added, removed) = (a, r);
            }
            FileChange { path: to, op: "move", diff, added, removed }
        }
        FileOpKind::MoveFile => {
            let to = op.to.clone().unwrap_or_default();
            let diff = format!("rename from {}\nrename to {to}\n", op.path);
            FileChange { path: to, op: "move", diff, added: 0, removed: 0 }
        }
        FileOpKind::Trash => {
            let removed = u32::try_from(before.lines().count()).unwrap_or(u32::MAX);
            let diff = format!("delete {} (moved to the inbox's trash, {removed} lines kept)\n", op.path);
            FileChange { path: op.path.clone(), op: "delete", diff, added: 0, removed }
        }
    }
}
