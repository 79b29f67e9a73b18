//! The plan of a multi-file proposal (`move`, `delete`, `batch`, `revert`): the
//! file operations it makes, each with the exact bytes before and after, staged
//! as `<stem>.plan.json` beside its metadata (whose `content_sha256` is the
//! plan's hash, so a plan edited by hand is refused as tampered).
//!
//! A plan is applied one operation at a time, and each operation can be judged
//! from the files alone: not started, done, or (a move) half done. That is what
//! lets recovery complete an interrupted apply or roll it back exactly: forward
//! when the proposal's metadata already reached the archive (the commit point),
//! backward otherwise. The before-bytes kept in the archived plan are also what
//! `revert_proposal` restores.
//!
//! **Stored compactly.** A rewrite of a note (`write`: a move's link edits in
//! the notes linking to it) is stored as the spans it replaces and the hashes
//! of the whole text before and after, not as both texts: a move of a note
//! with 10,000 backlinks would otherwise stage hundreds of megabytes. Loading a
//! plan ([`PlanFile::hydrate`]) rebuilds both texts from the note as it is,
//! holding either one (its hash says which); a note holding neither gets a text
//! no file holds ([`unknown_text`]), so every check finds it changed.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::diff::LineDiff;
use super::linkers::Linkers;
use super::proposal::{FILE_MAX_BYTES, Inbox, short_id, today};
use super::review::{FileChange, op_change};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Discards, NotePath, OpenedFile, Prepared, Replaced, Sandbox, WriteMode, ends_in_md};
use crate::vault::{ContentHasher, Span, content_hash, is_canvas, replace_spans};

/// The plan format version.
pub(super) const PLAN_SCHEMA: u32 = 1;

/// What one operation does to the vault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOpKind {
    /// Creates a note that does not exist.
    Create,
    /// Replaces a note's bytes.
    Write,
    /// Renames a note (and maybe rewrites it: its links, its aliases).
    Move,
    /// Moves a note into `inbox/trash/<date>/`.
    Trash,
    /// Moves a file kept as bytes (an attachment, or any file a folder move
    /// carries that is not text it rewrites): renamed, never rewritten, so its
    /// bytes and mode go with it; `sha256` is what it must hold.
    MoveFile,
}

/// One file operation, with the bytes it expects and leaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOp {
    /// What it does.
    pub op: FileOpKind,
    /// The note it acts on (a move's source).
    pub path: String,
    /// A move's destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The note's text before (absent for a create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The note's text after (absent for a trash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// A create that brings a note back (a revert of its delete): the inbox
    /// file its text was kept in (its copy in the trash, or the archived plan
    /// holding it when that copy is gone). The note gets back that file's
    /// permissions, which are its own; a new note, without one, gets the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// A `move_file`'s bytes' hash (the plan holds no text of such a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl FileOp {
    /// Where the note is after the operation (`None`: in the trash).
    pub fn destination(&self) -> Option<&str> {
        match self.op {
            FileOpKind::Move | FileOpKind::MoveFile => self.to.as_deref(),
            FileOpKind::Trash => None,
            FileOpKind::Create | FileOpKind::Write => Some(&self.path),
        }
    }

    /// The vault paths it touches.
    pub fn touched(&self) -> Vec<&str> {
        let mut out = vec![self.path.as_str()];
        out.extend(self.to.as_deref());
        out
    }
}

/// A multi-file proposal's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Always `PLAN_SCHEMA`.
    pub schema: u32,
    /// One line for a person ("move a.md → b.md, rewrite 3 links in 2 notes").
    pub summary: String,
    /// The operations, applied in order (and undone in reverse).
    pub files: Vec<FileOp>,
    /// A folder move's folders, the moved folder first: the apply makes each
    /// destination (an empty folder too, which no file would make) before the
    /// files move, and removes each source it left empty once they have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<FolderMove>,
    /// What a person should know before approving that no file's diff shows
    /// (the links a move leaves leading where they led but makes ambiguous),
    /// a line each, shown under the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<String>,
    /// The notes outside the plan linking to the notes it moves or trashes,
    /// as it was judged on them (`linkers.rs`); set when it is staged, absent
    /// in a plan staged before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linkers: Option<Linkers>,
}

/// One folder of a folder move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderMove {
    /// Where it is.
    pub from: String,
    /// Where it goes.
    pub to: String,
}

impl Plan {
    /// The files holding the texts the plan holds, whose permissions the files
    /// staging it may not exceed: every note it rewrites, moves or trashes, as
    /// it is now, and the file each note it brings back was kept in. A new
    /// note it creates has no file behind it.
    pub(super) fn notes_held(&self) -> Result<Vec<NotePath>> {
        self.files
            .iter()
            .filter_map(|op| if op.before.is_some() { Some(&op.path) } else { op.kept.as_ref() })
            .map(|path| NotePath::parse(path))
            .collect()
    }

