//! Running a plan's operations, one at a time, forward or backward.
//!
//! Each operation can be judged from the files alone: not started, done, or (a
//! move) half done. That is what lets recovery complete an interrupted apply or
//! roll it back exactly: forward when the proposal's metadata already reached
//! the archive (the commit point), backward otherwise. The before-bytes kept in
//! the archived plan are also what `revert_proposal` restores.

use super::check::changed;
use super::operations::{FileOp, FileOpKind, Plan};
use super::stored::{current, file_hash};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Discards, NotePath, OpenedFile, Prepared, Replaced, Sandbox, WriteMode};
use crate::vault::ContentHasher;
use crate::write::inbox::{Inbox, short_id, today};

/// Where an applied plan's trashed notes go: `inbox/trash/<date>/<8 hex of the
/// id>/<path>` (the id keeps two deletes of one path on one day apart).
pub(super) fn trash_path(inbox_root: &str, date: &str, id: &str, path: &str) -> Result<NotePath> {
    NotePath::parse(&format!("{inbox_root}/trash/{date}/{}/{path}", short_id(id)))
}

/// The date of an archive folder (`inbox/applied/<date>`), for the trash.
pub(super) fn archive_date(archive: &str) -> String {
    archive.rsplit('/').next().map(str::to_owned).unwrap_or_else(today)
}

/// The trash path of each operation (`None` unless it trashes a note).
pub(crate) fn trash_paths(
    inbox: &Inbox,
    archive: &str,
    id: &str,
    plan: &Plan,
) -> Result<Vec<Option<NotePath>>> {
    let date = archive_date(archive);
    plan.files
        .iter()
        .map(|op| match op.op {
            FileOpKind::Trash => trash_path(inbox.root(), &date, id, &op.path).map(Some),
            _ => Ok(None),
        })
        .collect()
}

/// The state of one operation, judged from the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing of it happened.
    Before,
    /// A move renamed the note but has not rewritten it yet.
    Renamed,
    /// A move's rename was stopped half done: the note is under both names,
    /// one file (see `Sandbox::same_note_file`).
    Linked,
    /// It is complete.
    After,
    /// The files hold neither: someone else changed them.
    Foreign,
}

/// `kept`: where a trashed note's copy is (see [`forward`]).
fn state(sandbox: &Sandbox, op: &FileOp, kept: Option<&NotePath>) -> Result<State> {
    if op.op == FileOpKind::MoveFile {
        return carried_state(sandbox, op);
    }
    let path = NotePath::parse(&op.path)?;
    let now = current(sandbox, &path)?;
    let holds = |bytes: &Option<Vec<u8>>, text: &Option<String>| match (bytes, text) {
        (Some(bytes), Some(text)) => bytes == text.as_bytes(),
        (None, None) => true,
        _ => false,
    };
    Ok(match op.op {
        FileOpKind::Create | FileOpKind::Write => {
            if holds(&now, &op.after) {
                State::After
            } else if holds(&now, &op.before) {
                State::Before
            } else {
                State::Foreign
            }
        }
        FileOpKind::Move => {
            let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
            let case_only = to.as_str().to_lowercase() == path.as_str().to_lowercase();
            let at_to = current(sandbox, &to)?;
            // On a case-insensitive file system both names read the one file.
            let from_gone = now.is_none() || (case_only && !sandbox.has_exact_name(&path));
            if from_gone && holds(&at_to, &op.after) {
                State::After
            } else if from_gone && holds(&at_to, &op.before) {
                State::Renamed
            } else if holds(&now, &op.before) && (at_to.is_none() || case_only) {
                State::Before
            } else if !case_only && holds(&now, &op.before) && sandbox.same_note_file(&path, &to)? {
                State::Linked
            } else {
                State::Foreign
            }
        }
        FileOpKind::Trash => {
            let copy = match kept {
                Some(kept) => current(sandbox, kept)?,
                None => None,
            };
            if now.is_none() && holds(&copy, &op.before) {
                State::After
            } else if holds(&now, &op.before) {
                State::Before
            } else {
                State::Foreign
            }
        }
        FileOpKind::MoveFile => unreachable!("a carried file's state is judged by its hash"),
    })
}

/// [`state`] of a `move_file`, judged by the hashes of the files at both names.
fn carried_state(sandbox: &Sandbox, op: &FileOp) -> Result<State> {
    let path = NotePath::parse(&op.path)?;
    let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
    let expected = op.sha256.as_deref();
    let case_only = to.as_str().to_lowercase() == path.as_str().to_lowercase();
    let (at_from, at_to) = (file_hash(sandbox, &path)?, file_hash(sandbox, &to)?);
    let from_gone = at_from.is_none() || (case_only && !sandbox.has_exact_name(&path));
    Ok(if from_gone && at_to.as_deref() == expected {
        State::After
    } else if at_from.as_deref() == expected && (at_to.is_none() || case_only) {
        State::Before
    } else if !case_only && at_from.as_deref() == expected && sandbox.same_note_file(&path, &to)? {
        State::Linked
    } else {
        State::Foreign
    })
}

