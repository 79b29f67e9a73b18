//! Keeping the index in step with the files.
//!
//! A sync walks the vault and compares every Markdown file with its record
//! (size and modification time first; the content hash decides when only the
//! time moved). Only new and changed files are read and parsed, in parallel with
//! rayon, and handed to one index writer; records of deleted files are removed.
//! A full sync empties the index first. The same code serves `kb-index build`
//! and the server's start-up; the file watcher's [`Engine::sync_changed`] looks
//! only at the paths it was told about, and walks only when those cannot be
//! judged alone.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;

use super::{Catalog, Engine, catalog_records};
use crate::error::{ErrorCode, Result};
use crate::index::IndexDocument;
use crate::sandbox::{Area, NotePath, ScannedFile, ends_in_md};
use crate::vault::{Diagnostic, NoteKind, NoteRecord, content_hash, decode_note, parse_note};

/// Files above this size are recorded but not indexed as text.
pub(super) const INDEX_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncReport {
    /// Whether the index was rebuilt from scratch.
    pub full: bool,
    /// Files indexed now (notes, standards, read_also).
    pub files: usize,
    /// Newly indexed files.
    pub added: usize,
    /// Re-indexed files.
    pub changed: usize,
    /// Removed files.
    pub removed: usize,
    /// Files left as they were.
    pub unchanged: usize,
    /// Bytes of Markdown read and indexed.
    pub bytes_indexed: u64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Files found but not served as notes (path, why), sorted by path: refused
    /// names, templates, symlinks that serve no note, files that are not UTF-8
    /// or cannot be read.
    pub skipped: Vec<(String, String)>,
}

/// A Markdown file that cannot be served as a note (not UTF-8, or unreadable),
/// as it was when last read: it is not in the index, and is read again only
/// when its size or modification time moves.
#[derive(Debug, Clone)]
pub(crate) struct Unreadable {
    size: u64,
    modified_ns: i64,
    reason: String,
}

impl Unreadable {
    fn matches(&self, file: &ScannedFile) -> bool {
        self.size == file.stat.size && self.modified_ns == nanos(file.stat.modified)
    }
}

/// What reading one file for the index gave.
enum Loaded {
    /// A note to index.
    Document(Box<IndexDocument>),
    /// The file vanished before it could be read.
    Vanished,
    /// The file cannot be served as a note; why.
    Unreadable(String),
}

/// What the index does not reflect (see [`Engine::staleness`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Staleness {
    pub(crate) added: u64,
    pub(crate) changed: u64,
    pub(crate) removed: u64,
    /// Files found but not served as notes (path, why), sorted by path.
    pub(crate) skipped: Vec<(String, String)>,
}

/// How many new files [`Engine::staleness`] reads to tell notes from files that
/// cannot be served; beyond it (an index far behind) they count as added.
const STALENESS_READS_MAX: usize = 1000;

/// What [`Engine::write_files`] indexed.
#[derive(Debug, Default)]
struct Written {
    /// The records of the files indexed.
    records: Vec<NoteRecord>,
    /// Bytes of Markdown indexed.
    bytes: u64,
    /// Files that vanished before they could be read, and files that turned
    /// out not to be notes (removed from the index).
    vanished: Vec<String>,
    /// Files that cannot be served as notes (path, why).
    unreadable: Vec<(String, String)>,
}

/// Files on disk compared with the index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Drift {
    pub(crate) added: Vec<ScannedFile>,
    pub(crate) changed: Vec<ScannedFile>,
    pub(crate) removed: Vec<String>,
    pub(crate) unchanged: usize,
    pub(crate) attachments: Vec<String>,
    pub(crate) skipped: Vec<(String, String)>,
}

/// Whether a file of `size` bytes last modified at `modified` is, as the sync
/// judges without reading it, the one `record` was made from.
pub(crate) fn same_stamp(record: &NoteRecord, size: u64, modified: SystemTime) -> bool {
    record.size == size && record.modified_ns == nanos(modified)
}