    /// The plan as staged (rewrites of notes as their spans, see the module
    /// docs) and the change of every file as a person reviews it. Each rewrite
    /// is diffed once for both, in parallel: a hub's move rewrites thousands of notes.
    pub(super) fn staged(&self) -> Result<(Vec<u8>, Vec<FileChange>)> {
        use rayon::prelude::*;
        let (files, changes): (Vec<StoredOp>, Vec<FileChange>) = self
            .files
            .par_iter()
            .map(|op| match (op.op, &op.before, &op.after) {
                (FileOpKind::Write, Some(before), Some(after)) => {
                    let diff = LineDiff::new(before, after);
                    (StoredOp::of(op, &diff), op_change(op, Some(&diff)))
                }
                _ => (StoredOp::verbatim(op), op_change(op, None)),
            })
            .unzip();
        let stored = StoredPlan {
            schema: self.schema,
            summary: self.summary.clone(),
            files,
            folders: self.folders.clone(),
            remarks: self.remarks.clone(),
            linkers: self.linkers.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&stored)
            .map_err(|err| Error::internal(format!("cannot serialise a proposal plan: {err}")))?;
        bytes.push(b'\n');
        Ok((bytes, changes))
    }
}

/// One replaced span of a note's text: `old` at byte `at` of the text before,
/// `new` in its place after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Splice {
    at: usize,
    old: String,
    new: String,
}

/// A plan as its file holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredPlan {
    schema: u32,
    summary: String,
    files: Vec<StoredOp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    folders: Vec<FolderMove>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    remarks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    linkers: Option<Linkers>,
}

/// An operation as the plan file holds it: a [`FileOp`], or a `write` as its
/// spans and the hashes of the whole text before and after.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredOp {
    op: FileOpKind,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    splices: Option<Vec<Splice>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

impl StoredOp {
    fn verbatim(op: &FileOp) -> StoredOp {
        StoredOp {
            op: op.op,
            path: op.path.clone(),
            to: op.to.clone(),
            before: op.before.clone(),
            after: op.after.clone(),
            before_sha256: None,
            after_sha256: None,
            splices: None,
            kept: op.kept.clone(),
            sha256: op.sha256.clone(),
        }
    }

    /// A rewrite (`diff`: between its texts) as its spans when they rebuild
    /// its text exactly and are smaller; anything else verbatim.
    fn of(op: &FileOp, diff: &LineDiff<'_>) -> StoredOp {
        let (FileOpKind::Write, Some(before), Some(after)) = (op.op, &op.before, &op.after) else {
            return StoredOp::verbatim(op);
        };
        let splices = splices_between(diff, before, after);
        let size: usize = splices.iter().map(|splice| splice.old.len() + splice.new.len() + 32).sum();
        let exact = splice_forward(before, &splices).as_deref() == Some(after.as_str())
            && splice_backward(after, &splices).as_deref() == Some(before.as_str());
        if !exact || size + 160 >= before.len() + after.len() {
            return StoredOp::verbatim(op);
        }
        StoredOp {
            op: op.op,
            path: op.path.clone(),
            to: None,
            before: None,
            after: None,
            before_sha256: Some(content_hash(before.as_bytes())),
            after_sha256: Some(content_hash(after.as_bytes())),
            splices: Some(splices),
            kept: None,
            sha256: None,
        }
    }

    fn is_compact(&self) -> bool {
        self.before_sha256.is_some() || self.after_sha256.is_some() || self.splices.is_some()
    }
}

/// The changed lines of a rewrite (`diff`: between `before` and `after`), as
/// splices in the order of the text.
fn splices_between(diff: &LineDiff<'_>, before: &str, after: &str) -> Vec<Splice> {
    let starts = |text: &str| -> Vec<usize> {
        let mut out = vec![0];
        out.extend(text.split_inclusive('\n').scan(0, |at, line| {
            *at += line.len();
            Some(*at)
        }));
        out
    };
    let (old_lines, new_lines) = (starts(before), starts(after));
    let span = |lines: &[usize], range: std::ops::Range<u32>| {
        let at = |line: u32| lines.get(line as usize).copied().unwrap_or(usize::MAX);
        at(range.start)..at(range.end)
    };
    diff.hunks()
        .map(|hunk| {
            let (old, new) = (span(&old_lines, hunk.before), span(&new_lines, hunk.after));
            Splice {
                at: old.start,
                old: before.get(old).unwrap_or_default().to_owned(),
                new: after.get(new).unwrap_or_default().to_owned(),
            }
        })
        .collect()
}

