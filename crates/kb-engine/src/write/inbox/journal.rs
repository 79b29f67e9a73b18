//! The journal `inbox/_applying.json`: a small file naming the one proposal an
//! apply or reject is consuming, written (and synced) after every check passed
//! and before anything changes, removed once its audit line is appended.
//!
//! It is what makes recovery cost nothing when nothing crashed, and the same
//! whatever the history: a crash can only have left the proposal the journal
//! names half done, so recovery looks at that one proposal (pending, archived,
//! or both during a move) and at the audit log's last line, never at the
//! archive folders or the whole log. Applies and rejects hold the inbox lock,
//! so there is never more than one journal.

use serde::{Deserialize, Serialize};

use super::audit::AuditLog;
use super::layout::{Inbox, META_SUFFIX, ProposalKind, ProposalStatus, is_id};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, WriteMode};

/// Largest journal read (it holds a few short fields).
const JOURNAL_MAX_BYTES: u64 = 64 << 10;

/// What is being done to the proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Action {
    /// `apply`: the note is written, then the files archived and the line appended.
    Apply,
    /// `reject`: the files are archived with the reason, then the line appended.
    Reject,
}

/// The journal's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Journal {
    pub(crate) proposal_id: String,
    pub(crate) action: Action,
    pub(crate) kind: ProposalKind,
    /// The proposal's file stem (`<slug>-<8 hex>`).
    pub(crate) stem: String,
    /// The archive folder its files move to (`inbox/applied/<date>`).
    pub(crate) archive: String,
    /// The folders a multi-file apply may create (missing when the journal was
    /// written, shallowest first): a roll-back removes those left empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) folders: Vec<String>,
}

impl Journal {
    /// Its metadata file in the pending folder.
    pub(crate) fn pending_meta(&self, inbox: &Inbox) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{}{META_SUFFIX}", inbox.pending_dir(self.kind), self.stem))
    }

    /// Its metadata file in the archive.
    pub(crate) fn archived_meta(&self) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{}{META_SUFFIX}", self.archive, self.stem))
    }

    /// Refuses a journal whose names are not the ones an apply writes (it is
    /// plain JSON a person can edit).
    fn check(self, inbox: &Inbox) -> Result<Journal> {
        let root = match self.action {
            Action::Apply => inbox.archive_root(ProposalStatus::Applied),
            Action::Reject => inbox.archive_root(ProposalStatus::Rejected),
        }
        .unwrap_or_default();
        let folder = self.archive.strip_prefix(&format!("{root}/")).unwrap_or_default();
        let fine = is_id(&self.proposal_id)
            && !self.stem.is_empty()
            && !self.stem.contains('/')
            && !folder.is_empty()
            && !folder.contains('/')
            && self.folders.iter().all(|folder| NotePath::parse(folder).is_ok());
        if fine {
            Ok(self)
        } else {
            Err(Error::new(
                ErrorCode::ProposalTampered,
                "the apply journal names files an apply never writes",
            ))
        }
    }
}

/// Records the proposal about to be consumed; replaces nothing but a journal
/// (the caller has completed any earlier one).
pub(crate) fn write(sandbox: &Sandbox, inbox: &Inbox, journal: &Journal) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(journal)
        .map_err(|err| Error::internal(format!("cannot serialise the apply journal: {err}")))?;
    bytes.push(b'\n');
    sandbox.write_atomic(&inbox.journal_file()?, &bytes, WriteMode::Replace)
}

/// The journal, when there is one. An error says why it cannot be used.
pub(crate) fn read(sandbox: &Sandbox, inbox: &Inbox) -> Result<Option<Journal>> {
    let path = inbox.journal_file()?;
    let bytes = match sandbox.read(&path, JOURNAL_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.code == ErrorCode::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let journal: Journal = serde_json::from_slice(&bytes).map_err(|err| {
        Error::new(ErrorCode::ProposalTampered, format!("{path} is not an apply journal: {err}"))
    })?;
    journal.check(inbox).map(Some)
}

/// Removes the journal: the proposal it named is settled.
pub(crate) fn clear(sandbox: &Sandbox, inbox: &Inbox) -> Result<()> {
    sandbox.remove_inbox_file(&inbox.journal_file()?).map(|_| ())
}

/// The id of the proposal whose apply or reject the journal says is under way
/// (or was interrupted) and whose audit line is not yet the log's last.
pub(crate) fn interrupted_id(sandbox: &Sandbox, inbox: &Inbox) -> Option<String> {
    let journal = read(sandbox, inbox).ok().flatten()?;
    let log = AuditLog::open(sandbox, inbox).ok()?;
    (log.last_id() != Some(journal.proposal_id.as_str())).then_some(journal.proposal_id)
}
