//! The write tools: staging proposals, listing them, applying and rejecting.
//!
//! The checks live in the `write` layer; this module adds what needs the rest
//! of the engine: the notes a new proposal may duplicate (from the index), and
//! the index update after an apply, so the applied note is searchable before
//! `apply_proposal` returns.

use std::collections::{BTreeMap, BTreeSet};

use super::Engine;
use super::bounded::{cap_audit_line, cap_diff};
use super::types::*;
use crate::error::Result;
use crate::index::SearchScope;
use crate::sandbox::{Area, NotePath};
use crate::write::{self, Break, FileOp, FileOpKind, NewNote, PatchRequest};

/// How many similar notes a new proposal reports.
const SIMILAR: usize = 5;

/// How many conflict copies the overview and `list_proposals` name (all are counted).
const CONFLICT_COPIES_LISTED: usize = 20;

/// The `kb.toml` line (under `[vault]`) that gives kb-mcp an inbox of its own
/// when the vault has an `Inbox/` of the person's.
const OWN_INBOX_LINE: &str = "inbox = \"_kb-inbox\"";

impl Engine {
    /// `propose_new_note`.
    pub fn propose_new_note(&self, args: &ProposeNewArgs) -> Result<ProposeNewResult> {
        let note = NewNote {
            title: args.title.clone(),
            body: args.body.clone(),
            reason: args.reason.clone(),
            folder: args.folder.clone(),
            tags: args.tags.clone().unwrap_or_default(),
            aliases: args.aliases.clone().unwrap_or_default(),
            description: args.description.clone(),
        };
        let staged =
            write::propose_new(&self.sandbox(), &self.config().limits, &note, jiff::Timestamp::now())?;
        let similar = self.similar_notes(&args.title, &args.aliases.clone().unwrap_or_default());
        let (breaks, redirected) = self.link_effects(FileOpKind::Create, &staged.target, &staged.text)?;
        let (breaks, redirected, unlisted) = listed(breaks, redirected);
        Ok(ProposeNewResult {
            proposal_id: staged.proposal_id,
            kind: staged.kind,
            target: staged.target,
            files: staged.files,
            content_hash: staged.content_hash,
            preview: staged.preview,
            similar,
            breaks,
            redirected,
            unlisted,
            vault_changed: false,
        })
    }