/// The text after: each splice's `old` found at its place in `before` and replaced.
fn splice_forward(before: &str, splices: &[Splice]) -> Option<String> {
    let mut spans = Vec::with_capacity(splices.len());
    let mut cursor = 0;
    for splice in splices {
        let end = splice.at.checked_add(splice.old.len())?;
        if splice.at < cursor || before.get(splice.at..end)? != splice.old {
            return None;
        }
        spans.push((Span { start: splice.at, end }, splice.new.as_str()));
        cursor = end;
    }
    Some(replace_spans(before, spans))
}

/// The text before: each splice's `new` found at its place in `after` and put back.
fn splice_backward(after: &str, splices: &[Splice]) -> Option<String> {
    let mut spans = Vec::with_capacity(splices.len());
    let (mut cursor, mut shift) = (0usize, 0isize);
    for splice in splices {
        let at = splice.at.checked_add_signed(shift)?;
        let end = at.checked_add(splice.new.len())?;
        if at < cursor || after.get(at..end)? != splice.new {
            return None;
        }
        spans.push((Span { start: at, end }, splice.old.as_str()));
        cursor = end;
        shift += isize::try_from(splice.new.len()).ok()? - isize::try_from(splice.old.len()).ok()?;
    }
    Some(replace_spans(after, spans))
}

/// What a rewrite's texts are taken to be when its note holds neither: no
/// file's bytes (it holds a NUL), so every check of the note finds it changed.
pub(super) fn unknown_text(path: &str) -> String {
    format!("\u{0}kb-mcp: {path} holds neither the text this plan rewrites nor the one it leaves\u{0}")
}

/// Whether a text is [`unknown_text`].
pub(super) fn is_unknown_text(text: &str) -> bool {
    text.starts_with("\u{0}kb-mcp: ")
}

/// A plan file parsed and checked in form; [`PlanFile::hydrate`] makes it a [`Plan`].
#[derive(Debug)]
pub(super) struct PlanFile {
    stored: StoredPlan,
}

impl PlanFile {
    /// The vault paths the plan's operations touch (a move's source and
    /// destination, every note written or trashed), read from the file as it is:
    /// no note is read to rebuild a rewrite's text.
    pub(super) fn touched(&self) -> impl Iterator<Item = &str> {
        self.stored.files.iter().flat_map(|op| std::iter::once(op.path.as_str()).chain(op.to.as_deref()))
    }

    pub(super) fn parse(bytes: &[u8]) -> Result<PlanFile> {
        let stored: StoredPlan = serde_json::from_slice(bytes).map_err(|err| {
            Error::new(ErrorCode::ProposalTampered, format!("its plan is not valid: {err}"))
        })?;
        if stored.schema != PLAN_SCHEMA {
            return Err(Error::new(
                ErrorCode::ProposalTampered,
                format!("its plan has schema {}", stored.schema),
            ));
        }
        for op in &stored.files {
            let fits = match op.op {
                FileOpKind::Write if op.is_compact() => {
                    op.to.is_none()
                        && op.before.is_none()
                        && op.after.is_none()
                        && op.before_sha256.is_some()
                        && op.after_sha256.is_some()
                        && op.splices.as_ref().is_some_and(|splices| {
                            splices
                                .windows(2)
                                .all(|pair| pair[0].at.saturating_add(pair[0].old.len()) <= pair[1].at)
                        })
                }
                _ if op.is_compact() => false,
                FileOpKind::Create => op.to.is_none() && op.before.is_none() && op.after.is_some(),
                FileOpKind::Write => op.to.is_none() && op.before.is_some() && op.after.is_some(),
                FileOpKind::Move => op.to.is_some() && op.before.is_some() && op.after.is_some(),
                FileOpKind::Trash => op.to.is_none() && op.before.is_some() && op.after.is_none(),
                FileOpKind::MoveFile => op.to.is_some() && op.before.is_none() && op.after.is_none(),
            };
            // Only a note brought back was kept somewhere; only a file moved as bytes has a hash.
            let kept_fits = op.kept.is_none() || op.op == FileOpKind::Create;
            let hash_fits = op.sha256.is_some() == (op.op == FileOpKind::MoveFile);
            // A note is created, trashed, written or moved as text; a canvas a
            // move rewrites is written or moved as text; any file moves as bytes.
            let text_file = |path: &str| match op.op {
                FileOpKind::Create | FileOpKind::Trash => ends_in_md(path),
                FileOpKind::Write | FileOpKind::Move => ends_in_md(path) || is_canvas(path),
                FileOpKind::MoveFile => true,
            };
            let kind_fits = text_file(&op.path) && op.to.as_deref().is_none_or(text_file);
            if !fits || !kept_fits || !hash_fits || !kind_fits {
                return Err(Error::new(
                    ErrorCode::ProposalTampered,
                    format!("its plan's operation on {} lacks the fields it needs", op.path),
                ));
            }
        }
        Ok(PlanFile { stored })
    }

