//! The engine's requests and results: the contract's parameters and result
//! fields, as plain data.
//!
//! These types are the public API of `TOOLS.md`; their field names are the
//! contract's. They derive `JsonSchema` so the tools layer can publish input and
//! output schemas without a mirror type; the engine itself never builds or
//! checks a schema.

mod access;
mod audit;
mod batch;
mod bounds;
mod history;
mod links;
mod list;
mod memory;
mod overview;
mod proposals;
mod read;
mod recall;
mod recent;
mod search;

pub use crate::index::SearchPasses;
pub use access::{Access, Actor, Caller};
pub use audit::{Audit, AuditArgs, AuditCheck, Finding, Fix, Severity, UnstagedReason};
pub use batch::{BatchItem, ProposeBatchArgs, ProposeBatchResult, RevertArgs, RevertResult};
pub use bounds::{
    AUDIT_LIMIT, Bound, HISTORY_LIMIT, LIST_NOTES_LIMIT, PROPOSALS_LIMIT, RECALL_BUDGET, RECENT_DAYS,
    RECENT_LIMIT, SEARCH_LIMIT, TAGS_LIMIT,
};
pub use history::{HistoryArgs, HistoryResults, HistoryVersion, RestoreArgs, RestoreResult, VersionBy};
pub use links::{BacklinkOut, BrokenLink, BrokenReason, NoteRefArgs, NoteTitle, Outlink, Related};
pub use list::{FolderCount, ListNotesArgs, ListSort, ListedNote, NoteList, Tree, TreeNote};
pub use memory::{MemoryAbout, MemoryCounts, Principal, RememberArgs, Remembered};
pub use overview::{
    ChangedNote, Changes, Counts, IndexActivity, IndexLocation, IndexState, NoArgs, Overview, OverviewArgs,
    ProposalEvent, ReplicaStatus, Roots, ServerIdentity, ServerMetrics, SkippedOut, Stale, ToolMetrics,
};
pub use proposals::{
    ApplyArgs, ApplyResult, BrokenBy, ConflictCopies, ConflictCopy, IndexUpdate, ListProposalsArgs,
    MovedNote, ProposalChecks, ProposalEntry, Proposals, ProposeDeleteArgs, ProposeDeleteResult,
    ProposeMoveArgs, ProposeMoveResult, ProposeNewArgs, ProposeNewResult, ProposePatchArgs,
    ProposePatchResult, RejectResult, Rewrites, SimilarNote,
};
pub use read::{
    ListTagsArgs, NoteContent, OutlineEntry, ReadNoteArgs, StandardEntry, Standards, TagCount, Tags,
};
pub use recall::{RecallArgs, RecallItem, RecallPack};
pub use recent::{Recent, RecentArgs, RecentNote, RecentSort};
pub use search::{
    ContentHit, ContentResults, KnowledgeHit, KnowledgeResults, Ranking, RankingPath, SearchArgs, SnippetOut,
};

/// The fixed sets a result names (a proposal's kind and status, how an apply
/// ended, how a link is written), defined where they are decided and serialised
/// as the contract's strings. Their published schemas stay plain strings
/// (`#[schemars(with = "String")]`): the field descriptions list the values,
/// and `tools/list` has no room for the enums.
pub use crate::vault::LinkKind;
pub use crate::write::{ApplyStatus, ProposalKind, ProposalStatus, StatusFilter as ProposalStatusFilter};

/// Drops an argument's description from its published schema: `reason`'s
/// ("Why.") says no more than its name, and `tools/list` has a size cap.
fn said_by_its_name(schema: &mut schemars::Schema) {
    schema.remove("description");
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}
