//! Archiving a consumed proposal: the journal naming it, its archive folder
//! (`inbox/applied/<date>` or `inbox/rejected/<date>`), and the move of its
//! files there, the metadata first (that marks it consumed).

use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};
use crate::write::apply::step::Step;
use crate::write::inbox::{Action, FILE_MAX_BYTES, Inbox, Journal, Located, ProposalStatus};

pub(crate) fn journal_of(located: &Located, action: Action, archive: &str) -> Journal {
    Journal {
        proposal_id: located.id().to_owned(),
        action,
        kind: located.meta.kind,
        stem: located.stem.clone(),
        archive: archive.to_owned(),
        folders: Vec::new(),
    }
}

/// `inbox/applied/<date>` or `inbox/rejected/<date>`.
pub(crate) fn archive_dir(inbox: &Inbox, status: ProposalStatus, date: &str) -> Result<String> {
    let root =
        inbox.archive_root(status).ok_or_else(|| Error::internal("a pending proposal has no archive"))?;
    Ok(NotePath::parse(&format!("{root}/{date}"))?.as_str().to_owned())
}

pub(crate) fn rejection_name(stem: &str) -> String {
    format!("{stem}.rejection.json")
}

/// Moves a proposal's files into `archive`: the metadata first (that marks it
/// consumed; if it is gone, another apply took it), then the others.
pub(crate) fn archive_files(
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
