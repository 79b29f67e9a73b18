//! Applying and rejecting a proposal: the checks, the write, the archive.
//!
//! Everything here runs under the inbox lock. An apply first completes what a
//! crash may have left (`recover.rs`), then checks and touches nothing until
//! every check passed; it then writes the journal (`journal.rs`) naming the
//! proposal, and from there on each step leaves a state recovery completes: the
//! note is written, the metadata file moves to the archive first (marking the
//! proposal consumed), then its other files, the index is updated, and the audit
//! line is appended last (`audit.rs`), marking the apply complete. Nothing here
//! reads the whole audit log or walks the archive: an apply costs the same
//! however many proposals came before it.

use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;

use super::audit::{AuditLog, Rejection, finish_apply, finish_reject};
use super::journal::{self, Action, Journal};
use super::linkers::Linker;
use super::proposal::{self, FILE_MAX_BYTES, Inbox, Located, find, intact, tampered, validate};
use super::recover::{Recovered, recover_locked};
use super::{Actor, Applied, ProposalKind, ProposalStatus, Rejected, Step};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Discards, FileStat, InboxLock, NotePath, Replaced, Sandbox, WriteMode, Zone, rfc3339};
use crate::vault::content_hash;

/// How long an apply waits for another one to finish.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Applies a pending proposal, given only its id: checks it (`proposal_not_found`,
/// `proposal_not_pending`, `proposal_tampered`, `target_exists`, `stale_base`,
/// `path_denied`; on any of these nothing is touched and the proposal stays
/// pending), writes the target, archives the proposal, calls `index` with the
/// target, and appends the audit line. When `index` fails the note is still
/// written and the proposal consumed: status `applied_index_failed`.
pub fn apply(
    sandbox: &Sandbox,
    id: &str,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<Applied> {
    apply_with_failpoint(sandbox, id, actor, index, &mut |_| Ok(()))
}

/// [`apply`], calling `failpoint` after each [`Step`]; an error from it stops the
/// apply on the spot, as a crash would (tests use it to prove recovery, and a
/// failpoint that never returns lets a test kill the process at that step).
pub fn apply_with_failpoint(
    sandbox: &Sandbox,
    id: &str,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
    failpoint: &mut dyn FnMut(Step) -> Result<()>,
) -> Result<Applied> {
    apply_with_index(sandbox, id, actor, &mut PathsOnly(index), failpoint)
}

/// The index side of an apply (the engine's index update), called with the
/// paths the apply touched once the proposal is consumed ([`ApplyIndex::update`]).
///
/// A multi-file apply also says ahead what it will write, so that the
/// index's work (parsing, tokenising) can run while the files are written:
/// the new texts once the plan is loaded ([`ApplyIndex::ahead`]), then the
/// files holding them once those are written beside their notes
/// ([`ApplyIndex::prepared`]). Neither may change what searches see: the
/// apply may still fail, be rolled back or crash, and only `update`, called
/// after the commit point, may commit. What was prepared ahead is dropped
/// unless `update` uses it.
pub trait ApplyIndex {
    /// The text each listed note will hold after the apply (at its path
    /// after it), for the notes whose new text is written beside them ahead
    /// of their swaps. The proposal's checks may still fail.
    fn ahead(&mut self, notes: Vec<NewText>) {
        let _ = notes;
    }

    /// The files holding the texts of [`ApplyIndex::ahead`], in its order:
    /// each note's size and times once its swap puts the file at its name
    /// (`None`: none was written for it).
    fn prepared(&mut self, files: Vec<Option<FileStat>>) {
        let _ = files;
    }

    /// Updates the index for `paths` (each as it is on disk now), in one commit.
    fn update(&mut self, paths: &[NotePath]) -> Result<()>;

    /// The notes (standards and `read_also` files included) that link to any
    /// of the notes at `targets` as the files are now, each with its links to
    /// them ([`Linker`]): a multi-file apply refuses, before writing anything,
    /// when one its plan was not judged on has appeared since it was staged
    /// (see `linkers.rs`). `None`: not known here (the write layer keeps no
    /// index, and [`apply`] alone does not look); the check is then left out.
    fn linkers(&mut self, targets: &[String]) -> Result<Option<Vec<Linker>>> {
        let _ = targets;
        Ok(None)
    }
}

/// A note's text after an apply, told ahead ([`ApplyIndex::ahead`]).
#[derive(Debug, Clone)]
pub struct NewText {
    /// Where the note is after the apply.
    pub path: NotePath,
    /// Its text then.
    pub text: String,
}

/// An [`ApplyIndex`] that only updates, given the paths.
struct PathsOnly<'a>(&'a mut dyn FnMut(&[NotePath]) -> Result<()>);

