//! What the person approving a proposal sees: the change of every file it
//! touches (`kb-index inbox show`, the dry run, `inbox list --diff`) and the
//! short text a client shows before `apply_proposal` (summary and the start of
//! the diff), and the review card's and review page's page of it
//! ([`ReviewPage`]). The write layer computes the diffs; this module shapes
//! them, so every view shows one review.

use schemars::JsonSchema;
use serde::Serialize;

use super::Engine;
use super::types::{BrokenBy, ProposalChecks, ProposalEntry, ProposalKind};
use crate::error::Result;
use crate::write::{self, FileOpKind, ProposalView};

/// Lines of diff the confirmation before `apply_proposal` carries.
pub const CONFIRMATION_DIFF_LINES: usize = 40;

/// Links elsewhere (of each kind) the confirmation names one by one.
const CONFIRMATION_LINKS: usize = 10;

/// One file a proposal would write, with its diff.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq, Eq)]
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
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ProposalReview {
    /// The proposal as `list_proposals` shows it.
    pub proposal: ProposalEntry,
    /// The files it would write.
    pub files: Vec<FileDiff>,
    /// Why the diff shown is not what an apply would write now, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Links in other notes that a new note or a patch will break, judged on
    /// the vault as it is now (no diff shows them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breaks: Vec<BrokenBy>,
    /// Links in other notes that it will make lead to another note (`to`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redirected: Vec<BrokenBy>,
    /// The other pending proposals touching a file this one touches: once
    /// either is applied, the other fails its checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<PendingOverlap>,
    /// What a multi-file proposal says a person should know that no diff
    /// shows (the links a move leaves leading where they led but ambiguous).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<String>,
}

/// Another pending proposal touching some of the same files.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq, Eq)]
pub struct PendingOverlap {
    /// Its id.
    pub proposal_id: String,
    /// What it does, in a line ("patch z/A.md (+1 -1 lines)").
    pub summary: String,
    /// The files both touch.
    pub paths: Vec<String>,
}

/// Files a review page holds unless asked for fewer or more.
pub const REVIEW_PAGE_FILES: usize = 20;

/// The most files a review page holds.
pub const REVIEW_PAGE_MAX_FILES: usize = 200;

/// The most lines of one file's diff a review page holds; the rest is
/// counted in [`ReviewPage::lines_not_shown`] (`kb-index inbox show` has it all).
pub const REVIEW_PAGE_DIFF_LINES: usize = 2_000;