pub(crate) fn nanos(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

pub(super) fn kind_of(area: Area) -> NoteKind {
    match area {
        Area::Standard => NoteKind::Standard,
        Area::ReadAlso => NoteKind::ReadAlso,
        Area::Note | Area::Inbox => NoteKind::Note,
    }
}

/// A note's index document from its bytes, as read from the file at `path`
/// (of `kind`, with these times); why it cannot be served as a note when it
/// cannot (not UTF-8).
pub(super) fn document_of(
    path: &NotePath,
    kind: NoteKind,
    bytes: &[u8],
    modified_ns: i64,
    born_ns: Option<i64>,
) -> std::result::Result<IndexDocument, String> {
    let hash = content_hash(bytes);
    let size = bytes.len() as u64;
    match decode_note(bytes) {
        Ok(text) => {
            let note = parse_note(path, text);
            let body = note.index_body(text).into_owned();
            let record = NoteRecord::from_note(note, kind, size, modified_ns, born_ns, hash);
            Ok(IndexDocument { record, body })
        }
        Err(diagnostic) => Err(diagnostic.message),
    }
}

impl Engine {
    /// Compares the files on disk with the catalog, by size and modification time.
    pub(crate) fn drift(&self) -> Result<Drift> {
        let scan = self.sandbox().scan()?;
        self.linked_notes.store(scan.linked > 0, Ordering::Relaxed);
        let catalog = self.catalog();
        let mut drift = Drift {
            attachments: scan.attachments.iter().map(|p| p.as_str().to_owned()).collect(),
            skipped: scan.skipped.iter().map(|s| (s.path.clone(), s.reason.clone())).collect(),
            ..Drift::default()
        };
        // Which catalog records a file still stands for, by position in the catalog.
        let mut seen = vec![false; catalog.records().len()];
        let mut unreadable = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
        // Kept: the unreadable files still on disk as they were read.
        let mut still_unreadable = BTreeMap::new();
        for file in scan.markdown {
            let position = catalog.position(file.path.as_str());
            if let Some(at) = position {
                seen[at] = true;
            }
            if let Some(known) = unreadable.remove(file.path.as_str()).filter(|known| known.matches(&file)) {
                drift.skipped.push((file.path.as_str().to_owned(), known.reason.clone()));
                still_unreadable.insert(file.path.as_str().to_owned(), known);
                if position.is_some() {
                    // Indexed by another process before it could not be read: drop it.
                    drift.changed.push(file);
                }
                continue;
            }
            match position.map(|at| &catalog.records()[at]) {
                // An index written before files that are not UTF-8 were left out
                // holds them as empty notes: read them again (and drop them).
                Some(record) if record.diagnostics.iter().any(|d| d.message.starts_with("not UTF-8")) => {
                    drift.changed.push(file);
                }
                None => drift.added.push(file),
                Some(record)
                    if same_stamp(record, file.stat.size, file.stat.modified)
                        && record.kind == kind_of(file.area) =>
                {
                    drift.unchanged += 1;
                }
                Some(_) => drift.changed.push(file),
            }
        }
        drift.removed = catalog
            .records()
            .iter()
            .zip(&seen)
            .filter(|(_, seen)| !**seen)
            .map(|(r, _)| r.path.clone())
            .collect();
        *unreadable = still_unreadable;
        drop(unreadable);
        drift.skipped.sort();
        // Attachments are not in the index: every scan refreshes the catalog's list, so
        // links to images resolve even in a process that has not synced yet.
        if catalog.attachments != drift.attachments {
            self.set_catalog(Catalog::new(catalog.records().to_vec(), drift.attachments.clone()));
        }
        Ok(drift)
    }

    /// Brings the index up to date with the files. `full` rebuilds from scratch.
    /// `progress` is told (done, total) as files are indexed.
    pub fn sync(&self, full: bool, progress: Option<&(dyn Fn(usize, usize) + Sync)>) -> Result<SyncReport> {
        let _serial = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
        let report = self.sync_locked(full, progress)?;
        self.caught_up.store(true, std::sync::atomic::Ordering::Release);
        Ok(report)
    }

    /// Brings the index up to date after a file watcher reported `changed` paths
    /// (on disk, inside the vault): only those are looked at, so one changed note
    /// costs one read and one commit, whatever the size of the vault. Falls back
    /// to a walk ([`Engine::sync`]) when a report cannot be judged alone: a
    /// folder, a file under a folder that was renamed or deleted, a name the
    /// walk would report as skipped, or a vault where notes are reached through
    /// symlinks (their targets change under another name).
    pub fn sync_changed(&self, changed: &[PathBuf]) -> Result<SyncReport> {
        let _serial = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        self.catch_up_with_index(false)?;
        let Some(mut plan) = self.plan_changed(changed) else { return self.sync_locked(false, None) };
        let work: Vec<&ScannedFile> = plan.added.iter().chain(&plan.changed).collect();
        let written = self.write_files(false, &work, &plan.removed, None)?;
        let attachments = std::mem::take(&mut plan.attachments);
        let attachments = (attachments != self.catalog().attachments).then_some(attachments);
        Ok(self.conclude(false, plan, written, attachments, started))
    }

    /// What the reported paths mean for the index, or `None` when only a walk can tell.
    fn plan_changed(&self, changed: &[PathBuf]) -> Option<Drift> {
        let catalog = self.catalog();
        if catalog.records().is_empty() || self.linked_notes.load(Ordering::Relaxed) {
            return None;
        }
        let mut drift = Drift { attachments: catalog.attachments.clone(), ..Drift::default() };
        let reported: BTreeSet<String> =
            changed.iter().filter_map(|disk| self.sandbox().vault_path(disk)).collect();
        for rel in reported {
            if rel.is_empty() {
                return None;
            }
            let path = match NotePath::parse(&rel) {
                Ok(path) => path,
                // The walk lists refused Markdown names as skipped; other files do not matter.
                Err(_) if ends_in_md(&rel) => return None,
                Err(_) => continue,
            };
            let folder_prefix = format!("{rel}/");
            let below = catalog.records().partition_point(|r| r.path.as_str() < folder_prefix.as_str());
            let holds_notes =
                catalog.records().get(below).is_some_and(|r| r.path.starts_with(&folder_prefix));
            if self.sandbox().is_folder(&path) || holds_notes {
                return None;
            }
            let Some(area) = self.sandbox().area_of(&path).filter(|&area| area != Area::Inbox) else {
                continue;
            };
            // A template is listed as skipped by the walk.
            if path.is_markdown() && self.sandbox().templates_folder_of(&path).is_some() {
                return None;
            }
            if !path.is_markdown() {
                let listed = drift.attachments.binary_search_by(|a| a.as_str().cmp(path.as_str()));
                match (self.sandbox().is_attachment(&path), listed) {
                    (true, Err(at)) => drift.attachments.insert(at, rel),
                    (false, Ok(at)) => {
                        drift.attachments.remove(at);
                    }
                    _ => {}
                }
                continue;
            }
            let stat = self.sandbox().stat(&path).ok().flatten();
            let known = self.unreadable.lock().unwrap_or_else(|p| p.into_inner()).remove(&rel);
            if let (Some(stat), Some(known)) = (stat, known) {
                let file = ScannedFile { path: path.clone(), area, stat };
                if known.matches(&file) {
                    drift.skipped.push((rel.clone(), known.reason.clone()));
                    self.unreadable.lock().unwrap_or_else(|p| p.into_inner()).insert(rel, known);
                    continue;
                }
            }
            match (stat, catalog.get(path.as_str())) {
                (None, Some(_)) => drift.removed.push(rel),
                (None, None) => {}
                (Some(stat), None) => drift.added.push(ScannedFile { path, area, stat }),
                (Some(stat), Some(record))
                    if same_stamp(record, stat.size, stat.modified) && record.kind == kind_of(area) =>
                {
                    drift.unchanged += 1;
                }
                (Some(stat), Some(_)) => drift.changed.push(ScannedFile { path, area, stat }),
            }
        }
        Some(drift)
    }

    /// When another process committed since the catalog was loaded (or `full`),
    /// starts again from the index's records (reading them all costs ~100 ms per
    /// 10k notes, so only then).
    fn catch_up_with_index(&self, full: bool) -> Result<()> {
        self.index.reload()?;
        let committed = self.index.committed_opstamp();
        let known = *self.catalog_opstamp.lock().unwrap_or_else(|p| p.into_inner());
        if committed != known || full {
            let stored = catalog_records(self.index.records()?);
            let attachments = self.catalog().attachments.clone();
            self.set_catalog(Catalog::new(stored, attachments));
        }
        Ok(())
    }

    fn sync_locked(
        &self,
        full: bool,
        progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    ) -> Result<SyncReport> {
        let started = Instant::now();
        self.catch_up_with_index(full)?;
        let full = full || self.catalog().records().is_empty();
        if full {
            self.set_catalog(Catalog::default());
        }
        let drift = self.drift()?;
        let mut work: Vec<&ScannedFile> = drift.added.iter().chain(&drift.changed).collect();
        work.sort_by(|a, b| a.path.cmp(&b.path));
        let written = self.write_files(full, &work, &drift.removed, progress)?;
        // The walk has already put new attachments in the catalog: a sync that found
        // nothing new keeps the catalog, and with it the link graph built over it.
        let attachments =
            (drift.attachments != self.catalog().attachments).then(|| drift.attachments.clone());
        Ok(self.conclude(full, drift, written, attachments, started))
    }

    /// After the index was written: swaps the new records (and `attachments`,
    /// when given) into the catalog, unless nothing changed, and reports.
    fn conclude(
        &self,
        full: bool,
        drift: Drift,
        written: Written,
        attachments: Option<Vec<String>>,
        started: Instant,
    ) -> SyncReport {
        let mut removed = drift.removed;
        removed.extend(written.vanished);
        let gone: HashSet<String> = removed.iter().cloned().collect();
        let files = if written.records.is_empty() && gone.is_empty() && attachments.is_none() {
            self.catalog().records().len()
        } else {
            self.apply_delta(&gone, written.records, attachments)
        };
        self.catalog_matches_index();
        SyncReport {
            full,
            files,
            added: drift.added.len(),
            changed: drift.changed.len(),
            removed: removed.len(),
            unchanged: drift.unchanged,
            bytes_indexed: written.bytes,
            seconds: started.elapsed().as_secs_f64(),
            skipped: {
                let mut skipped = drift.skipped;
                skipped.extend(written.unreadable);
                skipped.sort();
                skipped.dedup();
                skipped
            },
        }
    }

    /// Reads, parses and indexes `work` (in parallel, one writer) and removes
    /// `removed`, in one commit; files that vanished meanwhile are removed in a
    /// second one. Writes nothing when there is nothing to write (and not `full`).
    fn write_files(
        &self,
        full: bool,
        work: &[&ScannedFile],
        removed: &[String],
        progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    ) -> Result<Written> {
        if work.is_empty() && removed.is_empty() && !full {
            return Ok(Written::default());
        }
        let catalog = self.catalog();
        let total = work.len();
        let done = AtomicUsize::new(0);
        let mut written = Written::default();
        let produce = |sink: &crate::index::DocumentSink<'_>| -> Result<()> {
            let results: Vec<Result<Loaded>> = work
                .par_iter()
                .map(|file| {
                    let outcome = match self.load(file) {
                        Ok(Loaded::Document(document)) => {
                            if full {
                                sink.add(&document)?
                            } else {
                                sink.replace(&document)?
                            }
                            Ok(Loaded::Document(document))
                        }
                        other => other,
                    };
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Some(report) = progress {
                        report(n, total);
                    }
                    outcome
                })
                .collect();
            let mut unreadable = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
            for (file, result) in work.iter().zip(results) {
                let path = file.path.as_str().to_owned();
                match result? {
                    Loaded::Document(document) => {
                        unreadable.remove(&path);
                        written.bytes += document.record.size;
                        written.records.push(document.record);
                    }
                    Loaded::Vanished => {
                        unreadable.remove(&path);
                        written.vanished.push(path);
                    }
                    Loaded::Unreadable(reason) => {
                        let known = Unreadable {
                            size: file.stat.size,
                            modified_ns: nanos(file.stat.modified),
                            reason: reason.clone(),
                        };
                        unreadable.insert(path.clone(), known);
                        if catalog.get(&path).is_some() {
                            written.vanished.push(path.clone());
                        }
                        written.unreadable.push((path, reason));
                    }
                }
            }
            Ok(())
        };
        let before = |path: &str| catalog.get(path).map(|record| record.hash.clone());
        self.index.update(full, work.len(), removed, &before, produce)?;
        if !written.vanished.is_empty() {
            self.index.update(false, 0, &written.vanished, &before, |_| Ok(()))?;
        }
        Ok(written)
    }

    /// Reads and parses one file into an index document.
    fn load(&self, file: &ScannedFile) -> Result<Loaded> {
        let modified_ns = nanos(file.stat.modified);
        let born_ns = file.stat.created.map(nanos);
        let kind = kind_of(file.area);
        let bytes = match self.sandbox().read(&file.path, INDEX_MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.code == ErrorCode::NotFound => return Ok(Loaded::Vanished),
            Err(err) if err.code == ErrorCode::TooLarge => {
                // Too large to index, still a note: read_note reads it by pages.
                let note = parse_note(&file.path, "");
                let mut record =
                    NoteRecord::from_note(note, kind, file.stat.size, modified_ns, born_ns, String::new());
                record.diagnostics =
                    vec![Diagnostic { line: None, message: format!("not indexed: {}", err.message) }];
                return Ok(Loaded::Document(Box::new(IndexDocument { record, body: String::new() })));
            }
            Err(err) => return Ok(Loaded::Unreadable(unreadable_reason(&err.message))),
        };
        Ok(match document_of(&file.path, kind, &bytes, modified_ns, born_ns) {
            Ok(document) => Loaded::Document(Box::new(document)),
            Err(reason) => Loaded::Unreadable(reason),
        })
    }

    /// Why a new file cannot be served as a note, when it cannot (read without
    /// parsing it), remembered as [`Engine::load`] would.
    fn check_readable(&self, file: &ScannedFile) -> Option<String> {
        let reason = match self.sandbox().read(&file.path, INDEX_MAX_BYTES) {
            Ok(bytes) => decode_note(&bytes).err()?.message,
            Err(err) if matches!(err.code, ErrorCode::NotFound | ErrorCode::TooLarge) => return None,
            Err(err) => unreadable_reason(&err.message),
        };
        let known = Unreadable {
            size: file.stat.size,
            modified_ns: nanos(file.stat.modified),
            reason: reason.clone(),
        };
        self.unreadable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(file.path.as_str().to_owned(), known);
        Some(reason)
    }

    /// Re-reads the files whose modification time moved and tells which really
    /// changed: how many files the index does not reflect, and the files left out.
    /// New files are read too (up to [`STALENESS_READS_MAX`]) so that one that
    /// cannot be served as a note counts as skipped, not as missing from the index.
    pub(crate) fn staleness(&self) -> Result<Staleness> {
        let mut drift = self.drift()?;
        let catalog = self.catalog();
        let mut changed = 0u64;
        for file in &drift.changed {
            let same =
                match (catalog.get(file.path.as_str()), self.sandbox().read(&file.path, INDEX_MAX_BYTES)) {
                    (Some(record), Ok(bytes)) => {
                        record.hash == content_hash(&bytes) && record.size == bytes.len() as u64
                    }
                    _ => false,
                };
            if !same {
                changed += 1;
            }
        }
        let mut added = drift.added.len() as u64;
        if drift.added.len() <= STALENESS_READS_MAX {
            for file in &drift.added {
                if let Some(reason) = self.check_readable(file) {
                    added -= 1;
                    drift.skipped.push((file.path.as_str().to_owned(), reason));
                }
            }
            drift.skipped.sort();
        }
        Ok(Staleness { added, changed, removed: drift.removed.len() as u64, skipped: drift.skipped })
    }
}