    /// The audit line's `files` entries, from the hashes alone.
    pub(super) fn audit_entries(&self) -> Vec<serde_json::Value> {
        self.stored
            .files
            .iter()
            .map(|op| {
                let hash = |text: &Option<String>, stored: &Option<String>| {
                    stored.clone().or_else(|| text.as_deref().map(|text| content_hash(text.as_bytes())))
                };
                entry(
                    op.op,
                    &op.path,
                    op.to.as_deref(),
                    hash(&op.before, &op.before_sha256).or_else(|| op.sha256.clone()),
                    hash(&op.after, &op.after_sha256).or_else(|| op.sha256.clone()),
                )
            })
            .collect()
    }

    /// The plan with both texts of every rewrite, rebuilt from its note as it
    /// is now (read in parallel: a hub's move rewrites thousands).
    pub(super) fn hydrate(self, sandbox: &Sandbox) -> Result<Plan> {
        self.hydrate_reading(sandbox).map(|(plan, _)| plan)
    }

    /// [`PlanFile::hydrate`], also returning what each rewrite's note held
    /// when it was read, for [`check_read`] (an apply reads each note once).
    pub(super) fn hydrate_reading(self, sandbox: &Sandbox) -> Result<(Plan, Vec<Read>)> {
        use rayon::prelude::*;
        let StoredPlan { schema, summary, files, folders, remarks, linkers } = self.stored;
        let (files, reads): (Vec<FileOp>, Vec<Read>) = files
            .into_par_iter()
            .map(|op| {
                if !op.is_compact() {
                    let op = FileOp {
                        op: op.op,
                        path: op.path,
                        to: op.to,
                        before: op.before,
                        after: op.after,
                        kept: op.kept,
                        sha256: op.sha256,
                    };
                    return Ok((op, None));
                }
                let now = current(sandbox, &NotePath::parse(&op.path)?)?;
                let (before, after) = rebuilt(now.as_deref(), &op).unwrap_or_else(|| {
                    let unknown = unknown_text(&op.path);
                    (unknown.clone(), unknown)
                });
                let op = FileOp {
                    op: op.op,
                    path: op.path,
                    to: None,
                    before: Some(before),
                    after: Some(after),
                    kept: None,
                    sha256: None,
                };
                Ok((op, Some(now)))
            })
            .collect::<Result<Vec<(FileOp, Read)>>>()?
            .into_iter()
            .unzip();
        Ok((Plan { schema, summary, files, folders, remarks, linkers }, reads))
    }
}

/// What an operation's note held when the plan was loaded: `Some(None)` when
/// it did not exist, `None` when it was not read.
pub(super) type Read = Option<Option<Vec<u8>>>;

/// A compact rewrite's texts from the note's bytes `now` (either text).
fn rebuilt(now: Option<&[u8]>, op: &StoredOp) -> Option<(String, String)> {
    let text = std::str::from_utf8(now?).ok()?.to_owned();
    let (splices, before_hash, after_hash) =
        (op.splices.as_deref()?, op.before_sha256.as_deref()?, op.after_sha256.as_deref()?);
    let hash = content_hash(text.as_bytes());
    if hash == before_hash {
        let after = splice_forward(&text, splices)?;
        (content_hash(after.as_bytes()) == after_hash).then_some((text, after))
    } else if hash == after_hash {
        let before = splice_backward(&text, splices)?;
        (content_hash(before.as_bytes()) == before_hash).then_some((before, text))
    } else {
        None
    }
}

/// Where an applied plan's trashed notes go: `inbox/trash/<date>/<8 hex of the
/// id>/<path>` (the id keeps two deletes of one path on one day apart).
pub(super) fn trash_path(inbox_root: &str, date: &str, id: &str, path: &str) -> Result<NotePath> {
    NotePath::parse(&format!("{inbox_root}/trash/{date}/{}/{path}", short_id(id)))
}

/// The date of an archive folder (`inbox/applied/<date>`), for the trash.
pub(super) fn archive_date(archive: &str) -> String {
    archive.rsplit('/').next().map(str::to_owned).unwrap_or_else(today)
}

/// What [`check`] found wrong with one file.
fn changed(path: &NotePath, expected: &str, now: Option<&[u8]>) -> Error {
    Error::stale_base(path, &content_hash(expected.as_bytes()), now.map(content_hash).as_deref())
}

