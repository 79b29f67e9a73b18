//! The write layer: proposals, apply, archive, audit — the only way a note's
//! bytes ever change.
//!
//! An agent can only *stage*: the propose functions write files under the
//! inbox and nothing else. Only [`apply`], given nothing but a proposal id,
//! writes a note, after checking in the contract's order that the proposal is
//! pending, in place, untampered and still applicable (`TOOLS.md`,
//! `apply_proposal`). Applying consumes the proposal once: its files move to
//! `inbox/applied/<date>/` and exactly one line is appended to the append-only
//! audit log `inbox/_applied.jsonl`. [`reject`] moves a proposal to
//! `inbox/rejected/<date>/` with its reason, and logs that too.
//!
//! **The shape.** Each folder uses only those listed before it:
//!
//! - `text/`: pure functions on a note's text (edits, diffs, YAML, slugs);
//! - `inbox/`: proposals on disk (layout, metadata, finding, journal, audit
//!   log, conflict copies);
//! - `plan/`: a multi-file proposal's plan (what would change): its format,
//!   its check, and running each operation forward or backward;
//! - `propose/`: what each propose tool computes (a new note, a patch, a move,
//!   a delete, a batch, a revert) and staging it in the inbox;
//! - `apply/`: applying and rejecting under the lock and the journal, and
//!   recovering what a crash interrupted;
//! - `list.rs` and `review.rs`: what a person sees of the proposals.
//!
//! **Dates and times.** Times in files are RFC 3339 in the machine's local time
//! zone with its offset; archive folders are named by the local date, the date
//! a person looking at the inbox expects.

mod apply;
mod inbox;
mod list;
mod plan;
mod propose;
mod review;
mod text;

pub use apply::{
    Actor, Applied, ApplyIndex, ApplyStatus, MemoryEntry, NewText, Planned, PlannedFile, Recovery, Rejected,
    Remembered, Step, apply, apply_with_failpoint, apply_with_index, audit_log_path, inbox_file_travels,
    interrupted, planned_files, recover, recover_applies, reject, remember, settle_applied, with_inbox_lock,
    write_moved,
};
pub use inbox::{
    AuditMark, AuditSince, ConflictCopy, ProposalKind, ProposalStatus, audit_since, conflict_copies, holds,
    resolve_applied_id, resolve_id,
};
pub use list::{
    Checks, Description, ProposalView, StatusFilter, describe, describe_pending, list, pending_count,
};
pub use plan::{FileChange, FileOp, FileOpKind, Linkers, Plan};
pub use propose::{
    BATCH_MAX_ITEMS, BatchItem, BatchPlan, Break, ItemPlanned, LinkEdit, Linker, MovePlan, NewNote,
    PatchRequest, RecordedTexts, RevertPlan, Staged, StagedPlan, VaultView, apply_link_edits, link_effects,
    linkers_in, links_changed, plan_batch, plan_delete, plan_move, plan_revert, propose_new, propose_patch,
    propose_restore, relink, required_reason, stage_plan,
};
pub use review::{Overlap, Review, overlaps_of, pending_paths, review};
pub use text::{Edit, apply_edits, line_changes, unified_diff};