/// The reason given for a file the sandbox refused to read.
fn unreadable_reason(message: &str) -> String {
    format!("cannot be read ({message}); not a note until it can be")
}

impl Engine {
    /// Re-indexes one file right away (after an apply): delete, add, commit and
    /// reload, so the very next search sees it, then swaps it into the catalog.
    /// Does not wait for a sync in progress (the file watcher's, say): index updates
    /// are serialised by the index itself, and both apply their changes to the
    /// current catalog as a delta, so neither undoes the other.
    pub fn refresh_note(&self, path: &crate::sandbox::NotePath) -> Result<()> {
        self.refresh_notes(std::slice::from_ref(path))
    }

    /// [`Engine::refresh_note`] for several notes (a multi-file apply's: moved,
    /// trashed, rewritten), in one index commit and one catalog update.
    /// The notes are read and parsed in parallel (a hub's move rewrites thousands).
    pub(crate) fn refresh_notes(&self, paths: &[crate::sandbox::NotePath]) -> Result<()> {
        let loaded: Vec<Result<Option<IndexDocument>>> =
            paths.par_iter().map(|path| self.load_fresh(path)).collect();
        let mut documents = Vec::new();
        let mut removed = Vec::new();
        for (path, document) in paths.iter().zip(loaded) {
            match document? {
                Some(document) => documents.push(document),
                None => removed.push(path.as_str().to_owned()),
            }
        }
        let gone: HashSet<String> = paths.iter().map(|path| path.as_str().to_owned()).collect();
        let catalog = self.catalog();
        let before = |path: &str| catalog.get(path).map(|record| record.hash.clone());
        // Made into index documents in parallel: a hub's move refreshes thousands.
        self.index.update(false, documents.len(), &removed, &before, |sink| {
            documents.par_iter().try_for_each(|document| sink.replace(document))
        })?;
        let attachments = self.attachments_after(paths);
        self.apply_delta(&gone, documents.into_iter().map(|document| document.record).collect(), attachments);
        self.catalog_matches_index();
        Ok(())
    }