/// A note's (or a rewritten canvas's) bytes now (`None`: it does not exist).
fn current(sandbox: &Sandbox, path: &NotePath) -> Result<Option<Vec<u8>>> {
    match sandbox.read_plan_file(path, FILE_MAX_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.code == ErrorCode::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// An operation's path as a plan target: a note, a canvas a move rewrites,
/// a file a folder move carries (the plan's form was checked when it was
/// parsed: which operation may act on which kind of file).
fn target(sandbox: &Sandbox, path: &str) -> Result<NotePath> {
    sandbox.resolve_plan_target(path)
}

/// Whether a plan target exists (a note found as reads find it).
fn exists(sandbox: &Sandbox, path: &NotePath) -> Result<bool> {
    if path.is_markdown() && sandbox.area_of(path).is_some() {
        return Ok(sandbox.stat(path)?.is_some());
    }
    Ok(sandbox.stat_plan_file(path)?.is_some())
}

fn target_exists(path: &NotePath) -> Error {
    Error::new(ErrorCode::TargetExists, format!("{path} exists now; the proposal would replace it"))
        .with_hint("reject this proposal, or move that note away first")
        .with_details(json!({ "target": path.as_str() }))
}

/// Checks every operation against the vault before anything is written: every
/// path a writable note target, every source holding its before-bytes, every
/// destination free. Stale files are all listed (`stale_base`, details `files`).
pub(super) fn check(sandbox: &Sandbox, plan: &Plan) -> Result<()> {
    check_read(sandbox, plan, &[])
}

/// [`check`], taking each note's bytes from `reads` (what loading the plan
/// read of it, nothing having been written since) when they are there. The
/// operations are checked in parallel, and judged in order.
pub(super) fn check_read(sandbox: &Sandbox, plan: &Plan, reads: &[Read]) -> Result<()> {
    use rayon::prelude::*;
    let judged: Vec<Result<Option<(NotePath, Error)>>> = plan
        .files
        .par_iter()
        .enumerate()
        .map(|(number, op)| {
            let path = target(sandbox, &op.path)?;
            if let Some(to) = &op.to {
                let to = target(sandbox, to)?;
                let case_only = to.as_str() != path.as_str()
                    && to.as_str().to_lowercase() == path.as_str().to_lowercase();
                if !case_only && exists(sandbox, &to)? {
                    return Err(target_exists(&to));
                }
            }
            if let Some(sha256) = &op.sha256 {
                let now = file_hash(sandbox, &path)?;
                if now.as_deref() == Some(sha256.as_str()) {
                    return Ok(None);
                }
                let err = Error::stale_base(&path, sha256, now.as_deref());
                return Ok(Some((path, err)));
            }
            let read;
            let now = match reads.get(number) {
                Some(Some(bytes)) => bytes.as_deref(),
                _ => {
                    read = current(sandbox, &path)?;
                    read.as_deref()
                }
            };
            match (&op.before, now) {
                (None, None) => Ok(None),
                (None, Some(_)) => Err(target_exists(&path)),
                (Some(before), now) if now != Some(before.as_bytes()) => {
                    let err = changed(&path, before, now);
                    Ok(Some((path, err)))
                }
                _ => Ok(None),
            }
        })
        .collect();
    let mut stale: Vec<String> = Vec::new();
    let mut first_stale = None;
    for outcome in judged {
        if let Some((path, err)) = outcome? {
            stale.push(path.as_str().to_owned());
            first_stale.get_or_insert(err);
        }
    }
    match first_stale {
        None => Ok(()),
        Some(mut err) => {
            err.message = format!(
                "{} changed since the proposal was made: {}",
                if stale.len() == 1 { "a file" } else { "files" },
                stale.join(", ")
            );
            err.details = Some(json!({ "files": stale }));
            Err(err)
        }
    }
}

/// The state of one operation, judged from the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing of it happened.
    Before,
    /// A move renamed the note but has not rewritten it yet.
    Renamed,
    /// It is complete.
    After,
    /// The files hold neither: someone else changed them.
    Foreign,
}

/// `kept`: where a trashed note's copy is (see [`forward`]).
fn state(sandbox: &Sandbox, op: &FileOp, kept: Option<&NotePath>) -> Result<State> {
    if op.op == FileOpKind::MoveFile {
        return carried_state(sandbox, op);
    }
    let path = NotePath::parse(&op.path)?;
    let now = current(sandbox, &path)?;
    let holds = |bytes: &Option<Vec<u8>>, text: &Option<String>| match (bytes, text) {
        (Some(bytes), Some(text)) => bytes == text.as_bytes(),
        (None, None) => true,
        _ => false,
    };
    Ok(match op.op {
        FileOpKind::Create | FileOpKind::Write => {
            if holds(&now, &op.after) {
                State::After
            } else if holds(&now, &op.before) {
                State::Before
            } else {
                State::Foreign
            }
        }
        FileOpKind::Move => {
            let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
            let case_only = to.as_str().to_lowercase() == path.as_str().to_lowercase();
            let at_to = current(sandbox, &to)?;
            // On a case-insensitive file system both names read the one file.
            let from_gone = now.is_none() || (case_only && !sandbox.has_exact_name(&path));
            if from_gone && holds(&at_to, &op.after) {
                State::After
            } else if from_gone && holds(&at_to, &op.before) {
                State::Renamed
            } else if holds(&now, &op.before) && (at_to.is_none() || case_only) {
                State::Before
            } else {
                State::Foreign
            }
        }
        FileOpKind::Trash => {
            let copy = match kept {
                Some(kept) => current(sandbox, kept)?,
                None => None,
            };
            if now.is_none() && holds(&copy, &op.before) {
                State::After
            } else if holds(&now, &op.before) {
                State::Before
            } else {
                State::Foreign
            }
        }
        FileOpKind::MoveFile => unreachable!("a carried file's state is judged by its hash"),
    })
}

/// [`state`] of a `move_file`, judged by the hashes of the files at both names.
fn carried_state(sandbox: &Sandbox, op: &FileOp) -> Result<State> {
    let path = NotePath::parse(&op.path)?;
    let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
    let expected = op.sha256.as_deref();
    let case_only = to.as_str().to_lowercase() == path.as_str().to_lowercase();
    let (at_from, at_to) = (file_hash(sandbox, &path)?, file_hash(sandbox, &to)?);
    let from_gone = at_from.is_none() || (case_only && !sandbox.has_exact_name(&path));
    Ok(if from_gone && at_to.as_deref() == expected {
        State::After
    } else if at_from.as_deref() == expected && (at_to.is_none() || case_only) {
        State::Before
    } else {
        State::Foreign
    })
}

/// The hash of a plan file's bytes, read in parts; `None` when it is gone.
pub(super) fn file_hash(sandbox: &Sandbox, path: &NotePath) -> Result<Option<String>> {
    let Some(opened) = sandbox.open_plan_file(path)? else { return Ok(None) };
    let mut hasher = ContentHasher::default();
    opened.for_each_chunk(|_, chunk| {
        hasher.update(chunk);
        true
    })?;
    Ok(Some(hasher.finish()))
}

/// Renames a carried file from `from` to `to` while it holds `sha256`; the
/// folders are flushed with the apply's one flush where there is one.
fn rename_carried(sandbox: &Sandbox, from: &str, to: &str, sha256: Option<&str>) -> Result<()> {
    let (from, to) = (NotePath::parse(from)?, NotePath::parse(to)?);
    let mut holds = |opened: &OpenedFile| -> Result<bool> {
        let mut hasher = ContentHasher::default();
        opened.for_each_chunk(|_, chunk| {
            hasher.update(chunk);
            true
        })?;
        Ok(Some(hasher.finish().as_str()) == sha256)
    };
    sandbox.rename_carried(&from, &to, &mut holds, !cfg!(target_os = "linux"))
}

fn foreign(op: &FileOp) -> Error {
    Error::new(
        ErrorCode::Conflict,
        format!("{} was changed by someone else while the proposal was being applied", op.path),
    )
    .with_hint("read the files again; the changes of the proposal were kept apart from that save")
}

/// Writes the new bytes of an operation that rewrites a note beside it (a
/// move's beside its destination), unflushed: see [`Prepared`]. `None` for one
/// that writes no new bytes over a note.
pub(super) fn prepare(sandbox: &Sandbox, op: &FileOp) -> Result<Option<Prepared>> {
    let (before, after) = (op.before.as_deref(), op.after.as_deref());
    match op.op {
        FileOpKind::Write => {
            let path = NotePath::parse(&op.path)?;
            sandbox.prepare_note(&path, &path, after.unwrap_or_default().as_bytes()).map(Some)
        }
        FileOpKind::Move if after != before => {
            let (path, to) =
                (NotePath::parse(&op.path)?, NotePath::parse(op.to.as_deref().unwrap_or_default())?);
            sandbox.prepare_note(&to, &path, after.unwrap_or_default().as_bytes()).map(Some)
        }
        _ => Ok(None),
    }
}

/// Replaces `path`'s `from` bytes with `to`, never losing a save landing meanwhile.
fn swap(
    sandbox: &Sandbox,
    path: &NotePath,
    to: &str,
    from: &str,
    id: &str,
    hook: &mut dyn FnMut() -> Result<()>,
    prepared: Option<(Prepared, &mut Discards)>,
) -> Result<()> {
    let copy = Inbox::of(sandbox).conflict_copy(path, id)?;
    let replaced = match prepared {
        Some((prepared, discards)) => {
            sandbox.replace_prepared(prepared, to.as_bytes(), from.as_bytes(), &copy, hook, discards)?
        }
        None => sandbox.replace_note(path, to.as_bytes(), from.as_bytes(), &copy, hook, None)?,
    };
    settled(path, from, replaced)
}

/// What a swap's outcome means for the apply: done, or the error saying why not.
fn settled(path: &NotePath, from: &str, replaced: Replaced) -> Result<()> {
    match replaced {
        Replaced::Clean => Ok(()),
        Replaced::Changed(now) => Err(changed(path, from, now.as_deref())),
        Replaced::Conflict { kept } => Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "{path} was saved while the proposal was being applied: the note keeps that save{}",
                kept.map(|kept| format!(" (another save is kept in {kept})")).unwrap_or_default()
            ),
        )
        .with_hint("the proposal was not applied and stays pending; read the note again")),
    }
}

