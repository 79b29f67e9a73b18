//! The write layer: proposals, apply, archive, audit — the only way a note's
//! bytes ever change.
//!
//! An agent can only *stage*: [`propose_new`] and [`propose_patch`] write files
//! under the inbox (`inbox/new/`, `inbox/patch/`) and nothing else. Only
//! [`apply`], given nothing but a proposal id, writes a note, after checking in
//! the contract's order that the proposal is pending, in place, untampered and
//! still applicable (`TOOLS.md`, `apply_proposal`). Applying consumes the proposal
//! once: its files move to `inbox/applied/<date>/` and exactly one line is
//! appended to the append-only audit log `inbox/_applied.jsonl`. [`reject`] moves
//! a proposal to `inbox/rejected/<date>/` with its reason, and logs that too.
//!
//! **Order of an apply.** Under the inbox lock: recover half-done applies, find
//! and check the proposal (claim), write the target atomically (create-new for a
//! new note, so it can never overwrite), move the metadata and then the other
//! files to the archive, run the caller's index callback, append the audit line.
//! The contract lists the audit line before the index update; here the index
//! runs first because the audit line records whether it worked (`index: "ok" |
//! "failed"`). The index update itself belongs to the engine (this layer knows no
//! index), hence the callback.
//!
//! **Concurrency.** Applies and rejects are serialised across processes by an
//! advisory lock on `inbox/_apply.lock` (the contract's dot-name would be
//! hard-denied by the sandbox). All checks run under the lock, so of two
//! simultaneous applies of one id exactly one succeeds and the other finds it no
//! longer pending (`proposal_not_pending`). Even without working locks, the
//! create-new write and the never-replacing moves let only one of them through.
//!
//! **Crashes.** Before it changes anything an apply writes a journal naming the
//! proposal, and removes it after the audit line. Every step leaves a state the
//! next apply (or [`recover`], run at server start) recognises from the journal
//! alone: before the write the proposal is simply still pending; a pending
//! proposal whose target already holds exactly its content is archived and
//! audited; an archived proposal without its audit line gets its leftover files
//! moved, its index update and its audit line. Recovery is idempotent, and
//! neither it nor an apply reads the whole audit log or walks the archive, so
//! their cost does not grow with the history. Tests crash the apply after every
//! [`Step`] through [`apply_with_failpoint`], and kill a real process there.
//!
//! **Files.** `proposal.rs`: the inbox layout, metadata, finding and listing;
//! `propose.rs`: staging; `edit.rs`, `diff.rs`, `yaml.rs`, `slug.rs`: building a
//! staged note and its diff; `apply.rs`: the checks, the write, the archive;
//! `journal.rs`: the one in-flight proposal; `audit.rs`: the audit log;
//! `recover.rs`: completing interrupted applies and sweeping leftovers;
//! `conflicts.rs`: where files that may hold a person's save are kept apart;
//! `review.rs`: what a person sees before approving; `relink.rs`: rewriting links for a move;
//! `moves.rs`, `batch.rs`, `revert.rs`: planning moves and deletes, batches and
//! reverts; `plan.rs` and `multi.rs`: staging and applying such plans.
//!
//! **Dates and times.** Times in files are RFC 3339 in the machine's local time
//! zone with its offset; archive folders are named by the local date, the date
//! a person looking at the inbox expects.

mod alias;
mod ambiguous;
mod apply;
mod audit;
mod batch;
mod canvases;
mod carry;
mod conflicts;
mod delete;
mod diff;
mod edit;
mod effects;
mod journal;
mod linkers;
mod moves;
mod multi;
mod plan;
mod proposal;
mod propose;
mod recover;
mod relink;
mod revert;
mod review;
mod slug;
mod yaml;

pub use apply::{ApplyIndex, NewText, apply, apply_with_failpoint, apply_with_index, reject};
pub use audit::{AuditMark, AuditSince, audit_since};
pub use batch::{BATCH_MAX_ITEMS, BatchItem, BatchPlan, ItemPlanned, links_changed, plan_batch};
pub use conflicts::{ConflictCopy, conflict_copies};
pub use delete::{Break, plan_delete};
pub use diff::unified_diff;
pub use edit::{Edit, apply_edits};
pub use effects::link_effects;
pub use linkers::{Linker, Linkers, linkers_in};
pub use moves::{MovePlan, VaultView, plan_move};
pub use plan::{FileOp, FileOpKind, Plan};
pub use proposal::{
    Description, describe, describe_pending, list, pending_count, resolve_applied_id, resolve_id,
};
pub use propose::{StagedPlan, propose_new, propose_patch, required_reason, stage_plan};
pub use recover::{interrupted, recover};
pub use relink::{LinkEdit, apply_link_edits, relink};
pub use revert::{RevertPlan, plan_revert};
pub use review::{FileChange, Overlap, Review, overlaps_of, pending_paths, review};

