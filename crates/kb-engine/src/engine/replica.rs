//! Replicas (issue 38): the same vault on several machines, each a git clone
//! served by its own kb-mcp with its own index, kept in agreement through a
//! remote (`[replica]` in `kb.toml`). This file decides what is committed and
//! when; `sandbox/replica/` does the git.
//!
//! **An apply** takes the remote first. Under the inbox lock, once every
//! check passed and before the vault is touched, the files the apply will
//! leave are committed on the clone's branch and pushed fast-forward only. The
//! remote refusing it means another clone pushed first: when its commits
//! touch none of the apply's files they are brought into this clone and the
//! push is tried again on top of them; when they do, the apply is refused as
//! `stale_base` naming the remote's commit, and nothing here changed. Only an
//! accepted push (or an unreachable remote: the commit then waits, and the
//! overview says the clone is ahead) lets the apply write. Afterwards the
//! branch moves to the commit, and the inbox's own changes (the archived
//! proposal, the audit line) follow as a second commit.
//!
//! **A sync** (every `interval`, and `kb-index replica`) fetches, commits the
//! inbox's changes (proposals staged here, so another clone can apply them),
//! brings the remote's commits into the work tree (a fast-forward, merging a
//! person's uncommitted change that does not overlap, else holding the whole
//! move and saying which files), replays this clone's unpushed commits on top
//! of the remote's when both moved, and pushes. A commit of this clone that
//! reached the remote while the clone stopped before writing it (a crash
//! between push and write) completes its proposal here. The audit log, which
//! every clone appends to, is merged as a union of lines.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{Engine, timing};
use crate::engine::types::ReplicaStatus;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Moved, NotePath, Pushed, Replica, Zone, rfc3339};
use crate::vault::ReplicaConfig;
use crate::write::{self, Actor};

/// Pushes tried on top of the remote's new commits before an apply gives up.
const PUSH_TRIES: usize = 4;

/// The points inside a replicated apply where a test's failpoint fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaStep {
    /// The apply's commit is made; nothing is pushed, nothing written.
    Committed,
    /// The remote holds the apply's commit; the vault is not written yet.
    Pushed,
}

/// A point of an apply where a test's failpoint fires (see
/// [`Engine::set_apply_failpoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyPoint {
    /// Inside a replicated apply.
    Replica(ReplicaStep),
    /// After a step of the write layer's apply.
    Write(write::Step),
}

/// A test's failpoint inside every apply this engine makes.
pub type ApplyFailpoint = Box<dyn FnMut(ApplyPoint) -> Result<()> + Send>;

/// The engine's replica: opened for the `[replica]` in force, and how it stood last.
#[derive(Default)]
pub(super) struct ReplicaLayer {
    opened: Mutex<Option<(ReplicaConfig, Arc<Replica>)>>,
    status: Mutex<Option<ReplicaStatus>>,
    failpoint: Mutex<Option<ApplyFailpoint>>,
}

