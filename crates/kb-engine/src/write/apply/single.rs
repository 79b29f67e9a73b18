//! Applying a new note or a patch: the contract's checks in its order, the
//! write (create-new, or a swap that never loses a person's save), the
//! archive, the index update and the audit line, each step leaving a state
//! recovery completes.

use serde_json::json;

use super::archive::{archive_dir, archive_files, journal_of};
use super::finish::{Actor, Applied, finish_apply};
use super::index::ApplyIndex;
use super::step::Step;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Discards, NotePath, Replaced, Sandbox, WriteMode};
use crate::vault::content_hash;
use crate::write::inbox::{
    Action, AuditLog, FILE_MAX_BYTES, Inbox, Located, ProposalKind, ProposalStatus, intact, journal,
    tampered, today,
};

/// Applies a found pending new note or patch; the caller holds the lock and has recovered.
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
    let (target, content, base) = check(sandbox, inbox, &located)?;
    let archive = archive_dir(inbox, ProposalStatus::Applied, &today())?;
    journal::write(sandbox, inbox, &journal_of(&located, Action::Apply, &archive))?;
    failpoint(Step::Claimed)?;

    // The file the swap replaces is watched for a late save until the commit point.
    let mut discards = Discards::new(sandbox);
    let written = match base {
        None => sandbox.write_atomic(&target, &content, WriteMode::CreateNew),
        Some(base) => swap(sandbox, inbox, &located, &target, &content, &base, failpoint, &mut discards),
    };
    if let Err(err) = written {
        // Nothing was applied (unless a write failed only after its rename, which
        // recovery then completes from the journal).
        if !target_holds_content(sandbox, &located) {
            let _ = journal::clear(sandbox, inbox);
        }
        return Err(err);
    }
    failpoint(Step::Written)?;
    if let Some(late) = discards.late_saves().into_iter().next() {
        // An editor that opened the note before the swap wrote to it after:
        // its save goes back into the note, and the proposal stays pending.
        let copy = inbox.conflict_copy(&target, &id)?;
        let kept = sandbox.put_back_late_save(late, &content, &copy)?;
        let _ = journal::clear(sandbox, inbox);
        return Err(saved_meanwhile(&located, &target, kept.as_ref()));
    }
    // Parked while the journal still names the apply: a crash before this
    // leaves the replaced file beside the note, where recovery looks for it.
    discards.park();

    archive_files(sandbox, &located, &archive, failpoint).map_err(|err| after_write(err, &target))?;
    failpoint(Step::Archived)?;

    let index_result = index.update(std::slice::from_ref(&target));
    failpoint(Step::Indexed)?;

    let archived = Located { dir: archive.clone(), status: ProposalStatus::Applied, ..located };
    let applied = finish_apply(sandbox, log, &archived, index_result, actor, false, None)
        .map_err(|err| audit_failed(err, &id, &target, &archive, &log.path))?;
    failpoint(Step::Audited)?;
    // Should this fail, the next recovery finds the line and only removes it.
    let _ = journal::clear(sandbox, inbox);
    Ok(applied)
}

/// The checks of the contract, in its order, on a found proposal: files in place
/// and untampered; a new note's target free; a patch's target at its base hash;
/// the target a writable note path. Returns the target, the staged note and, for
/// a patch, the note's bytes as checked (its base).
fn check(
    sandbox: &Sandbox,
    inbox: &Inbox,
    located: &Located,
) -> Result<(NotePath, Vec<u8>, Option<Vec<u8>>)> {
    let id = located.id();
    let content = intact(sandbox, inbox, located).map_err(|err| tampered(id, &err.message))?;
    let meta = &located.meta;
    let target = NotePath::parse(&meta.target)?;
    let mut checked = None;
    match meta.kind {
        ProposalKind::New => {
            if sandbox.stat(&target)?.is_some() {
                return Err(Error::new(
                    ErrorCode::TargetExists,
                    format!("{target} exists now; the new note would replace it"),
                )
                .with_hint("reject this proposal, or propose a patch to the existing note instead"));
            }
        }
        ProposalKind::Patch => {
            let base = meta.base_sha256.as_deref().unwrap_or_default();
            match sandbox.read(&target, FILE_MAX_BYTES) {
                Ok(bytes) => {
                    let current = content_hash(&bytes);
                    if current != base {
                        return Err(Error::stale_base(&target, base, Some(&current)));
                    }
                    checked = Some(bytes);
                }
                Err(err) if err.code == ErrorCode::NotFound => {
                    return Err(Error::stale_base(&target, base, None));
                }
                Err(err) => return Err(err),
            }
        }
        _ => return Err(Error::internal("a multi-file proposal was checked as a single-file one")),
    }
    let target = sandbox.resolve_note_target(&meta.target)?;
    Ok((target, content, checked))
}

