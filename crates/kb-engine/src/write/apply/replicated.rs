//! What a replica (`engine/replica.rs`, issue 38) needs from the apply: the
//! files an apply of a pending proposal will leave, so that they are
//! committed and pushed before the vault is touched; and the completion of a
//! proposal a commit of this clone applied on the remote while the clone
//! itself stopped before writing it (a crash between the push and the
//! write): once that commit's files are in the work tree, the proposal is
//! archived and audited here as recovery completes any apply.

use super::archive::{archive_dir, archive_files, journal_of};
use super::finish::{Actor, Applied, finish_apply};
use crate::error::Result;
use crate::sandbox::{NotePath, Sandbox, Written};
use crate::write::inbox::{
    Action, Inbox, META_SUFFIX, ProposalKind, ProposalStatus, find, intact, journal, today,
};
use crate::write::plan::{FileOpKind, current, read_plan};

/// A file an apply leaves: its vault path and bytes (`None`: removed).
pub type PlannedFile = (String, Option<Vec<u8>>);

/// What applying a pending proposal will leave, and what a commit of it says.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The proposal's kind.
    pub kind: ProposalKind,
    /// Why, as the proposal says.
    pub reason: String,
    /// The files it leaves.
    pub files: Vec<PlannedFile>,
}

/// The files applying the pending proposal `id` will leave, as it stands now
/// (a move's source removed and its destination written, a trashed note
/// removed; the inbox's own files are not among them).
pub fn planned_files(sandbox: &Sandbox, id: &str) -> Result<Planned> {
    let inbox = Inbox::of(sandbox);
    let located = find(sandbox, &inbox, id.trim())?;
    let (kind, reason) = (located.meta.kind, located.meta.reason.clone());
    if !kind.is_multi() {
        let content = intact(sandbox, &inbox, &located)?;
        return Ok(Planned { kind, reason, files: vec![(located.meta.target.clone(), Some(content))] });
    }
    let plan = read_plan(sandbox, &located)?;
    let mut files = Vec::with_capacity(plan.files.len() * 2);
    for op in plan.files {
        match op.op {
            FileOpKind::Create | FileOpKind::Write => {
                files.push((op.path, op.after.map(String::into_bytes)));
            }
            FileOpKind::Trash => files.push((op.path, None)),
            FileOpKind::Move | FileOpKind::MoveFile => {
                let bytes = match op.after {
                    Some(after) if op.op == FileOpKind::Move => Some(after.into_bytes()),
                    _ => current(sandbox, &NotePath::parse(&op.path)?)?,
                };
                files.push((op.path, None));
                if let Some(to) = op.to {
                    files.push((to, bytes));
                }
            }
        }
    }
    Ok(Planned { kind, reason, files })
}

