//! How the overview says `fresh` without walking the vault on every call.
//!
//! A walk of every file costs about a second per 100k notes. While a file
//! watcher runs ([`Engine::set_watched`]), the engine keeps what its last
//! walk found instead (a sync's, or an overview's own, when it found the index
//! fresh) and keeps that answer true: every change the watcher reports goes
//! through [`Engine::sync_reported`], which an overview waits for; a sync that
//! fails or a configuration that changes the folders forgets the walk; and the
//! server walks again when [`Engine::recheck_due`] says so (every
//! [`RECHECK_EVERY`]), in the background. Each overview also compares a rolling
//! slice of the notes with their records (size and modification time; as many
//! as 5 ms allow, see [`SLICE`]): a
//! change the watcher did not report there sends that call back to a walk. A
//! walk older than twice [`RECHECK_EVERY`] is not used. What `fresh` then
//! guarantees is written in `ARCHITECTURE.md`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Staleness, SyncReport, same_stamp};
use crate::engine::Engine;
use crate::error::Result;
use crate::sandbox::{NotePath, Zone, rfc3339};

/// How often the server walks the vault again while a watcher runs.
pub const RECHECK_EVERY: Duration = Duration::from_secs(300);

/// Notes each overview compares with their records, in turn: at most this
/// many, and no more once [`SLICE_TIME`] has passed (but at least
/// [`SLICE_MIN`]): a checked stat costs 5–30 µs.
const SLICE: usize = 4096;
const SLICE_MIN: usize = 64;
const SLICE_TIME: Duration = Duration::from_millis(5);

/// The last walk that found the index fresh, and the watcher's work since.
#[derive(Debug, Default)]
pub(crate) struct Verification {
    /// Whether a file watcher reports changes to [`Engine::sync_reported`].
    watched: AtomicBool,
    /// Reported changes being indexed now.
    reported: AtomicUsize,
    walked: Mutex<Option<Walked>>,
    /// Where the next rolling slice starts, in the catalog's records.
    cursor: AtomicUsize,
}

/// A walk that found every file in the index at its content.
#[derive(Debug, Clone)]
struct Walked {
    started: Instant,
    /// When it started (RFC 3339, UTC).
    at: String,
    /// The files it found but did not serve as notes, sorted by path.
    skipped: Vec<(String, String)>,
}

impl Walked {
    fn now(started: Instant, skipped: Vec<(String, String)>) -> Walked {
        let ago = jiff::SignedDuration::try_from(started.elapsed()).unwrap_or_default();
        let at = jiff::Timestamp::now().checked_sub(ago).unwrap_or_else(|_| jiff::Timestamp::now());
        Walked { started, at: rfc3339(at, Zone::Utc), skipped }
    }
}

impl Verification {
    fn walked(&self) -> MutexGuard<'_, Option<Walked>> {
        self.walked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A walk that began at `started` found the index fresh (after a sync had
    /// brought it in line, or as it was).
    pub(crate) fn record(&self, started: Instant, skipped: Vec<(String, String)>) {
        let mut walked = self.walked();
        // A slower walk that began earlier does not replace a later one.
        if walked.as_ref().is_none_or(|last| last.started <= started) {
            *walked = Some(Walked::now(started, skipped));
        }
    }

    /// The walk no longer says how the files stand (a sync failed, the
    /// folders changed).
    pub(crate) fn forget(&self) {
        *self.walked() = None;
    }

    /// A sync of the reported `paths` (vault-relative) succeeded: the walk
    /// stands, with what it skipped among them replaced by `skipped`.
    fn reported_synced(&self, paths: &[String], skipped: &[(String, String)]) {
        if let Some(walked) = self.walked().as_mut() {
            walked.skipped.retain(|(path, _)| !paths.contains(path));
            walked.skipped.extend(skipped.iter().filter(|(path, _)| paths.contains(path)).cloned());
            walked.skipped.sort();
            walked.skipped.dedup();
        }
    }
}

impl Engine {
    /// Tells the engine whether a file watcher reports every change to
    /// [`Engine::sync_reported`]; only then does the overview answer from its
    /// last walk.
    pub fn set_watched(&self, watched: bool) {
        self.verification.watched.store(watched, Ordering::Release);
    }

