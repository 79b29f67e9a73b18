//! What every session of one server shares: the engine once it is ready, the
//! background start-up and sync, and the waits a call makes for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use serde_json::json;
use tokio::sync::watch as channel;

use super::metrics::Metrics;
use super::watch;
use super::{ServerOptions, VaultSpec, log};
use crate::engine::{Engine, EngineOptions};
use crate::error::Error;

/// Where the engine is in its start-up.
#[derive(Clone)]
enum Readiness {
    /// Opening the vault or building the index for the first time: (done, total) files.
    Starting(usize, usize),
    /// Completing or rolling back an apply a crash interrupted, before the
    /// vault is served: its notes may hold half the change until then. Every
    /// call waits for it, at most [`RECOVERY_WAIT`], then is told why it
    /// cannot be answered yet.
    Recovering,
    /// Serving from an existing index while the start-up sync compares it with
    /// the files: searches are answered at once, other calls wait for it a
    /// little ([`CATCH_UP_WAIT`]), then answer with what the index holds;
    /// searches say they may be stale.
    CatchingUp(Arc<Engine>),
    /// Serving.
    Ready(Arc<Engine>),
    /// The vault or index could not be opened.
    Failed(Error),
}

/// State shared by every connection of one server process.
pub struct Shared {
    readiness: channel::Receiver<Readiness>,
    /// Set by a call that found start-up failed: start-up tries again at once
    /// (its cause, a full disk say, may be gone), so the server comes back
    /// without a restart.
    retry: AtomicBool,
    /// Whether starting a file watcher failed: then calls re-check the files.
    /// Until the watcher is started (start-up syncs, then starts it) they do
    /// not: a call there used to walk the whole vault in its own time (0.9 s at
    /// 10k notes on a loaded machine, the worst tail of issue 17).
    unwatched: AtomicBool,
    last_check: std::sync::Mutex<Instant>,
    /// Every tool call and watcher update since start.
    metrics: Arc<Metrics>,
}

/// What a call waited for before the engine could answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waited {
    /// Nothing: the engine was ready.
    Nothing,
    /// Opening the vault, or the first build of its index.
    StartUp,
    /// The recovery of an apply a crash interrupted.
    Recovery,
    /// The start-up sync of an existing index (comparing it with the files).
    StartUpSync,
    /// Start-up had failed; it was asked to try again.
    Retry,
}

impl Waited {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Waited::Nothing => "nothing",
            Waited::StartUp => "start_up",
            Waited::Recovery => "recovery",
            Waited::StartUpSync => "start_up_sync",
            Waited::Retry => "start_up_retry",
        }
    }
}

/// The longest a call waits for the first index build.
const READY_WAIT: Duration = Duration::from_secs(300);

/// The longest a call waits for the recovery of an interrupted apply before it
/// is answered `index_unavailable`, saying the vault is being recovered.
/// Recovery rewrites at most the files of one plan, usually in well under a
/// second; it takes longer only when it waits for the inbox lock (another
/// process applying, up to 30 s) or the disk is slow, and an agent is better
/// told so than left waiting for its own timeout.
const RECOVERY_WAIT: Duration = Duration::from_secs(10);

/// The longest a call waits for the start-up sync of an existing index before
/// it answers from the index as it is (searches then carry `stale`). The sync
/// of an unchanged vault is a walk: about 0.6 s at 100,000 notes
/// (`incremental/walk_1_note` in BENCHMARKS.md).
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

/// How often the server looks whether the embeddings lag the notes.
const EMBED_CHECK_EVERY: Duration = Duration::from_millis(500);

/// How often the history thread looks for a changed catalog.
const HISTORY_CHECK_EVERY: Duration = Duration::from_millis(500);

/// How often a server without `[replica]` looks whether `kb.toml` gained one.
const REPLICA_CONFIG_CHECK_EVERY: Duration = Duration::from_secs(5);

impl Shared {
    /// Starts opening the vault and syncing the index in the background.
    pub(super) fn start(vault: &VaultSpec, options: &ServerOptions, metrics: Arc<Metrics>) -> Arc<Shared> {
        let (sender, readiness) = channel::channel(Readiness::Starting(0, 0));
        let shared = Arc::new(Shared {
            readiness,
            retry: AtomicBool::new(false),
            unwatched: AtomicBool::new(false),
            last_check: std::sync::Mutex::new(Instant::now()),
            metrics,
        });
        let engine_options = EngineOptions { vault: vault.path.clone(), index_dir: vault.index_dir.clone() };
        let background = shared.clone();
        let extractor = options.pdf_extractor.clone();
        std::thread::spawn(move || background.bring_up(&engine_options, &extractor, sender));
        // The Chinese segmenter's dictionary (about 100 ms) loads beside the start-up,
        // not in the first Chinese query.
        std::thread::spawn(crate::index::warm_up);
        shared
    }

