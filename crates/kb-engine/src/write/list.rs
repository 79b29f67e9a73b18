//! Listing proposals: each with its live checks (cheap enough for a list of
//! many), the one-line description a person sees, and the count pending.

use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, Result};
use crate::sandbox::Sandbox;
use crate::vault::content_hash;
use crate::write::inbox::{
    FILE_MAX_BYTES, Inbox, Located, ProposalKind, ProposalStatus, archived_files, find, interrupted_id,
    locate, looks_intact, pending_files,
};
use crate::write::plan;

/// Which proposals [`list`] returns (`list_proposals`' `status`, published as
/// `engine::types::ProposalStatusFilter`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusFilter {
    /// Waiting for approval.
    #[default]
    Pending,
    /// Already applied.
    Applied,
    /// Everything, rejected ones included.
    All,
}

/// The live checks of a proposal, as `apply` would see them now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Its files are in place, the staged note matches its recorded hash, and
    /// (for a multi-file proposal) nothing but a changed file or a taken
    /// destination stops its apply (a path now refused does).
    pub intact: bool,
    /// For a patch, the note still has the hash the patch was made against
    /// (always true for a new note).
    pub base_current: bool,
    /// For a new note, the target does not exist yet (always true for a patch).
    pub target_free: bool,
}

/// One proposal as [`list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProposalView {
    /// Its id.
    pub proposal_id: String,
    /// What it is: a new note, a patch, a move, a delete, a batch or a revert.
    pub kind: ProposalKind,
    /// The note it writes (for a multi-file proposal, the first one).
    pub target: String,
    /// Why it was proposed.
    pub reason: String,
    /// When it was proposed (RFC 3339).
    pub created: String,
    /// Pending, applied or rejected.
    pub status: ProposalStatus,
    /// The live checks.
    pub checks: Checks,
    /// A multi-file proposal's one-line summary (the first line of its diff),
    /// pending or archived.
    pub summary: Option<String>,
    /// Lines added and removed by its diff, when it has one.
    pub diff_stat: Option<(u32, u32)>,
}

/// The hashes of the notes a listing has read, so that each note is read once
/// however many proposals target it.
pub(crate) type NoteHashes = HashMap<String, Option<String>>;

/// The live checks of a proposal, cheap enough for a listing (see [`looks_intact`]).
pub(crate) fn checks(sandbox: &Sandbox, inbox: &Inbox, located: &Located, hashes: &mut NoteHashes) -> Checks {
    let intact = looks_intact(sandbox, inbox, located);
    let target = sandbox.resolve_note_target(&located.meta.target).ok();
    match located.meta.kind {
        ProposalKind::New => Checks {
            intact,
            base_current: true,
            target_free: target.is_some_and(|target| matches!(sandbox.stat(&target), Ok(None))),
        },
        ProposalKind::Patch => Checks {
            intact,
            base_current: target.is_some_and(|target| {
                let hash = hashes.entry(target.as_str().to_owned()).or_insert_with(|| {
                    sandbox.read(&target, FILE_MAX_BYTES).ok().map(|bytes| content_hash(&bytes))
                });
                hash.is_some() && *hash == located.meta.base_sha256
            }),
            target_free: true,
        },
        _ => {
            let failure = if intact {
                match plan::read_plan(sandbox, located) {
                    Ok(plan) => plan::check(sandbox, &plan).err().map(|err| err.code),
                    Err(err) => Some(err.code),
                }
            } else {
                None
            };
            plan_checks(intact, failure)
        }
    }
}

/// A multi-file proposal's checks from its files' state (`intact`) and what
/// its plan's check refused, if anything: a file changed since (its base), a
/// destination taken (its target), or anything else (a path now denied, a
/// plan that cannot be read), counted as not intact.
pub(crate) fn plan_checks(intact: bool, failure: Option<ErrorCode>) -> Checks {
    let failure = failure.filter(|_| intact);
    Checks {
        intact: intact
            && !failure.is_some_and(|code| !matches!(code, ErrorCode::StaleBase | ErrorCode::TargetExists)),
        base_current: failure != Some(ErrorCode::StaleBase),
        target_free: failure != Some(ErrorCode::TargetExists),
    }
}