impl ApplyIndex for PathsOnly<'_> {
    fn update(&mut self, paths: &[NotePath]) -> Result<()> {
        (self.0)(paths)
    }
}

/// [`apply_with_failpoint`] with an index told ahead (see [`ApplyIndex`]).
pub fn apply_with_index(
    sandbox: &Sandbox,
    id: &str,
    actor: Actor,
    index: &mut dyn ApplyIndex,
    failpoint: &mut dyn FnMut(Step) -> Result<()>,
) -> Result<Applied> {
    let id = id.trim();
    let Settled { inbox, _lock, mut log, recovered } =
        settle(sandbox, id, actor, &mut |paths: &[NotePath]| index.update(paths))?;
    if let Some(done) = recovered.applied.into_iter().find(|done| done.proposal_id == id) {
        // This very proposal had been half applied; it is complete now.
        return Ok(done);
    }
    unsettled(&recovered.summary.failed)?;

    let located = find(sandbox, &inbox, id)?;
    if located.meta.kind.is_multi() {
        return super::multi::apply(sandbox, &inbox, &mut log, located, actor, index, failpoint);
    }
    let (target, content, base) = check(sandbox, &inbox, &located)?;
    let archive = archive_dir(&inbox, ProposalStatus::Applied, &proposal::today())?;
    journal::write(sandbox, &inbox, &journal_of(&located, Action::Apply, &archive))?;
    failpoint(Step::Claimed)?;

    // The file the swap replaces is watched for a late save until the commit point.
    let mut discards = Discards::default();
    let written = match base {
        None => sandbox.write_atomic(&target, &content, WriteMode::CreateNew),
        Some(base) => swap(sandbox, &inbox, &located, &target, &content, &base, failpoint, &mut discards),
    };
    if let Err(err) = written {
        // Nothing was applied (unless a write failed only after its rename, which
        // recovery then completes from the journal).
        if !target_holds_content(sandbox, &located) {
            let _ = journal::clear(sandbox, &inbox);
        }
        return Err(err);
    }
    failpoint(Step::Written)?;
    if let Some(late) = discards.late_saves().into_iter().next() {
        // An editor that opened the note before the swap wrote to it after:
        // its save goes back into the note, and the proposal stays pending.
        let copy = inbox.conflict_copy(&target, id)?;
        let kept = sandbox.put_back_late_save(late, &content, &copy)?;
        let _ = journal::clear(sandbox, &inbox);
        return Err(saved_meanwhile(&located, &target, kept.as_ref()));
    }

    archive_files(sandbox, &located, &archive, failpoint).map_err(|err| after_write(err, &target))?;
    failpoint(Step::Archived)?;

    let index_result = index.update(std::slice::from_ref(&target));
    failpoint(Step::Indexed)?;

    let archived = Located { dir: archive.clone(), status: ProposalStatus::Applied, ..located };
    let applied = finish_apply(sandbox, &mut log, &archived, index_result, actor, false, None)
        .map_err(|err| audit_failed(err, id, &target, &archive, &log.path))?;
    failpoint(Step::Audited)?;
    // Should this fail, the next recovery finds the line and only removes it.
    let _ = journal::clear(sandbox, &inbox);
    Ok(applied)
}