use serde::{Deserialize, Serialize};

/// What a proposal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    /// Creates a new note.
    New,
    /// Changes an existing note.
    Patch,
    /// Moves or renames a note or a folder, rewriting the links to it.
    Move,
    /// Moves a note to the inbox's trash.
    Delete,
    /// Several new notes, patches, moves and deletes, applied all or nothing.
    Batch,
    /// Undoes an applied proposal.
    Revert,
}

impl ProposalKind {
    /// Every kind, in the order pending folders are listed.
    pub const ALL: [ProposalKind; 6] = [
        ProposalKind::New,
        ProposalKind::Patch,
        ProposalKind::Move,
        ProposalKind::Delete,
        ProposalKind::Batch,
        ProposalKind::Revert,
    ];

    /// Whether its staged file is a plan of several file operations
    /// (`plan.rs`) rather than one note.
    pub fn is_multi(self) -> bool {
        !matches!(self, ProposalKind::New | ProposalKind::Patch)
    }

    /// Its name in results and folders: `new`, `patch`, `move`, `delete`, `batch`, `revert`.
    pub fn name(self) -> &'static str {
        match self {
            ProposalKind::New => "new",
            ProposalKind::Patch => "patch",
            ProposalKind::Move => "move",
            ProposalKind::Delete => "delete",
            ProposalKind::Batch => "batch",
            ProposalKind::Revert => "revert",
        }
    }
}

impl std::fmt::Display for ProposalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// A new note to propose (`propose_new_note`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewNote {
    /// The note's title; also gives its file name.
    pub title: String,
    /// The Markdown body, without frontmatter.
    pub body: String,
    /// Why the note should exist, for the person who approves it.
    pub reason: String,
    /// The vault-relative folder inside a notes root; the first notes root when `None`.
    pub folder: Option<String>,
    /// Tags, with or without `#`.
    pub tags: Vec<String>,
    /// Other names of the note.
    pub aliases: Vec<String>,
    /// A one-line summary.
    pub description: Option<String>,
}

/// A patch to propose (`propose_note_patch`).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchRequest {
    /// The vault-relative note path.
    pub path: String,
    /// The `sha256:<hex>` of the note the edits were written against.
    pub base_hash: String,
    /// Why, for the person who approves it.
    pub reason: String,
    /// The edits, applied in order.
    pub edits: Vec<Edit>,
}

/// A staged proposal: what was written to the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Staged {
    /// The server-generated id (`p_` and 32 hex digits).
    pub proposal_id: String,
    /// New note or patch.
    pub kind: ProposalKind,
    /// The note the proposal would write.
    pub target: String,
    /// The inbox files written, vault-relative.
    pub files: Vec<String>,
    /// `sha256:<hex>` of the staged note.
    pub content_hash: String,
    /// For a patch, the hash of the note it was made against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_hash: Option<String>,
    /// The start of the staged note (about 800 characters).
    pub preview: String,
    /// For a patch, the unified diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// The whole staged note (what the apply writes).
    #[serde(skip)]
    pub text: String,
}

/// Which proposals [`list`] returns (`list_proposals`' `status`, published as
/// `engine::types::ProposalStatusFilter`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusFilter {
    /// Waiting for approval.
    #[default]
    Pending,
    /// Already applied.
    Applied,
    /// Everything, rejected ones included.
    All,
}

/// Where a proposal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    /// In `inbox/new/` or `inbox/patch/`.
    Pending,
    /// In `inbox/applied/<date>/`.
    Applied,
    /// In `inbox/rejected/<date>/`.
    Rejected,
    /// Archived, but its audit line is missing: the apply or reject was
    /// interrupted (or is under way); the next apply or server start completes it.
    Interrupted,
}

