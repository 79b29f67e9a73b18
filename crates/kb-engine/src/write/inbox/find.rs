//! Finding proposals: the pending and archived metadata files, a proposal by
//! its exact id (pending, or applied for a revert), and the id a person means
//! by a prefix, stem or slug.
//!
//! Finding a pending proposal looks at the pending folders only; only an id
//! that is not pending costs a walk through the archive, so an apply does not
//! grow with the history.

use serde_json::json;

use super::layout::{
    ID_PREFIX, Inbox, META_SUFFIX, PREFIX_MIN_DIGITS, ProposalKind, ProposalStatus, is_id, short_id,
};
use super::metadata::{Located, locate, not_found, tampered};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};

/// The metadata files of pending proposals (`inbox/new`, `inbox/patch`), sorted.
pub(crate) fn pending_files(sandbox: &Sandbox, inbox: &Inbox) -> Result<Vec<NotePath>> {
    let mut out = Vec::new();
    for kind in ProposalKind::ALL {
        let dir = NotePath::parse(&inbox.pending_dir(kind))?;
        out.extend(
            sandbox.list_inbox(&dir)?.into_iter().filter(|path| path.file_name().ends_with(META_SUFFIX)),
        );
    }
    Ok(out)
}

/// The metadata files under `inbox/applied/*/` or `inbox/rejected/*/`, by folder.
pub(crate) fn archived_files(
    sandbox: &Sandbox,
    inbox: &Inbox,
    status: ProposalStatus,
) -> Result<Vec<(NotePath, Vec<NotePath>)>> {
    let Some(root) = inbox.archive_root(status) else { return Ok(Vec::new()) };
    let root = NotePath::parse(&root)?;
    let mut out = Vec::new();
    for folder in sandbox.list_inbox_folders(&root)? {
        let files: Vec<NotePath> = sandbox
            .list_inbox(&folder)?
            .into_iter()
            .filter(|path| path.file_name().ends_with(META_SUFFIX))
            .collect();
        out.push((folder, files));
    }
    Ok(out)
}

/// Finds the pending proposal with exactly this id. `proposal_not_found` when no
/// proposal has it, `proposal_not_pending` when it was applied or rejected,
/// `proposal_tampered` when its metadata is unreadable or found twice. The
/// pending folders are looked at first; only an id that is not pending costs a
/// walk through the archive, so finding a pending proposal does not grow with
/// the history.
pub(crate) fn find(sandbox: &Sandbox, inbox: &Inbox, id: &str) -> Result<Located> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    let suffix = format!("-{}{META_SUFFIX}", short_id(id));
    let mut found = Vec::new();
    let mut broken = Vec::new();
    for path in pending_files(sandbox, inbox)?.iter().filter(|path| path.file_name().ends_with(&suffix)) {
        match locate(sandbox, path, ProposalStatus::Pending) {
            Ok(located) if located.id() == id => found.push(located),
            Ok(_) => {}
            Err(err) => broken.push(err.message),
        }
    }
    match found.len() {
        1 => return Ok(found.remove(0)),
        0 => {}
        _ => return Err(tampered(id, "its metadata is found in more than one place")),
    }
    for status in [ProposalStatus::Applied, ProposalStatus::Rejected] {
        for (folder, files) in archived_files(sandbox, inbox, status)? {
            for path in files.iter().filter(|path| path.file_name().ends_with(&suffix)) {
                if locate(sandbox, path, status).is_ok_and(|located| located.id() == id) {
                    let done = if status == ProposalStatus::Applied { "applied" } else { "rejected" };
                    return Err(Error::new(
                        ErrorCode::ProposalNotPending,
                        format!("proposal {id} was already {done} (archived in {folder})"),
                    )
                    .with_hint(
                        "a proposal is applied or rejected once; list_proposals shows the pending ones",
                    ));
                }
            }
        }
    }
    match broken.first() {
        None => Err(not_found(id)),
        Some(why) => Err(tampered(id, why)),
    }
}

/// Whether this inbox holds a proposal with exactly this id, pending or
/// archived (a server serving several vaults asks each which one a proposal
/// id belongs to). Pending proposals are looked at first.
pub fn holds(sandbox: &Sandbox, id: &str) -> bool {
    is_id(id)
        && match find(sandbox, &Inbox::of(sandbox), id) {
            Ok(_) => true,
            Err(error) => error.code != ErrorCode::ProposalNotFound,
        }
}

/// Finds the applied proposal with exactly this id, in the archive.
/// `proposal_not_pending` when it is pending or was rejected (it was never
/// applied), `proposal_not_found` when no proposal has it. Walks the archive's
/// folders (a revert is rare; an apply never does this).
pub(crate) fn find_applied(sandbox: &Sandbox, inbox: &Inbox, id: &str) -> Result<Located> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    let suffix = format!("-{}{META_SUFFIX}", short_id(id));
    let not_applied = |what: &str, hint: &str| {
        Error::new(
            ErrorCode::ProposalNotPending,
            format!("proposal {id} {what}, so there is nothing to revert"),
        )
        .with_hint(hint.to_owned())
    };
    for path in pending_files(sandbox, inbox)?.iter().filter(|path| path.file_name().ends_with(&suffix)) {
        if locate(sandbox, path, ProposalStatus::Pending).is_ok_and(|located| located.id() == id) {
            return Err(not_applied(
                "is pending, not applied",
                "a pending proposal is withdrawn by rejecting it (kb-index inbox reject ID)",
            ));
        }
    }
    for status in [ProposalStatus::Applied, ProposalStatus::Rejected] {
        for (_, files) in archived_files(sandbox, inbox, status)? {
            for path in files.iter().filter(|path| path.file_name().ends_with(&suffix)) {
                let Ok(located) = locate(sandbox, path, status) else { continue };
                if located.id() != id {
                    continue;
                }
                if status == ProposalStatus::Rejected {
                    return Err(not_applied(
                        "was rejected, never applied",
                        "only an applied proposal can be reverted; list_proposals with status applied shows them",
                    ));
                }
                return Ok(located);
            }
        }
    }
    Err(not_found(id))
}

