//! The vault's history as the engine keeps it (issue 38): an applied
//! proposal is recorded as its own commit the moment it is applied, and what
//! changed on disk otherwise (the person's edits, a sync's writes) is recorded
//! by a pass that compares the catalog with what the history holds, one commit
//! per pass: the server runs one whenever the catalog changed, `kb-index`
//! before it shows a history. `list_history` reads a note's versions back.
//!
//! The history holds every note and canvas the index serves (never a PDF,
//! never a denied file). The sandbox owns the repository (`HistoryStore`);
//! this file decides what goes in it and when.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use super::{Catalog, Engine, NoteName, one_of};
use crate::engine::bounded::cut_chars;
use crate::engine::cursor;
use crate::engine::types::*;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{
    Area, Change, ChangeBy, HistoryStore, NotePath, PastVersion, StoredVersion, Zone, blob_id, rfc3339,
};
use crate::vault::content_hash;
use crate::write::{Applied, line_changes};

/// Largest file the history keeps (a larger one stays out of it).
const FILE_MAX: u64 = 64 << 20;

/// The cursor prefix of `list_history`.
const CURSOR_PREFIX: &str = "h1";

/// Longest reason a version shows.
const REASON_CHARS: usize = 500;

/// What the history holds, as far as this process knows: each file's content
/// hash and blob id at the newest commit, and the catalog last compared.
#[derive(Default)]
pub(super) struct Recorded {
    catalog: Weak<Catalog>,
    /// `None` until read from the repository.
    files: Option<HashMap<String, Kept>>,
}

/// A file read to be kept: its bytes and content hash.
type Read = (Vec<u8>, String);

/// One file as the history holds it.
struct Kept {
    /// `sha256:<hex>` of its bytes (empty when only the blob id is known yet).
    hash: String,
    /// Its git blob id.
    blob: String,
}

/// The engine's history: the repository, opened on first use, and what it holds.
#[derive(Default)]
pub(super) struct HistoryLayer {
    store: OnceLock<std::result::Result<Arc<HistoryStore>, Error>>,
    recorded: Mutex<Recorded>,
    /// Applies recorded so far: a pass that read files while one was
    /// recorded starts again rather than take its files for edits on disk.
    applies: AtomicU64,
}

/// What a pass recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryReport {
    /// Files added, changed or removed in the commit made.
    pub files: usize,
    /// The commit made, when one was.
    pub commit: Option<String>,
    /// Files left out (too large or unreadable), with why.
    pub left_out: Vec<(String, String)>,
}

impl Engine {
    /// The history's repository (see `sandbox/history/`), opened or created
    /// on first use: the vault's own when it is a git work tree, else
    /// `<index folder>-history` beside the index folder.
    /// `not_found` when `[history] enabled = false`: no repository is
    /// opened, or made, then.
    pub fn history_store(&self) -> Result<Arc<HistoryStore>> {
        if !self.config().history {
            return Err(Error::new(
                ErrorCode::NotFound,
                "this vault keeps no history: `[history] enabled = false` in its kb.toml",
            )
            .with_hint("the person turns it on by removing that line (or setting it to true)"));
        }
        self.history
            .store
            .get_or_init(|| HistoryStore::open(self.root(), &self.own_history_folder()).map(Arc::new))
            .clone()
    }

    /// Where kb-mcp's own history repository is (or would be): beside the
    /// index folder, named after it (`<vault>/.kb-history` for `<vault>/.kb`).
    /// The watcher ignores it, as it ignores the index folder.
    pub fn own_history_folder(&self) -> std::path::PathBuf {
        let index = self.index.folder().path();
        let name = index.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        index.with_file_name(format!("{name}-history"))
    }

    fn recorded(&self) -> MutexGuard<'_, Recorded> {
        self.history.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the catalog changed since the last pass (a pass is due).
    pub fn history_due(&self) -> bool {
        if !self.config().history {
            return false;
        }
        let catalog = self.catalog();
        !self.recorded().catalog.upgrade().is_some_and(|seen| Arc::ptr_eq(&seen, &catalog))
    }