    /// One path of [`Engine::refresh_notes`]: its document, `None` when it is
    /// no note to index (gone, unreadable, outside the indexed areas).
    pub(super) fn load_fresh(&self, path: &crate::sandbox::NotePath) -> Result<Option<IndexDocument>> {
        // Not Markdown (an attachment a folder move carried): never a note, and
        // not a file reads may stat.
        if !path.is_markdown() {
            return Ok(None);
        }
        let area = self.sandbox().area_of(path);
        let stat = self.sandbox().stat(path)?;
        Ok(match (area, stat) {
            (Some(area @ (Area::Note | Area::Standard | Area::ReadAlso)), Some(stat))
                if path.is_markdown() && self.sandbox().templates_folder_of(path).is_none() =>
            {
                match self.load(&ScannedFile { path: path.clone(), area, stat })? {
                    Loaded::Document(document) => Some(*document),
                    Loaded::Vanished => None,
                    Loaded::Unreadable(reason) => {
                        let known = Unreadable { size: stat.size, modified_ns: nanos(stat.modified), reason };
                        self.unreadable
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(path.as_str().to_owned(), known);
                        None
                    }
                }
            }
            _ => None,
        })
    }

    /// The attachments after the files at `paths` changed (an apply moved
    /// some: a folder move carries them): each path that is not Markdown is
    /// dropped, and listed again where the walk would list it now. `None` when
    /// every path is Markdown.
    pub(super) fn attachments_after(&self, paths: &[crate::sandbox::NotePath]) -> Option<Vec<String>> {
        let others: Vec<&crate::sandbox::NotePath> =
            paths.iter().filter(|path| !path.is_markdown()).collect();
        if others.is_empty() {
            return None;
        }
        let sandbox = self.sandbox();
        let mut attachments = self.catalog().attachments().to_vec();
        for path in others {
            match (
                attachments.binary_search_by(|a| a.as_str().cmp(path.as_str())),
                sandbox.is_attachment(path),
            ) {
                (Ok(at), false) => {
                    attachments.remove(at);
                }
                (Err(at), true) => attachments.insert(at, path.as_str().to_owned()),
                _ => {}
            }
        }
        Some(attachments)
    }

