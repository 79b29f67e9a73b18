//! Recovery: completing what a crash left half done, and removing what killed
//! proposes and applies left behind.
//!
//! The journal (`inbox/journal.rs`) names the only proposal a crash can have left
//! half consumed, so recovery looks at that one: still pending with its target
//! holding the staged note (the crash came after the write), it is archived and
//! audited; archived without its audit line (the audit log's last line), its
//! leftover files are moved, the index updated and the line appended; still
//! pending with its target untouched, nothing had changed. Recovery is
//! idempotent and its cost does not grow with the history. It also sweeps
//! kb-mcp's own leftovers: temporary files beside the notes of pending
//! proposals, staged files whose metadata a killed propose never wrote, and
//! the files applies parked (`sandbox/parked.rs`): a save that reached one
//! late is kept as a conflict copy, the others go once old enough.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::Serialize;

use super::archive::{archive_files, move_leftover, rejection_name};
use super::finish::{Actor, Applied, Rejection, finish_apply, finish_reject};
use super::multi;
use super::single::target_holds_content;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::content_hash;
use crate::write::inbox::{
    Action, AuditLog, FILE_MAX_BYTES, Inbox, Journal, Located, META_SUFFIX, ProposalKind, ProposalStatus,
    journal, locate, lock, pending_files, validate,
};
use crate::write::plan::read_plan;

/// What [`recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Ids of proposals whose interrupted apply or reject was completed.
    pub completed: Vec<String>,
    /// Proposals that could not be completed now (`id: why`); tried again next time.
    pub failed: Vec<String>,
    /// What killed proposes and applies had left behind, and what became of it.
    pub swept: Vec<String>,
}

/// How old a staged file without metadata must be to count as a killed
/// propose's orphan (a propose writes its files within milliseconds).
const ORPHAN_AGE: Duration = Duration::from_secs(600);

/// Whether an apply or reject stopped half done, or is under way in another
/// process: its journal is in the inbox. Until [`recover`] settles it, the
/// notes it was changing may hold part of the change. Looks at one file, and
/// takes no lock.
pub fn interrupted(sandbox: &Sandbox) -> bool {
    let journal = Inbox::of(sandbox).journal_file();
    journal.is_ok_and(|journal| sandbox.stat(&journal).is_ok_and(|stat| stat.is_some()))
}