    /// Records what changed on disk since the history's newest commit, as one
    /// commit by `on disk`. The first pass of a process reads every file once
    /// (to compare it with the newest commit); later passes read only the
    /// files whose content hash changed in the catalog.
    pub fn record_history_pending(&self) -> Result<HistoryReport> {
        if !self.config().history {
            return Ok(HistoryReport::default());
        }
        let store = self.history_store()?;
        let catalog = self.catalog();
        // What to look at, under the lock: files whose content hash differs
        // from what the history holds (each with its blob there), and files
        // gone. Reading them is done without it, so an apply never waits for
        // a first pass that reads a whole vault.
        let (candidates, gone, applies) = {
            let mut recorded = self.recorded();
            let files = match &mut recorded.files {
                Some(files) => files,
                none => none.insert(
                    store
                        .files()?
                        .into_iter()
                        .map(|(path, blob)| (path, Kept { hash: String::new(), blob }))
                        .collect(),
                ),
            };
            let mut present = HashSet::with_capacity(catalog.records().len());
            let mut candidates = Vec::new();
            for record in catalog.records() {
                if crate::vault::is_pdf(&record.path) {
                    continue;
                }
                present.insert(record.path.as_str());
                match files.get(&record.path) {
                    Some(kept) if kept.hash == record.hash => {}
                    kept => candidates.push((record.path.clone(), kept.map(|k| k.blob.clone()))),
                }
            }
            let gone: Vec<String> =
                files.keys().filter(|path| !present.contains(path.as_str())).cloned().collect();
            (candidates, gone, self.history.applies.load(Ordering::Acquire))
        };
        let sandbox = self.sandbox();
        let mut report = HistoryReport::default();
        let mut changes: Vec<(String, Option<String>)> = Vec::new();
        let mut kept_now: Vec<(String, Kept)> = Vec::new();
        for (path, blob_then) in candidates {
            let bytes = match NotePath::parse(&path).and_then(|note| sandbox.read(&note, FILE_MAX)) {
                Ok(bytes) => bytes,
                Err(error) => {
                    report.left_out.push((path, error.message));
                    continue;
                }
            };
            let hash = content_hash(&bytes);
            let blob = blob_id(&bytes)?;
            if blob_then.as_ref() != Some(&blob) {
                store.write_file(&bytes)?;
                changes.push((path.clone(), Some(blob.clone())));
            }
            kept_now.push((path, Kept { hash, blob }));
        }
        changes.extend(gone.iter().map(|path| (path.clone(), None)));
        // The commit, under the lock again: unless an apply recorded itself
        // meanwhile (its files, read above, would pass for edits on disk).
        // Then the pass is left due, and runs again.
        let mut recorded = self.recorded();
        if self.history.applies.load(Ordering::Acquire) != applies {
            return Ok(HistoryReport::default());
        }
        if !changes.is_empty() {
            report.commit = store.record(&changes, &Change::on_disk(), jiff::Timestamp::now().as_second())?;
            report.files = changes.len();
        }
        if let Some(files) = &mut recorded.files {
            for path in gone {
                files.remove(&path);
            }
            files.extend(kept_now);
        }
        recorded.catalog = Arc::downgrade(&catalog);
        Ok(report)
    }