    fn bring_up(
        self: &Arc<Self>,
        options: &EngineOptions,
        extractor: &crate::engine::PdfExtractor,
        sender: channel::Sender<Readiness>,
    ) {
        let mut started = Instant::now();
        // Whether the index must be checked whole while opening (its records read
        // at once): after its records could not be read, so that it is rebuilt.
        let mut check_whole = false;
        // Whether the vault was checked for an interrupted apply (once, at its first opening).
        let mut recovered_first = false;
        let (engine, watcher) = loop {
            let opened = if check_whole { Engine::open(options) } else { Engine::open_to_serve(options) };
            let engine = match opened {
                Ok(engine) => {
                    engine.set_pdf_extractor(extractor.clone());
                    let index = engine.index_location();
                    let dir = index.dir.display().to_string();
                    if let Some(reason) = &index.repaired {
                        log(json!({ "event": "index_rebuilt", "dir": dir, "reason": reason }));
                    }
                    if let Some(reason) = &index.moved {
                        log(json!({ "event": "index_location", "dir": dir, "reason": reason }));
                    }
                    if let Some(reason) = &index.read_only {
                        log(json!({ "event": "index_read_only", "dir": dir, "reason": reason }));
                    }
                    #[cfg(debug_assertions)]
                    pause_for_tests(&engine);
                    Arc::new(engine)
                }
                Err(error) => {
                    log(json!({ "event": "open_failed", "error": error.to_string() }));
                    self.fail_until_retry(&sender, &options.vault, error, "opening the vault again");
                    started = Instant::now();
                    continue;
                }
            };
            if !std::mem::replace(&mut recovered_first, true) && engine.has_interrupted_apply() {
                // Nothing is served from notes an apply left half changed.
                let _ = sender.send(Readiness::Recovering);
                Self::recover(&engine);
            }
            let opened_ms = started.elapsed().as_secs_f64() * 1000.0;
            // An existing index is served while it catches up: searches at once, other
            // calls after waiting for that a little. Its records are read meanwhile.
            let has_index = engine.has_indexed_notes();
            if has_index {
                let _ = sender.send(Readiness::CatchingUp(engine.clone()));
            }
            if let Err(error) = engine.load_catalog() {
                log(
                    json!({ "event": "index_unreadable", "error": error.to_string(), "action": "checking it whole" }),
                );
                let _ = sender.send(Readiness::Starting(0, 0));
                check_whole = true;
                continue;
            }
            let progress = |done: usize, total: usize| {
                if !has_index && (done.is_multiple_of(64) || done == total) {
                    let _ = sender.send(Readiness::Starting(done, total));
                }
            };
            // Watching starts before the walk (see `watch::spawn`); an engine given
            // up below takes its watcher with it.
            let watcher = watch::spawn(engine.clone(), self.metrics.clone());
            match engine.sync(false, Some(&progress)) {
                Ok(report) => {
                    log(json!({
                        "event": "index_synced",
                        "files": report.files, "added": report.added, "changed": report.changed,
                        "removed": report.removed, "full": report.full, "ms": started.elapsed().as_millis() as u64,
                        "opened_ms": opened_ms,
                    }));
                    if report.files == 0 {
                        log(json!({ "event": "no_notes", "warning": engine.why_no_notes() }));
                    }
                }
                Err(error) => {
                    log(json!({ "event": "sync_failed", "error": error.to_string() }));
                    if !has_index {
                        drop(watcher);
                        self.fail_until_retry(&sender, &options.vault, error, "building the index again");
                        started = Instant::now();
                        continue;
                    }
                }
            }
            break (engine, watcher);
        };
        // Said once at start, not only at the first proposal it would refuse.
        for warning in engine.warnings() {
            log(json!({ "event": "warning", "message": warning }));
        }
        // Ready even when the sync failed over an existing index: that index is
        // served, and its searches keep saying they may be stale.
        let _ = sender.send(Readiness::Ready(engine.clone()));
        // Without an interrupted apply this only sweeps what killed proposes left
        // in the inbox, which no call reads: it runs while calls are served.
        Self::recover(&engine);
        let watching = watcher.map(watch::Watcher::keep).is_some();
        if watching {
            watch::recheck(engine.clone());
        }
        *self.last_check.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.unwatched.store(!watching, Ordering::Relaxed);
        Self::keep_history(engine.clone());
        Self::keep_replica(engine.clone());
        Self::keep_embedding(engine);
    }