/// Completes the pending proposal `id`, whose changes a commit of this
/// clone holds and the work tree now has (the caller checked): archived and
/// audited as recovered, `notes` (the files that commit wrote) indexed.
/// `None` when it is not pending any more; nothing is touched then.
pub fn settle_applied(
    sandbox: &Sandbox,
    id: &str,
    notes: &[String],
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<Option<Applied>> {
    let super::Settled { inbox, _lock, mut log, .. } = super::settle(sandbox, id, actor, index)?;
    let Ok(located) = find(sandbox, &inbox, id) else { return Ok(None) };
    if located.status != ProposalStatus::Pending {
        return Ok(None);
    }
    let paths: Vec<NotePath> = notes.iter().filter_map(|path| NotePath::parse(path).ok()).collect();
    let archive = archive_dir(&inbox, ProposalStatus::Applied, &today())?;
    journal::write(sandbox, &inbox, &journal_of(&located, Action::Apply, &archive))?;
    archive_files(sandbox, &located, &archive, &mut |_| Ok(()))?;
    let index_result = index(&paths);
    let archived = crate::write::inbox::Located { dir: archive, status: ProposalStatus::Applied, ..located };
    let applied = finish_apply(sandbox, &mut log, &archived, index_result, actor, true, None)?;
    let _ = journal::clear(sandbox, &inbox);
    Ok(Some(applied))
}

/// Runs `f` under the inbox lock, once an apply a crash interrupted is
/// completed (`conflict` when it cannot be): no apply or reject runs meanwhile.
pub fn with_inbox_lock(
    sandbox: &Sandbox,
    actor: Actor,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
    f: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    let settled = super::settle_inbox(sandbox, actor, index)?;
    super::unsettled(&settled.recovered.summary.failed)?;
    f()
}

/// Whether a file under the inbox travels between clones: proposals, their
/// archive, the trash, conflict copies and the audit log do; the lock, the
/// journal, parked files and temporary files are this clone's own. A pending
/// proposal's staged files travel only with its metadata, which a propose
/// writes last: a proposal being staged never travels half made (their
/// removal, once it is archived, always travels).
pub fn inbox_file_travels(sandbox: &Sandbox, path: &str) -> bool {
    let inbox = Inbox::of(sandbox);
    let Some(rest) = path.strip_prefix(inbox.root()).and_then(|rest| rest.strip_prefix('/')) else {
        return false;
    };
    let name = rest.rsplit('/').next().unwrap_or(rest);
    if rest == "_apply.lock"
        || rest == "_applying.json"
        || rest.starts_with(&format!("{}/", crate::sandbox::DISPLACED_FOLDER))
        || name.starts_with('.')
    {
        return false;
    }
    let pending = ProposalKind::ALL.iter().any(|kind| rest == format!("{}/{name}", kind.name()));
    let gone =
        || NotePath::parse(path).is_ok_and(|file| sandbox.stat(&file).is_ok_and(|stat| stat.is_none()));
    if !pending || name.ends_with(META_SUFFIX) || gone() {
        return true;
    }
    let stem = [".new.md", ".plan.json", ".diff", ".md"].iter().find_map(|suffix| name.strip_suffix(suffix));
    let Some(stem) = stem else { return true };
    let folder = &path[..path.len() - name.len()];
    NotePath::parse(&format!("{folder}{stem}{META_SUFFIX}"))
        .is_ok_and(|meta| sandbox.stat(&meta).is_ok_and(|stat| stat.is_some()))
}

/// The audit log's vault path: every clone appends to it, so clones merge it
/// as a union of lines.
pub fn audit_log_path(sandbox: &Sandbox) -> Result<String> {
    Inbox::of(sandbox).audit_log().map(|path| path.as_str().to_owned())
}

/// Writes `bytes` into a file a replica's clone moves (a note the remote's
/// commits change, or one merged with the person's change not yet
/// committed, or the audit log) provided the file still holds `expected`: a
/// note is swapped as an apply swaps it, so a save landing meanwhile is never
/// lost ([`Written::Raced`], the note as the person left it). Any other file
/// is [`Written::NotMine`]. The caller holds the inbox lock.
pub fn write_moved(sandbox: &Sandbox, path: &str, bytes: &[u8], expected: &[u8]) -> Result<Written> {
    let inbox = Inbox::of(sandbox);
    let Ok(note) = NotePath::parse(path) else { return Ok(Written::NotMine) };
    if inbox.audit_log()? == note {
        let now = sandbox.read(&note, u64::MAX)?;
        if now != expected {
            return Ok(Written::Raced);
        }
        sandbox.write_atomic(&note, bytes, crate::sandbox::WriteMode::Replace)?;
        return Ok(Written::Done);
    }
    let Ok(target) = sandbox.resolve_note_target(path) else { return Ok(Written::NotMine) };
    let copy = inbox.conflict_copy(&target, "replica")?;
    match sandbox.replace_note(&target, bytes, expected, &copy, &mut || Ok(()), None)? {
        crate::sandbox::Replaced::Clean => Ok(Written::Done),
        _ => Ok(Written::Raced),
    }
}
