//! Applying and rejecting proposals, the audit log, and crash recovery.
//!
//! Everything here runs under the inbox lock. An apply checks first and touches
//! nothing until every check passed; from then on each step leaves a state that
//! [`recover`] completes: a pending proposal whose target already holds its
//! content is archived and audited; an archived proposal without an audit line
//! gets its leftover files moved, its index update and its audit line. The
//! metadata file moves first, so it marks the proposal consumed; the audit line
//! comes last, so it marks the apply complete. A line is never rewritten: the
//! log is append-only.

use std::collections::HashSet;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::proposal::{
    self, FILE_MAX_BYTES, Inbox, Located, META_SUFFIX, archived_files, find, intact, locate, pending_files,
    short_id, tampered, validate,
};
use super::propose::stale_base;
use super::{Actor, Applied, ApplyStatus, ProposalKind, ProposalStatus, Recovery, Rejected, Step};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{InboxLock, NotePath, Replaced, Sandbox, WriteMode};
use crate::vault::content_hash;

/// How old a staged file without metadata must be to count as a killed
/// propose's orphan (a propose writes its files within milliseconds).
const ORPHAN_AGE: Duration = Duration::from_secs(600);

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
    index: &mut dyn FnMut(&NotePath) -> Result<()>,
) -> Result<Applied> {
    apply_with_failpoint(sandbox, id, actor, index, &mut |_| Ok(()))
}

/// [`apply`], calling `failpoint` after each [`Step`]; an error from it stops the
/// apply on the spot, as a crash would (tests use it to prove recovery).
pub fn apply_with_failpoint(
    sandbox: &Sandbox,
    id: &str,
    actor: Actor,
    index: &mut dyn FnMut(&NotePath) -> Result<()>,
    failpoint: &mut dyn FnMut(Step) -> Result<()>,
) -> Result<Applied> {
    let id = id.trim();
    if !proposal::is_id(id) {
        return Err(proposal::not_found(id));
    }
    let inbox = Inbox::of(sandbox);
    let _lock = lock(sandbox, &inbox)?;
    let mut log = AuditLog::read(sandbox, &inbox)?;
    let recovered = recover_locked(sandbox, &inbox, &mut log, actor, index);
    if let Some(done) = recovered.applied.into_iter().find(|done| done.proposal_id == id) {
        // This very proposal had been half applied; it is complete now.
        return Ok(done);
    }

    let located = find(sandbox, &inbox, id)?;
    let (target, content, base) = check(sandbox, &inbox, &located)?;
    failpoint(Step::Claimed)?;

    match base {
        None => sandbox.write_atomic(&target, &content, WriteMode::CreateNew)?,
        Some(base) => swap(sandbox, &located, &target, &content, &base)?,
    }
    failpoint(Step::Written)?;

    let archive = archive_dir(&inbox, ProposalStatus::Applied, &proposal::today())?;
    archive_files(sandbox, &located, &archive, failpoint).map_err(|err| after_write(err, &target))?;
    failpoint(Step::Archived)?;

    let index_result = index(&target);
    failpoint(Step::Indexed)?;

    let archived = Located { dir: archive.clone(), status: ProposalStatus::Applied, ..located };
    let applied = finish_apply(sandbox, &mut log, &archived, index_result, actor, false)
        .map_err(|err| audit_failed(err, id, &target, &archive, &log.path))?;
    failpoint(Step::Audited)?;
    Ok(applied)
}

/// Completes interrupted applies and rejects (see the module docs), under the
/// inbox lock. Run it at server start; [`apply`] runs it too. `index` is called
/// for every note whose apply is completed; `actor` goes into their audit lines.
pub fn recover(
    sandbox: &Sandbox,
    actor: Actor,
    index: &mut dyn FnMut(&NotePath) -> Result<()>,
) -> Result<Recovery> {
    let inbox = Inbox::of(sandbox);
    let _lock = lock(sandbox, &inbox)?;
    let mut swept = sweep_note_temps(sandbox, &inbox);
    let mut log = AuditLog::read(sandbox, &inbox)?;
    let mut done = recover_locked(sandbox, &inbox, &mut log, actor, index);
    // Only once every interrupted apply has its files back together is a staged
    // file without metadata an orphan.
    if done.summary.failed.is_empty() {
        swept.extend(sweep_inbox(sandbox, &inbox));
    }
    done.summary.swept = swept;
    Ok(done.summary)
}