/// One page of a pending proposal's review, as the review card and the review
/// page show it: the review with a page of its files, and whether an apply
/// would go ahead now.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ReviewPage {
    /// The review; its `files` are this page's.
    #[serde(flatten)]
    pub review: ProposalReview,
    /// Lines of each of this page's diffs left out (same order as `files`;
    /// `0` when the diff is whole).
    pub lines_not_shown: Vec<u32>,
    /// The position of this page's first file among all of them.
    pub file_offset: usize,
    /// How many files the proposal touches.
    pub files_total: usize,
    /// Whether an apply would go ahead now: every live check passes and the
    /// diff shown is what it would write. When false, the views disable Apply.
    pub applicable: bool,
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
        Ok(self.reviewed(id, None)?.0)
    }

    /// The review with the diffs of the files in `files` (all when `None`),
    /// and how many files the proposal writes in all.
    fn reviewed(&self, id: &str, files: Option<std::ops::Range<usize>>) -> Result<(ProposalReview, usize)> {
        let review = write::review(&self.sandbox(), id, files)?;
        let files_total = review.files_total;
        let op = match review.view.kind {
            ProposalKind::New => FileOpKind::Create,
            _ => FileOpKind::Write,
        };
        // Judged only for a proposal its apply would take: one whose note
        // changed or went away, or whose target is taken, changes no link.
        let checks = &review.view.checks;
        let applicable =
            review.caveat.is_none() && checks.intact && checks.base_current && checks.target_free;
        let (breaks, redirected) = match (&review.staged_note, review.files.first()) {
            (Some(text), Some(file)) if applicable => {
                self.link_effects(op, &file.path, text).unwrap_or_default()
            }
            // A delete's diff shows the note going, not the links that go with it.
            (None, _) if applicable && review.view.kind == ProposalKind::Delete => {
                self.delete_effects(&review.view.target).unwrap_or_default()
            }
            _ => Default::default(),
        };
        let overlaps = self.published(review.overlaps);
        let review = ProposalReview {
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
            breaks,
            redirected,
            overlaps,
            remarks: review.remarks,
        };
        Ok((review, files_total))
    }

    /// One page of the pending proposal `id`'s review: `limit` files (default
    /// [`REVIEW_PAGE_FILES`], at most [`REVIEW_PAGE_MAX_FILES`]) from
    /// `offset`, each diff cut at [`REVIEW_PAGE_DIFF_LINES`] lines. Computed
    /// afresh on every call: its checks are live.
    pub fn review_page(&self, id: &str, offset: usize, limit: Option<usize>) -> Result<ReviewPage> {
        let limit = limit.unwrap_or(REVIEW_PAGE_FILES).clamp(1, REVIEW_PAGE_MAX_FILES);
        let (mut review, files_total) = self.reviewed(id, Some(offset..offset.saturating_add(limit)))?;
        let checks = &review.proposal.checks;
        let applicable =
            review.caveat.is_none() && checks.intact && checks.base_current && checks.target_free;
        let lines_not_shown =
            review.files.iter_mut().map(|file| cut_lines(&mut file.diff, REVIEW_PAGE_DIFF_LINES)).collect();
        Ok(ReviewPage {
            review,
            lines_not_shown,
            file_offset: offset.min(files_total),
            files_total,
            applicable,
        })
    }

    /// The other pending proposals touching a file the pending proposal `id`
    /// touches (as [`ProposalReview::overlaps`], without computing any diff).
    pub fn proposal_overlaps(&self, id: &str) -> Result<Vec<PendingOverlap>> {
        Ok(self.published(write::overlaps_of(&self.sandbox(), id)?))
    }

    /// Overlaps as a person reads them: each other proposal with its one-line summary.
    fn published(&self, overlaps: Vec<write::Overlap>) -> Vec<PendingOverlap> {
        overlaps
            .into_iter()
            .map(|overlap| PendingOverlap {
                summary: self
                    .proposal_summary(&overlap.proposal_id)
                    .and_then(|summary| {
                        summary.lines().next().map(|line| line.trim_end_matches('.').to_owned())
                    })
                    .unwrap_or_default(),
                proposal_id: overlap.proposal_id,
                paths: overlap.paths,
            })
            .collect()
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
        text.push_str(&links_elsewhere(&review));
        text.push_str(&overlapping(&review));
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

/// Cuts `text` after its first `keep` lines; returns how many lines it lost.
fn cut_lines(text: &mut String, keep: usize) -> u32 {
    let Some((end, _)) = text.match_indices('\n').nth(keep.saturating_sub(1)) else { return 0 };
    let lost = text[end + 1..].lines().count();
    text.truncate(end + 1);
    u32::try_from(lost).unwrap_or(u32::MAX)
}

/// Links in other notes that will lead elsewhere or nowhere (at most
/// [`CONFIRMATION_LINKS`] of each, then how many more), one per line; empty
/// when there are none.
fn links_elsewhere(review: &ProposalReview) -> String {
    let mut text = String::new();
    for (links, what) in [(&review.breaks, "will break"), (&review.redirected, "will lead to another note")] {
        if links.is_empty() {
            continue;
        }
        text.push_str(&format!("Links in other notes that {what}: {}\n", links.len()));
        for link in links.iter().take(CONFIRMATION_LINKS) {
            let to = link.to.as_deref().map(|to| format!(" → {to}")).unwrap_or_default();
            text.push_str(&format!("- {}:{} {}{to}\n", link.path, link.line, link.link));
        }
        if links.len() > CONFIRMATION_LINKS {
            text.push_str(&format!("- … and {} more\n", links.len() - CONFIRMATION_LINKS));
        }
    }
    text
}

/// The other pending proposals touching the same files, one per line, after a
/// line saying what applying this one does to them; empty when there are none.
fn overlapping(review: &ProposalReview) -> String {
    if review.overlaps.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "Other pending proposals touch the same notes; once this one is applied they fail their checks: {}\n",
        review.overlaps.len()
    );
    for overlap in &review.overlaps {
        text.push_str(&format!(
            "- {} {} ({})\n",
            overlap.proposal_id,
            overlap.summary,
            overlap.paths.join(", ")
        ));
    }
    text
}