/// Rejects a pending proposal: its files move to `inbox/rejected/<date>/` beside a
/// `<stem>.rejection.json` holding the reason, and an audit line with
/// `"status": "rejected"` and the reason is appended. The vault's notes are not touched.
pub fn reject(sandbox: &Sandbox, id: &str, reason: &str, actor: Actor) -> Result<Rejected> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(Error::invalid("the reason is empty; say why the proposal is rejected"));
    }
    let id = id.trim();
    // A reject has no index to update: an apply it completes says its update failed.
    let mut no_index = |_: &[NotePath]| -> Result<()> {
        Err(Error::internal("an interrupted apply was completed by a reject, which cannot update the index"))
    };
    let Settled { inbox, _lock, mut log, recovered } = settle(sandbox, id, actor, &mut no_index)?;
    unsettled(&recovered.summary.failed)?;
    let located = find(sandbox, &inbox, id)?;
    if !located.meta.kind.is_multi()
        && validate(&inbox, &located).is_ok()
        && target_holds_content(sandbox, &located)
    {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("proposal {id} is already in {}: an apply of it was interrupted", located.meta.target),
        )
        .with_hint("apply it to complete the interrupted apply (kb-index inbox apply --yes --only ID)"));
    }
    let archive = archive_dir(&inbox, ProposalStatus::Rejected, &proposal::today())?;
    let record = Rejection {
        proposal_id: id.to_owned(),
        reason: reason.to_owned(),
        at: rfc3339(Timestamp::now(), Zone::Local),
        by: actor,
    };
    let mut bytes = serde_json::to_vec_pretty(&record)
        .map_err(|err| Error::internal(format!("cannot serialise the rejection: {err}")))?;
    bytes.push(b'\n');
    let record_path = NotePath::parse(&format!("{archive}/{}", rejection_name(&located.stem)))?;
    journal::write(sandbox, &inbox, &journal_of(&located, Action::Reject, &archive))?;
    sandbox.write_atomic(&record_path, &bytes, WriteMode::Replace)?;
    archive_files(sandbox, &located, &archive, &mut |_| Ok(()))?;
    let archived = Located { dir: archive, status: ProposalStatus::Rejected, ..located };
    let rejected = finish_reject(sandbox, &mut log, &archived, &record.reason, actor, false)?;
    let _ = journal::clear(sandbox, &inbox);
    Ok(rejected)
}

/// What an apply and a reject start from: the inbox, its lock held, the audit
/// log open, and what recovery did with an apply or reject a crash interrupted.
struct Settled {
    inbox: Inbox,
    _lock: InboxLock,
    log: AuditLog,
    recovered: Recovered,
}