    /// Holds the history while an apply runs, so that no pass commits while
    /// it writes, and one that read its files meanwhile starts again (see
    /// `applies`): [`Engine::record_applied`] records them as the proposal's.
    pub(super) fn hold_history(&self) -> MutexGuard<'_, Recorded> {
        self.recorded()
    }

    /// Records an applied proposal as its own commit: the files it wrote (or
    /// removed, or moved), as they are now, with its id, kind, reason and
    /// who approved it. Never fails the apply: a file it could not record is
    /// recorded by the next pass, as changed on disk.
    pub(super) fn record_applied(&self, recorded: &mut Recorded, applied: &Applied) {
        if !self.config().history {
            return;
        }
        self.history.applies.fetch_add(1, Ordering::AcqRel);
        let _ = self.record_applied_or_fail(recorded, applied);
    }

    fn record_applied_or_fail(&self, recorded: &mut Recorded, applied: &Applied) -> Result<()> {
        let store = self.history_store()?;
        let audit = &applied.audit;
        let text = |key: &str| audit.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        let mut paths = vec![applied.target.clone()];
        let mut moves = Vec::new();
        for file in audit.get("files").and_then(|f| f.as_array()).into_iter().flatten() {
            let (Some(path), to) = (file["path"].as_str(), file["to"].as_str()) else { continue };
            paths.push(path.to_owned());
            if let Some(to) = to {
                paths.push(to.to_owned());
                if file["op"] == "move" {
                    moves.push((path.to_owned(), to.to_owned()));
                }
            }
        }
        let sandbox = self.sandbox();
        let policy = sandbox.policy();
        let mut seen = HashSet::new();
        let mut notes = Vec::new();
        for path in paths {
            let Ok(note) = NotePath::parse(&path) else { continue };
            let served = readable(policy, &note) && (note.as_str().ends_with(".md") || note.is_canvas());
            if served && seen.insert(path.clone()) {
                notes.push((path, note));
            }
        }
        // Read, hashed and kept in parallel: a hub's move writes thousands.
        let read: Vec<(String, Option<Read>)> = {
            use rayon::prelude::*;
            notes
                .into_par_iter()
                .map(|(path, note)| match sandbox.stat(&note)? {
                    Some(_) => {
                        let bytes = sandbox.read(&note, FILE_MAX)?;
                        let hash = content_hash(&bytes);
                        Ok((path, Some((bytes, hash))))
                    }
                    None => Ok((path, None)),
                })
                .collect::<Result<_>>()?
        };
        let contents: Vec<&[u8]> =
            read.iter().filter_map(|(_, file)| Some(file.as_ref()?.0.as_slice())).collect();
        let mut blobs = store.write_files(&contents)?.into_iter();
        let mut changes = Vec::with_capacity(read.len());
        let mut kept_now = Vec::with_capacity(read.len());
        for (path, file) in read {
            match file {
                Some((_, hash)) => {
                    let blob = blobs.next().ok_or_else(|| Error::internal("history: a file was not kept"))?;
                    kept_now.push((path.clone(), Kept { hash, blob: blob.clone() }));
                    changes.push((path, Some(blob)));
                }
                None => changes.push((path, None)),
            }
        }
        let approved_by = match audit.get("via").and_then(|v| v.as_str()) {
            Some(via) => format!("{} via {via}", text("by")),
            None => text("by"),
        };
        let change = Change {
            by: ChangeBy::Proposal { id: applied.proposal_id.clone(), kind: text("kind"), approved_by },
            reason: applied.reason.clone(),
            moves,
        };
        store.record(&changes, &change, jiff::Timestamp::now().as_second())?;
        if let Some(files) = &mut recorded.files {
            for (path, blob) in &changes {
                if blob.is_none() {
                    files.remove(path);
                }
            }
            files.extend(kept_now);
        }
        Ok(())
    }

    /// `list_history`: the note's versions, newest first, a page at a time.
    /// The note may be gone: its old path still names its history.
    pub fn list_history(&self, args: &HistoryArgs) -> Result<HistoryResults> {
        let limit = HISTORY_LIMIT.check("limit", args.limit)? as usize;
        let path = self.history_path(&one_of(args.path.as_deref(), args.reference.as_deref())?)?;
        let store = self.history_store()?;
        let from = match &args.cursor {
            Some(given) => {
                let text = cursor::decode(CURSOR_PREFIX, given).ok_or_else(|| {
                    Error::invalid("`cursor` is not a list_history cursor")
                        .with_hint("pass the `next_cursor` of the last page, with the same `path`")
                })?;
                let (commit, at) =
                    text.split_once('\n').ok_or_else(|| Error::invalid("`cursor` is damaged"))?;
                Some((commit.to_owned(), at.to_owned()))
            }
            None => None,
        };
        let (versions, next) =
            store.versions(path.as_str(), from.as_ref().map(|(c, p)| (c.as_str(), p.as_str())), limit)?;
        // A path that names no note, now or ever, is a mistake: say so.
        if versions.is_empty() && from.is_none() && self.sandbox().stat(&path)?.is_none() {
            return Err(Error::not_found(format!("{path} is not a note, and no note there was ever recorded"))
                .with_hint("check the path (search_knowledge finds a note by its title); a moved note's history is under its new path too"));
        }
        Ok(HistoryResults {
            path: path.as_str().to_owned(),
            versions: versions.into_iter().map(version_of).collect(),
            next_cursor: next.map(|(commit, at)| cursor::encode(CURSOR_PREFIX, &format!("{commit}\n{at}"))),
        })
    }

    /// The note at `path` (or its old path) as it was at `at`: a commit of
    /// `list_history` (or a unique prefix of one, 7 digits or more), or a time
    /// (RFC 3339: the version in force then). `not_found` naming what to give
    /// when there is no such version, or the note did not exist then.
    pub fn note_at(&self, path: &str, at: &str) -> Result<(String, PastVersion)> {
        let path = self.history_path(&NoteName::Path(path.to_owned()))?;
        let store = self.history_store()?;
        let at = at.trim();
        let past = if at.len() >= 7 && at.len() <= 40 && at.bytes().all(|b| b.is_ascii_hexdigit()) {
            store.read_at(path.as_str(), at)?
        } else {
            let time: jiff::Timestamp = at.parse().map_err(|_| {
                Error::invalid(format!("`at` is neither a commit nor a time: {}", cut_chars(at, 80)))
                    .with_hint("give a `commit` from list_history, or a time such as 2026-12-07T09:30:00Z")
            })?;
            store.read_as_of(path.as_str(), time.as_second())?.ok_or_else(|| {
                Error::not_found(format!("the history of this vault starts after {at}"))
                    .with_hint("list_history shows the versions there are")
            })?
        };
        if past.bytes.is_some() {
            return Ok((path.as_str().to_owned(), past));
        }
        // Then under its old name, when a move recorded since renamed it.
        let then = store.path_at(path.as_str(), &past.commit)?;
        if then != path.as_str() {
            let past = store.read_at(&then, &past.commit)?;
            if past.bytes.is_some() {
                return Ok((then, past));
            }
        }
        Err(Error::not_found(format!("{path} did not exist at {}", &past.commit[..12]))
            .with_hint("list_history shows when it did"))
    }

    /// The path a history is asked for: a note as `read_note` finds it, or,
    /// for a path no note has now, that path when an agent could read a note
    /// there (so a deleted or moved note's history stays reachable).
    pub(super) fn history_path(&self, name: &NoteName) -> Result<NotePath> {
        match (self.locate(name), name) {
            (Ok((path, _)), _) => Ok(path),
            (Err(error), NoteName::Path(given)) if error.code == ErrorCode::NotFound => {
                let path = NotePath::parse(given)?;
                if readable(self.sandbox().policy(), &path) { Ok(path) } else { Err(error) }
            }
            (Err(error), _) => Err(error),
        }
    }
}