/// The proposals with the given status, newest first (ties by id), at most
/// `limit`, each with its live checks. Metadata files that cannot be read are
/// left out.
pub fn list(sandbox: &Sandbox, filter: StatusFilter, limit: usize) -> Result<Vec<ProposalView>> {
    let inbox = Inbox::of(sandbox);
    let mut found: Vec<Located> = Vec::new();
    if matches!(filter, StatusFilter::Pending | StatusFilter::All) {
        for path in pending_files(sandbox, &inbox)? {
            found.extend(locate(sandbox, &path, ProposalStatus::Pending).ok());
        }
    }
    let archived: &[ProposalStatus] = match filter {
        StatusFilter::Pending => &[],
        StatusFilter::Applied => &[ProposalStatus::Applied],
        StatusFilter::All => &[ProposalStatus::Applied, ProposalStatus::Rejected],
    };
    for &status in archived {
        for (_, files) in archived_files(sandbox, &inbox, status)? {
            for path in files {
                found.extend(locate(sandbox, &path, status).ok());
            }
        }
    }
    if !archived.is_empty() {
        // Archived is not done: without its audit line the apply was interrupted.
        // Only the proposal the journal names can be in that state.
        if let Some(id) = interrupted_id(sandbox, &inbox) {
            for located in found.iter_mut().filter(|located| located.status != ProposalStatus::Pending) {
                if located.id() == id {
                    located.status = ProposalStatus::Interrupted;
                }
            }
        }
    }
    let created = |located: &Located| located.meta.created_at.parse::<Timestamp>().ok();
    found.sort_by(|a, b| {
        created(b)
            .cmp(&created(a))
            .then_with(|| a.meta.proposal_id.cmp(&b.meta.proposal_id))
            .then_with(|| a.meta_path.cmp(&b.meta_path))
    });
    found.truncate(limit);
    let mut hashes = NoteHashes::new();
    Ok(found.iter().map(|located| view_of(sandbox, &inbox, located, &mut hashes)).collect())
}

/// A found proposal as [`list`] and a review show it: its metadata, live
/// checks, and what its diff says it does (read for pending and archived ones
/// alike: one small file each).
pub(crate) fn view_of(
    sandbox: &Sandbox,
    inbox: &Inbox,
    located: &Located,
    hashes: &mut NoteHashes,
) -> ProposalView {
    view_with(sandbox, located, checks(sandbox, inbox, located, hashes))
}

/// [`view_of`] with checks computed by the caller (a review, which loads the
/// plan once for its checks and its diffs).
pub(crate) fn view_with(sandbox: &Sandbox, located: &Located, checks: Checks) -> ProposalView {
    let described = description(sandbox, located.clone()).ok();
    ProposalView {
        proposal_id: located.meta.proposal_id.clone(),
        kind: located.meta.kind,
        target: located.meta.target.clone(),
        reason: located.meta.reason.clone(),
        created: located.meta.created_at.clone(),
        status: located.status,
        checks,
        summary: described.as_ref().and_then(|d| d.summary.clone()),
        diff_stat: described.and_then(|d| d.diff_stat),
    }
}

/// How many proposals are pending (0 when the inbox cannot be read).
pub fn pending_count(sandbox: &Sandbox) -> u64 {
    pending_files(sandbox, &Inbox::of(sandbox)).map_or(0, |files| files.len() as u64)
}

/// A pending proposal in a line, for a person: what it does to which note and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// New note or patch.
    pub kind: ProposalKind,
    /// The note it writes.
    pub target: String,
    /// Why it was proposed.
    pub reason: String,
    /// For a patch, the lines its diff adds and removes.
    pub diff_stat: Option<(u32, u32)>,
    /// For a multi-file proposal, its one-line summary (the first line of its diff).
    pub summary: Option<String>,
}

/// What a person deciding on a pending proposal should see in a listing: its
/// target, its reason and, for a patch, the lines its diff adds and removes.
/// Reads its metadata and its diff only (no live checks, which would read the
/// note: a listing of many proposals would read it once per proposal).
pub fn describe(sandbox: &Sandbox, id: &str) -> Result<Description> {
    let inbox = Inbox::of(sandbox);
    description(sandbox, find(sandbox, &inbox, id)?)
}

/// [`describe`] for every pending proposal, by id, from one listing of the
/// pending folders: looking each one up again would cost a listing of many
/// proposals the square of their number.
pub fn describe_pending(sandbox: &Sandbox) -> Result<BTreeMap<String, Description>> {
    let inbox = Inbox::of(sandbox);
    let mut out = BTreeMap::new();
    for path in pending_files(sandbox, &inbox)? {
        if let Ok(located) = locate(sandbox, &path, ProposalStatus::Pending) {
            let id = located.id().to_owned();
            if let Ok(description) = description(sandbox, located) {
                out.insert(id, description);
            }
        }
    }
    Ok(out)
}

/// What [`describe`] says of a proposal found.
fn description(sandbox: &Sandbox, located: Located) -> Result<Description> {
    let mut summary = None;
    let diff_stat = match located.diff_path()? {
        Some(path) => sandbox.read(&path, FILE_MAX_BYTES).ok().map(|bytes| {
            let text = String::from_utf8_lossy(&bytes);
            if located.meta.kind.is_multi() {
                summary = text.lines().next().and_then(|line| line.strip_prefix("# ")).map(str::to_owned);
            }
            let count = |sign: char, header: &str| {
                text.lines().filter(|l| l.starts_with(sign) && !l.starts_with(header)).count() as u32
            };
            (count('+', "+++"), count('-', "---"))
        }),
        None => None,
    };
    Ok(Description {
        kind: located.meta.kind,
        target: located.meta.target,
        reason: located.meta.reason,
        diff_stat,
        summary,
    })
}
