//! The file watcher: re-syncs the index shortly after notes change on disk.
//!
//! Events are debounced (300 ms), events inside the index folder (and the
//! history's repository) are ignored
//! (the index's own commits would otherwise trigger endless syncs), and each
//! batch runs one targeted sync of the reported paths
//! ([`Engine::sync_reported`]), which walks the vault only when it must (and
//! which the overview's `fresh` counts on, with a walk every
//! [`RECHECK_EVERY`] in the background: [`recheck`]). A
//! change to `kb.toml` or to Obsidian's templates settings puts the new
//! configuration in force first ([`Engine::refresh_config`]). Opening or
//! reading a file changes nothing and is ignored: the server's own reads (a
//! walk opens every folder, a search opens the notes it quotes) would
//! otherwise start a sync, whose walk starts the next one. Events in the
//! inbox's folder of parked files (`sandbox/parked.rs`) start its sweep
//! ([`Sweeper`]): at once, so that a save that reached a replaced file late
//! becomes a conflict copy the person sees, and again once the files parked
//! meanwhile are old enough to go.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, DebouncedEvent, Debouncer, RecommendedCache, new_debouncer,
};
use serde_json::json;

use super::metrics::Metrics;
use super::{debug_log, log};
use crate::engine::{Engine, RECHECK_EVERY};

