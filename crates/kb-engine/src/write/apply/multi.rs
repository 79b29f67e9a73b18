//! Applying a multi-file proposal (`move`, `delete`, `batch`, `revert`) as one:
//! every file checked before anything is written, the operations carried out
//! under the journal, and any failure rolled back.
//!
//! **Commit point.** The proposal's metadata moving to the archive. Before it,
//! an interrupted apply is rolled back by recovery (each operation undone from
//! the state its files are in, in reverse order, leaving alone a file a person
//! saved meanwhile), and the proposal stays pending; after it, recovery carries
//! every operation forward, then indexes and audits. Either way the vault never
//! stays with some files moved and others not.

use std::collections::HashSet;

use serde_json::json;

use super::archive::{archive_dir, archive_files, journal_of};
use super::finish::{Actor, Applied, finish_apply};
use super::index::{ApplyIndex, NewText};
use super::step::Step;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Area, Discards, FileStat, LateSave, NotePath, Prepared, Sandbox};
use crate::write::inbox::{
    Action, AuditLog, FILE_MAX_BYTES, Inbox, Journal, Located, ProposalStatus, intact, journal, tampered,
    today,
};
use crate::write::plan::{self, FileOp, Plan, PlanFile, read_plan, trash_paths};
use crate::write::propose::check_linkers;

/// The inbox file keeping each operation's note apart from the vault (see
/// [`plan::forward`]): where a trashed note's copy goes ([`trash_paths`]), and
/// the file a note brought back takes its permissions from: the one its text
/// was kept in ([`FileOp::kept`]) or, when that is gone (the trash emptied
/// since), the proposal's own plan, which holds the text too and was staged
/// no more readable than that file. `None` for the other operations.
pub(super) fn kept_paths(
    sandbox: &Sandbox,
    inbox: &Inbox,
    archive: &str,
    located: &Located,
    plan: &Plan,
) -> Result<Vec<Option<NotePath>>> {
    let mut kept = trash_paths(inbox, archive, located.id(), plan)?;
    for (op, kept) in plan.files.iter().zip(&mut kept) {
        let Some(copy) = &op.kept else { continue };
        let copy = NotePath::parse(copy)?;
        if sandbox.area_of(&copy) != Some(Area::Inbox) {
            return Err(tampered(located.id(), &format!("its plan keeps {} outside the inbox", op.path)));
        }
        *kept = Some(if sandbox.stat(&copy)?.is_some() { copy } else { located.content_path()? });
    }
    Ok(kept)
}

/// The operations whose new text is written beside their note ahead of
/// the swap ([`plan::prepare`]): where the note is then, and that text.
fn written_ahead(op: &FileOp) -> Option<(&str, &str)> {
    match op.op {
        plan::FileOpKind::Write => Some((op.path.as_str(), op.after.as_deref()?)),
        plan::FileOpKind::Move if op.after != op.before => Some((op.to.as_deref()?, op.after.as_deref()?)),
        _ => None,
    }
}

/// The new texts of the notes written ahead, for [`ApplyIndex::ahead`].
fn new_texts(plan: &Plan) -> Result<Vec<NewText>> {
    plan.files
        .iter()
        .filter_map(written_ahead)
        .map(|(path, text)| Ok(NewText { path: NotePath::parse(path)?, text: text.to_owned() }))
        .collect()
}

/// The files holding [`new_texts`], in its order, for [`ApplyIndex::prepared`].
fn prepared_files(plan: &Plan, prepared: &[Option<Prepared>]) -> Vec<Option<FileStat>> {
    plan.files
        .iter()
        .zip(prepared)
        .filter(|(op, _)| written_ahead(op).is_some())
        .map(|(_, prepared)| prepared.as_ref().map(Prepared::stat))
        .collect()
}

/// Every vault path the plan touches, for the index update.
pub(crate) fn touched(plan: &Plan) -> Result<Vec<NotePath>> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<NotePath> = Vec::new();
    for op in &plan.files {
        for path in op.touched() {
            if seen.insert(path) {
                out.push(NotePath::parse(path)?);
            }
        }
    }
    Ok(out)
}