/// Carries one operation forward from whatever state it is in; with its new
/// bytes `prepared` (see [`prepare`]), the flush is left to the caller and the
/// file it replaces to `discards`. `kept` is the inbox file keeping the note
/// apart from the vault: where a trash puts the note's copy, or the file a
/// note brought back takes its permissions from (see [`FileOp::kept`]).
pub(super) fn forward(
    sandbox: &Sandbox,
    op: &FileOp,
    id: &str,
    kept: Option<&NotePath>,
    hook: &mut dyn FnMut() -> Result<()>,
    prepared: Option<Prepared>,
    discards: &mut Discards,
) -> Result<()> {
    let path = NotePath::parse(&op.path)?;
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    let prepared = match (op.op, prepared) {
        (FileOpKind::Write, Some(prepared)) => {
            return forward_prepared_write(sandbox, op, &path, id, hook, prepared, discards);
        }
        (_, prepared) => prepared,
    };
    match (op.op, state(sandbox, op, kept)?) {
        (_, State::After) => Ok(()),
        (_, State::Foreign) => Err(foreign(op)),
        (FileOpKind::Create, _) => {
            hook()?;
            // A note brought back gets back its permissions; a new one has none to take.
            let note = sandbox.permissions_of(kept.map_or(&[], std::slice::from_ref))?;
            sandbox.write_atomic_from(
                &sandbox.resolve_note_target(&op.path)?,
                after.as_bytes(),
                WriteMode::CreateNew,
                &note,
            )
        }
        (FileOpKind::Write, _) => {
            swap(sandbox, &path, after, before, id, hook, prepared.map(|prepared| (prepared, discards)))
        }
        (FileOpKind::Move, state) => {
            let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
            if state == State::Before {
                hook()?;
                if prepared.is_some() {
                    sandbox.rename_note_unflushed(&path, &to, before.as_bytes())?;
                } else {
                    sandbox.rename_note(&path, &to, before.as_bytes())?;
                }
            }
            if after != before {
                let prepared = prepared.map(|prepared| (prepared, discards));
                swap(sandbox, &to, after, before, id, &mut || Ok(()), prepared)
            } else {
                Ok(())
            }
        }
        (FileOpKind::Trash, _) => {
            let trash = kept.ok_or_else(|| Error::internal("a trash operation without its trash path"))?;
            hook()?;
            let copy = Inbox::of(sandbox).conflict_copy(&path, id)?;
            sandbox.trash_note(&path, trash, before.as_bytes(), &copy, discards)
        }
        (FileOpKind::MoveFile, _) => {
            hook()?;
            rename_carried(sandbox, &op.path, op.to.as_deref().unwrap_or_default(), op.sha256.as_deref())
        }
    }
}