/// Removes what killed proposes left in the inbox, by kb-mcp's own names only:
/// temporary files in the pending folders, and staged files without their
/// metadata (`<slug>-<8 hex>.md`, `.new.md`, `.diff`) written more than
/// [`ORPHAN_AGE`] ago, so that a propose under way is never taken for a killed
/// one. Under the lock, after recovery.
fn sweep_inbox(sandbox: &Sandbox, inbox: &Inbox) -> Vec<String> {
    let mut done = Vec::new();
    for kind in [ProposalKind::New, ProposalKind::Patch] {
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
/// notes: removed when they hold that proposal's text (or a part of it) or the
/// base it replaces, otherwise kept beside the note as a conflict copy, since
/// they may hold a person's save. Under the lock, before recovery archives any.
fn sweep_note_temps(sandbox: &Sandbox, inbox: &Inbox) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(pending) = pending_files(sandbox, inbox) else { return done };
    for path in pending {
        let Ok(located) = locate(sandbox, &path, ProposalStatus::Pending) else { continue };
        let Ok(target) = NotePath::parse(&located.meta.target) else { continue };
        let staged = located.content_path().ok().and_then(|file| sandbox.read(&file, FILE_MAX_BYTES).ok());
        let meta = &located.meta;
        let mut ours = |bytes: &[u8]| {
            let hash = content_hash(bytes);
            hash == meta.content_sha256
                || meta.base_sha256.as_deref() == Some(hash.as_str())
                || staged.as_deref().is_some_and(|staged| staged.starts_with(bytes))
        };
        let conflict_name =
            format!("{}.conflict-{}-{}.md", target.stem(), proposal::today(), short_id(located.id()));
        if let Ok(lines) = sandbox.sweep_note_temps(&target, &mut ours, &conflict_name) {
            done.extend(lines);
        }
    }
    done
}

/// Whether a file stem is one a proposal's files have: `<slug>-<8 hex digits>`.
fn is_stem(stem: &str) -> bool {
    stem.rsplit_once('-').is_some_and(|(slug, short)| {
        !slug.is_empty()
            && short.len() == 8
            && short.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
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
    if !proposal::is_id(id) {
        return Err(proposal::not_found(id));
    }
    let inbox = Inbox::of(sandbox);
    let _lock = lock(sandbox, &inbox)?;
    let mut log = AuditLog::read(sandbox, &inbox)?;
    let located = find(sandbox, &inbox, id)?;
    if validate(&inbox, &located).is_ok() && target_holds_content(sandbox, &located) {
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
        at: proposal::rfc3339(Timestamp::now()),
        by: actor,
    };
    let mut bytes = serde_json::to_vec_pretty(&record)
        .map_err(|err| Error::internal(format!("cannot serialise the rejection: {err}")))?;
    bytes.push(b'\n');
    let record_path = NotePath::parse(&format!("{archive}/{}", rejection_name(&located.stem)))?;
    sandbox.write_atomic(&record_path, &bytes, WriteMode::Replace)?;
    archive_files(sandbox, &located, &archive, &mut |_| Ok(()))?;
    let archived = Located { dir: archive, status: ProposalStatus::Rejected, ..located };
    finish_reject(sandbox, &mut log, &archived, &record.reason, actor, false)
}

/// The inbox lock.
pub(super) fn lock(sandbox: &Sandbox, inbox: &Inbox) -> Result<InboxLock> {
    sandbox.lock_inbox_file(&inbox.lock_file()?, LOCK_WAIT)
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
    let content = intact(sandbox, inbox, located).map_err(|why| tampered(id, &why))?;
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
                        return Err(stale_base(&target, base, Some(&current)));
                    }
                    checked = Some(bytes);
                }
                Err(err) if err.code == ErrorCode::NotFound => return Err(stale_base(&target, base, None)),
                Err(err) => return Err(err),
            }
        }
    }
    let target = sandbox.resolve_note_target(&meta.target)?;
    Ok((target, content, checked))
}

