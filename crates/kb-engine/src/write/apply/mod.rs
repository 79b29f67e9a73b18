//! Applying and rejecting a proposal: the only way a note's bytes change.
//!
//! Everything here runs under the inbox lock. An apply first completes what a
//! crash may have left (`recover.rs`), then checks and touches nothing until
//! every check passed; it then writes the journal (`inbox/journal.rs`) naming
//! the proposal, and from there on each step leaves a state recovery completes:
//! the note is written (`single.rs`; a plan's notes in `multi.rs`), the metadata
//! file moves to the archive first (`archive.rs`, marking the proposal
//! consumed), then its other files, the index is updated (`index.rs`), and the
//! audit line is appended last (`finish.rs`), marking the apply complete. The
//! contract lists the audit line before the index update; here the index runs
//! first because the audit line records whether it worked (`index: "ok" |
//! "failed"`). Nothing here reads the whole audit log or walks the archive: an
//! apply costs the same however many proposals came before it.
//!
//! **Concurrency.** Applies and rejects are serialised across processes by an
//! advisory lock on `inbox/_apply.lock` (the contract's dot-name would be
//! hard-denied by the sandbox). All checks run under the lock, so of two
//! simultaneous applies of one id exactly one succeeds and the other finds it no
//! longer pending (`proposal_not_pending`). Even without working locks, the
//! create-new write and the never-replacing moves let only one of them through.
//!
//! **Crashes.** Every step leaves a state the next apply (or [`recover`], run at
//! server start) recognises from the journal alone: before the write the
//! proposal is simply still pending; a pending proposal whose target already
//! holds exactly its content is archived and audited; an archived proposal
//! without its audit line gets its leftover files moved, its index update and
//! its audit line. Recovery is idempotent, and neither it nor an apply reads the
//! whole audit log or walks the archive, so their cost does not grow with the
//! history. Tests crash the apply after every [`Step`] through
//! [`apply_with_failpoint`], and kill a real process there.

mod archive;
mod finish;
mod index;
mod memory;
mod multi;
mod recover;
mod replicated;
mod single;
mod step;

pub use finish::{Actor, Applied, ApplyStatus, Rejected};
pub use index::{ApplyIndex, NewText};
pub use memory::{MemoryEntry, Remembered, remember};
pub use recover::{Recovery, interrupted, recover, recover_applies};
pub use replicated::{
    Planned, PlannedFile, audit_log_path, inbox_file_travels, planned_files, settle_applied, with_inbox_lock,
    write_moved,
};
pub use step::Step;

use jiff::Timestamp;

use archive::{archive_dir, archive_files, journal_of, rejection_name};
use finish::{Rejection, finish_reject};
use index::PathsOnly;
use recover::{Recovered, recover_locked};
use single::target_holds_content;

use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{InboxLock, NotePath, Sandbox, WriteMode, Zone, rfc3339};
use crate::write::inbox::{
    Action, AuditLog, Inbox, Located, ProposalStatus, find, is_id, journal, lock, not_found, today, validate,
};

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
        return multi::apply(sandbox, &inbox, &mut log, located, actor, index, failpoint);
    }
    single::apply(sandbox, &inbox, &mut log, located, actor, index, failpoint)
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
    let archive = archive_dir(&inbox, ProposalStatus::Rejected, &today())?;
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
    if !is_id(id) {
        return Err(not_found(id));
    }
    settle_inbox(sandbox, actor, index)
}

/// [`settle`] without a proposal: the lock, the audit log and recovery.
fn settle_inbox(
    sandbox: &Sandbox,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<Settled> {
    let inbox = Inbox::of(sandbox);
    let lock = lock(sandbox, &inbox)?;
    let mut log = AuditLog::open(sandbox, &inbox)?;
    let recovered = recover_locked(sandbox, &inbox, &mut log, actor, index);
    Ok(Settled { inbox, _lock: lock, log, recovered })
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
