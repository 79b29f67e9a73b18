//! The inbox layout: the kinds of proposals, the folder each kind and status
//! lives in, the names of a proposal's files, proposal ids, and the lock that
//! serialises applies and rejects.
//!
//! A proposal is a metadata file `<stem>.proposal.json` plus its siblings in the
//! same folder: `<stem>.md` for a new note; `<stem>.new.md` and `<stem>.diff` for
//! a patch; `<stem>.plan.json` and `<stem>.diff` for a multi-file proposal. The
//! stem is `<slug>-<first 8 hex digits of the id>`, so names stay readable and
//! unique. Pending proposals live in `inbox/<kind>/`, consumed ones in
//! `inbox/applied/<date>/` or `inbox/rejected/<date>/`.

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sandbox::{InboxLock, NotePath, Sandbox, hex};

/// How long an apply waits for another one to finish.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// What a proposal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    /// Creates a new note.
    New,
    /// Changes an existing note.
    Patch,
    /// Moves or renames a note or a folder, rewriting the links to it.
    Move,
    /// Moves a note to the inbox's trash.
    Delete,
    /// Several new notes, patches, moves and deletes, applied all or nothing.
    Batch,
    /// Undoes an applied proposal.
    Revert,
}

impl ProposalKind {
    /// Every kind, in the order pending folders are listed.
    pub const ALL: [ProposalKind; 6] = [
        ProposalKind::New,
        ProposalKind::Patch,
        ProposalKind::Move,
        ProposalKind::Delete,
        ProposalKind::Batch,
        ProposalKind::Revert,
    ];

    /// Whether its staged file is a plan of several file operations
    /// (`plan/`) rather than one note.
    pub fn is_multi(self) -> bool {
        !matches!(self, ProposalKind::New | ProposalKind::Patch)
    }

    /// Its name in results and folders: `new`, `patch`, `move`, `delete`, `batch`, `revert`.
    pub fn name(self) -> &'static str {
        match self {
            ProposalKind::New => "new",
            ProposalKind::Patch => "patch",
            ProposalKind::Move => "move",
            ProposalKind::Delete => "delete",
            ProposalKind::Batch => "batch",
            ProposalKind::Revert => "revert",
        }
    }
}

impl std::fmt::Display for ProposalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// Where a proposal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    /// In `inbox/new/` or `inbox/patch/`.
    Pending,
    /// In `inbox/applied/<date>/`.
    Applied,
    /// In `inbox/rejected/<date>/`.
    Rejected,
    /// Archived, but its audit line is missing: the apply or reject was
    /// interrupted (or is under way); the next apply or server start completes it.
    Interrupted,
}

impl ProposalStatus {
    /// Its name in results: `pending`, `applied`, `rejected`, `interrupted`.
    pub fn name(self) -> &'static str {
        match self {
            ProposalStatus::Pending => "pending",
            ProposalStatus::Applied => "applied",
            ProposalStatus::Rejected => "rejected",
            ProposalStatus::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for ProposalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The metadata format version.
pub(crate) const SCHEMA: u32 = 1;
/// Name suffix of metadata files.
pub(crate) const META_SUFFIX: &str = ".proposal.json";
/// Largest metadata file read.
pub(super) const META_MAX_BYTES: u64 = 1 << 20;
/// Largest staged note, target or audit log read (the largest configurable limit).
pub(crate) const FILE_MAX_BYTES: u64 = 1 << 30;
/// `p_` and 32 hex digits.
pub(super) const ID_PREFIX: &str = "p_";

/// The inbox folders and files, from the configured inbox folder.
#[derive(Debug, Clone)]
pub(crate) struct Inbox {
    root: String,
}

impl Inbox {
    pub(crate) fn of(sandbox: &Sandbox) -> Inbox {
        Inbox { root: sandbox.policy().inbox.trim_matches('/').to_owned() }
    }

    /// `inbox/<rest>` as a path.
    pub(crate) fn path(&self, rest: &str) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{rest}", self.root))
    }

    /// `inbox/new` or `inbox/patch`.
    pub(crate) fn pending_dir(&self, kind: ProposalKind) -> String {
        format!("{}/{}", self.root, kind.name())
    }

    /// The inbox folder itself.
    pub(crate) fn root(&self) -> &str {
        &self.root
    }

    /// `inbox/applied` or `inbox/rejected` (`None` for pending).
    pub(crate) fn archive_root(&self, status: ProposalStatus) -> Option<String> {
        match status {
            ProposalStatus::Pending | ProposalStatus::Interrupted => None,
            ProposalStatus::Applied => Some(format!("{}/applied", self.root)),
            ProposalStatus::Rejected => Some(format!("{}/rejected", self.root)),
        }
    }

    pub(crate) fn audit_log(&self) -> Result<NotePath> {
        self.path("_applied.jsonl")
    }

    pub(crate) fn lock_file(&self) -> Result<NotePath> {
        self.path("_apply.lock")
    }

    /// The journal naming the proposal an apply or reject is consuming.
    pub(crate) fn journal_file(&self) -> Result<NotePath> {
        self.path("_applying.json")
    }
}

/// The inbox lock, waiting for another apply or reject to finish.
pub(crate) fn lock(sandbox: &Sandbox, inbox: &Inbox) -> Result<InboxLock> {
    sandbox.lock_inbox_file(&inbox.lock_file()?, LOCK_WAIT)
}

/// The staged note's file name for a stem.
pub(crate) fn content_name(kind: ProposalKind, stem: &str) -> String {
    match kind {
        ProposalKind::New => format!("{stem}.md"),
        ProposalKind::Patch => format!("{stem}.new.md"),
        _ => format!("{stem}.plan.json"),
    }
}

/// The diff's file name for a stem.
pub(crate) fn diff_name(stem: &str) -> String {
    format!("{stem}.diff")
}

/// A fresh proposal id: 128 random bits, never derived from the content.
pub(crate) fn new_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|err| Error::internal(format!("no randomness for a proposal id: {err}")))?;
    Ok(format!("{ID_PREFIX}{}", hex(&bytes)))
}

/// Whether `id` has the form of a proposal id.
pub(crate) fn is_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX).is_some_and(|rest| {
        rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The 8 hex digits of an id that go into file names.
pub(crate) fn short_id(id: &str) -> &str {
    id.get(ID_PREFIX.len()..ID_PREFIX.len() + 8).unwrap_or(id)
}

/// Whether `hash` is `sha256:` and 64 lowercase hex digits.
pub(super) fn is_hash(hash: &str) -> bool {
    hash.strip_prefix("sha256:").is_some_and(|rest| {
        rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Today's local date, `YYYY-MM-DD`: the archive folder's name.
pub(crate) fn today() -> String {
    Timestamp::now().to_zoned(TimeZone::system()).strftime("%Y-%m-%d").to_string()
}

/// Fewest hex digits of an id that name a proposal by prefix.
pub(super) const PREFIX_MIN_DIGITS: usize = 4;