    /// Keeps the vault's history up to date for as long as the process
    /// runs: a pass whenever the catalog changed (an edit on disk the watcher
    /// saw, a sync), on a thread of its own; the first pass reads every note
    /// once, after start-up, never before it. A failure is logged once until
    /// the next pass succeeds.
    fn keep_history(engine: Arc<Engine>) {
        std::thread::spawn(move || {
            let mut failing = None;
            loop {
                if engine.history_due() {
                    let started = Instant::now();
                    match engine.record_history_pending() {
                        Ok(report) => {
                            failing = None;
                            if report.commit.is_some() || !report.left_out.is_empty() {
                                log(json!({
                                    "event": "history_recorded", "files": report.files, "commit": report.commit,
                                    "left_out": report.left_out.len(), "ms": started.elapsed().as_millis() as u64,
                                }));
                            }
                        }
                        Err(error) => {
                            let error = error.to_string();
                            if failing.as_ref() != Some(&error) {
                                log(json!({ "event": "history_failed", "error": error }));
                                failing = Some(error);
                            }
                        }
                    }
                }
                std::thread::sleep(HISTORY_CHECK_EVERY);
            }
        });
    }

    /// Keeps a replica (`[replica]` in `kb.toml`) in agreement with its
    /// remote for as long as the process runs: a sync every `interval`, the
    /// first right after start-up, on a thread of its own. A sync that did
    /// something, or whose state changed, is logged.
    fn keep_replica(engine: Arc<Engine>) {
        std::thread::spawn(move || {
            let mut said = None;
            loop {
                let _ = engine.refresh_config();
                let Some(interval) = engine.replica_interval() else {
                    std::thread::sleep(REPLICA_CONFIG_CHECK_EVERY);
                    continue;
                };
                let started = Instant::now();
                let line = match engine.sync_replica(crate::engine::types::Actor::Mcp) {
                    Ok(Some(report)) => {
                        let did = !report.written.is_empty() || !report.completed.is_empty() || report.pushed;
                        let status = &report.status;
                        let line = json!({
                            "event": "replica_synced", "state": status.state, "ahead": status.ahead,
                            "behind": status.behind, "held": status.held, "written": report.written.len(),
                            "merged": report.merged, "completed": report.completed, "pushed": report.pushed,
                            "error": status.error, "ms": started.elapsed().as_millis() as u64,
                        });
                        let key = (status.state.clone(), status.error.clone(), status.held.clone());
                        (did || said.as_ref() != Some(&key)).then(|| {
                            said = Some(key);
                            line
                        })
                    }
                    Ok(None) => None,
                    Err(error) => {
                        let key = ("failing".to_owned(), Some(error.to_string()), Vec::new());
                        (said.as_ref() != Some(&key)).then(|| {
                            said = Some(key);
                            json!({ "event": "replica_failed", "error": error.to_string() })
                        })
                    }
                };
                if let Some(line) = line {
                    log(line);
                }
                std::thread::sleep(interval);
            }
        });
    }