/// Replaces a patch's note, provided it still holds the base: a save a person
/// makes meanwhile is never lost (see [`Sandbox::replace_note`]). When one lands
/// during the swap, the note keeps the person's bytes, the proposal stays
/// pending, and the caller gets `conflict` naming the note and any conflict copy.
#[expect(clippy::too_many_arguments, reason = "the apply's state, passed on whole")]
fn swap(
    sandbox: &Sandbox,
    inbox: &Inbox,
    located: &Located,
    target: &NotePath,
    content: &[u8],
    base: &[u8],
    failpoint: &mut dyn FnMut(Step) -> Result<()>,
    discards: &mut Discards,
) -> Result<()> {
    let copy = inbox.conflict_copy(target, located.id())?;
    let mut before_swap = || failpoint(Step::Swapping);
    match sandbox.replace_note(target, content, base, &copy, &mut before_swap, Some(discards))? {
        Replaced::Clean => Ok(()),
        Replaced::Changed(now) => {
            let base = located.meta.base_sha256.as_deref().unwrap_or_default();
            Err(Error::stale_base(target, base, now.map(|bytes| content_hash(&bytes)).as_deref()))
        }
        Replaced::Conflict { kept } => Err(saved_meanwhile(located, target, kept.as_ref())),
    }
}

/// `conflict`: a person saved the note while the proposal was being applied;
/// the note keeps that save (`kept`: another save, kept apart) and the
/// proposal stays pending.
fn saved_meanwhile(located: &Located, target: &NotePath, kept: Option<&NotePath>) -> Error {
    let id = located.id();
    let copy = kept.map(|kept| format!(" and another save is kept in {kept}")).unwrap_or_default();
    Error::new(
        ErrorCode::Conflict,
        format!(
            "{target} was saved while proposal {id} was being applied: the note keeps that save{copy}; \
             the proposal was not applied and stays pending"
        ),
    )
    .with_hint(format!(
        "read {target} again; {} holds the proposed text: propose the change again against the note as it is now, or reject this proposal",
        located.meta.content_file
    ))
    .with_details(json!({
        "target": target.as_str(),
        "conflict_copy": kept.map(NotePath::as_str),
        "proposed_file": located.meta.content_file,
    }))
}

/// An error after the note was written: the next apply or server start finishes.
fn after_write(mut err: Error, target: &NotePath) -> Error {
    err.hint = Some(format!(
        "{target} was written; the next apply or server start completes the archive and the audit log"
    ));
    err
}

/// The apply is done but its audit line could not be appended: say exactly that.
fn audit_failed(err: Error, id: &str, target: &NotePath, archive: &str, log: &NotePath) -> Error {
    Error::new(
        err.code,
        format!(
            "proposal {id} is applied ({target} is written and the proposal archived in {archive}), \
             but its audit line could not be appended to {log}: {}",
            err.message
        ),
    )
    .with_hint(format!(
        "do not apply it again; fix what stops writing to {log} (a full disk?): the next apply or server start appends the line"
    ))
    .with_details(json!({ "applied": true, "target": target.as_str(), "archive": archive, "audit_log": log.as_str() }))
}

/// Whether the proposal's target already holds exactly the staged note.
pub(crate) fn target_holds_content(sandbox: &Sandbox, located: &Located) -> bool {
    sandbox.resolve_note_target(&located.meta.target).is_ok_and(|target| {
        matches!(sandbox.stat(&target), Ok(Some(_)))
            && sandbox
                .read(&target, FILE_MAX_BYTES)
                .is_ok_and(|bytes| content_hash(&bytes) == located.meta.content_sha256)
    })
}