/// An apply's commit, made before its vault write.
pub(super) struct Published {
    commit: String,
    /// Files the remote's commits changed here while the apply waited for
    /// them (indexed after the apply: its own index update holds the writer).
    caught: Vec<String>,
    /// Whether the remote holds it (else it waits for the remote to be reachable).
    pushed: bool,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaReport {
    /// Files of the work tree the remote's commits changed here.
    pub written: Vec<String>,
    /// Of those, files merged with a change of the person's not yet committed.
    pub merged: Vec<String>,
    /// Proposals a commit of this clone applied that were completed here.
    pub completed: Vec<String>,
    /// Whether the clone's commits were pushed.
    pub pushed: bool,
    /// How the clone stands now.
    pub status: ReplicaStatus,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Engine {
    /// The replica of the `[replica]` in force (`None` without one), opened
    /// on first use and again when the section changes.
    fn replica(&self) -> Result<Option<Arc<Replica>>> {
        let Some(wanted) = self.config().replica.clone() else { return Ok(None) };
        let mut opened = lock(&self.replica.opened);
        if let Some((config, replica)) = &*opened
            && *config == wanted
        {
            return Ok(Some(replica.clone()));
        }
        let replica = Arc::new(Replica::open(self.root(), &wanted.remote, wanted.branch.as_deref())?);
        *opened = Some((wanted, replica.clone()));
        Ok(Some(replica))
    }

    /// How often the clone fetches (`None` without `[replica]`).
    pub fn replica_interval(&self) -> Option<Duration> {
        self.config().replica.as_ref().map(|replica| Duration::from_secs(replica.interval_secs))
    }

    /// How the clone stood at its last sync or apply, with its counts as
    /// they are now (`None` without `[replica]`).
    pub fn replica_status(&self) -> Option<ReplicaStatus> {
        let config = self.config().replica.clone()?;
        let last = lock(&self.replica.status).clone();
        let mut status = last.unwrap_or_else(|| ReplicaStatus {
            remote: config.remote.clone(),
            branch: config.branch.clone().unwrap_or_default(),
            state: "behind".to_owned(),
            ..ReplicaStatus::default()
        });
        match self.replica() {
            Ok(Some(replica)) => {
                if let Ok((ahead, behind)) = replica.ahead_behind() {
                    (status.ahead, status.behind) = (ahead as u64, behind as u64);
                }
                status.branch = replica.branch().to_owned();
                status.state = state_of(&status).to_owned();
            }
            Ok(None) => return None,
            Err(error) => {
                status.state = "failing".to_owned();
                status.error = Some(error.message);
            }
        }
        Some(status)
    }

    /// Tests: a failpoint called at every [`ApplyPoint`] of every apply this
    /// engine makes, whoever asked for it (a tool call, the review page):
    /// an error stops the apply there, as a crash would, and one that never
    /// returns lets a test kill the process there.
    pub fn set_apply_failpoint(&self, failpoint: Option<ApplyFailpoint>) {
        *lock(&self.replica.failpoint) = failpoint;
    }

    pub(super) fn apply_failpoint(&self, point: ApplyPoint) -> Result<()> {
        match &mut *lock(&self.replica.failpoint) {
            Some(failpoint) => failpoint(point),
            None => Ok(()),
        }
    }

    /// Fetches, commits the inbox's changes, brings the remote's commits
    /// into the clone and pushes its own (see the module docs). `None`
    /// without `[replica]`.
    pub fn sync_replica(&self, actor: Actor) -> Result<Option<ReplicaReport>> {
        let Some(replica) = self.replica()? else { return Ok(None) };
        let fetched = replica.fetch()?;
        let sandbox = self.sandbox();
        let mut report = ReplicaReport::default();
        let mut status = ReplicaStatus {
            remote: replica.remote().to_owned(),
            branch: replica.branch().to_owned(),
            last_fetch: lock(&self.replica.status).as_ref().and_then(|s| s.last_fetch.clone()),
            ..ReplicaStatus::default()
        };
        match &fetched {
            Ok(()) => status.last_fetch = Some(rfc3339(jiff::Timestamp::now(), Zone::Local)),
            Err(why) => status.error = Some(format!("the remote could not be reached: {why}")),
        }
        let mut index = |paths: &[NotePath]| self.refresh_notes(paths);
        let mut own = Vec::new();
        // Without an inbox of kb-mcp's (none yet, or the person's own folder
        // in its place) nothing is applied here: the clone only takes the
        // remote's commits, and no inbox file is made.
        let inbox = NotePath::parse(sandbox.policy().inbox.trim_matches('/'));
        let inbox_ready =
            inbox.is_ok_and(|inbox| sandbox.is_folder(&inbox)) && self.inbox_conflict().is_none();
        let mut step = || {
            if inbox_ready {
                self.commit_inbox(&replica, None)?;
            }
            let caught = self.catch_up(&replica, true)?;
            status.held = caught.held;
            if let Some(moved) = caught.moved {
                own.extend(self.own_commits(&replica, &moved)?);
                report.written = moved.written;
                report.merged = moved.merged;
            }
            Ok(())
        };
        if inbox_ready {
            write::with_inbox_lock(&sandbox, actor, &mut index, &mut step)?;
        } else {
            step()?;
        }
        for (id, notes) in own.into_iter().filter(|_| inbox_ready) {
            let mut index = |paths: &[NotePath]| self.refresh_notes(paths);
            let mut history = self.hold_history();
            if let Some(applied) = write::settle_applied(&sandbox, &id, &notes, actor, &mut index)? {
                self.record_applied(&mut history, &applied);
                report.completed.push(id);
            }
        }
        if fetched.is_ok() {
            report.pushed = self.push_ahead(&replica, &mut status)?;
        }
        let (ahead, behind) = replica.ahead_behind()?;
        (status.ahead, status.behind) = (ahead as u64, behind as u64);
        status.state = state_of(&status).to_owned();
        *lock(&self.replica.status) = Some(status.clone());
        report.status = status;
        Ok(Some(report))
    }

    /// Pushes the branch when it is ahead of the remote and not behind it.
    fn push_ahead(&self, replica: &Replica, status: &mut ReplicaStatus) -> Result<bool> {
        let (ahead, behind) = replica.ahead_behind()?;
        let Some(head) = replica.head() else { return Ok(false) };
        if ahead == 0 || behind > 0 {
            return Ok(false);
        }
        match replica.push(&head)? {
            Pushed::Accepted => Ok(true),
            Pushed::Rejected => Ok(false),
            Pushed::Unreachable(why) => {
                status.error = Some(format!("the remote could not be reached: {why}"));
                Ok(false)
            }
        }
    }

    /// Commits what changed in the inbox (proposals staged, archived,
    /// rejected; the audit log) on top of `on` (default: the branch) and
    /// moves the clone there, so that it travels.
    fn commit_inbox(&self, replica: &Replica, on: Option<&str>) -> Result<()> {
        let sandbox = self.sandbox();
        let inbox = sandbox.policy().inbox.trim_matches('/').to_owned();
        let files = timing::time("replica_inbox", || {
            replica.changed_under(&inbox, &|path| !write::inbox_file_travels(&sandbox, path))
        })?;
        let head = replica.head();
        let on = on.map(str::to_owned).or(head);
        let tip = match (files.is_empty(), on) {
            (true, None) => return Ok(()),
            (true, Some(on)) => on,
            (false, on) => {
                let message = format!("inbox: {} file(s)\n\nKb-By: inbox\n", files.len());
                replica.commit_files(on.as_deref(), &files, &message)?
            }
        };
        let moved = timing::time("replica_branch", || self.move_clone(replica, &tip, false))?;
        if !moved.blocked.is_empty() {
            return Err(Error::internal(format!(
                "replica: the clone could not take its own commit: {:?}",
                moved.blocked
            )));
        }
        Ok(())
    }

    /// Moves the clone to `to` (see [`Replica::move_to`]), merging the audit
    /// log as a union of lines and writing a note as an apply swaps it; the
    /// notes written are indexed when `index`.
    fn move_clone(&self, replica: &Replica, to: &str, index: bool) -> Result<Moved> {
        let sandbox = self.sandbox();
        let audit = write::audit_log_path(&sandbox)?;
        let union = |path: &str| path == audit;
        let write =
            |path: &str, bytes: &[u8], expected: &[u8]| write::write_moved(&sandbox, path, bytes, expected);
        let moved = replica.move_to(to, &union, &write)?;
        if index {
            self.refresh_paths(&moved.written);
        }
        Ok(moved)
    }

    /// Indexes the notes, canvases and PDFs among `paths` as they are now
    /// (the watcher would too; a CLI has none).
    fn refresh_paths(&self, paths: &[String]) {
        let notes: Vec<NotePath> = paths
            .iter()
            .filter(|path| path.ends_with(".md") || path.ends_with(".canvas") || path.ends_with(".pdf"))
            .filter_map(|path| NotePath::parse(path).ok())
            .collect();
        if !notes.is_empty() {
            let _ = self.refresh_notes(&notes);
        }
    }

    /// Brings the remote's commits (as fetched) into the clone: a
    /// fast-forward, or, when the clone has commits the remote has not, those
    /// replayed on top of the remote's (held when both change a file).
    fn catch_up(&self, replica: &Replica, index: bool) -> Result<CaughtUp> {
        let Some(remote) = replica.remote_head() else { return Ok(CaughtUp::default()) };
        let head = replica.head();
        if let Some(head) = &head
            && replica.contains(head, &remote)?
        {
            return Ok(CaughtUp::default());
        }
        let target = match &head {
            Some(head) if !replica.contains(&remote, head)? => {
                let base = replica.merge_base(head, &remote)?;
                let audit = write::audit_log_path(&self.sandbox())?;
                let theirs: HashSet<String> =
                    replica.changed_paths(base.as_deref(), &remote)?.into_iter().collect();
                let held: Vec<String> = replica
                    .changed_paths(base.as_deref(), head)?
                    .into_iter()
                    .filter(|path| theirs.contains(path) && *path != audit)
                    .collect();
                if !held.is_empty() {
                    return Ok(CaughtUp { held, moved: None });
                }
                let mut tip = remote.clone();
                for commit in replica.commits_between(Some(&remote), head)? {
                    tip = replica.replay(&commit.id, &tip, &|path| path == audit)?;
                }
                tip
            }
            _ => remote,
        };
        let moved = self.move_clone(replica, &target, index)?;
        if !moved.blocked.is_empty() {
            return Ok(CaughtUp { held: moved.blocked, moved: None });
        }
        Ok(CaughtUp { held: Vec::new(), moved: Some(moved) })
    }

    /// The proposals commits of this clone applied that the clone just got
    /// from the remote (it stopped between their push and their write),
    /// each with the files its commit wrote.
    fn own_commits(&self, replica: &Replica, moved: &Moved) -> Result<Vec<(String, Vec<String>)>> {
        let Some(to) = &moved.to else { return Ok(Vec::new()) };
        let mut own = Vec::new();
        for commit in replica.commits_between(moved.from.as_deref(), to)? {
            if let (Some(id), Some(by)) = (&commit.proposal, &commit.replica)
                && by == replica.id()
            {
                let parent = replica.parent(&commit.id)?;
                own.push((id.clone(), replica.changed_paths(parent.as_deref(), &commit.id)?));
            }
        }
        Ok(own)
    }

    /// Inside an apply, its checks passed and the inbox locked, before the
    /// vault is touched: commits the files the apply will leave and pushes
    /// them (see the module docs). `stale_base` when the remote's new commits
    /// change one of them.
    pub(super) fn publish_apply(&self, id: &str) -> Result<Option<Published>> {
        let Some(replica) = self.replica()? else { return Ok(None) };
        let sandbox = self.sandbox();
        let write::Planned { kind, reason, files: planned } =
            timing::time("replica_plan", || write::planned_files(&sandbox, id))?;
        let paths: BTreeSet<&str> = planned.iter().map(|(path, _)| path.as_str()).collect();
        let message = apply_message(id, kind.name(), &reason);
        let mut caught = Vec::new();
        for _ in 0..PUSH_TRIES {
            let head = replica.head();
            let commit =
                timing::time("replica_commit", || replica.commit_files(head.as_deref(), &planned, &message))?;
            self.apply_failpoint(ApplyPoint::Replica(ReplicaStep::Committed))?;
            match timing::time("replica_push", || replica.push(&commit))? {
                Pushed::Accepted => {
                    self.apply_failpoint(ApplyPoint::Replica(ReplicaStep::Pushed))?;
                    return Ok(Some(Published { commit, pushed: true, caught }));
                }
                Pushed::Unreachable(why) => {
                    self.note_unreachable(&replica, &why);
                    return Ok(Some(Published { commit, pushed: false, caught }));
                }
                Pushed::Rejected => {}
            }
            // Another clone pushed first: what did it change?
            if let Err(why) = replica.fetch()? {
                self.note_unreachable(&replica, &why);
                return Ok(Some(Published { commit, pushed: false, caught }));
            }
            let Some(remote) = replica.remote_head() else { continue };
            let base = match &head {
                Some(head) => replica.merge_base(head, &remote)?,
                None => None,
            };
            let touched: Vec<String> = replica
                .changed_paths(base.as_deref(), &remote)?
                .into_iter()
                .filter(|path| paths.contains(path.as_str()))
                .collect();
            if !touched.is_empty() {
                return Err(remote_moved(&replica, &remote, &touched));
            }
            let caught_up = self.catch_up(&replica, false)?;
            caught.extend(caught_up.moved.map(|moved| moved.written).unwrap_or_default());
            if !caught_up.held.is_empty() {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "this clone cannot take the remote's new commits, so the apply waits: {} changed here and there",
                        caught_up.held.join(", ")
                    ),
                )
                .with_hint("the person commits or undoes their change to those files, then the apply is tried again"));
            }
        }
        Err(Error::new(
            ErrorCode::Conflict,
            "other clones kept pushing while this apply tried to: nothing was changed",
        )
        .with_hint("try the apply again"))
    }

    /// Once an apply wrote and audited what [`Engine::publish_apply`]
    /// committed, still under the inbox lock: the branch moves to that
    /// commit (the work tree holds it already), the inbox's changes follow
    /// as a commit, and both are pushed when the remote took the first.
    /// Never fails the apply (it happened): a failure is the overview's.
    pub(super) fn after_apply(&self, published: &Published) {
        let Ok(Some(replica)) = self.replica() else { return };
        let outcome = (|| -> Result<()> {
            // The inbox's commit goes on the apply's: the clone moves once.
            self.commit_inbox(&replica, Some(&published.commit))?;
            if published.pushed
                && let Some(head) = replica.head()
            {
                timing::time("replica_push", || replica.push(&head))?;
            }
            Ok(())
        })();
        let mut last = lock(&self.replica.status);
        let status = last.get_or_insert_with(|| ReplicaStatus {
            remote: replica.remote().to_owned(),
            branch: replica.branch().to_owned(),
            ..ReplicaStatus::default()
        });
        status.error = outcome.err().map(|error| error.message);
    }

    /// After an apply: indexes the files the remote's commits changed here
    /// while it waited for them (its own index update held the writer then).
    pub(super) fn refresh_caught(&self, published: &Published) {
        self.refresh_paths(&published.caught);
    }

    fn note_unreachable(&self, replica: &Replica, why: &str) {
        let mut last = lock(&self.replica.status);
        let status = last.get_or_insert_with(|| ReplicaStatus {
            remote: replica.remote().to_owned(),
            branch: replica.branch().to_owned(),
            ..ReplicaStatus::default()
        });
        status.error = Some(format!("the remote could not be reached: {why}"));
        status.state = "unreachable".to_owned();
    }
}

