//! Proposals on disk: the inbox layout (`layout.rs`), a proposal's metadata
//! and the checks that its files are intact (`metadata.rs`), finding one by id
//! (`find.rs`), the journal naming the one proposal being consumed
//! (`journal.rs`), the append-only audit log (`audit.rs`), and the conflict
//! copies that keep a person's racing save apart (`conflicts.rs`).
//!
//! Everything here reads and writes the inbox only; no note is touched.

mod audit;
mod conflicts;
mod find;
pub(crate) mod journal;
mod layout;
mod metadata;

pub use audit::{AuditMark, AuditSince, audit_since};
pub use conflicts::{ConflictCopy, conflict_copies};
pub use find::{holds, resolve_applied_id, resolve_id};
pub use layout::{ProposalKind, ProposalStatus};

pub(crate) use audit::AuditLog;
pub(crate) use find::{archived_files, find, find_applied, pending_files};
pub(crate) use journal::{Action, Journal, interrupted_id};
pub(crate) use layout::{
    FILE_MAX_BYTES, Inbox, META_SUFFIX, SCHEMA, content_name, diff_name, is_id, lock, new_id, short_id, today,
};
pub(crate) use metadata::{
    Located, Metadata, flaw, intact, locate, looks_intact, not_found, tampered, validate,
};