/// Completes an interrupted apply or reject (see the module docs), under the
/// inbox lock. Run it at server start; [`super::apply`] runs it too. `index` is
/// called for a note whose apply is completed; `actor` goes into its audit line.
pub fn recover(
    sandbox: &Sandbox,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<Recovery> {
    recover_applies(sandbox, actor, index).map(|(recovery, _)| recovery)
}

/// [`recover`], also returning the applies it completed (what each wrote,
/// for the history to record as the proposal's).
pub fn recover_applies(
    sandbox: &Sandbox,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<(Recovery, Vec<Applied>)> {
    let inbox = Inbox::of(sandbox);
    let _lock = lock(sandbox, &inbox)?;
    let mut swept = sweep_note_temps(sandbox, &inbox);
    swept.extend(sandbox.sweep_displaced(&mut |note, hash| inbox.late_save_copy(note, hash)));
    let mut log = AuditLog::open(sandbox, &inbox)?;
    let mut done = recover_locked(sandbox, &inbox, &mut log, actor, index);
    // Only once every interrupted apply has its files back together is a staged
    // file without metadata an orphan.
    if done.summary.failed.is_empty() {
        swept.extend(sweep_inbox(sandbox, &inbox));
    }
    swept.append(&mut done.summary.swept);
    done.summary.swept = swept;
    Ok((done.summary, done.applied))
}

/// Removes what killed proposes left in the inbox, by kb-mcp's own names only:
/// temporary files in the pending folders, and staged files without their
/// metadata (`<slug>-<8 hex>.md`, `.new.md`, `.diff`) written more than
/// [`ORPHAN_AGE`] ago, so that a propose under way is never taken for a killed
/// one. Under the lock, after recovery.
fn sweep_inbox(sandbox: &Sandbox, inbox: &Inbox) -> Vec<String> {
    let mut done = Vec::new();
    for kind in ProposalKind::ALL {
        let Ok(dir) = NotePath::parse(&inbox.pending_dir(kind)) else { continue };
        match sandbox.sweep_inbox_temps(&dir, ORPHAN_AGE) {
            Ok(removed) => done.extend(removed.into_iter().map(|file| format!("removed {file}"))),
            Err(err) => done.push(format!("{dir}: {}", err.message)),
        }
        let Ok(files) = sandbox.list_inbox(&dir) else { continue };
        let stems: HashSet<&str> =
            files.iter().filter_map(|file| file.file_name().strip_suffix(META_SUFFIX)).collect();
        let suffixes: &[&str] = match kind {
            ProposalKind::New => &[".md"],
            ProposalKind::Patch => &[".new.md", ".diff"],
            _ => &[".plan.json", ".diff"],
        };
        for file in &files {
            let name = file.file_name();
            let Some(stem) = suffixes.iter().find_map(|suffix| name.strip_suffix(suffix)) else { continue };
            if name.ends_with(META_SUFFIX) || stems.contains(stem) || !is_stem(stem) {
                continue;
            }
            let old = sandbox
                .stat(file)
                .ok()
                .flatten()
                .is_some_and(|stat| stat.modified.elapsed().is_ok_and(|age| age > ORPHAN_AGE));
            if !old {
                continue;
            }
            if sandbox.remove_inbox_file(file).unwrap_or(false) {
                done.push(format!("removed {file}: its proposal was never completed"));
            }
        }
    }
    done
}

/// Settles the temporary files killed applies left beside pending proposals'
/// notes: removed when they hold the text (or a part of it) of a proposal for
/// that note or the base it replaces, otherwise kept apart in the inbox as a
/// conflict copy (`inbox/conflicts.rs`), since they may hold a person's save. Each note is looked at
/// once, against all its proposals, and a staged note is read only when a
/// temporary file is there to compare. Under the lock, before recovery.
fn sweep_note_temps(sandbox: &Sandbox, inbox: &Inbox) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(pending) = pending_files(sandbox, inbox) else { return done };
    let mut by_target: BTreeMap<NotePath, Vec<Located>> = BTreeMap::new();
    for path in pending {
        let Ok(located) = locate(sandbox, &path, ProposalStatus::Pending) else { continue };
        let Ok(target) = NotePath::parse(&located.meta.target) else { continue };
        by_target.entry(target).or_default().push(located);
    }
    for (target, proposals) in by_target {
        let mut staged: Vec<Option<Option<Vec<u8>>>> = vec![None; proposals.len()];
        let mut ours = |bytes: &[u8]| {
            let hash = content_hash(bytes);
            proposals.iter().zip(staged.iter_mut()).any(|(located, staged)| {
                let meta = &located.meta;
                hash == meta.content_sha256
                    || meta.base_sha256.as_deref() == Some(hash.as_str())
                    || staged
                        .get_or_insert_with(|| {
                            located
                                .content_path()
                                .ok()
                                .and_then(|file| sandbox.read(&file, FILE_MAX_BYTES).ok())
                        })
                        .as_deref()
                        .is_some_and(|staged| staged.starts_with(bytes))
            })
        };
        let Ok(copy) = inbox.conflict_copy(&target, proposals[0].id()) else { continue };
        if let Ok(lines) = sandbox.sweep_note_temps(&target, &mut ours, &copy) {
            done.extend(lines);
        }
    }
    done
}

/// Settles the temporary files beside the notes of the proposal a journal
/// names, wherever it is now (pending or archived): a crash during its apply
/// may have left a prepared text, or a file a swap replaced that was still
/// watched for a late save (`sandbox/displaced.rs`). Ours are removed; anything
/// else is kept apart as a conflict copy.
fn sweep_journaled(sandbox: &Sandbox, inbox: &Inbox, journal: &Journal) -> Vec<String> {
    let status = match journal.action {
        Action::Apply => ProposalStatus::Applied,
        Action::Reject => return Vec::new(),
    };
    let located = [
        journal.archived_meta().map(|meta| (meta, status)),
        journal.pending_meta(inbox).map(|meta| (meta, ProposalStatus::Pending)),
    ]
    .into_iter()
    .flatten()
    .find_map(|(meta, status)| {
        matches!(sandbox.stat(&meta), Ok(Some(_))).then(|| locate(sandbox, &meta, status).ok()).flatten()
    });
    let Some(located) = located.filter(|located| located.id() == journal.proposal_id) else {
        return Vec::new();
    };
    if located.meta.kind.is_multi() {
        if located.status == ProposalStatus::Pending {
            // Rolled back: `multi::recover_pending` swept before removing folders.
            return Vec::new();
        }
        return match read_plan(sandbox, &located) {
            Ok(plan) => {
                let swept = multi::sweep_temps(sandbox, inbox, &plan, located.id());
                multi::remove_emptied_folders(sandbox, &plan);
                swept
            }
            Err(_) => Vec::new(),
        };
    }
    let Ok(target) = NotePath::parse(&located.meta.target) else { return Vec::new() };
    let Ok(copy) = inbox.conflict_copy(&target, located.id()) else { return Vec::new() };
    let staged = located.content_path().ok().and_then(|file| sandbox.read(&file, FILE_MAX_BYTES).ok());
    let meta = &located.meta;
    let mut ours = |bytes: &[u8]| {
        let hash = content_hash(bytes);
        hash == meta.content_sha256
            || meta.base_sha256.as_deref() == Some(hash.as_str())
            || staged.as_deref().is_some_and(|staged| staged.starts_with(bytes))
    };
    sandbox.sweep_note_temps(&target, &mut ours, &copy).unwrap_or_default()
}

/// Whether a file stem is one a proposal's files have: `<slug>-<8 hex digits>`.
fn is_stem(stem: &str) -> bool {
    stem.rsplit_once('-').is_some_and(|(slug, short)| {
        !slug.is_empty()
            && short.len() == 8
            && short.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What a recovery pass did, with the apply it completed.
pub(crate) struct Recovered {
    pub(crate) applied: Vec<Applied>,
    pub(crate) summary: Recovery,
}

/// Completes the apply or reject the journal names; the caller holds the lock.
/// The journal is removed once its proposal is settled, and kept (with the
/// reason in `failed`) when it cannot be settled now.
pub(crate) fn recover_locked(
    sandbox: &Sandbox,
    inbox: &Inbox,
    log: &mut AuditLog,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Recovered {
    let mut done = Recovered { applied: Vec::new(), summary: Recovery::default() };
    let journal = match journal::read(sandbox, inbox) {
        Ok(Some(journal)) => journal,
        Ok(None) => return done,
        Err(err) if err.code == ErrorCode::ProposalTampered => {
            // Not a journal kb-mcp wrote: nothing can be completed from it.
            if journal::clear(sandbox, inbox).is_ok() {
                done.summary.swept.push(format!("removed the apply journal: {}", err.message));
            }
            return done;
        }
        Err(err) => {
            done.summary.failed.push(format!("the apply journal: {}", err.message));
            return done;
        }
    };
    match settle(sandbox, inbox, log, &journal, actor, index, &mut done) {
        Ok(()) => {
            // What the interrupted apply displaced, beside its notes, whatever it
            // was settled to (a crash may come after the commit point too).
            done.summary.swept.extend(sweep_journaled(sandbox, inbox, &journal));
            if let Err(err) = journal::clear(sandbox, inbox) {
                done.summary.failed.push(format!("the apply journal: {}", err.message));
            }
        }
        Err(err) if err.code == ErrorCode::ProposalTampered => {
            // Its files were changed by hand: nothing can be completed safely; say so once.
            if journal::clear(sandbox, inbox).is_ok() {
                done.summary.swept.push(format!(
                    "gave up completing the interrupted {} of {}: {}",
                    if journal.action == Action::Apply { "apply" } else { "reject" },
                    journal.proposal_id,
                    err.message
                ));
            }
        }
        Err(err) => done.summary.failed.push(format!("{}: {}", journal.proposal_id, err.message)),
    }
    done
}

/// Settles the proposal a journal names (see the module docs).
fn settle(
    sandbox: &Sandbox,
    inbox: &Inbox,
    log: &mut AuditLog,
    journal: &Journal,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
    done: &mut Recovered,
) -> Result<()> {
    let status = match journal.action {
        Action::Apply => ProposalStatus::Applied,
        Action::Reject => ProposalStatus::Rejected,
    };
    let ours = |located: &Located| located.id() == journal.proposal_id && validate(inbox, located).is_ok();
    // Archived (first: a metadata file a crash left in both places mid-move is
    // settled from the archive).
    let archived = journal.archived_meta()?;
    if sandbox.stat(&archived)?.is_some() {
        let located = locate(sandbox, &archived, status)?;
        if !ours(&located) {
            return Err(Error::new(
                ErrorCode::ProposalTampered,
                format!("{archived} is not the proposal the apply journal names"),
            ));
        }
        if log.last_id() == Some(journal.proposal_id.as_str()) {
            // The crash came after the audit line: it is complete.
            return Ok(());
        }
        return complete_archived(sandbox, inbox, log, &located, actor, index, done);
    }
    // Still pending: applied only when the note holds its text already.
    let pending = journal.pending_meta(inbox)?;
    if journal.action == Action::Apply && sandbox.stat(&pending)?.is_some() {
        let located = locate(sandbox, &pending, ProposalStatus::Pending)?;
        if located.meta.kind.is_multi() {
            // Before the commit point: roll back whatever was done.
            if ours(&located) {
                multi::recover_pending(sandbox, inbox, &located, journal)?;
                done.summary.completed.push(format!("{} (rolled back)", journal.proposal_id));
            }
            return Ok(());
        }
        if ours(&located) && target_holds_content(sandbox, &located) {
            archive_files(sandbox, &located, &journal.archive, &mut |_| Ok(()))?;
            let archived = Located { dir: journal.archive.clone(), status, ..located };
            return complete_archived(sandbox, inbox, log, &archived, actor, index, done);
        }
    }
    // Nothing had changed yet: the proposal is simply still pending.
    Ok(())
}

/// Finishes an archived proposal that has no audit line: moves what is left in
/// its pending folder, then indexes (applies only) and logs it.
fn complete_archived(
    sandbox: &Sandbox,
    inbox: &Inbox,
    log: &mut AuditLog,
    located: &Located,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
    done: &mut Recovered,
) -> Result<()> {
    let id = located.id().to_owned();
    let applied = (|| -> Result<Option<Applied>> {
        let pending = inbox.pending_dir(located.meta.kind);
        for name in located.file_names() {
            let from = NotePath::parse(&format!("{pending}/{name}"))?;
            let to = NotePath::parse(&format!("{}/{name}", located.dir))?;
            move_leftover(sandbox, &from, &to)?;
        }
        match located.status {
            ProposalStatus::Rejected => {
                let record = NotePath::parse(&format!("{}/{}", located.dir, rejection_name(&located.stem)))?;
                let reason = sandbox
                    .read(&record, FILE_MAX_BYTES)
                    .ok()
                    .and_then(|bytes| serde_json::from_slice::<Rejection>(&bytes).ok())
                    .map(|record| record.reason)
                    .unwrap_or_default();
                finish_reject(sandbox, log, located, &reason, actor, true)?;
                Ok(None)
            }
            _ if located.meta.kind.is_multi() => {
                let paths = multi::recover_archived(sandbox, inbox, located)?;
                finish_apply(sandbox, log, located, index(&paths), actor, true, None).map(Some)
            }
            _ => {
                let index_result = NotePath::parse(&located.meta.target)
                    .and_then(|target| index(std::slice::from_ref(&target)));
                finish_apply(sandbox, log, located, index_result, actor, true, None).map(Some)
            }
        }
    })()?;
    done.applied.extend(applied);
    done.summary.completed.push(id);
    Ok(())
}