    /// Keeps the notes' embeddings up to date for as long as the process
    /// runs: a pass whenever the notes or `[semantic]` changed, on threads of
    /// its own (half the cores), so searches keep theirs. Searches are lexical
    /// until the first pass completes, and say so.
    fn keep_embedding(engine: Arc<Engine>) {
        let threads = (std::thread::available_parallelism().map_or(1, usize::from) / 2).max(1);
        let Ok(pool) = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("kb-embed-{i}"))
            .build()
        else {
            log(json!({ "event": "embeddings_failed", "error": "no thread for embedding" }));
            return;
        };
        std::thread::spawn(move || {
            loop {
                if engine.embedding_due() {
                    let started = Instant::now();
                    match pool.install(|| engine.embed_pending(&|_, _| {})) {
                        Ok(report) => log(json!({
                            "event": "embeddings_updated", "notes": report.notes, "sections": report.sections,
                            "embedded": report.embedded, "unread": report.unread, "skipped": report.skipped,
                            "ms": started.elapsed().as_millis() as u64,
                        })),
                        Err(error) => {
                            log(json!({ "event": "embeddings_failed", "error": error.to_string() }))
                        }
                    }
                }
                std::thread::sleep(EMBED_CHECK_EVERY);
            }
        });
    }

    /// Completes or rolls back an apply a crash interrupted, and sweeps the
    /// inbox of what killed proposes left (see `write::recover`). A recovery
    /// that fails (the inbox lock held past its wait, a full disk) is logged;
    /// the next apply tries again before it does anything else.
    fn recover(engine: &Engine) {
        let started = Instant::now();
        match engine.recover_proposals(crate::engine::types::Actor::Mcp) {
            Ok(completed) if !completed.is_empty() => log(json!({
                "event": "recovered", "proposals": completed, "ms": started.elapsed().as_millis() as u64,
            })),
            Ok(_) => {}
            Err(error) => log(json!({ "event": "recover_failed", "error": error.to_string() })),
        }
    }

    /// After a failed start-up: waits until `kb.toml` changes or a call asks
    /// to try again; says which (the log event's name).
    fn wait_for_retry(&self, vault: &std::path::Path) -> &'static str {
        let read = || crate::sandbox::read_vault_config(vault).map_err(|error| error.to_string());
        let before = read();
        for tick in 1u64.. {
            std::thread::sleep(Duration::from_millis(100));
            if self.retry.swap(false, Ordering::Relaxed) {
                return "retry_requested";
            }
            if tick.is_multiple_of(5) && read() != before {
                return "config_changed";
            }
        }
        unreachable!("the loop above only ends by returning")
    }

    /// Tells calls that start-up failed with `error`, then waits until it is worth
    /// trying again: an invalid kb.toml is the usual cause (it changed), or a call
    /// asks (a full disk may have been freed meanwhile). Start-up then begins anew.
    fn fail_until_retry(
        &self,
        sender: &channel::Sender<Readiness>,
        vault: &std::path::Path,
        error: Error,
        action: &str,
    ) {
        let _ = sender.send(Readiness::Failed(error));
        let why = self.wait_for_retry(vault);
        log(json!({ "event": why, "action": action }));
        let _ = sender.send(Readiness::Starting(0, 0));
    }

    /// The counts of every call and watcher update.
    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The engine once it serves (`None` while starting or failed).
    pub(super) fn engine_now(&self) -> Option<Arc<Engine>> {
        match &*self.readiness.borrow() {
            Readiness::CatchingUp(engine) | Readiness::Ready(engine) => Some(engine.clone()),
            _ => None,
        }
    }

    /// The metrics now, with the index's own figures when the engine serves.
    pub(super) fn metrics_snapshot(&self) -> crate::engine::types::ServerMetrics {
        let (index, watching) = self.index_activity();
        self.metrics.snapshot(index, watching)
    }

    /// [`Shared::metrics_snapshot`] in the Prometheus text format.
    pub(super) fn metrics_prometheus(&self) -> String {
        let (index, watching) = self.index_activity();
        self.metrics.prometheus_text(index, watching)
    }

    /// The index's own figures when the engine serves, and whether a watcher
    /// keeps it up to date.
    fn index_activity(&self) -> (Option<crate::engine::types::IndexActivity>, bool) {
        let engine = self.engine_now();
        let watching = engine.is_some() && !self.unwatched.load(Ordering::Relaxed);
        (engine.map(|engine| engine.index_activity()), watching)
    }

    /// The engine, waiting for start-up and telling the client how far it got.
    pub(super) async fn engine(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Engine>, Error> {
        self.engine_waiting(context, true).await.0
    }

    /// [`Shared::engine`], and what the call waited for (the last state it waited
    /// in). A call that is not `patient` (a search) does not wait for the
    /// start-up sync of an existing index: it is answered from the stored index
    /// at once, and says it may be stale.
    pub(super) async fn engine_waiting(
        &self,
        context: &RequestContext<RoleServer>,
        patient: bool,
    ) -> (Result<Arc<Engine>, Error>, Waited) {
        let mut waited = Waited::Nothing;
        let result = self.wait_for_engine(context, patient, &mut waited).await;
        (result, waited)
    }

    async fn wait_for_engine(
        &self,
        context: &RequestContext<RoleServer>,
        patient: bool,
        waited_for: &mut Waited,
    ) -> Result<Arc<Engine>, Error> {
        let mut readiness = self.readiness.clone();
        let asked = Instant::now();
        let deadline = asked + READY_WAIT;
        let token = context.meta.get_progress_token();
        let mut retried = false;
        loop {
            let state = readiness.borrow_and_update().clone();
            match state {
                Readiness::Ready(engine) => {
                    if asked.elapsed() >= Duration::from_millis(1) {
                        log(json!({
                            "event": "waited_for_start_up", "ms": asked.elapsed().as_millis() as u64,
                            "waited_for": waited_for.as_str(),
                        }));
                    }
                    return Ok(engine);
                }
                Readiness::CatchingUp(engine) => {
                    *waited_for = Waited::StartUpSync;
                    let waited = asked.elapsed();
                    if !patient || waited >= CATCH_UP_WAIT {
                        log(json!({
                            "event": "answered_while_catching_up", "waited_ms": waited.as_millis() as u64,
                            "waited_for": waited_for.as_str(),
                        }));
                        return Ok(engine);
                    }
                    if let Ok(Err(_)) =
                        tokio::time::timeout(CATCH_UP_WAIT - waited, readiness.changed()).await
                    {
                        return Ok(engine); // start-up ended without saying more
                    }
                }
                Readiness::Recovering => {
                    *waited_for = Waited::Recovery;
                    let waited = asked.elapsed();
                    if let Some(token) = &token {
                        let param = ProgressNotificationParam::new(token.clone(), waited.as_secs_f64())
                            .with_message("recovering an apply that was interrupted".to_owned());
                        let _ = context.peer.notify_progress(param).await;
                    }
                    if waited >= RECOVERY_WAIT {
                        return Err(Error::new(
                            crate::error::ErrorCode::IndexUnavailable,
                            "the vault is being recovered: an apply was interrupted (the server or kb-index \
                             stopped in the middle of it), and the notes it was changing are being put back \
                             or completed; nothing is answered from them until that is done",
                        )
                        .with_hint("call again in a few seconds"));
                    }
                    let wait = (RECOVERY_WAIT - waited).min(Duration::from_millis(500));
                    let _ = tokio::time::timeout(wait, readiness.changed()).await;
                }
                Readiness::Failed(error) if retried => return Err(error),
                Readiness::Failed(_) => {
                    *waited_for = Waited::Retry;
                    // Start-up failed earlier: ask it to try again (once per call), since
                    // its cause may be gone, and wait for the outcome.
                    retried = true;
                    self.retry.store(true, Ordering::Relaxed);
                    while matches!(*readiness.borrow_and_update(), Readiness::Failed(_)) {
                        if Instant::now() >= deadline
                            || tokio::time::timeout(Duration::from_secs(5), readiness.changed())
                                .await
                                .is_err()
                        {
                            break;
                        }
                    }
                }
                Readiness::Starting(done, total) => {
                    *waited_for = Waited::StartUp;
                    if let Some(token) = &token {
                        let message = if total == 0 {
                            "opening the vault".to_owned()
                        } else {
                            format!("indexing notes: {done} of {total}")
                        };
                        let mut param =
                            ProgressNotificationParam::new(token.clone(), done as f64).with_message(message);
                        if total > 0 {
                            param = param.with_total(total as f64);
                        }
                        let _ = context.peer.notify_progress(param).await;
                    }
                    if Instant::now() >= deadline {
                        return Err(Error::new(
                            crate::error::ErrorCode::IndexUnavailable,
                            format!("the index is still being built ({done} of {total} notes)"),
                        )
                        .with_hint("retry in a minute"));
                    }
                    let _ = tokio::time::timeout(Duration::from_millis(500), readiness.changed()).await;
                }
            }
        }
    }

    /// Without a watcher, re-checks the files before answering, at most every two seconds.
    pub(super) fn check_files(&self, engine: &Engine) {
        if !self.unwatched.load(Ordering::Relaxed) {
            return;
        }
        let mut last = self.last_check.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= Duration::from_secs(2) {
            *last = Instant::now();
            if let Err(error) = engine.sync(false, None) {
                log(json!({ "event": "sync_failed", "error": error.to_string() }));
            }
        }
    }
}

/// Debug builds only, for the tests that kill a real server in the middle
/// of an apply: `KB_MCP_TEST_PAUSE_AT` set to `committed`, `pushed` (a
/// replica's commit made, or pushed) or `written` (the notes written) stops
/// every apply there for good, so that the test's SIGKILL lands there.
#[cfg(debug_assertions)]
fn pause_for_tests(engine: &Engine) {
    use crate::engine::{ApplyPoint, ReplicaStep};
    let point = match std::env::var("KB_MCP_TEST_PAUSE_AT").as_deref() {
        Ok("committed") => ApplyPoint::Replica(ReplicaStep::Committed),
        Ok("pushed") => ApplyPoint::Replica(ReplicaStep::Pushed),
        Ok("written") => ApplyPoint::Write(crate::write::Step::Written),
        _ => return,
    };
    engine.set_apply_failpoint(Some(Box::new(move |at| {
        if at == point {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        Ok(())
    })));
}
