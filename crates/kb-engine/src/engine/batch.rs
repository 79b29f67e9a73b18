//! `propose_batch` and `revert_proposal`: the write layer plans them (a batch
//! on the current catalog, a revert from the archive) and stages the plan like
//! any multi-file proposal; `apply_proposal` applies them.

use super::Engine;
use super::types::*;
use crate::error::Result;
use crate::vault::Limits;
use crate::write::{self, NewNote, PatchRequest};

impl Engine {
    /// `propose_batch`: plans every item in order on the current catalog, then stages one proposal.
    pub fn propose_batch(&self, args: &ProposeBatchArgs) -> Result<ProposeBatchResult> {
        self.propose_batch_within(args, &self.config().limits)
    }

    /// [`Engine::propose_batch`] under `limits`: the audit's fixes stage
    /// under caps lower than the configured ones, to leave other proposals room.
    pub(super) fn propose_batch_within(
        &self,
        args: &ProposeBatchArgs,
        limits: &Limits,
    ) -> Result<ProposeBatchResult> {
        let reason = write::required_reason(&args.reason)?;
        let items: Vec<write::BatchItem> = args.items.iter().map(|item| write_item(item, &reason)).collect();
        let moved_or_deleted: Vec<&str> = items
            .iter()
            .filter_map(|item| match item {
                write::BatchItem::Move { from, .. } => Some(from.as_str()),
                write::BatchItem::Delete { path } => Some(path.as_str()),
                _ => None,
            })
            .collect();
        self.catch_up_with(&moved_or_deleted)?;
        let catalog = self.catalog();
        let view = catalog.view();
        let sandbox = self.sandbox();
        let now = jiff::Timestamp::now();
        let planned = write::plan_batch(&sandbox, limits, &view, &items, now)?;
        let target = planned.plan.files.first().map(|op| op.path.clone()).unwrap_or_default();
        let staged = write::stage_plan(
            &sandbox,
            limits,
            &view,
            ProposalKind::Batch,
            &target,
            &reason,
            planned.plan,
            now,
        )?;
        let id = staged.proposal_id;
        Ok(ProposeBatchResult {
            diff: super::bounded::cap_diff(staged.diff, &id),
            proposal_id: id,
            kind: ProposalKind::Batch,
            files: staged.files,
            vault_changed: false,
        })
    }

    /// Resolves an applied proposal's id or id prefix (`kb-index revert`).
    pub fn resolve_applied_proposal(&self, id_or_prefix: &str) -> Result<String> {
        write::resolve_applied_id(&self.sandbox(), id_or_prefix)
    }

    /// `revert_proposal`: stages the inverse of an applied proposal, merged
    /// with later edits of its notes where they allow it.
    pub fn revert_proposal(&self, args: &RevertArgs) -> Result<RevertResult> {
        let reason = write::required_reason(&args.reason)?;
        let sandbox = self.sandbox();
        let id = args.proposal_id.trim();
        // A note rewritten by the apply and changed since: its texts of the
        // time, as the history recorded them with the apply.
        let store = self.history_store().ok();
        let recorded = |path: &str| -> Option<(String, String)> {
            let (before, after) = store.as_ref()?.proposal_files(id, path).ok()??;
            let text = |bytes: Option<Vec<u8>>| String::from_utf8(bytes?).ok();
            Some((text(before.bytes)?, text(after.bytes)?))
        };
        let mut planned = write::plan_revert(&sandbox, id, &recorded)?;
        // Undoing can change links in other notes too (a note deleted since
        // taken back, a name given back): the summary says how many.
        let catalog = self.catalog();
        let view = catalog.view();
        let effects = write::link_effects(&view, &planned.plan.files)?;
        let redirected = effects.iter().filter(|b| b.leads_to.is_some()).count();
        let parts = write::links_changed(effects.len() - redirected, redirected);
        if !parts.is_empty() {
            planned.plan.summary.push_str(&format!("; once reverted, {}", parts.join(", ")));
        }
        let staged = write::stage_plan(
            &sandbox,
            &self.config().limits,
            &view,
            ProposalKind::Revert,
            &planned.target,
            &reason,
            planned.plan,
            jiff::Timestamp::now(),
        )?;
        let id = staged.proposal_id;
        Ok(RevertResult {
            diff: super::bounded::cap_diff(staged.diff, &id),
            proposal_id: id,
            kind: ProposalKind::Revert,
            files: staged.files,
            merged: planned.merged,
            vault_changed: false,
        })
    }
}

/// A batch item as the write layer plans it; the batch's reason stands for each.
fn write_item(item: &BatchItem, reason: &str) -> write::BatchItem {
    match item.clone() {
        BatchItem::New { title, body, folder, tags, aliases, description, reason: _ } => {
            write::BatchItem::New(NewNote {
                title,
                body,
                reason: reason.to_owned(),
                folder,
                tags: tags.unwrap_or_default(),
                aliases: aliases.unwrap_or_default(),
                description,
            })
        }
        BatchItem::Patch { path, base_hash, edits, reason: _ } => {
            write::BatchItem::Patch(PatchRequest { path, base_hash, reason: reason.to_owned(), edits })
        }
        BatchItem::Move { from, to, keep_alias, reason: _ } => {
            write::BatchItem::Move { from, to, keep_alias: keep_alias.unwrap_or(true) }
        }
        BatchItem::Delete { path, reason: _ } => write::BatchItem::Delete { path },
    }
}