/// The id of an applied proposal named by its id, a unique prefix of its hex
/// digits (at least 4, with or without `p_`) or its file stem, as `kb-index
/// revert` accepts. A well-formed full id is returned as it is.
pub fn resolve_applied_id(sandbox: &Sandbox, id_or_prefix: &str) -> Result<String> {
    let wanted = id_or_prefix.trim();
    if is_id(wanted) {
        return Ok(wanted.to_owned());
    }
    let digits = wanted.strip_prefix(ID_PREFIX).unwrap_or(wanted).to_ascii_lowercase();
    let hex = digits.len() >= PREFIX_MIN_DIGITS && digits.bytes().all(|b| b.is_ascii_hexdigit());
    let inbox = Inbox::of(sandbox);
    let mut found: Vec<String> = Vec::new();
    for (_, files) in archived_files(sandbox, &inbox, ProposalStatus::Applied)? {
        for path in files {
            let Ok(located) = locate(sandbox, &path, ProposalStatus::Applied) else { continue };
            let id = located.id();
            let by_prefix = hex && id.strip_prefix(ID_PREFIX).is_some_and(|rest| rest.starts_with(&digits));
            if (by_prefix || located.stem == wanted) && !found.iter().any(|known| known == id) {
                found.push(id.to_owned());
            }
        }
    }
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::new(
            ErrorCode::ProposalNotFound,
            format!("no applied proposal has the id or id prefix {wanted:?} (give at least {PREFIX_MIN_DIGITS} hex digits)"),
        )
        .with_hint("the audit log inbox/_applied.jsonl lists applied proposals with their ids")),
        _ => Err(Error::invalid(format!(
            "{wanted:?} names {} applied proposals: {}; give more digits of the id",
            found.len(),
            found.join(", ")
        ))
        .with_details(json!({ "candidates": found }))),
    }
}

/// The id of a pending proposal named by its id, a unique prefix of its hex
/// digits (at least 4, with or without `p_`), its file stem (`<slug>-<8 hex>`)
/// or its slug, as the CLI accepts. A well-formed full id is returned as it is.
/// Several matches are `invalid_argument` listing them (`details.candidates`).
pub fn resolve_id(sandbox: &Sandbox, id_or_slug: &str) -> Result<String> {
    let wanted = id_or_slug.trim();
    if is_id(wanted) {
        return Ok(wanted.to_owned());
    }
    if wanted.is_empty() {
        return Err(Error::invalid(
            "the proposal id is empty; give an id or a slug from `kb-index inbox list`",
        ));
    }
    let digits = wanted.strip_prefix(ID_PREFIX).unwrap_or(wanted).to_ascii_lowercase();
    let hex = digits.len() >= PREFIX_MIN_DIGITS && digits.bytes().all(|b| b.is_ascii_hexdigit());
    let inbox = Inbox::of(sandbox);
    let mut found: Vec<(String, String)> = Vec::new();
    for path in pending_files(sandbox, &inbox)? {
        let Ok(located) = locate(sandbox, &path, ProposalStatus::Pending) else { continue };
        let id = located.id();
        let slug = located.stem.strip_suffix(&format!("-{}", short_id(id))).unwrap_or(&located.stem);
        let by_prefix = hex && id.strip_prefix(ID_PREFIX).is_some_and(|rest| rest.starts_with(&digits));
        if (by_prefix || located.stem == wanted || slug == wanted)
            && !found.iter().any(|(known, _)| known == id)
        {
            found.push((id.to_owned(), located.meta.target.clone()));
        }
    }
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0).0),
        0 => {
            let short = wanted.strip_prefix(ID_PREFIX).is_some_and(|rest| {
                rest.len() < PREFIX_MIN_DIGITS && rest.bytes().all(|b| b.is_ascii_hexdigit())
            });
            Err(Error::new(
                ErrorCode::ProposalNotFound,
                if short {
                    format!("{wanted:?} is too short to name a proposal: give at least {PREFIX_MIN_DIGITS} hex digits of its id")
                } else {
                    format!("no pending proposal has the id, id prefix or slug {wanted:?}")
                },
            )
            .with_hint("`kb-index inbox list` shows the pending proposals with their ids"))
        }
        _ => {
            let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
            let listed: Vec<String> = found.iter().map(|(id, target)| format!("{id} ({target})")).collect();
            Err(Error::invalid(format!(
                "{wanted:?} names {} pending proposals: {}; give more digits of the id",
                found.len(),
                listed.join(", ")
            ))
            .with_details(json!({ "candidates": ids })))
        }
    }
}