/// [`forward`] of a rewrite whose new bytes are prepared: the swap reads the
/// note right before it (holding it open), and the operation's state is judged
/// from those bytes rather than from a read of its own: the base is swapped,
/// the text after is left as done, anything else is someone else's.
fn forward_prepared_write(
    sandbox: &Sandbox,
    op: &FileOp,
    path: &NotePath,
    id: &str,
    hook: &mut dyn FnMut() -> Result<()>,
    prepared: Prepared,
    discards: &mut Discards,
) -> Result<()> {
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    let copy = Inbox::of(sandbox).conflict_copy(path, id)?;
    let replaced =
        sandbox.replace_prepared(prepared, after.as_bytes(), before.as_bytes(), &copy, hook, discards)?;
    match replaced {
        Replaced::Changed(Some(now)) if now == after.as_bytes() => Ok(()),
        Replaced::Changed(_) => Err(foreign(op)),
        replaced => settled(path, before, replaced),
    }
}

/// Undoes one operation from whatever state it is in; a file someone else
/// changed meanwhile is left as it is (their save wins). `kept` as for [`forward`].
pub(super) fn backward(sandbox: &Sandbox, op: &FileOp, id: &str, kept: Option<&NotePath>) -> Result<()> {
    let path = NotePath::parse(&op.path)?;
    let before = op.before.as_deref().unwrap_or_default();
    let after = op.after.as_deref().unwrap_or_default();
    let state = state(sandbox, op, kept)?;
    if matches!(state, State::Before | State::Foreign) {
        return Ok(());
    }
    match op.op {
        FileOpKind::MoveFile => {
            rename_carried(sandbox, op.to.as_deref().unwrap_or_default(), &op.path, op.sha256.as_deref())
        }
        FileOpKind::Create => sandbox.remove_note(&path, after.as_bytes()).map(|_| ()),
        FileOpKind::Write => swap(sandbox, &path, before, after, id, &mut || Ok(()), None),
        FileOpKind::Move => {
            let to = NotePath::parse(op.to.as_deref().unwrap_or_default())?;
            if state == State::After && after != before {
                swap(sandbox, &to, before, after, id, &mut || Ok(()), None)?;
            }
            sandbox.rename_note(&to, &path, before.as_bytes())
        }
        FileOpKind::Trash => {
            // The trashed note itself goes back, its file and mode with it; a
            // copy of its text, where that is gone, with the mode the trash kept.
            let path = sandbox.resolve_note_target(&op.path)?;
            match kept {
                Some(trash) if current(sandbox, trash)?.as_deref() == Some(before.as_bytes()) => {
                    sandbox.untrash_note(trash, &path)
                }
                _ => {
                    let held: Vec<NotePath> = kept
                        .filter(|trash| matches!(sandbox.stat(trash), Ok(Some(_))))
                        .cloned()
                        .into_iter()
                        .collect();
                    let note = sandbox.permissions_of(&held)?;
                    sandbox.write_atomic_from(&path, before.as_bytes(), WriteMode::CreateNew, &note)
                }
            }
        }
    }
}

