//! What the person approving a proposal sees: the change of every file it
//! touches (`kb-index inbox show`, the dry run, `inbox list --diff`) and the
//! short text a client shows before `apply_proposal` (summary and the start of
//! the diff). The write layer computes the diffs; this module shapes them.

use serde::Serialize;

use super::Engine;
use super::types::{ProposalChecks, ProposalEntry};
use crate::error::Result;
use crate::write::{self, ProposalView};

/// Lines of diff the confirmation before `apply_proposal` carries.
pub const CONFIRMATION_DIFF_LINES: usize = 40;

/// One file a proposal would write, with its diff.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileDiff {
    /// Vault-relative path.
    pub path: String,
    /// `create` or `change`.
    pub op: String,
    /// Unified diff (`--- /dev/null` for a new note, which is shown whole).
    pub diff: String,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
}

/// A pending proposal, its checks, and the diff of every file it touches.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProposalReview {
    /// The proposal as `list_proposals` shows it.
    pub proposal: ProposalEntry,
    /// The files it would write.
    pub files: Vec<FileDiff>,
    /// Why the diff shown is not what an apply would write now, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
}

/// A proposal as the tools list it.
pub(super) fn entry(view: ProposalView) -> ProposalEntry {
    let summary = super::write::change_line(view.summary.as_deref(), view.kind, &view.target, view.diff_stat);
    ProposalEntry {
        summary,
        proposal_id: view.proposal_id,
        kind: view.kind,
        target: view.target,
        reason: view.reason,
        created: view.created,
        status: view.status,
        checks: ProposalChecks {
            intact: view.checks.intact,
            base_current: view.checks.base_current,
            target_free: view.checks.target_free,
        },
    }
}

impl Engine {
    /// The pending proposal with this exact id and the diff of every file it
    /// touches. Errors as `apply_proposal`'s lookup (not found, not pending, tampered).
    pub fn review_proposal(&self, id: &str) -> Result<ProposalReview> {
        let review = write::review(&self.sandbox(), id)?;
        Ok(ProposalReview {
            proposal: entry(review.view),
            files: review
                .files
                .into_iter()
                .map(|file| FileDiff {
                    path: file.path,
                    op: file.op.to_owned(),
                    diff: file.diff,
                    added: file.added,
                    removed: file.removed,
                })
                .collect(),
            caveat: review.caveat,
        })
    }

    /// What the person confirms before `apply_proposal`: the summary, then the
    /// first [`CONFIRMATION_DIFF_LINES`] lines of the diff (and how many more
    /// there are). `None` when the proposal is not pending.
    pub fn proposal_confirmation(&self, id: &str) -> Option<String> {
        let summary = self.proposal_summary(id)?;
        let Ok(review) = self.review_proposal(id) else { return Some(summary) };
        let diff: String = review.files.iter().map(|file| file.diff.as_str()).collect();
        let lines: Vec<&str> = diff.lines().collect();
        let mut text = format!("{summary}\n");
        if let Some(caveat) = &review.caveat {
            text.push_str(&format!("Note: {caveat}.\n"));
        }
        text.push('\n');
        for line in lines.iter().take(CONFIRMATION_DIFF_LINES) {
            text.push_str(line);
            text.push('\n');
        }
        if lines.len() > CONFIRMATION_DIFF_LINES {
            text.push_str(&format!(
                "… {} more lines of diff (the whole diff: `kb-index inbox show {id}`)\n",
                lines.len() - CONFIRMATION_DIFF_LINES
            ));
        }
        Some(text.trim_end().to_owned())
    }
}
