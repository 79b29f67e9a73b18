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
//!
//! The files: `drift` (what differs between the files and the catalog, by a
//! walk or for the reported paths alone, and how stale the index is),
//! `indexing` (reading files into documents and writing them to the index),
//! `refresh` (re-indexing the notes an apply wrote, and the catalog delta
//! every update swaps in), `verified` (the last walk that found the index
//! fresh, which the overview answers from while a watcher runs). This file
//! runs a sync and reports it.

mod drift;
mod indexing;
mod refresh;
mod verified;

pub(crate) use drift::{Staleness, nanos, same_stamp};
pub(super) use indexing::{INDEX_MAX_BYTES, Unreadable, document_of, kind_of};
pub use verified::RECHECK_EVERY;
pub(crate) use verified::Verification;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use drift::Drift;
use indexing::Written;

use super::{Catalog, Engine, catalog_records};
use crate::error::Result;
use crate::sandbox::ScannedFile;

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
    /// or cannot be read, PDFs whose text is not indexed (and why).
    pub skipped: Vec<(String, String)>,
}

impl Engine {
    /// Brings the index up to date with the files. `full` rebuilds from scratch.
    /// `progress` is told (done, total) as files are indexed.
    pub fn sync(&self, full: bool, progress: Option<&(dyn Fn(usize, usize) + Sync)>) -> Result<SyncReport> {
        let _serial = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
        let report = self.sync_locked(full, progress).inspect_err(|_| self.verification.forget())?;
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
        self.sync_changed_locked(changed).inspect_err(|_| self.verification.forget())
    }

    fn sync_changed_locked(&self, changed: &[PathBuf]) -> Result<SyncReport> {
        let started = Instant::now();
        self.catch_up_with_index(false)?;
        let Some(mut plan) = self.plan_changed(changed) else { return self.sync_locked(false, None) };
        let work: Vec<&ScannedFile> = plan.added.iter().chain(&plan.changed).collect();
        let written = self.write_files(false, &work, &plan.removed, None)?;
        let attachments = std::mem::take(&mut plan.attachments);
        let attachments = (attachments != self.catalog().attachments).then_some(attachments);
        Ok(self.conclude(false, plan, written, attachments, started))
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
        if full && self.index.folder().exists() {
            self.pdf.prune(self.index.folder(), self.catalog().records());
        }
        // The walk has already put new attachments in the catalog: a sync that found
        // nothing new keeps the catalog, and with it the link graph built over it.
        let attachments =
            (drift.attachments != self.catalog().attachments).then(|| drift.attachments.clone());
        let report = self.conclude(full, drift, written, attachments, started);
        // Every file the walk found is now in the index at the content it read.
        self.verification.record(started, report.skipped.clone());
        Ok(report)
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
}