/// Applies a found pending multi-file proposal; the caller holds the lock and has recovered.
pub(crate) fn apply(
    sandbox: &Sandbox,
    inbox: &Inbox,
    log: &mut AuditLog,
    located: Located,
    actor: Actor,
    index: &mut dyn ApplyIndex,
    failpoint: &mut dyn FnMut(Step) -> Result<()>,
) -> Result<Applied> {
    let id = located.id().to_owned();
    let bytes = intact(sandbox, inbox, &located).map_err(|err| tampered(&id, &err.message))?;
    let plan_file = PlanFile::parse(&bytes).map_err(|err| tampered(&id, &err.message))?;
    // The audit line's files, from the plan checked intact here (the archive
    // gets these very bytes): not read and parsed again at the end.
    let audit_entries = plan_file.audit_entries();
    let (plan, reads) = plan_file.hydrate_reading(sandbox)?;
    // The index may start on the new texts while the checks and writes run
    // (it commits nothing until `update`, after the commit point).
    index.ahead(new_texts(&plan)?);
    plan::check_read(sandbox, &plan, &reads)?;
    drop(reads);
    // No link written since the plan was made may break unseen.
    if let Some(linkers) = &plan.linkers
        && let Some(now) = index.linkers(&linkers.targets)?
    {
        check_linkers(&plan, linkers, &now)?;
    }
    let archive = archive_dir(inbox, ProposalStatus::Applied, &today())?;
    let kept = kept_paths(sandbox, inbox, &archive, &located, &plan)?;
    // The folders this apply may create, named before any is, so that a roll-back
    // (here or by recovery after a crash) removes those it leaves empty.
    let folders = new_folders(sandbox, &plan, &kept)?;
    let journal = Journal { folders, ..journal_of(&located, Action::Apply, &archive) };
    journal::write(sandbox, inbox, &journal)?;
    failpoint(Step::Claimed)?;

    // Every new text beside its note first, all flushed to disk at once: one
    // flush, not one per note, and no name ever leads to bytes not on disk.
    // The index starts on the written files while the flush waits on the disk
    // (their sizes and times are known once written; it commits nothing yet).
    let prepared = prepare_all(sandbox, &plan).and_then(|prepared| {
        make_folders(sandbox, &plan)?;
        index.prepared(prepared_files(&plan, &prepared));
        sandbox.flush_files().map(|()| prepared)
    });
    let mut prepared = match prepared {
        Ok(prepared) => prepared,
        Err(err) => {
            remove_new_folders(sandbox, &plan, &kept, &journal.folders);
            let _ = journal::clear(sandbox, inbox);
            return Err(err);
        }
    };
    // A crash leaves the prepared files on disk, as a real one would (recovery sweeps them).
    if let Err(crash) = failpoint(Step::Prepared) {
        std::mem::forget(prepared);
        return Err(crash);
    }

    // The files the swaps replace (each holding its note's before-bytes) are
    // removed together once all are swapped, not one at a time: see `Discards`.
    let mut discards = Discards::new(sandbox);
    for (number, op) in plan.files.iter().enumerate() {
        // An error of the failpoint is a crash: it stops on the spot, as one would.
        let mut crashed: Option<Error> = None;
        let mut hook = || failpoint(Step::Swapping).inspect_err(|err| crashed = Some(err.clone()));
        let ready = prepared[number].take();
        let done = plan::forward(sandbox, op, &id, kept[number].as_ref(), &mut hook, ready, &mut discards);
        if let Some(crash) = crashed {
            std::mem::forget(prepared);
            discards.forget();
            return Err(crash);
        }
        if let Err(err) = done {
            drop(prepared);
            roll_back(sandbox, &plan.files[..=number], &id, &kept);
            discards.park();
            remove_new_folders(sandbox, &plan, &kept, &journal.folders);
            let _ = journal::clear(sandbox, inbox);
            return Err(err);
        }
        if let Err(crash) = failpoint(Step::File(number)) {
            std::mem::forget(prepared);
            discards.forget();
            return Err(crash);
        }
    }
    // The renames and swaps reach the disk before the commit point.
    if let Err(err) = sandbox.flush_files() {
        roll_back(sandbox, &plan.files, &id, &kept);
        discards.park();
        remove_new_folders(sandbox, &plan, &kept, &journal.folders);
        let _ = journal::clear(sandbox, inbox);
        return Err(err);
    }
    // A save that landed late in a file the swaps displaced (or in a trashed
    // note) goes back to its note, and the apply is rolled back around it.
    let late = discards.late_saves();
    if !late.is_empty() {
        let err = put_back_late_saves(sandbox, inbox, &plan, &id, late);
        roll_back(sandbox, &plan.files, &id, &kept);
        discards.park();
        remove_new_folders(sandbox, &plan, &kept, &journal.folders);
        let _ = journal::clear(sandbox, inbox);
        return Err(err);
    }
    // The replaced files are parked while the rest of the apply runs (their
    // renames wait on the disk, the index update on the CPU); the apply
    // returns only once they are parked.
    let parking = Parking(Some(std::thread::spawn(move || discards.park())));
    failpoint(Step::Written)?;

    archive_files(sandbox, &located, &archive, failpoint).map_err(after_write_multi)?;
    remove_emptied_folders(sandbox, &plan);
    failpoint(Step::Archived)?;

    let index_result = touched(&plan).and_then(|paths| index.update(&paths));
    failpoint(Step::Indexed)?;

    let archived = Located { dir: archive.clone(), status: ProposalStatus::Applied, ..located };
    let applied = finish_apply(sandbox, log, &archived, index_result, actor, false, Some(audit_entries))?;
    failpoint(Step::Audited)?;
    drop(parking);
    let _ = journal::clear(sandbox, inbox);
    Ok(applied)
}