/// Renames a carried file from `from` to `to` while it holds `sha256`; the
/// folders are flushed with the apply's one flush where there is one.
fn rename_carried(sandbox: &Sandbox, from: &str, to: &str, sha256: Option<&str>) -> Result<()> {
    let (from, to) = (NotePath::parse(from)?, NotePath::parse(to)?);
    let mut holds = |opened: &OpenedFile| -> Result<bool> {
        let mut hasher = ContentHasher::default();
        opened.for_each_chunk(|_, chunk| {
            hasher.update(chunk);
            true
        })?;
        Ok(Some(hasher.finish().as_str()) == sha256)
    };
    sandbox.rename_carried(&from, &to, &mut holds, !cfg!(target_os = "linux"))
}

fn foreign(op: &FileOp) -> Error {
    Error::new(
        ErrorCode::Conflict,
        format!("{} was changed by someone else while the proposal was being applied", op.path),
    )
    .with_hint("read the files again; the changes of the proposal were kept apart from that save")
}

/// Writes the new bytes of an operation that rewrites a note beside it (a
/// move's beside its destination), unflushed: see [`Prepared`]. `None` for one
/// that writes no new bytes over a note.
pub(crate) fn prepare(sandbox: &Sandbox, op: &FileOp) -> Result<Option<Prepared>> {
    let (before, after) = (op.before.as_deref(), op.after.as_deref());
    match op.op {
        FileOpKind::Write => {
            let path = NotePath::parse(&op.path)?;
            sandbox.prepare_note(&path, &path, after.unwrap_or_default().as_bytes()).map(Some)
        }
        FileOpKind::Move if after != before => {
            let (path, to) =
                (NotePath::parse(&op.path)?, NotePath::parse(op.to.as_deref().unwrap_or_default())?);
            sandbox.prepare_note(&to, &path, after.unwrap_or_default().as_bytes()).map(Some)
        }
        _ => Ok(None),
    }
}

/// Replaces `path`'s `from` bytes with `to`, never losing a save landing meanwhile.
fn swap(
    sandbox: &Sandbox,
    path: &NotePath,
    to: &str,
    from: &str,
    id: &str,
    hook: &mut dyn FnMut() -> Result<()>,
    prepared: Option<(Prepared, &mut Discards)>,
) -> Result<()> {
    let copy = Inbox::of(sandbox).conflict_copy(path, id)?;
    let replaced = match prepared {
        Some((prepared, discards)) => {
            sandbox.replace_prepared(prepared, to.as_bytes(), from.as_bytes(), &copy, hook, discards)?
        }
        None => sandbox.replace_note(path, to.as_bytes(), from.as_bytes(), &copy, hook, None)?,
    };
    settled(path, from, replaced)
}

/// What a swap's outcome means for the apply: done, or the error saying why not.
fn settled(path: &NotePath, from: &str, replaced: Replaced) -> Result<()> {
    match replaced {
        Replaced::Clean => Ok(()),
        Replaced::Changed(now) => Err(changed(path, from, now.as_deref())),
        Replaced::Conflict { kept } => Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "{path} was saved while the proposal was being applied: the note keeps that save{}",
                kept.map(|kept| format!(" (another save is kept in {kept})")).unwrap_or_default()
            ),
        )
        .with_hint("the proposal was not applied and stays pending; read the note again")),
    }
}