    /// The notes that best match a new note's title (and aliases): by their titles,
    /// aliases and descriptions first, then their headings and text (a `## 锚定效应`
    /// section, or the words used in a note, is a possible duplicate too).
    fn similar_notes(&self, title: &str, aliases: &[String]) -> Vec<SimilarNote> {
        let query =
            std::iter::once(title).chain(aliases.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
        let request = crate::index::SearchRequest {
            query: &query,
            scope: SearchScope::Knowledge,
            tags: &[],
            folder: None,
            limit: SIMILAR,
            explain: false,
            texts: None,
            passes: SearchPasses::default(),
        };
        match self.index().search(&request) {
            Ok(outcome) => outcome
                .hits
                .into_iter()
                .map(|hit| SimilarNote { path: hit.record.path, title: hit.record.title, score: hit.score })
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The links in other notes that a new note or a patched one (`text` at
    /// `path`) will break or lead elsewhere, judged on the current catalog.
    /// The links a delete of `path` breaks, and those it makes lead to
    /// another note, judged on the vault as it is now (for its review).
    pub(super) fn delete_effects(&self, path: &str) -> Result<(Vec<BrokenBy>, Vec<BrokenBy>)> {
        let catalog = self.catalog();
        let view = catalog.view();
        let (_, links) = write::plan_delete(&self.sandbox(), &view, path)?;
        Ok(split_breaks(links))
    }

    pub(super) fn link_effects(
        &self,
        op: FileOpKind,
        path: &str,
        text: &str,
    ) -> Result<(Vec<BrokenBy>, Vec<BrokenBy>)> {
        let catalog = self.catalog();
        let change = FileOp {
            op,
            path: path.to_owned(),
            to: None,
            before: None,
            after: Some(text.to_owned()),
            kept: None,
            sha256: None,
        };
        let effects = write::link_effects(&catalog.view(), &[change])?;
        Ok(split_breaks(effects))
    }

    /// `propose_note_patch`.
    pub fn propose_note_patch(&self, args: &ProposePatchArgs) -> Result<ProposePatchResult> {
        let request = PatchRequest {
            path: args.path.clone(),
            base_hash: args.base_hash.clone(),
            reason: args.reason.clone(),
            edits: args.edits.clone(),
        };
        let staged =
            write::propose_patch(&self.sandbox(), &self.config().limits, &request, jiff::Timestamp::now())?;
        let (breaks, redirected) = self.link_effects(FileOpKind::Write, &staged.target, &staged.text)?;
        let (breaks, redirected, unlisted) = listed(breaks, redirected);
        let id = staged.proposal_id;
        Ok(ProposePatchResult {
            diff: cap_diff(staged.diff.unwrap_or_default(), &id),
            proposal_id: id,
            kind: staged.kind,
            target: staged.target,
            base_hash: staged.base_hash.unwrap_or_default(),
            content_hash: staged.content_hash,
            added: staged.added,
            removed: staged.removed,
            breaks,
            redirected,
            unlisted,
            files: staged.files,
            vault_changed: false,
        })
    }

    /// Brings the catalog up to date with the disk at each of `paths` (a note,
    /// or every note under a folder) before a move or delete is planned on
    /// them: a note the person just created is on disk a moment before the
    /// watcher tells the index, and the planner, which plans on the catalog,
    /// would answer `not_found`. Only what differs is synced.
    pub(super) fn catch_up_with(&self, paths: &[&str]) -> Result<()> {
        let sandbox = self.sandbox();
        let catalog = self.catalog();
        let mut differ: Vec<std::path::PathBuf> = Vec::new();
        for input in paths {
            let Ok(Some(path)) = NotePath::parse_folder(input) else { continue };
            if path.is_note() {
                let on_disk = sandbox.stat(&path).ok().flatten().is_some();
                if on_disk != catalog.get(path.as_str()).is_some() {
                    differ.push(sandbox.root().join(path.as_str()));
                }
                continue;
            }
            if sandbox.area_of(&path) != Some(Area::Note) {
                continue;
            }
            let Ok(contents) = sandbox.folder_contents(&path) else { continue };
            let prefix = format!("{path}/");
            let on_disk: BTreeSet<&str> = contents
                .files
                .iter()
                .filter(|file| file.is_note() && sandbox.templates_folder_of(file).is_none())
                .map(NotePath::as_str)
                .collect();
            let known: BTreeSet<&str> = catalog
                .records()
                .iter()
                .filter(|record| record.path.starts_with(&prefix))
                .map(|record| record.path.as_str())
                .collect();
            differ.extend(on_disk.symmetric_difference(&known).map(|path| sandbox.root().join(path)));
        }
        if !differ.is_empty() {
            self.sync_changed(&differ)?;
        }
        Ok(())
    }

    /// `propose_move`: plans the move on the current catalog, then stages it.
    pub fn propose_move(&self, args: &ProposeMoveArgs) -> Result<ProposeMoveResult> {
        write::required_reason(&args.reason)?;
        self.catch_up_with(&[&args.from])?;
        let catalog = self.catalog();
        let view = catalog.view();
        let sandbox = self.sandbox();
        let planned =
            write::plan_move(&sandbox, &view, &args.from, &args.to, args.keep_alias.unwrap_or(true))?;
        // The first note that moves (or, from a folder of attachments alone, the first file).
        let target = planned
            .moves
            .first()
            .or(planned.carried.first())
            .map(|(from, _)| from.clone())
            .unwrap_or_default();
        let staged = write::stage_plan(
            &sandbox,
            &self.config().limits,
            &view,
            ProposalKind::Move,
            &target,
            &args.reason,
            planned.plan,
            jiff::Timestamp::now(),
        )?;
        let moves_omitted = planned.moves.len().saturating_sub(MOVES_LISTED) as u64;
        Ok(ProposeMoveResult {
            kind: ProposalKind::Move,
            moves: planned
                .moves
                .into_iter()
                .take(MOVES_LISTED)
                .map(|(from, to)| MovedNote { from, to })
                .collect(),
            moves_omitted,
            rewrites: Rewrites { notes: planned.notes, links: planned.links },
            files: staged.files,
            diff: cap_diff(staged.diff, &staged.proposal_id),
            proposal_id: staged.proposal_id,
            vault_changed: false,
        })
    }

    /// `propose_delete`.
    pub fn propose_delete(&self, args: &ProposeDeleteArgs) -> Result<ProposeDeleteResult> {
        write::required_reason(&args.reason)?;
        self.catch_up_with(&[&args.path])?;
        let catalog = self.catalog();
        let view = catalog.view();
        let sandbox = self.sandbox();
        let (plan, links) = write::plan_delete(&sandbox, &view, &args.path)?;
        let (breaks, redirected) = split_breaks(links);
        let (breaks, redirected, unlisted) = listed(breaks, redirected);
        let target = plan.files[0].path.clone();
        let staged = write::stage_plan(
            &sandbox,
            &self.config().limits,
            &view,
            ProposalKind::Delete,
            &target,
            &args.reason,
            plan,
            jiff::Timestamp::now(),
        )?;
        Ok(ProposeDeleteResult {
            proposal_id: staged.proposal_id,
            kind: ProposalKind::Delete,
            target,
            redirected,
            breaks,
            unlisted,
            files: staged.files,
            vault_changed: false,
        })
    }

    /// `list_proposals`.
    pub fn list_proposals(&self, args: &ListProposalsArgs) -> Result<Proposals> {
        let limit = PROPOSALS_LIMIT.check("limit", args.limit)?;
        let filter = args.status.unwrap_or_default();
        let sandbox = self.sandbox();
        let proposals: Vec<ProposalEntry> =
            write::list(&sandbox, filter, limit as usize)?.into_iter().map(super::review::entry).collect();
        Ok(Proposals { proposals, conflict_copies: self.conflict_copies() })
    }

    /// The conflict copies in the inbox (see [`ConflictCopies`]): how many, and
    /// the first `CONFLICT_COPIES_LISTED`; `None` when there are none, or when
    /// the inbox is a folder of the person's own (kb-mcp wrote nothing there).
    pub fn conflict_copies(&self) -> Option<ConflictCopies> {
        if self.inbox_conflict().is_some() {
            return None;
        }
        let found = write::conflict_copies(&self.sandbox());
        if found.is_empty() {
            return None;
        }
        let copies = found
            .iter()
            .take(CONFLICT_COPIES_LISTED)
            .map(|copy| ConflictCopy { path: copy.path.clone(), note: copy.note.clone() })
            .collect();
        Some(ConflictCopies { total: found.len() as u64, copies })
    }

    /// Resolves an id or a slug (the CLI's `--only`) to the proposal's id.
    pub fn resolve_proposal(&self, id_or_slug: &str) -> Result<String> {
        write::resolve_id(&self.sandbox(), id_or_slug)
    }

    /// Whether this vault's inbox holds the proposal `id` (pending, applied or
    /// rejected): how a server serving several vaults finds the one a
    /// proposal belongs to.
    pub fn holds_proposal(&self, id: &str) -> bool {
        write::holds(&self.sandbox(), id)
    }

    /// `apply_proposal`: the write layer's checked apply, with this engine's index
    /// update (a multi-file apply's notes are indexed while its files are
    /// written, and committed after its commit point: see `apply_index.rs`).
    pub fn apply_proposal(&self, args: &ApplyArgs, actor: Actor) -> Result<ApplyResult> {
        self.apply_proposal_with_failpoint(args, actor, &mut |_| Ok(()))
    }

    /// [`Engine::apply_proposal`], calling `failpoint` after each step of the
    /// apply (see [`write::apply_with_failpoint`]): tests stop or kill the
    /// apply there, with this engine's index update under way.
    pub fn apply_proposal_with_failpoint(
        &self,
        args: &ApplyArgs,
        actor: Actor,
        failpoint: &mut dyn FnMut(write::Step) -> Result<()>,
    ) -> Result<ApplyResult> {
        let sandbox = self.sandbox();
        // The history waits for the apply, which then records itself (see `history.rs`).
        let mut history = self.hold_history();
        // A replica's apply takes the remote before it writes (see `replica.rs`).
        let mut published = None;
        let mut refused = false;
        let applied = std::thread::scope(|scope| {
            let mut index = super::apply_index::ApplyIndexer::new(self, scope);
            let mut steps = |step: write::Step| {
                if step == write::Step::Claimed {
                    published = self.publish_apply(&args.proposal_id).inspect_err(|_| refused = true)?;
                }
                if step == write::Step::Audited
                    && let Some(published) = &published
                {
                    // Still under the inbox lock: no sync moves the branch meanwhile.
                    self.after_apply(published);
                }
                self.apply_failpoint(super::ApplyPoint::Write(step))?;
                failpoint(step)
            };
            write::apply_with_index(&sandbox, &args.proposal_id, actor, &mut index, &mut steps)
        });
        let applied = match applied {
            Ok(applied) => applied,
            Err(error) => {
                if refused {
                    // Nothing was written: recovery only clears the journal.
                    drop(history);
                    let _ = self.recover_proposals(actor);
                }
                return Err(error);
            }
        };
        self.record_applied(&mut history, &applied);
        drop(history);
        if let Some(published) = published {
            self.refresh_caught(&published);
        }
        Ok(ApplyResult {
            proposal_id: applied.proposal_id,
            status: applied.status,
            target: applied.target,
            new_hash: applied.new_hash,
            archive: applied.archive,
            audit: cap_audit_line(applied.audit),
            index: IndexUpdate { updated: applied.index_error.is_none(), error: applied.index_error },
        })
    }

    /// Whether an apply or reject a crash interrupted waits for
    /// [`Engine::recover_proposals`] (or one is under way in another process):
    /// until it is settled, the notes it was changing may be half changed.
    /// Reads no more than whether the inbox holds its journal.
    pub fn has_interrupted_apply(&self) -> bool {
        write::interrupted(&self.sandbox())
    }

    /// Completes applies a crash interrupted (see `write::recover`); returns their ids.
    /// Does nothing (and creates nothing) when the inbox folder does not exist, or
    /// is a folder of the person's own ([`Engine::inbox_conflict`]).
    pub fn recover_proposals(&self, actor: Actor) -> Result<Vec<String>> {
        let sandbox = self.sandbox();
        let inbox = crate::sandbox::NotePath::parse(sandbox.policy().inbox.trim_matches('/'));
        let exists = inbox.is_ok_and(|inbox| sandbox.is_folder(&inbox));
        if !exists || self.inbox_conflict().is_some() {
            return Ok(Vec::new());
        }
        let mut index = |paths: &[crate::sandbox::NotePath]| self.refresh_notes(paths);
        // The history waits, then records each completed apply as the proposal's.
        let mut history = self.hold_history();
        let (recovery, applied) = write::recover_applies(&sandbox, actor, &mut index)?;
        for applied in &applied {
            self.record_applied(&mut history, applied);
        }
        Ok(recovery.completed)
    }

    /// Why proposals must not be staged or applied: a folder matching the
    /// configured inbox (ignoring case: on macOS and Windows `Inbox/` is `inbox/`)
    /// holds files kb-mcp did not write, so proposals would mix with the person's
    /// own notes. `None` when the inbox is free.
    pub fn inbox_conflict(&self) -> Option<crate::error::Error> {
        let sandbox = self.sandbox();
        let foreign = sandbox.foreign_inboxes();
        let first = foreign.first()?;
        let inbox = sandbox.policy().inbox.clone();
        let count: usize = foreign.iter().map(|f| f.count).sum();
        let shown: Vec<&str> =
            foreign.iter().flat_map(|f| f.first.iter().map(String::as_str)).take(5).collect();
        Some(
            crate::error::Error::new(
                crate::error::ErrorCode::PermissionDenied,
                format!(
                    "proposals are refused: the inbox folder `{inbox}` is `{}/` in this vault, which holds {count} \
                     file(s) kb-mcp did not write ({}{}); kb-mcp will not stage proposals among your own notes",
                    first.folder,
                    shown.join(", "),
                    if count > shown.len() { ", ..." } else { "" },
                ),
            )
            .with_hint(format!(
                "choose another inbox in kb.toml, e.g. add `[vault]` with `{OWN_INBOX_LINE}` (a folder \
                 kb-mcp may own), and call again: the server takes the change in at once, no restart needed; \
                 reading and searching work meanwhile"
            )),
        )
    }

    /// What the person should fix for kb-mcp to work fully, each in a sentence
    /// that says how: the overview's `warnings`, the server's log at start and
    /// `kb-index status`. Now: an inbox among the person's own notes, which
    /// refuses every proposal until `kb.toml` names another.
    pub fn warnings(&self) -> Vec<String> {
        self.inbox_conflict()
            .into_iter()
            .map(|conflict| {
                format!(
                    "{}. To fix it, put `{OWN_INBOX_LINE}` under `[vault]` in kb.toml (a folder kb-mcp may \
                     own); a running server takes it in at once",
                    conflict.message
                )
            })
            .chain(self.memory_strays())
            .collect()
    }

    /// `kb-index inbox reject`.
    pub fn reject_proposal(&self, id: &str, reason: &str, actor: Actor) -> Result<RejectResult> {
        let rejected = write::reject(&self.sandbox(), id, reason, actor)?;
        Ok(RejectResult {
            proposal_id: rejected.proposal_id,
            archive: rejected.archive,
            audit: rejected.audit,
        })
    }
}

impl Engine {
    /// A short summary of a pending proposal for the person to confirm: what it
    /// does to which note (for a patch, the size of its diff), then its reason. `None` when
    /// it is not pending (the apply itself then reports why).
    pub fn proposal_summary(&self, id: &str) -> Option<String> {
        write::describe(&self.sandbox(), id).ok().map(summary)
    }

    /// [`Engine::proposal_summary`] of every pending proposal, by id, at the
    /// cost of one listing of the inbox.
    pub fn proposal_summaries(&self) -> BTreeMap<String, String> {
        let described = write::describe_pending(&self.sandbox()).unwrap_or_default();
        described.into_iter().map(|(id, view)| (id, summary(view))).collect()
    }
}

/// What a pending proposal does, in one line: "new z/X.md", "patch z/X.md
/// (+4 -1 lines)", or a multi-file proposal's own summary ("move z/A.md →
/// z/B.md, rewrite 37 links in 21 notes").
pub(super) fn change_line(
    summary: Option<&str>,
    kind: ProposalKind,
    target: &str,
    diff_stat: Option<(u32, u32)>,
) -> String {
    match (summary, kind, diff_stat) {
        (Some(summary), _, _) => summary.to_owned(),
        (None, ProposalKind::Patch, Some((added, removed))) => {
            format!("patch {target} (+{added} -{removed} lines)")
        }
        (None, kind, _) => format!("{} {target}", kind.name()),
    }
}

/// A pending proposal's summary for the person: what it does to which note (for a
/// patch, the size of its diff), then its reason.
fn summary(view: write::Description) -> String {
    let change = match (view.kind, view.diff_stat) {
        (_, _) if view.summary.is_some() => view.summary.clone().unwrap_or_default(),
        (kind, _) if kind.is_multi() => format!("{} {}", kind.name(), view.target),
        (ProposalKind::New, _) => format!("create the new note {}", view.target),
        (_, Some((added, removed))) => {
            format!("change {} (+{added} -{removed} lines)", view.target)
        }
        (_, None) => format!("change {}", view.target),
    };
    format!("{change}.\nReason given: {}", view.reason)
}

/// How many links of each list a new note's, a patch's or a delete's answer
/// names: a new note named like a much-linked note can take thousands of links,
/// and the answer stays small (`kb-index inbox show` names every one).
const LINKS_LISTED: usize = 100;

/// How many notes a move's answer lists in `moves` (the rest are counted in
/// `moves_omitted`; `kb-index inbox show` names every one).
const MOVES_LISTED: usize = 100;

/// The first [`LINKS_LISTED`] of each list, and how many were left out.
pub(super) fn listed(
    mut breaks: Vec<BrokenBy>,
    mut redirected: Vec<BrokenBy>,
) -> (Vec<BrokenBy>, Vec<BrokenBy>, u32) {
    let left_out = breaks.len().saturating_sub(LINKS_LISTED) + redirected.len().saturating_sub(LINKS_LISTED);
    breaks.truncate(LINKS_LISTED);
    redirected.truncate(LINKS_LISTED);
    (breaks, redirected, u32::try_from(left_out).unwrap_or(u32::MAX))
}

/// Links that will stop resolving, and links that will lead to another note.
fn split_breaks(links: Vec<Break>) -> (Vec<BrokenBy>, Vec<BrokenBy>) {
    let (redirected, breaks): (Vec<_>, Vec<_>) = links.into_iter().partition(|b| b.leads_to.is_some());
    let published = |b: Break| BrokenBy { path: b.path, line: b.line, link: b.link, to: b.leads_to };
    (breaks.into_iter().map(published).collect(), redirected.into_iter().map(published).collect())
}