/// Replaces a patch's note, provided it still holds the base: a save a person
/// makes meanwhile is never lost (see [`Sandbox::replace_note`]). When one lands
/// during the swap, the note keeps the person's bytes, the proposal stays
/// pending, and the caller gets `conflict` naming the note and any conflict copy.
fn swap(sandbox: &Sandbox, located: &Located, target: &NotePath, content: &[u8], base: &[u8]) -> Result<()> {
    let id = located.id();
    let conflict_name = format!("{}.conflict-{}-{}.md", target.stem(), proposal::today(), short_id(id));
    match sandbox.replace_note(target, content, base, &conflict_name)? {
        Replaced::Clean => Ok(()),
        Replaced::Changed(now) => {
            let base = located.meta.base_sha256.as_deref().unwrap_or_default();
            Err(stale_base(target, base, now.map(|bytes| content_hash(&bytes)).as_deref()))
        }
        Replaced::Conflict { kept } => {
            let copy =
                kept.as_ref().map(|kept| format!(" and another save is kept in {kept}")).unwrap_or_default();
            Err(Error::new(
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
                "conflict_copy": kept.as_ref().map(NotePath::as_str),
                "proposed_file": located.meta.content_file,
            })))
        }
    }
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

/// `inbox/applied/<date>` or `inbox/rejected/<date>`.
fn archive_dir(inbox: &Inbox, status: ProposalStatus, date: &str) -> Result<String> {
    let root =
        inbox.archive_root(status).ok_or_else(|| Error::internal("a pending proposal has no archive"))?;
    Ok(NotePath::parse(&format!("{root}/{date}"))?.as_str().to_owned())
}

fn rejection_name(stem: &str) -> String {
    format!("{stem}.rejection.json")
}

