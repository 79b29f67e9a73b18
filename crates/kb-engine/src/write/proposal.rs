//! Proposals on disk: the inbox layout, the metadata file, finding a proposal by
//! id, checking that its files are intact, and listing.
//!
//! A proposal is a metadata file `<stem>.proposal.json` plus its siblings in the
//! same folder: `<stem>.md` for a new note; `<stem>.new.md` and `<stem>.diff` for
//! a patch. The stem is `<slug>-<first 8 hex digits of the id>`, so names stay
//! readable and unique. The metadata is plain JSON anyone can edit, so nothing in
//! it is trusted: the files it names must be exactly the expected siblings of the
//! metadata file (never a path of its own choosing), and the staged note must
//! still hash to what it recorded.

use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::audit::AuditLog;
use super::journal;
use super::{Checks, ProposalKind, ProposalStatus, ProposalView, StatusFilter};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, hex};
use crate::vault::content_hash;

/// The metadata format version.
pub(super) const SCHEMA: u32 = 1;
/// Name suffix of metadata files.
pub(super) const META_SUFFIX: &str = ".proposal.json";
/// Largest metadata file read.
const META_MAX_BYTES: u64 = 1 << 20;
/// Largest staged note, target or audit log read (the largest configurable limit).
pub(super) const FILE_MAX_BYTES: u64 = 1 << 30;
/// `p_` and 32 hex digits.
const ID_PREFIX: &str = "p_";

/// A proposal's metadata file, exactly as the contract lists its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Metadata {
    /// Always [`SCHEMA`].
    pub(super) schema: u32,
    pub(super) proposal_id: String,
    pub(super) kind: ProposalKind,
    pub(super) target: String,
    /// Where the staged note was written (its pending location, vault-relative).
    pub(super) content_file: String,
    pub(super) content_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) base_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) diff_file: Option<String>,
    pub(super) reason: String,
    pub(super) created_at: String,
}

/// The inbox folders and files, from the configured inbox folder.
#[derive(Debug, Clone)]
pub(super) struct Inbox {
    root: String,
}

impl Inbox {
    pub(super) fn of(sandbox: &Sandbox) -> Inbox {
        Inbox { root: sandbox.policy().inbox.trim_matches('/').to_owned() }
    }

    /// `inbox/<rest>` as a path.
    pub(super) fn path(&self, rest: &str) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{rest}", self.root))
    }

    /// `inbox/new` or `inbox/patch`.
    pub(super) fn pending_dir(&self, kind: ProposalKind) -> String {
        format!("{}/{}", self.root, kind.name())
    }

    /// The inbox folder itself.
    pub(super) fn root(&self) -> &str {
        &self.root
    }

    /// `inbox/applied` or `inbox/rejected` (`None` for pending).
    pub(super) fn archive_root(&self, status: ProposalStatus) -> Option<String> {
        match status {
            ProposalStatus::Pending | ProposalStatus::Interrupted => None,
            ProposalStatus::Applied => Some(format!("{}/applied", self.root)),
            ProposalStatus::Rejected => Some(format!("{}/rejected", self.root)),
        }
    }

    pub(super) fn audit_log(&self) -> Result<NotePath> {
        self.path("_applied.jsonl")
    }

    pub(super) fn lock_file(&self) -> Result<NotePath> {
        self.path("_apply.lock")
    }

    /// The journal naming the proposal an apply or reject is consuming.
    pub(super) fn journal_file(&self) -> Result<NotePath> {
        self.path("_applying.json")
    }
}

/// The staged note's file name for a stem.
pub(super) fn content_name(kind: ProposalKind, stem: &str) -> String {
    match kind {
        ProposalKind::New => format!("{stem}.md"),
        ProposalKind::Patch => format!("{stem}.new.md"),
        _ => format!("{stem}.plan.json"),
    }
}

/// The diff's file name for a stem.
pub(super) fn diff_name(stem: &str) -> String {
    format!("{stem}.diff")
}

