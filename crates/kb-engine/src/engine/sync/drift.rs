//! What differs between the files on disk and the catalog: by a walk of the
//! vault, or for the paths a file watcher reported alone; and, for the
//! overview and the audit, how many files the index does not reflect.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{INDEX_MAX_BYTES, kind_of};
use crate::engine::{Catalog, Engine};
use crate::error::Result;
use crate::sandbox::{Area, NotePath, ScannedFile, ends_in_md};
use crate::vault::{NoteRecord, content_hash};

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

    /// What the reported paths mean for the index, or `None` when only a walk can tell.
    pub(super) fn plan_changed(&self, changed: &[PathBuf]) -> Option<Drift> {
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
            let Some(area) =
                self.sandbox().area_of(&path).filter(|&area| !matches!(area, Area::Inbox | Area::Memory))
            else {
                continue;
            };
            // A template is listed as skipped by the walk.
            if path.is_note() && self.sandbox().templates_folder_of(&path).is_some() {
                return None;
            }
            if !path.is_markdown() {
                let listed = drift.attachments.binary_search_by(|a| a.as_str().cmp(path.as_str()));
                match (self.sandbox().is_attachment(&path), listed) {
                    (true, Err(at)) => drift.attachments.insert(at, rel.clone()),
                    (false, Ok(at)) => {
                        drift.attachments.remove(at);
                    }
                    _ => {}
                }
                if !path.is_canvas() && !path.is_pdf() {
                    continue;
                }
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