/// The start every change of a proposal's state shares: a well-formed id (else
/// `proposal_not_found`), the inbox lock (waiting for another apply), the audit
/// log, and recovery of an interrupted apply or reject, completed before
/// anything else is looked at (its index updates go to `index`).
fn settle(
    sandbox: &Sandbox,
    id: &str,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<Settled> {
    if !proposal::is_id(id) {
        return Err(proposal::not_found(id));
    }
    let inbox = Inbox::of(sandbox);
    let lock = lock(sandbox, &inbox)?;
    let mut log = AuditLog::open(sandbox, &inbox)?;
    let recovered = recover_locked(sandbox, &inbox, &mut log, actor, index);
    Ok(Settled { inbox, _lock: lock, log, recovered })
}

/// The inbox lock.
pub(super) fn lock(sandbox: &Sandbox, inbox: &Inbox) -> Result<InboxLock> {
    sandbox.lock_inbox_file(&inbox.lock_file()?, LOCK_WAIT)
}

/// An interrupted apply that recovery could not complete keeps its journal; no
/// other proposal is consumed until it is settled, so that it is never forgotten.
fn unsettled(failed: &[String]) -> Result<()> {
    match failed.first() {
        None => Ok(()),
        Some(why) => Err(Error::new(
            ErrorCode::Conflict,
            format!("an interrupted apply or reject could not be completed: {why}"),
        )
        .with_hint("fix what the message names (a full disk?), then try again: the interrupted one is completed first")),
    }
}

pub(super) fn journal_of(located: &Located, action: Action, archive: &str) -> Journal {
    Journal {
        proposal_id: located.id().to_owned(),
        action,
        kind: located.meta.kind,
        stem: located.stem.clone(),
        archive: archive.to_owned(),
        folders: Vec::new(),
    }
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

/// An error after a multi-file proposal's files were all written.
pub(super) fn after_write_multi(mut err: Error) -> Error {
    err.hint = Some(
        "every file was written; the next apply or server start completes the archive and the audit log"
            .to_owned(),
    );
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

/// `inbox/applied/<date>` or `inbox/rejected/<date>`.
pub(super) fn archive_dir(inbox: &Inbox, status: ProposalStatus, date: &str) -> Result<String> {
    let root =
        inbox.archive_root(status).ok_or_else(|| Error::internal("a pending proposal has no archive"))?;
    Ok(NotePath::parse(&format!("{root}/{date}"))?.as_str().to_owned())
}

pub(super) fn rejection_name(stem: &str) -> String {
    format!("{stem}.rejection.json")
}

/// Moves a proposal's files into `archive`: the metadata first (that marks it
/// consumed; if it is gone, another apply took it), then the others.
pub(super) fn archive_files(
    sandbox: &Sandbox,
    located: &Located,
    archive: &str,
    failpoint: &mut dyn FnMut(Step) -> Result<()>,
) -> Result<()> {
    let names = located.file_names();
    let meta_to = NotePath::parse(&format!("{archive}/{}", names[0]))?;
    match sandbox.move_in_inbox(&located.meta_path, &meta_to) {
        Ok(()) => {}
        Err(err) if matches!(err.code, ErrorCode::NotFound | ErrorCode::TargetExists) => {
            return Err(Error::new(
                ErrorCode::ProposalNotPending,
                format!("proposal {} was taken by another apply or reject", located.id()),
            ));
        }
        Err(err) => return Err(err),
    }
    failpoint(Step::Archiving)?;
    for name in &names[1..] {
        let from = NotePath::parse(&format!("{}/{name}", located.dir))?;
        let to = NotePath::parse(&format!("{archive}/{name}"))?;
        move_leftover(sandbox, &from, &to)?;
    }
    Ok(())
}

/// Moves a file if it is still there. When both copies exist (a crash between
/// the link and the unlink of a move) and are the same, the source is removed.
pub(super) fn move_leftover(sandbox: &Sandbox, from: &NotePath, to: &NotePath) -> Result<()> {
    match sandbox.move_in_inbox(from, to) {
        Ok(()) => Ok(()),
        Err(err) if err.code == ErrorCode::NotFound => Ok(()),
        Err(err) if err.code == ErrorCode::TargetExists => {
            let same = sandbox.read(from, FILE_MAX_BYTES).ok() == sandbox.read(to, FILE_MAX_BYTES).ok();
            if same { sandbox.remove_inbox_file(from).map(|_| ()) } else { Err(err) }
        }
        Err(err) => Err(err),
    }
}

/// Whether the proposal's target already holds exactly the staged note.
pub(super) fn target_holds_content(sandbox: &Sandbox, located: &Located) -> bool {
    sandbox.resolve_note_target(&located.meta.target).is_ok_and(|target| {
        matches!(sandbox.stat(&target), Ok(Some(_)))
            && sandbox
                .read(&target, FILE_MAX_BYTES)
                .is_ok_and(|bytes| content_hash(&bytes) == located.meta.content_sha256)
    })
}