/// Puts each late save back at its note (a moved note back at its old name
/// too, so that the roll-back leaves the vault as it was but for that save),
/// and says which notes kept a save and where any conflict copy went.
fn put_back_late_saves(
    sandbox: &Sandbox,
    inbox: &Inbox,
    plan: &Plan,
    id: &str,
    late: Vec<LateSave>,
) -> Error {
    let mut notes = Vec::new();
    let mut copies = Vec::new();
    for save in late {
        let note = save.note().clone();
        let op = plan.files.iter().find(|op| op.to.as_deref().unwrap_or(&op.path) == note.as_str());
        let ours = op.and_then(|op| op.after.as_deref()).unwrap_or_default().as_bytes();
        let copy = inbox.conflict_copy(&note, id);
        match copy.and_then(|copy| sandbox.put_back_late_save(save, ours, &copy)) {
            Ok(kept) => copies.extend(kept.map(|kept| kept.as_str().to_owned())),
            Err(err) => return err,
        }
        // A moved note's save goes back to the name the person saved it under.
        if let Some(op) = op.filter(|op| op.op == plan::FileOpKind::Move)
            && let Ok(from) = NotePath::parse(&op.path)
            && let Ok(bytes) = sandbox.read(&note, FILE_MAX_BYTES)
        {
            let _ = sandbox.rename_note(&note, &from, &bytes);
        }
        notes.push(op.map_or(note.as_str().to_owned(), |op| op.path.clone()));
    }
    let copies_said = if copies.is_empty() {
        String::new()
    } else {
        format!(" (another save is kept in {})", copies.join(", "))
    };
    Error::new(
        ErrorCode::Conflict,
        format!(
            "{} saved while proposal {id} was being applied: the save is kept in the note{copies_said}; \
             the proposal was rolled back and stays pending",
            notes.join(", ")
        ),
    )
    .with_hint("read those notes again; apply the proposal again, or propose the change again against them")
    .with_details(json!({ "saved": notes, "conflict_copies": copies }))
}

/// The parking of an apply's replaced files under way; dropping it waits for
/// it (an apply, or a crash a failpoint stages, never leaves it running).
struct Parking(Option<std::thread::JoinHandle<()>>);