/// What catching up with the remote did.
#[derive(Default)]
struct CaughtUp {
    /// Files changed here and there: nothing moved.
    held: Vec<String>,
    moved: Option<Moved>,
}

/// The state a status's counts and findings name.
fn state_of(status: &ReplicaStatus) -> &'static str {
    if !status.held.is_empty() {
        "held"
    } else if status.error.as_deref().is_some_and(|e| e.starts_with("the remote could not be reached")) {
        "unreachable"
    } else if status.error.is_some() {
        "failing"
    } else {
        match (status.ahead, status.behind) {
            (0, 0) => "in_sync",
            (_, 0) => "ahead",
            (0, _) => "behind",
            _ => "diverged",
        }
    }
}

/// An apply's commit message: a subject, the reason, and trailers kb-mcp reads back.
fn apply_message(id: &str, kind: &str, reason: &str) -> String {
    let one_line = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let reason: String = reason.chars().take(2_000).collect();
    let mut message = format!("apply {} ({})\n\n", one_line(id), one_line(kind));
    if !reason.trim().is_empty() {
        message.push_str(reason.trim());
        message.push_str("\n\n");
    }
    message.push_str(&format!(
        "Kb-By: proposal\nKb-Proposal: {}\nKb-Kind: {}\n",
        one_line(id),
        one_line(kind)
    ));
    message
}

/// `stale_base`: the remote's new commits changed files the apply writes.
fn remote_moved(replica: &Replica, remote: &str, touched: &[String]) -> Error {
    let short: String = remote.chars().take(12).collect();
    Error::new(
        ErrorCode::StaleBase,
        format!(
            "{} changed on the remote ({} {}, commit {short}) since this clone last took its commits: the apply was not made, and nothing here changed",
            touched.join(", "),
            replica.remote(),
            replica.branch(),
        ),
    )
    .with_hint("the remote's change reaches this clone with its next fetch: read the note again and stage the change anew if it is still wanted")
    .with_details(serde_json::json!({ "remote_commit": remote, "files": touched }))
}