/// A running watcher; dropping it stops the watching.
pub(super) struct Watcher {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

impl Watcher {
    /// Keeps watching for as long as the process runs.
    pub(super) fn keep(self) {
        std::mem::forget(self);
    }
}

/// Starts watching the vault for `engine`; `None` when no watcher could start.
/// Started before the engine's start-up sync walks the vault, so a note
/// written at any moment after that walk began is either walked or reported:
/// started after it, a note written between the two was missed until the
/// next restart.
pub(super) fn spawn(engine: Arc<Engine>, metrics: Arc<Metrics>) -> Option<Watcher> {
    let root = engine.root().to_owned();
    let index_dir: PathBuf = crate::sandbox::canonical_or_same(&engine.index_location().dir);
    // The history's writes (its own repository, or the vault's `.git`) are no notes.
    let history_dirs: [PathBuf; 2] =
        [crate::sandbox::canonical_or_same(&engine.own_history_folder()), root.join(".git")];
    // kb.toml and Obsidian's templates settings (they name the folder left out).
    let mut settings_files = vec![root.join("kb.toml")];
    settings_files.extend(
        crate::sandbox::TEMPLATE_SETTINGS
            .iter()
            .map(|file| file.split('/').fold(root.clone(), |at, s| at.join(s))),
    );
    let handler_engine = engine.clone();
    let sweeper = Arc::new(Sweeper::default());
    let handler = move |result: DebounceEventResult| {
        let Ok(mut events) = result else { return };
        events.retain(may_change);
        let inbox = handler_engine.root().join(handler_engine.policy().inbox);
        let displaced = inbox.join(crate::sandbox::DISPLACED_FOLDER);
        if events.iter().flat_map(|e| e.paths.iter()).any(|p| p.starts_with(&displaced)) {
            sweeper.poke(&handler_engine);
        }
        if events.iter().flat_map(|e| e.paths.iter()).any(|p| settings_files.contains(p)) {
            // A new kb.toml is put in force (and the index brought in line) at once,
            // not only when the next call checks it.
            match handler_engine.refresh_config() {
                Ok(true) => log(json!({ "event": "config_reloaded" })),
                Ok(false) => {}
                Err(error) => log(json!({ "event": "config_invalid", "error": error.to_string() })),
            }
        }
        let changed: Vec<PathBuf> = events
            .iter()
            .flat_map(|e| e.paths.iter())
            .filter(|p| {
                !p.starts_with(&index_dir)
                    && !p.starts_with(&inbox)
                    && !history_dirs.iter().any(|dir| p.starts_with(dir))
            })
            .cloned()
            .collect();
        if changed.is_empty() {
            return;
        }
        let first = events.iter().map(|e| e.time).min();
        // A rescan request (events were lost) needs a walk.
        let synced = handler_engine.sync_reported(&changed, events.iter().any(|e| e.need_rescan()));
        if debug_log() {
            log(json!({ "event": "watch_sync", "level": "debug", "paths": changed.len() }));
        }
        if let (Ok(_), Some(first)) = (&synced, first) {
            metrics.record_sync(changed.len(), first.elapsed());
        }
        match synced {
            Ok(report) if report.added + report.changed + report.removed > 0 => log(json!({
                "event": "index_updated", "added": report.added, "changed": report.changed,
                "removed": report.removed, "ms": report.seconds * 1000.0,
            })),
            Ok(_) => {}
            Err(error) => log(json!({ "event": "sync_failed", "error": error.to_string() })),
        }
    };
    let mut debouncer = match new_debouncer(Duration::from_millis(300), None, handler) {
        Ok(debouncer) => debouncer,
        Err(error) => {
            log(json!({ "event": "watch_unavailable", "error": error.to_string() }));
            return None;
        }
    };
    if let Err(error) = debouncer.watch(&root, RecursiveMode::Recursive) {
        log(json!({ "event": "watch_unavailable", "error": error.to_string() }));
        return None;
    }
    Some(Watcher { _debouncer: debouncer })
}

/// Walks the vault again whenever [`Engine::recheck_due`] says so, for as
/// long as the process runs, on a thread of its own: the overview's `fresh`
/// rests on the last walk and the watcher's reports since, and a change the
/// watcher never reported (a network drive's, a queue that overflowed
/// silently) is found and indexed within [`RECHECK_EVERY`].
pub(super) fn recheck(engine: Arc<Engine>) {
    engine.set_watched(true);
    std::thread::spawn(move || {
        let mut tried = std::time::Instant::now();
        let mut failing = None;
        loop {
            std::thread::sleep(RECHECK_EVERY / 10);
            // After a failure (an index another process writes), once per period too.
            if !engine.recheck_due() || tried.elapsed() < RECHECK_EVERY {
                continue;
            }
            tried = std::time::Instant::now();
            match engine.sync(false, None) {
                Ok(report) => {
                    failing = None;
                    if report.added + report.changed + report.removed > 0 {
                        log(json!({
                            "event": "index_rechecked", "added": report.added, "changed": report.changed,
                            "removed": report.removed, "ms": tried.elapsed().as_millis() as u64,
                        }));
                    }
                }
                Err(error) => {
                    let error = error.to_string();
                    if failing.as_ref() != Some(&error) {
                        log(json!({ "event": "sync_failed", "error": error }));
                        failing = Some(error);
                    }
                }
            }
        }
    });
}

/// Runs the sweep of parked files (part of [`Engine::recover_proposals`]) on
/// its own thread: at once when poked (again for each later poke), and once
/// more when [`PARK_AGE`] has passed without one, for the files old enough to
/// go by then; after that the thread ends, until the next poke. One thread
/// at most.
///
/// [`PARK_AGE`]: crate::sandbox::PARK_AGE
#[derive(Debug, Default)]
struct Sweeper {
    /// How the running thread is poked; `None` when none runs.
    thread: Mutex<Option<mpsc::Sender<()>>>,
}

impl Sweeper {
    fn poke(self: &Arc<Self>, engine: &Arc<Engine>) {
        let mut thread = self.thread.lock().unwrap_or_else(|p| p.into_inner());
        if thread.as_ref().is_some_and(|poke| poke.send(()).is_ok()) {
            return;
        }
        let (poke, poked) = mpsc::channel();
        *thread = Some(poke);
        let (sweeper, engine) = (self.clone(), engine.clone());
        std::thread::spawn(move || {
            let sweep = || {
                if let Err(error) = engine.recover_proposals(crate::engine::types::Actor::Mcp) {
                    log(json!({ "event": "recover_failed", "error": error.to_string() }));
                }
            };
            loop {
                sweep();
                match poked.recv_timeout(crate::sandbox::PARK_AGE + Duration::from_secs(1)) {
                    Ok(()) => while poked.try_recv().is_ok() {},
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        sweep();
                        let mut thread = sweeper.thread.lock().unwrap_or_else(|p| p.into_inner());
                        // A poke that came meanwhile runs another round.
                        if poked.try_recv().is_err() {
                            *thread = None;
                            return;
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    }
}

/// Whether an event can stand for a changed file. Opening, reading and closing
/// a file read-only cannot; everything else (writes, a write's close, creations,
/// removals, renames, attribute changes, a rescan request, kinds a platform does
/// not name) is taken as a possible change.
fn may_change(event: &DebouncedEvent) -> bool {
    event.need_rescan()
        || !matches!(
            event.kind,
            EventKind::Access(
                AccessKind::Open(_)
                    | AccessKind::Read
                    | AccessKind::Close(AccessMode::Read | AccessMode::Execute)
            )
        )
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use notify::event::{CreateKind, ModifyKind};
    use notify::{Event, EventKind};

    use super::*;

    fn event(kind: EventKind) -> DebouncedEvent {
        DebouncedEvent::new(Event::new(kind).add_path("/vault/a.md".into()), Instant::now())
    }

    #[test]
    fn reads_are_not_changes_and_writes_are() {
        for read in [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Read),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
        ] {
            assert!(!may_change(&event(read)), "{read:?}");
        }
        for write in [
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            EventKind::Access(AccessKind::Any),
            EventKind::Create(CreateKind::File),
            EventKind::Modify(ModifyKind::Any),
            EventKind::Remove(notify::event::RemoveKind::Any),
            EventKind::Any,
            EventKind::Other,
        ] {
            assert!(may_change(&event(write)), "{write:?}");
        }
    }
}