/// Moves a proposal's files into `archive`: the metadata first (that marks it
/// consumed; if it is gone, another apply took it), then the others.
fn archive_files(
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
fn move_leftover(sandbox: &Sandbox, from: &NotePath, to: &NotePath) -> Result<()> {
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
fn target_holds_content(sandbox: &Sandbox, located: &Located) -> bool {
    sandbox.resolve_note_target(&located.meta.target).is_ok_and(|target| {
        matches!(sandbox.stat(&target), Ok(Some(_)))
            && sandbox
                .read(&target, FILE_MAX_BYTES)
                .is_ok_and(|bytes| content_hash(&bytes) == located.meta.content_sha256)
    })
}

/// The audit log: ids already logged, and whether its end is clean.
struct AuditLog {
    path: NotePath,
    /// Every id with a line.
    ids: HashSet<String>,
    /// `(archive folder, short id)` of every line: archived metadata files whose
    /// pair is here need not be opened to know they are logged.
    keys: HashSet<(String, String)>,
    /// Whether the file is empty or ends with a newline (a crash mid-append may
    /// leave a partial line, which the next line must not continue).
    clean_end: bool,
}

/// One line of the audit log, in the contract's field order.
#[derive(Debug, Serialize)]
struct AuditLine<'a> {
    at: String,
    proposal_id: &'a str,
    kind: ProposalKind,
    target: &'a str,
    archive: &'a str,
    content_sha256: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_sha256: Option<&'a str>,
    by: Actor,
    /// `ok` or `failed`; absent for a rejection.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<&'static str>,
    /// `rejected` for a rejection.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// Written by recovery, completing an interrupted apply or reject.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    recovered: bool,
}

/// The record beside a rejected proposal.
#[derive(Debug, Serialize, Deserialize)]
struct Rejection {
    proposal_id: String,
    reason: String,
    at: String,
    by: Actor,
}

impl AuditLog {
    fn read(sandbox: &Sandbox, inbox: &Inbox) -> Result<AuditLog> {
        let path = inbox.audit_log()?;
        let bytes = match sandbox.read(&path, FILE_MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.code == ErrorCode::NotFound => Vec::new(),
            Err(err) => return Err(err),
        };
        let mut log = AuditLog {
            path,
            ids: HashSet::new(),
            keys: HashSet::new(),
            clean_end: bytes.is_empty() || bytes.ends_with(b"\n"),
        };
        for line in bytes.split(|&byte| byte == b'\n') {
            let Ok(Value::Object(entry)) = serde_json::from_slice::<Value>(line) else { continue };
            let (Some(id), Some(archive)) = (
                entry.get("proposal_id").and_then(Value::as_str),
                entry.get("archive").and_then(Value::as_str),
            ) else {
                continue;
            };
            log.keys.insert((archive.to_owned(), short_id(id).to_owned()));
            log.ids.insert(id.to_owned());
        }
        Ok(log)
    }

    /// Appends one line and returns it as JSON.
    fn append(&mut self, sandbox: &Sandbox, line: &AuditLine<'_>) -> Result<Value> {
        let text = serde_json::to_string(line)
            .map_err(|err| Error::internal(format!("cannot serialise the audit line: {err}")))?;
        let mut bytes = Vec::with_capacity(text.len() + 2);
        if !self.clean_end {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'\n');
        sandbox.append_inbox(&self.path, &bytes)?;
        self.clean_end = true;
        self.ids.insert(line.proposal_id.to_owned());
        self.keys.insert((line.archive.to_owned(), short_id(line.proposal_id).to_owned()));
        serde_json::from_str(&text)
            .map_err(|err| Error::internal(format!("cannot read back the audit line: {err}")))
    }
}

/// The audit line of an archived apply, and the result to return.
fn finish_apply(
    sandbox: &Sandbox,
    log: &mut AuditLog,
    archived: &Located,
    index_result: Result<()>,
    actor: Actor,
    recovered: bool,
) -> Result<Applied> {
    let meta = &archived.meta;
    let line = AuditLine {
        at: proposal::rfc3339(Timestamp::now()),
        proposal_id: &meta.proposal_id,
        kind: meta.kind,
        target: &meta.target,
        archive: &archived.dir,
        content_sha256: &meta.content_sha256,
        base_sha256: meta.base_sha256.as_deref(),
        by: actor,
        index: Some(if index_result.is_ok() { "ok" } else { "failed" }),
        status: None,
        reason: None,
        recovered,
    };
    let audit = log.append(sandbox, &line)?;
    Ok(Applied {
        proposal_id: meta.proposal_id.clone(),
        status: if index_result.is_ok() { ApplyStatus::Applied } else { ApplyStatus::AppliedIndexFailed },
        target: meta.target.clone(),
        new_hash: meta.content_sha256.clone(),
        archive: archived.dir.clone(),
        audit,
        index_error: index_result.err().map(|err| err.to_string()),
    })
}

/// The audit line of an archived rejection, and the result to return.
fn finish_reject(
    sandbox: &Sandbox,
    log: &mut AuditLog,
    archived: &Located,
    reason: &str,
    actor: Actor,
    recovered: bool,
) -> Result<Rejected> {
    let meta = &archived.meta;
    let line = AuditLine {
        at: proposal::rfc3339(Timestamp::now()),
        proposal_id: &meta.proposal_id,
        kind: meta.kind,
        target: &meta.target,
        archive: &archived.dir,
        content_sha256: &meta.content_sha256,
        base_sha256: meta.base_sha256.as_deref(),
        by: actor,
        index: None,
        status: Some("rejected"),
        reason: Some(reason),
        recovered,
    };
    let audit = log.append(sandbox, &line)?;
    Ok(Rejected { proposal_id: meta.proposal_id.clone(), archive: archived.dir.clone(), audit })
}

/// What a recovery pass did, with the applies it completed.
struct Recovered {
    applied: Vec<Applied>,
    summary: Recovery,
}

/// Completes interrupted applies and rejects; the caller holds the lock. One
/// proposal failing does not stop the others.
fn recover_locked(
    sandbox: &Sandbox,
    inbox: &Inbox,
    log: &mut AuditLog,
    actor: Actor,
    index: &mut dyn FnMut(&NotePath) -> Result<()>,
) -> Recovered {
    let mut done = Recovered { applied: Vec::new(), summary: Recovery::default() };
    // (b) Archived without an audit line. First, so that a metadata file left in
    // both places by a crash mid-move is settled before pending ones are looked at.
    for status in [ProposalStatus::Applied, ProposalStatus::Rejected] {
        let folders = match archived_files(sandbox, inbox, status) {
            Ok(folders) => folders,
            Err(err) => {
                done.summary.failed.push(format!("{}: {}", status_name(status), err.message));
                continue;
            }
        };
        for (folder, files) in folders {
            for path in files {
                let short =
                    path.file_name().strip_suffix(META_SUFFIX).and_then(|stem| stem.rsplit('-').next());
                if short
                    .is_some_and(|short| log.keys.contains(&(folder.as_str().to_owned(), short.to_owned())))
                {
                    continue;
                }
                let Ok(located) = locate(sandbox, &path, status) else { continue };
                if log.ids.contains(located.id()) || validate(inbox, &located).is_err() {
                    continue;
                }
                complete_archived(sandbox, inbox, log, &located, actor, index, &mut done);
            }
        }
    }
    // (a) Pending, but the target already holds the staged note: the note was
    // written and the crash came before the archive.
    let pending = match pending_files(sandbox, inbox) {
        Ok(pending) => pending,
        Err(err) => {
            done.summary.failed.push(format!("pending proposals: {}", err.message));
            Vec::new()
        }
    };
    for path in pending {
        let Ok(located) = locate(sandbox, &path, ProposalStatus::Pending) else { continue };
        if log.ids.contains(located.id()) || validate(inbox, &located).is_err() {
            continue;
        }
        if !target_holds_content(sandbox, &located) {
            continue;
        }
        let id = located.id().to_owned();
        let archived = archive_dir(inbox, ProposalStatus::Applied, &proposal::today()).and_then(|archive| {
            archive_files(sandbox, &located, &archive, &mut |_| Ok(()))?;
            Ok(Located { dir: archive, status: ProposalStatus::Applied, ..located })
        });
        match archived {
            Ok(archived) => complete_archived(sandbox, inbox, log, &archived, actor, index, &mut done),
            Err(err) => done.summary.failed.push(format!("{id}: {}", err.message)),
        }
    }
    done
}

fn status_name(status: ProposalStatus) -> &'static str {
    match status {
        ProposalStatus::Pending => "pending",
        ProposalStatus::Applied => "applied",
        ProposalStatus::Rejected => "rejected",
        ProposalStatus::Interrupted => "interrupted",
    }
}

/// Finishes an archived proposal that has no audit line: moves what is left in
/// its pending folder, then indexes (applies only) and logs it.
fn complete_archived(
    sandbox: &Sandbox,
    inbox: &Inbox,
    log: &mut AuditLog,
    located: &Located,
    actor: Actor,
    index: &mut dyn FnMut(&NotePath) -> Result<()>,
    done: &mut Recovered,
) {
    let id = located.id().to_owned();
    let result = (|| -> Result<Option<Applied>> {
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
            _ => {
                let index_result = NotePath::parse(&located.meta.target).and_then(|target| index(&target));
                finish_apply(sandbox, log, located, index_result, actor, true).map(Some)
            }
        }
    })();
    match result {
        Ok(applied) => {
            done.applied.extend(applied);
            done.summary.completed.push(id);
        }
        Err(err) => done.summary.failed.push(format!("{id}: {}", err.message)),
    }
}