impl Drop for Parking {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// Where each operation leaves a file: a created note, a move's destination,
/// a trashed note's place in the trash (`kept`: see [`kept_paths`]).
fn destinations<'a>(plan: &'a Plan, kept: &'a [Option<NotePath>]) -> impl Iterator<Item = &'a str> {
    plan.files.iter().zip(kept).filter_map(|(op, kept)| match op.op {
        plan::FileOpKind::Create => Some(op.path.as_str()),
        plan::FileOpKind::Move | plan::FileOpKind::MoveFile => op.to.as_deref(),
        plan::FileOpKind::Trash => kept.as_ref().map(NotePath::as_str),
        plan::FileOpKind::Write => None,
    })
}

/// The folders leading to the plan's destinations (and a folder move's
/// folders), shallowest first.
fn destination_folders(plan: &Plan, kept: &[Option<NotePath>]) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    let inside = plan.folders.iter().map(|folder| folder.to.as_str()).map(|to| (to, to.len()));
    let files = destinations(plan, kept).map(|path| (path, 0));
    for (path, whole) in files.chain(inside) {
        let ends = path.match_indices('/').map(|(at, _)| at).chain((whole > 0).then_some(whole));
        for at in ends {
            if seen.insert(&path[..at]) {
                out.push(path[..at].to_owned());
            }
        }
    }
    out.sort_by_key(|folder| folder.matches('/').count());
    out
}

/// Makes the destination of each of a folder move's folders (the files'
/// ones are made as the files go; an empty folder only here).
fn make_folders(sandbox: &Sandbox, plan: &Plan) -> Result<()> {
    for folder in &plan.folders {
        sandbox.make_note_folder(&NotePath::parse(&folder.to)?)?;
    }
    Ok(())
}

/// Removes, deepest first, each of a folder move's source folders the move
/// left empty (after the commit point: the files are at their destinations).
/// Best effort: a folder holding anything (a file a person put there since)
/// is kept.
pub(super) fn remove_emptied_folders(sandbox: &Sandbox, plan: &Plan) {
    let mut folders: Vec<&str> = plan.folders.iter().map(|folder| folder.from.as_str()).collect();
    folders.sort_by_key(|folder| std::cmp::Reverse(folder.matches('/').count()));
    for folder in folders {
        if let Ok(folder) = NotePath::parse(folder) {
            let _ = sandbox.remove_empty_folder(&folder);
        }
    }
}

/// The folders the plan's destinations need that do not exist now, shallowest
/// first (a folder under a missing one is missing too, and not looked at).
fn new_folders(sandbox: &Sandbox, plan: &Plan, kept: &[Option<NotePath>]) -> Result<Vec<String>> {
    let mut missing: Vec<String> = Vec::new();
    for folder in destination_folders(plan, kept) {
        let under_missing = missing
            .iter()
            .any(|parent| folder.strip_prefix(parent.as_str()).is_some_and(|rest| rest.starts_with('/')));
        // A folder that cannot be looked at is not ours to remove.
        if under_missing || !sandbox.folder_exists(&NotePath::parse(&folder)?).unwrap_or(true) {
            missing.push(folder);
        }
    }
    Ok(missing)
}

/// Removes, deepest first, the folders a rolled-back apply created (`created`,
/// from its journal) that are empty now; only ones leading to the plan's
/// destinations, whatever the journal says. Best effort: a folder that holds
/// anything is kept.
fn remove_new_folders(sandbox: &Sandbox, plan: &Plan, kept: &[Option<NotePath>], created: &[String]) {
    if created.is_empty() {
        return;
    }
    let ours: HashSet<String> = destination_folders(plan, kept).into_iter().collect();
    let mut folders: Vec<&String> = created.iter().filter(|folder| ours.contains(*folder)).collect();
    folders.sort_by_key(|folder| std::cmp::Reverse(folder.matches('/').count()));
    for folder in folders {
        if let Ok(folder) = NotePath::parse(folder) {
            let _ = sandbox.remove_empty_folder(&folder);
        }
    }
}

/// [`plan::prepare`] for every operation (in parallel: each waits on the
/// disk's journal as much as on the CPU), not flushed yet.
fn prepare_all(sandbox: &Sandbox, plan: &Plan) -> Result<Vec<Option<Prepared>>> {
    use rayon::prelude::*;
    plan.files.par_iter().map(|op| plan::prepare(sandbox, op)).collect()
}