/// A fresh proposal id: 128 random bits, never derived from the content.
pub(super) fn new_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|err| Error::internal(format!("no randomness for a proposal id: {err}")))?;
    Ok(format!("{ID_PREFIX}{}", hex(&bytes)))
}

/// Whether `id` has the form of a proposal id.
pub(super) fn is_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX).is_some_and(|rest| {
        rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The 8 hex digits of an id that go into file names.
pub(super) fn short_id(id: &str) -> &str {
    id.get(ID_PREFIX.len()..ID_PREFIX.len() + 8).unwrap_or(id)
}

/// Whether `hash` is `sha256:` and 64 lowercase hex digits.
fn is_hash(hash: &str) -> bool {
    hash.strip_prefix("sha256:").is_some_and(|rest| {
        rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Today's local date, `YYYY-MM-DD`: the archive folder's name.
pub(super) fn today() -> String {
    Timestamp::now().to_zoned(TimeZone::system()).strftime("%Y-%m-%d").to_string()
}

/// `proposal_not_found` for an id.
pub(super) fn not_found(id: &str) -> Error {
    Error::new(ErrorCode::ProposalNotFound, format!("no proposal has the id {id:?}"))
        .with_hint("proposal ids look like p_ and 32 hex digits; list_proposals shows the pending ones")
}

/// `proposal_tampered` for a proposal.
pub(super) fn tampered(id: &str, why: &str) -> Error {
    Error::new(ErrorCode::ProposalTampered, format!("proposal {id} was changed after it was staged: {why}"))
        .with_hint("nothing was written; reject it and propose the change again")
}

/// A metadata file found in the inbox, parsed.
#[derive(Debug, Clone)]
pub(super) struct Located {
    pub(super) meta: Metadata,
    /// Where the metadata file is now.
    pub(super) meta_path: NotePath,
    /// The folder it is in now.
    pub(super) dir: String,
    /// Its name without [`META_SUFFIX`].
    pub(super) stem: String,
    pub(super) status: ProposalStatus,
}

impl Located {
    pub(super) fn id(&self) -> &str {
        &self.meta.proposal_id
    }

    /// The staged note where it is now.
    pub(super) fn content_path(&self) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{}", self.dir, content_name(self.meta.kind, &self.stem)))
    }

    /// The diff where it is now (patches only).
    pub(super) fn diff_path(&self) -> Result<Option<NotePath>> {
        match self.meta.kind {
            ProposalKind::New => Ok(None),
            _ => NotePath::parse(&format!("{}/{}", self.dir, diff_name(&self.stem))).map(Some),
        }
    }

    /// The names of its files, metadata first.
    pub(super) fn file_names(&self) -> Vec<String> {
        let mut names = vec![format!("{}{META_SUFFIX}", self.stem), content_name(self.meta.kind, &self.stem)];
        if self.meta.kind != ProposalKind::New {
            names.push(diff_name(&self.stem));
        }
        names
    }
}

/// What is wrong with a proposal's files, as a `proposal_tampered` error whose
/// message is only the flaw; [`tampered`] words it for a given id.
fn flaw(why: impl Into<String>) -> Error {
    Error::new(ErrorCode::ProposalTampered, why)
}

/// Reads and parses a metadata file; the error says why it is not valid metadata.
pub(super) fn read_metadata(sandbox: &Sandbox, path: &NotePath) -> Result<Metadata> {
    let bytes = sandbox.read(path, META_MAX_BYTES).map_err(|err| flaw(err.message))?;
    serde_json::from_slice(&bytes)
        .map_err(|err| flaw(format!("{path} is not valid proposal metadata: {err}")))
}

/// Parses the metadata file at `path` into a [`Located`].
pub(super) fn locate(sandbox: &Sandbox, path: &NotePath, status: ProposalStatus) -> Result<Located> {
    let meta = read_metadata(sandbox, path)?;
    let stem = path.file_name().strip_suffix(META_SUFFIX).unwrap_or(path.file_name()).to_owned();
    Ok(Located { meta, meta_path: path.clone(), dir: path.parent().to_owned(), stem, status })
}

/// The structural checks: the metadata names exactly the files a proposal of its
/// kind and id has beside it, and its hashes are well formed. The error says what is wrong.
pub(super) fn validate(inbox: &Inbox, located: &Located) -> Result<()> {
    let meta = &located.meta;
    if meta.schema != SCHEMA {
        return Err(flaw(format!("its metadata has schema {}, expected {SCHEMA}", meta.schema)));
    }
    if !is_id(&meta.proposal_id) {
        return Err(flaw(format!("its metadata holds the malformed id {:?}", meta.proposal_id)));
    }
    if !located.stem.ends_with(&format!("-{}", short_id(&meta.proposal_id))) {
        return Err(flaw(format!("its metadata file {} is not named after its id", located.meta_path)));
    }
    let pending = inbox.pending_dir(meta.kind);
    if located.status == ProposalStatus::Pending && located.dir != pending {
        return Err(flaw(format!(
            "a {} proposal lies in {}, not in {pending}",
            kind_name(meta.kind),
            located.dir
        )));
    }
    let expected_content = format!("{pending}/{}", content_name(meta.kind, &located.stem));
    if meta.content_file != expected_content {
        return Err(flaw(format!(
            "its metadata names content_file {:?}; a proposal's note is always {expected_content:?}",
            meta.content_file
        )));
    }
    let expected_diff =
        (meta.kind != ProposalKind::New).then(|| format!("{pending}/{}", diff_name(&located.stem)));
    if meta.diff_file != expected_diff {
        return Err(flaw(format!(
            "its metadata names diff_file {:?}, expected {expected_diff:?}",
            meta.diff_file
        )));
    }
    if !is_hash(&meta.content_sha256) {
        return Err(flaw(format!("content_sha256 {:?} is not a sha256:<hex> hash", meta.content_sha256)));
    }
    match (&meta.base_sha256, meta.kind) {
        (Some(base), ProposalKind::Patch) if is_hash(base) => Ok(()),
        (None, kind) if kind != ProposalKind::Patch => Ok(()),
        (base, kind) => {
            Err(flaw(format!("base_sha256 {base:?} does not fit a {} proposal", kind_name(kind))))
        }
    }
}

fn kind_name(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::New => "new-note",
        kind => kind.name(),
    }
}

/// Structure, files in place, and the staged note's hash; returns the staged note.
pub(super) fn intact(sandbox: &Sandbox, inbox: &Inbox, located: &Located) -> Result<Vec<u8>> {
    validate(inbox, located)?;
    let content_path = located.content_path()?;
    if let Some(diff) = located.diff_path()? {
        match sandbox.stat(&diff) {
            Ok(Some(_)) => {}
            _ => return Err(flaw(format!("its diff {diff} is missing"))),
        }
    }
    let content = match sandbox.read(&content_path, FILE_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.code == ErrorCode::NotFound => {
            return Err(flaw(format!("its staged note {content_path} is missing")));
        }
        Err(err) => return Err(flaw(err.message)),
    };
    let hash = content_hash(&content);
    if hash != located.meta.content_sha256 {
        return Err(flaw(format!(
            "{content_path} hashes to {hash}, but the proposal recorded {}",
            located.meta.content_sha256
        )));
    }
    Ok(content)
}

/// [`intact`] from file metadata alone, for listings: the structure is valid,
/// the files are in place, and the staged note was not modified after its
/// metadata file was written (the metadata is written last). Only a staged note
/// modified later is read and hashed. A listing thus costs the same whatever the
/// size of the staged notes; `apply` always checks the hash itself.
pub(super) fn looks_intact(sandbox: &Sandbox, inbox: &Inbox, located: &Located) -> bool {
    if validate(inbox, located).is_err() {
        return false;
    }
    let present = |path: &NotePath| sandbox.stat(path).ok().flatten();
    if let Ok(Some(diff)) = located.diff_path()
        && present(&diff).is_none()
    {
        return false;
    }
    let (Ok(content_path), Some(meta)) = (located.content_path(), present(&located.meta_path)) else {
        return false;
    };
    match present(&content_path) {
        None => false,
        Some(content) if content.modified <= meta.modified => true,
        Some(_) => intact(sandbox, inbox, located).is_ok(),
    }
}

/// The metadata files of pending proposals (`inbox/new`, `inbox/patch`), sorted.
pub(super) fn pending_files(sandbox: &Sandbox, inbox: &Inbox) -> Result<Vec<NotePath>> {
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
pub(super) fn archived_files(
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
pub(super) fn find(sandbox: &Sandbox, inbox: &Inbox, id: &str) -> Result<Located> {
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

/// Finds the applied proposal with exactly this id, in the archive.
/// `proposal_not_pending` when it is pending or was rejected (it was never
/// applied), `proposal_not_found` when no proposal has it. Walks the archive's
/// folders (a revert is rare; an apply never does this).
pub(super) fn find_applied(sandbox: &Sandbox, inbox: &Inbox, id: &str) -> Result<Located> {
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

/// The hashes of the notes a listing has read, so that each note is read once
/// however many proposals target it.
pub(super) type NoteHashes = HashMap<String, Option<String>>;

/// The live checks of a proposal, cheap enough for a listing (see [`looks_intact`]).
pub(super) fn checks(sandbox: &Sandbox, inbox: &Inbox, located: &Located, hashes: &mut NoteHashes) -> Checks {
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
                match super::proposal::read_plan(sandbox, located) {
                    Ok(plan) => super::plan::check(sandbox, &plan).err().map(|err| err.code),
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
pub(super) fn plan_checks(intact: bool, failure: Option<ErrorCode>) -> Checks {
    let failure = failure.filter(|_| intact);
    Checks {
        intact: intact
            && !failure.is_some_and(|code| !matches!(code, ErrorCode::StaleBase | ErrorCode::TargetExists)),
        base_current: failure != Some(ErrorCode::StaleBase),
        target_free: failure != Some(ErrorCode::TargetExists),
    }
}

/// The plan of a multi-file proposal, where its files are now, checked against its recorded hash.
pub(super) fn read_plan(sandbox: &Sandbox, located: &Located) -> Result<super::plan::Plan> {
    read_plan_file(sandbox, located)?.hydrate(sandbox)
}

/// [`read_plan`] without rebuilding the rewrites' texts from the notes.
pub(super) fn read_plan_file(sandbox: &Sandbox, located: &Located) -> Result<super::plan::PlanFile> {
    let bytes = sandbox.read(&located.content_path()?, FILE_MAX_BYTES)?;
    if content_hash(&bytes) != located.meta.content_sha256 {
        return Err(flaw(format!("its plan no longer hashes to {}", located.meta.content_sha256)));
    }
    super::plan::PlanFile::parse(&bytes)
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
        if let Some(id) = interrupted(sandbox, &inbox) {
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
pub(super) fn view_of(
    sandbox: &Sandbox,
    inbox: &Inbox,
    located: &Located,
    hashes: &mut NoteHashes,
) -> ProposalView {
    view_with(sandbox, located, checks(sandbox, inbox, located, hashes))
}

/// [`view_of`] with checks computed by the caller (a review, which loads the
/// plan once for its checks and its diffs).
pub(super) fn view_with(sandbox: &Sandbox, located: &Located, checks: Checks) -> ProposalView {
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

/// The id of the proposal whose apply or reject the journal says is under way
/// (or was interrupted) and whose audit line is not yet the log's last.
fn interrupted(sandbox: &Sandbox, inbox: &Inbox) -> Option<String> {
    let journal = journal::read(sandbox, inbox).ok().flatten()?;
    let log = AuditLog::open(sandbox, inbox).ok()?;
    (log.last_id() != Some(journal.proposal_id.as_str())).then_some(journal.proposal_id)
}

/// How many proposals are pending (0 when the inbox cannot be read).
pub fn pending_count(sandbox: &Sandbox) -> u64 {
    pending_files(sandbox, &Inbox::of(sandbox)).map_or(0, |files| files.len() as u64)
}

/// Fewest hex digits of an id that name a proposal by prefix.
const PREFIX_MIN_DIGITS: usize = 4;

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