/// The audit line's `files` entry of an operation.
fn entry(
    op: FileOpKind,
    path: &str,
    to: Option<&str>,
    before_sha256: Option<String>,
    after_sha256: Option<String>,
) -> serde_json::Value {
    let op_name = match op {
        FileOpKind::Create => "create",
        FileOpKind::Write => "write",
        FileOpKind::Move => "move",
        FileOpKind::Trash => "trash",
        FileOpKind::MoveFile => "move_file",
    };
    let mut entry = json!({ "path": path, "op": op_name });
    if let Some(to) = to {
        entry["to"] = json!(to);
    }
    if let Some(before) = before_sha256 {
        entry["before_sha256"] = json!(before);
    }
    if let Some(after) = after_sha256 {
        entry["after_sha256"] = json!(after);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_note_brought_back_names_the_file_it_was_kept_in() {
        let plan = |op: &str, fields: &str| {
            format!(r#"{{"schema":1,"summary":"s","files":[{{"op":"{op}","path":"z/a.md",{fields}}}]}}"#)
        };
        let restore = plan("create", r#""after":"x","kept":"inbox/trash/2026-01-01/0123abcd/z/a.md""#);
        assert!(PlanFile::parse(restore.as_bytes()).is_ok());
        for other in [
            plan("trash", r#""before":"x","kept":"z/b.md""#),
            plan("write", r#""before":"x","after":"y","kept":"z/b.md""#),
        ] {
            let err = PlanFile::parse(other.as_bytes()).unwrap_err();
            assert_eq!(err.code, ErrorCode::ProposalTampered, "{other}");
        }
    }

    #[test]
    fn splices_rebuild_both_texts_exactly() {
        let cases = [
            ("a\n[[x]]\nb\n", "a\n[[y]]\nb\n"),
            ("no newline at the end [[x]]", "no newline at the end [[y/z]]"),
            ("crlf\r\n[[x]]\r\nend\r\n", "crlf\r\n[[yy]]\r\nend\r\n"),
            ("[[x]] 中文\n\n\nmiddle\n[[x]]\n", "[[新]] 中文\n\n\nmiddle\n[[新]]\n"),
            ("", "added\n"),
            ("removed\n", ""),
        ];
        for (before, after) in cases {
            let splices = splices_between(&LineDiff::new(before, after), before, after);
            assert_eq!(splice_forward(before, &splices).as_deref(), Some(after), "{before:?}");
            assert_eq!(splice_backward(after, &splices).as_deref(), Some(before), "{before:?}");
            // Another text does not take splices that replace something (the
            // hashes checked around them catch the rest).
            if !before.is_empty() {
                assert_eq!(splice_forward("other\n", &splices), None, "{before:?}");
            }
        }
    }
}