impl ProposalStatus {
    /// Its name in results: `pending`, `applied`, `rejected`, `interrupted`.
    pub fn name(self) -> &'static str {
        match self {
            ProposalStatus::Pending => "pending",
            ProposalStatus::Applied => "applied",
            ProposalStatus::Rejected => "rejected",
            ProposalStatus::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for ProposalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The live checks of a proposal, as `apply` would see them now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Its files are in place, the staged note matches its recorded hash, and
    /// (for a multi-file proposal) nothing but a changed file or a taken
    /// destination stops its apply (a path now refused does).
    pub intact: bool,
    /// For a patch, the note still has the hash the patch was made against
    /// (always true for a new note).
    pub base_current: bool,
    /// For a new note, the target does not exist yet (always true for a patch).
    pub target_free: bool,
}

/// One proposal as [`list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProposalView {
    /// Its id.
    pub proposal_id: String,
    /// What it is: a new note, a patch, a move, a delete, a batch or a revert.
    pub kind: ProposalKind,
    /// The note it writes (for a multi-file proposal, the first one).
    pub target: String,
    /// Why it was proposed.
    pub reason: String,
    /// When it was proposed (RFC 3339).
    pub created: String,
    /// Pending, applied or rejected.
    pub status: ProposalStatus,
    /// The live checks.
    pub checks: Checks,
    /// A multi-file proposal's one-line summary (the first line of its diff),
    /// pending or archived.
    pub summary: Option<String>,
    /// Lines added and removed by its diff, when it has one.
    pub diff_stat: Option<(u32, u32)>,
}

/// Who applied or rejected a proposal, for the audit line (the engine's
/// callers name it `engine::types::Actor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// An MCP client through `apply_proposal`.
    Mcp,
    /// A person through `kb-index inbox`.
    Cli,
    /// A person clicking Apply or Reject in the review card an MCP host shows.
    ReviewCard,
    /// A person clicking Apply or Reject on the `kb-index review` page.
    ReviewPage,
}

impl Actor {
    /// The audit line's `by`, one of the contract's two: the card is reached
    /// through MCP, the page is `kb-index`.
    pub fn by(self) -> &'static str {
        match self {
            Actor::Mcp | Actor::ReviewCard => "mcp",
            Actor::Cli | Actor::ReviewPage => "cli",
        }
    }

    /// The audit line's `via`, an extension naming the view the person
    /// approved in (`review_card`, `review_page`); `None` otherwise.
    pub fn via(self) -> Option<&'static str> {
        match self {
            Actor::ReviewCard => Some("review_card"),
            Actor::ReviewPage => Some("review_page"),
            Actor::Mcp | Actor::Cli => None,
        }
    }
}

/// The steps of an apply; a failpoint fires after each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// The lock is held and every check passed; nothing has changed yet.
    Claimed,
    /// A multi-file proposal's new bytes are written beside their notes and
    /// flushed to disk; no note has changed yet.
    Prepared,
    /// A patch's note was re-checked right before its swap (patches only): a
    /// person's save landing now is what the swap must never lose.
    Swapping,
    /// The target note is written (for a multi-file proposal: all of them).
    Written,
    /// A multi-file proposal's operation number N (from 0) is done.
    File(usize),
    /// The metadata file has moved to the archive; the other files not yet.
    Archiving,
    /// All the proposal's files are in the archive.
    Archived,
    /// The index callback has run.
    Indexed,
    /// The audit line is appended.
    Audited,
}

/// How an apply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyStatus {
    /// Written, archived, indexed, audited.
    Applied,
    /// Written, archived and audited, but the index update failed: never apply it
    /// again, rebuild the index.
    AppliedIndexFailed,
}

impl ApplyStatus {
    /// Its name in results: `applied`, `applied_index_failed`.
    pub fn name(self) -> &'static str {
        match self {
            ApplyStatus::Applied => "applied",
            ApplyStatus::AppliedIndexFailed => "applied_index_failed",
        }
    }
}

impl std::fmt::Display for ApplyStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The result of an apply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Applied {
    /// The proposal's id.
    pub proposal_id: String,
    /// Applied, or applied with a failed index update.
    pub status: ApplyStatus,
    /// The note written.
    pub target: String,
    /// `sha256:<hex>` of the note as written.
    pub new_hash: String,
    /// The archive folder the proposal's files moved to, e.g. `inbox/applied/2026-01-20`.
    pub archive: String,
    /// The audit line appended, as JSON.
    pub audit: serde_json::Value,
    /// Why the index update failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_error: Option<String>,
}

/// The result of a reject.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejected {
    /// The proposal's id.
    pub proposal_id: String,
    /// The folder its files moved to, e.g. `inbox/rejected/2026-01-20`.
    pub archive: String,
    /// The audit line appended, as JSON.
    pub audit: serde_json::Value,
}

/// What [`recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Ids of proposals whose interrupted apply or reject was completed.
    pub completed: Vec<String>,
    /// Proposals that could not be completed now (`id: why`); tried again next time.
    pub failed: Vec<String>,
    /// What killed proposes and applies had left behind, and what became of it.
    pub swept: Vec<String>,
}