/// Whether an agent may read a note at `note`: a note, a standard or a
/// `read_also` file (`area_of` is `None` for whatever is denied).
fn readable(policy: &crate::sandbox::Policy, note: &NotePath) -> bool {
    matches!(policy.area_of(note), Some(Area::Note | Area::Standard | Area::ReadAlso))
}

/// A stored version as the contract shows it.
fn version_of(version: StoredVersion) -> HistoryVersion {
    let (by, proposal_id, kind, approved_by, reason) = match version.change {
        Some(Change { by: ChangeBy::OnDisk, .. }) => (VersionBy::OnDisk, None, None, None, None),
        Some(Change { by: ChangeBy::Proposal { id, kind, approved_by }, reason, .. }) => (
            VersionBy::Proposal,
            Some(id),
            Some(kind),
            Some(approved_by),
            (!reason.is_empty()).then(|| cut_chars(&reason, REASON_CHARS)),
        ),
        None => (VersionBy::Unknown, None, None, None, None),
    };
    fn text(bytes: &Option<Vec<u8>>) -> std::borrow::Cow<'_, str> {
        bytes.as_deref().map(String::from_utf8_lossy).unwrap_or_default()
    }
    let (added, removed) = line_changes(&text(&version.before), &text(&version.bytes));
    HistoryVersion {
        commit: version.commit,
        at: jiff::Timestamp::from_second(version.time).map(|t| rfc3339(t, Zone::Utc)).unwrap_or_default(),
        by,
        proposal_id,
        kind,
        approved_by,
        reason,
        path: version.path,
        hash: version.bytes.as_deref().map(content_hash),
        added,
        removed,
    }
}