    /// Swaps in a catalog made from the *current* one with `gone` paths removed and
    /// `fresh` records put in (replacing any with the same path), so concurrent
    /// updates compose. One merge pass over the sorted records: a one-note update
    /// of a 100k-note catalog costs about a millisecond. Returns the number of records.
    pub(super) fn apply_delta(
        &self,
        gone: &HashSet<String>,
        fresh: Vec<NoteRecord>,
        attachments: Option<Vec<String>>,
    ) -> usize {
        let mut fresh = catalog_records(fresh);
        fresh.sort_by(|a, b| a.path.cmp(&b.path));
        // A delta applies to the stored records: they are read first if they were not yet.
        let _ = self.load_catalog();
        let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        let mut records = Vec::with_capacity(current.records().len() + fresh.len());
        let mut incoming = fresh.into_iter().peekable();
        for record in current.records() {
            while let Some(next) = incoming.next_if(|next| next.path < record.path) {
                records.push(next);
            }
            let replaced = incoming.peek().is_some_and(|next| next.path == record.path);
            if replaced || (!gone.is_empty() && gone.contains(&record.path)) {
                continue;
            }
            records.push(record.clone());
        }
        records.extend(incoming);
        let count = records.len();
        let attachments = attachments.unwrap_or_else(|| current.attachments.clone());
        *current = Arc::new(Catalog::new(records, attachments));
        count
    }
}