    /// Brings the index up to date after the file watcher reported `changed`
    /// paths ([`Engine::sync_changed`]), or lost events (`rescan`: a walk,
    /// [`Engine::sync`]). An overview asked meanwhile waits for it.
    pub fn sync_reported(&self, changed: &[PathBuf], rescan: bool) -> Result<SyncReport> {
        let verification = &self.verification;
        verification.reported.fetch_add(1, Ordering::AcqRel);
        let synced = if rescan { self.sync(false, None) } else { self.sync_changed(changed) };
        if let Ok(report) = &synced {
            let paths: Vec<String> =
                changed.iter().filter_map(|disk| self.sandbox().vault_path(disk)).collect();
            verification.reported_synced(&paths, &report.skipped);
        }
        verification.reported.fetch_sub(1, Ordering::AcqRel);
        synced
    }

    /// Whether the vault should be walked again ([`Engine::sync`]) to keep the
    /// overview's answer checked: no walk found the index fresh in the last
    /// [`RECHECK_EVERY`].
    pub fn recheck_due(&self) -> bool {
        self.verification.walked().as_ref().is_none_or(|walked| walked.started.elapsed() >= RECHECK_EVERY)
    }

    /// How stale the index is, and when the walk that says so started: the
    /// last walk's answer while a watcher keeps it true (see the module's
    /// notes), else a walk now ([`Engine::staleness`]).
    pub(crate) fn checked_staleness(&self) -> Result<(Staleness, String)> {
        if let Some(kept) = self.kept_walk() {
            let staleness = Staleness { skipped: kept.skipped, ..Staleness::default() };
            return Ok((staleness, kept.at));
        }
        let started = Instant::now();
        let staleness = self.staleness()?;
        if staleness.added == 0 && staleness.changed == 0 && staleness.removed == 0 {
            self.verification.record(started, staleness.skipped.clone());
        } else {
            // Until a sync brings the index in line, each overview walks.
            self.verification.forget();
        }
        let at = self.verification.walked().as_ref().map(|walked| walked.at.clone());
        Ok((staleness, at.unwrap_or_else(|| rfc3339(jiff::Timestamp::now(), Zone::Utc))))
    }

    /// The last walk, when it still says how the files stand.
    fn kept_walk(&self) -> Option<Walked> {
        let verification = &self.verification;
        if !verification.watched.load(Ordering::Acquire) {
            return None;
        }
        if verification.reported.load(Ordering::Acquire) > 0 {
            // A reported change is being indexed: its sync ends first.
            drop(self.syncing.lock().unwrap_or_else(|p| p.into_inner()));
        }
        let walked = verification.walked().clone()?;
        if walked.started.elapsed() >= 2 * RECHECK_EVERY || !self.slice_matches() {
            return None;
        }
        Some(walked)
    }

    /// Whether the next notes of the catalog (a slice: see [`SLICE`]) are on
    /// disk as their records say (size and modification time).
    fn slice_matches(&self) -> bool {
        let catalog = self.catalog();
        let records = catalog.records();
        let sandbox = self.sandbox();
        let started = Instant::now();
        let cursor = &self.verification.cursor;
        for checked in 0..SLICE.min(records.len()) {
            if checked >= SLICE_MIN && started.elapsed() >= SLICE_TIME {
                break;
            }
            let record = &records[cursor.fetch_add(1, Ordering::Relaxed) % records.len()];
            let stat = NotePath::parse(&record.path).ok().and_then(|path| sandbox.stat(&path).ok().flatten());
            if !stat.is_some_and(|stat| same_stamp(record, stat.size, stat.modified)) {
                return false;
            }
        }
        true
    }
}