/// Removes the temporary files an interrupted apply of `plan` left beside its
/// notes: prepared texts, whole or cut short by the crash (empty, or a prefix
/// of the text after), and the files its swaps replaced (the text before).
/// Anything else may hold a person's save: it is kept apart in the inbox as a
/// conflict copy (`inbox/conflicts.rs`), never left among the notes.
pub(super) fn sweep_temps(sandbox: &Sandbox, inbox: &Inbox, plan: &Plan, id: &str) -> Vec<String> {
    let mut done = Vec::new();
    for op in &plan.files {
        for path in op.touched() {
            let Ok(note) = NotePath::parse(path) else { continue };
            let Ok(copy) = inbox.conflict_copy(&note, id) else { continue };
            let mut ours = |bytes: &[u8]| ours(op, bytes);
            done.extend(sandbox.sweep_note_temps(&note, &mut ours, &copy).unwrap_or_default());
        }
    }
    done
}

/// Whether a temporary file beside one of `op`'s notes can only be kb-mcp's:
/// the text before (a file a swap replaced), or the text after or a prefix of
/// it (a prepared file, whole or cut short by a crash; an empty one too).
fn ours(op: &FileOp, bytes: &[u8]) -> bool {
    op.before.as_deref().is_some_and(|before| before.as_bytes() == bytes)
        || op.after.as_deref().is_some_and(|after| after.as_bytes().starts_with(bytes))
        || bytes.is_empty()
}

/// Undoes `ops` (the ones started), last first. Best effort: an operation that
/// cannot be undone is left for the person (its file holds a save of theirs).
pub(super) fn roll_back(sandbox: &Sandbox, ops: &[FileOp], id: &str, kept: &[Option<NotePath>]) {
    for (number, op) in ops.iter().enumerate().rev() {
        let _ = plan::backward(sandbox, op, id, kept.get(number).and_then(Option::as_ref));
    }
}

/// Recovery of a pending multi-file proposal the journal names: roll back.
/// The folders the apply created (the journal's) are removed once left empty.
pub(super) fn recover_pending(
    sandbox: &Sandbox,
    inbox: &Inbox,
    located: &Located,
    journal: &Journal,
) -> Result<()> {
    let plan = read_plan(sandbox, located)?;
    let kept = kept_paths(sandbox, inbox, &journal.archive, located, &plan)?;
    for (number, op) in plan.files.iter().enumerate().rev() {
        plan::backward(sandbox, op, located.id(), kept[number].as_ref())?;
    }
    sandbox.flush_files()?;
    // Before the folders: a prepared file left in a new folder keeps it.
    sweep_temps(sandbox, inbox, &plan, located.id());
    remove_new_folders(sandbox, &plan, &kept, &journal.folders);
    Ok(())
}

/// Recovery of an archived multi-file proposal without its audit line: carry
/// every operation forward; returns the paths to index.
pub(super) fn recover_archived(sandbox: &Sandbox, inbox: &Inbox, located: &Located) -> Result<Vec<NotePath>> {
    let plan = read_plan(sandbox, located)?;
    let kept = kept_paths(sandbox, inbox, &located.dir, located, &plan)?;
    // Unused: without prepared files, each swap removes what it replaced.
    let mut discards = Discards::new(sandbox);
    make_folders(sandbox, &plan)?;
    for (number, op) in plan.files.iter().enumerate() {
        plan::forward(sandbox, op, located.id(), kept[number].as_ref(), &mut || Ok(()), None, &mut discards)?;
    }
    sandbox.flush_files()?;
    // The temporary files beside its notes are swept by the caller
    // (`recover::sweep_journaled`), which then removes the emptied folders.
    touched(&plan)
}

/// An error after a multi-file proposal's files were all written.
fn after_write_multi(mut err: Error) -> Error {
    err.hint = Some(
        "every file was written; the next apply or server start completes the archive and the audit log"
            .to_owned(),
    );
    err
}