/// Carries one operation forward from whatever state it is in; with its new
/// bytes `prepared` (see [`prepare`]), the flush is left to the caller and the
/// file it replaces to `discards`. `kept` is the inbox file keeping the note
/// apart from the vault: where a trash puts the note's copy, or the file a
/// note brought back takes its permissions from (see [`FileOp::kept`]).
pub(crate) fn forward(
    sandbox: &Sandbox,
    op: &FileOp,
    id: &str,
    kept: Option<&NotePath>,
    hook: &mut dyn FnMut() -> Result<()>,
    prepared: Option<Prepared>,
    discards: &mut Discards,
) -> Result<()> {
    let path = NotePath::parse(&op.path)?;
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    let prepared = match (op.op, prepared) {
        (FileOpKind::Write, Some(prepared)) => {
            return forward_prepared_write(sandbox, op, &path, id, hook, prepared, discards);
        }
        (_, prepared) => prepared,
    };
    match (op.op, state(sandbox, op, kept)?) {
        (_, State::After) => Ok(()),
        (_, State::Foreign) => Err(foreign(op)),
        (FileOpKind::Create, _) => {
            hook()?;
            // A note brought back gets back its permissions; a new one has none to take.
            let note = sandbox.permissions_of(kept.map_or(&[], std::slice::from_ref))?;
            sandbox.write_atomic_from(
                &sandbox.resolve_whole_note_target(&op.path)?,
                after.as_bytes(),
                WriteMode::CreateNew,
                &note,
            )
        }
        (FileOpKind::Write, _) => {
            swap(sandbox, &path, after, before, id, hook, prepared.map(|prepared| (prepared, discards)))
        }
        (FileOpKind::Move, state) => {
            let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
            if state == State::Linked {
                // The rename a crash stopped: its old name goes now.
                sandbox.drop_second_name(&to, &path)?;
            }
            if state == State::Before {
                hook()?;
                if prepared.is_some() {
                    sandbox.rename_note_unflushed(&path, &to, before.as_bytes())?;
                } else {
                    sandbox.rename_note(&path, &to, before.as_bytes())?;
                }
            }
            if after != before {
                let prepared = prepared.map(|prepared| (prepared, discards));
                swap(sandbox, &to, after, before, id, &mut || Ok(()), prepared)
            } else {
                Ok(())
            }
        }
        (FileOpKind::Trash, _) => {
            let trash = kept.ok_or_else(|| Error::internal("a trash operation without its trash path"))?;
            hook()?;
            let copy = Inbox::of(sandbox).conflict_copy(&path, id)?;
            sandbox.trash_note(&path, trash, before.as_bytes(), &copy, discards)
        }
        (FileOpKind::MoveFile, State::Linked) => {
            // The rename a crash stopped: its old name goes now.
            let (path, to) =
                (NotePath::parse(&op.path)?, NotePath::parse(op.to.as_deref().unwrap_or_default())?);
            sandbox.drop_second_name(&to, &path)
        }
        (FileOpKind::MoveFile, _) => {
            hook()?;
            rename_carried(sandbox, &op.path, op.to.as_deref().unwrap_or_default(), op.sha256.as_deref())
        }
    }
}

/// [`forward`] of a rewrite whose new bytes are prepared: the swap reads the
/// note right before it (holding it open), and the operation's state is judged
/// from those bytes rather than from a read of its own: the base is swapped,
/// the text after is left as done, anything else is someone else's.
fn forward_prepared_write(
    sandbox: &Sandbox,
    op: &FileOp,
    path: &NotePath,
    id: &str,
    hook: &mut dyn FnMut() -> Result<()>,
    prepared: Prepared,
    discards: &mut Discards,
) -> Result<()> {
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    let copy = Inbox::of(sandbox).conflict_copy(path, id)?;
    let replaced =
        sandbox.replace_prepared(prepared, after.as_bytes(), before.as_bytes(), &copy, hook, discards)?;
    match replaced {
        Replaced::Changed(Some(now)) if now == after.as_bytes() => Ok(()),
        Replaced::Changed(_) => Err(foreign(op)),
        replaced => settled(path, before, replaced),
    }
}

/// Undoes one operation from whatever state it is in; a file someone else
/// changed meanwhile is left as it is (their save wins). `kept` as for [`forward`].
pub(crate) fn backward(sandbox: &Sandbox, op: &FileOp, id: &str, kept: Option<&NotePath>) -> Result<()> {
    let path = NotePath::parse(&op.path)?;
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    let state = state(sandbox, op, kept)?;
    if matches!(state, State::Before | State::Foreign) {
        return Ok(());
    }
    match op.op {
        FileOpKind::MoveFile if state == State::Linked => {
            // The rename a crash stopped: its new name goes, the file stays.
            sandbox.drop_second_name(&path, &NotePath::parse(op.to.as_deref().unwrap_or_default())?)
        }
        FileOpKind::MoveFile => {
            rename_carried(sandbox, op.to.as_deref().unwrap_or_default(), &op.path, op.sha256.as_deref())
        }
        FileOpKind::Create => sandbox.remove_note(&path, after.as_bytes()).map(|_| ()),
        FileOpKind::Write => swap(sandbox, &path, before, after, id, &mut || Ok(()), None),
        FileOpKind::Move => {
            let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
            if state == State::Linked {
                // The rename a crash stopped: its new name goes, the note stays.
                return sandbox.drop_second_name(&path, &to);
            }
            if state == State::After && after != before {
                swap(sandbox, &to, before, after, id, &mut || Ok(()), None)?;
            }
            sandbox.rename_note(&to, &path, before.as_bytes())
        }
        FileOpKind::Trash => {
            // The trashed note itself goes back, its file and mode with it; a
            // copy of its text, where that is gone, with the mode the trash kept.
            let path = sandbox.resolve_whole_note_target(&op.path)?;
            match kept {
                Some(trash) if current(sandbox, trash)?.as_deref() == Some(before.as_bytes()) => {
                    sandbox.untrash_note(trash, &path)
                }
                _ => {
                    let held: Vec<NotePath> = kept
                        .filter(|trash| matches!(sandbox.stat(trash), Ok(Some(_))))
                        .cloned()
                        .into_iter()
                        .collect();
                    let note = sandbox.permissions_of(&held)?;
                    sandbox.write_atomic_from(&path, before.as_bytes(), WriteMode::CreateNew, &note)
                }
            }
        }
    }
}
